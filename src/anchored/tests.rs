use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

/// A work tree and, beside it, a folder standing for `~/.ssh` that nothing may touch.
struct Scene {
    _dir: tempfile::TempDir,
    tree: Tree,
    outside: PathBuf,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    let outside = dir.path().join("ssh");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("authorized_keys"), "the owner's key\n").unwrap();
    let tree = Tree::open(&root).unwrap();
    Scene {
        _dir: dir,
        tree,
        outside,
    }
}

impl Scene {
    fn root(&self) -> &Path {
        self.tree.path()
    }

    fn plant_link(&self, relative: &str) {
        let at = self.root().join(relative);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(&self.outside, at).unwrap();
    }

    fn outside_untouched(&self) {
        let names: Vec<_> = fs::read_dir(&self.outside)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["authorized_keys"], "something was added outside");
        assert_eq!(
            fs::read_to_string(self.outside.join("authorized_keys")).unwrap(),
            "the owner's key\n"
        );
    }
}

const PLAIN: Permissions = Permissions::KeepExisting;

#[test]
fn a_write_creates_its_folders_and_replaces_the_file_whole() {
    let s = scene();
    s.tree
        .write("keys/new/authorized_keys", b"model\n", PLAIN, Way::Refuse)
        .unwrap();
    s.tree
        .write(
            "keys/new/authorized_keys",
            b"model again\n",
            PLAIN,
            Way::Refuse,
        )
        .unwrap();
    assert_eq!(
        fs::read_to_string(s.root().join("keys/new/authorized_keys")).unwrap(),
        "model again\n"
    );
    let left: Vec<_> = fs::read_dir(s.root().join("keys/new")).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left behind");
}

#[test]
fn a_folder_turned_into_a_link_is_refused_for_the_model_and_nothing_is_written_outside() {
    let s = scene();
    s.plant_link("keys");
    let error = s
        .tree
        .write("keys/authorized_keys", b"attacker\n", PLAIN, Way::Refuse)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`keys` is a symbolic link; autofix never follows a link inside a work tree"
    );
    s.outside_untouched();
}

#[test]
fn a_folder_turned_into_a_link_is_replaced_by_a_real_folder_when_putting_back() {
    let s = scene();
    s.plant_link("deep/keys");
    s.tree
        .write("deep/keys/authorized_keys", b"model\n", PLAIN, Way::Clear)
        .unwrap();
    s.outside_untouched();
    assert!(
        fs::symlink_metadata(s.root().join("deep/keys"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(
        fs::read_to_string(s.root().join("deep/keys/authorized_keys")).unwrap(),
        "model\n"
    );
}

#[test]
fn a_file_where_a_folder_should_be_is_refused_or_cleared() {
    let s = scene();
    fs::write(s.root().join("src"), "a file now").unwrap();
    assert_eq!(
        s.tree
            .write("src/lib.rs", b"x", PLAIN, Way::Refuse)
            .unwrap_err()
            .to_string(),
        "`src` is not a folder"
    );
    s.tree.write("src/lib.rs", b"x", PLAIN, Way::Clear).unwrap();
    assert_eq!(fs::read(s.root().join("src/lib.rs")).unwrap(), b"x");
}

#[test]
fn a_link_at_the_file_itself_is_replaced_not_written_through() {
    let s = scene();
    symlink(
        s.outside.join("authorized_keys"),
        s.root().join("authorized_keys"),
    )
    .unwrap();
    assert!(matches!(
        s.tree.write("authorized_keys", b"m", PLAIN, Way::Refuse),
        Err(TreeError::Link { .. })
    ));
    s.tree
        .write("authorized_keys", b"m", PLAIN, Way::Clear)
        .unwrap();
    s.outside_untouched();
    assert!(
        fs::symlink_metadata(s.root().join("authorized_keys"))
            .unwrap()
            .is_file()
    );
}

#[test]
fn a_write_keeps_the_old_files_permissions_or_takes_gits() {
    let s = scene();
    let script = s.root().join("run.sh");
    fs::write(&script, "old").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
    s.tree.write("run.sh", b"new", PLAIN, Way::Refuse).unwrap();
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );
    s.tree
        .write(
            "tool",
            b"#!/bin/sh\n",
            Permissions::Git { executable: true },
            Way::Clear,
        )
        .unwrap();
    assert_ne!(
        fs::metadata(s.root().join("tool"))
            .unwrap()
            .permissions()
            .mode()
            & 0o100,
        0
    );
}

#[test]
fn removing_through_a_link_never_removes_what_it_points_at() {
    let s = scene();
    s.plant_link("keys");
    assert!(matches!(
        s.tree.remove("keys/authorized_keys", Way::Refuse),
        Err(TreeError::Link { .. })
    ));
    s.tree.remove("keys/authorized_keys", Way::Clear).unwrap();
    s.outside_untouched();
    assert!(
        fs::symlink_metadata(s.root().join("keys")).is_err(),
        "the link itself is gone"
    );
}

#[test]
fn removing_a_folder_removes_links_inside_it_not_their_targets() {
    let s = scene();
    fs::create_dir_all(s.root().join("build/a/b")).unwrap();
    fs::write(s.root().join("build/a/b/out.o"), "o").unwrap();
    s.plant_link("build/a/ssh");
    s.plant_link("build/ssh");
    s.tree.remove("build", Way::Refuse).unwrap();
    assert!(!s.root().join("build").exists());
    s.outside_untouched();
}

#[test]
fn removing_what_is_not_there_is_fine() {
    let s = scene();
    s.tree.remove("nothing/here", Way::Refuse).unwrap();
    s.tree.remove("nothing", Way::Refuse).unwrap();
}

#[test]
fn a_very_deep_folder_is_removed_without_recursion() {
    let s = scene();
    let mut deep = s.root().join("deep");
    for _ in 0..300 {
        deep.push("d");
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("f"), "f").unwrap();
    s.tree.remove("deep", Way::Refuse).unwrap();
    assert!(!s.root().join("deep").exists());
}

#[test]
fn reads_refuse_links_on_the_way_and_at_the_end() {
    let s = scene();
    s.plant_link(".github");
    symlink(
        s.outside.join("authorized_keys"),
        s.root().join("AGENTS.md"),
    )
    .unwrap();
    fs::write(s.root().join("README.md"), "hello").unwrap();
    assert_eq!(
        s.tree
            .read(".github/autofix.toml", 1024)
            .unwrap_err()
            .to_string(),
        "`.github` is a symbolic link; autofix never follows a link inside a work tree"
    );
    assert!(matches!(
        s.tree.read("AGENTS.md", 1024),
        Err(TreeError::Link { .. })
    ));
    assert_eq!(s.tree.read("README.md", 1024).unwrap().unwrap(), b"hello");
    assert_eq!(s.tree.read("missing/file", 1024).unwrap(), None);
    assert!(matches!(
        s.tree.read("README.md", 3),
        Err(TreeError::TooLarge {
            bytes: 5,
            limit: 3,
            ..
        })
    ));
}

#[test]
fn a_fifo_is_not_read() {
    let s = scene();
    let fifo = s.root().join("pipe");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
    assert!(matches!(
        s.tree.read("pipe", 1024),
        Err(TreeError::NotAFile { .. })
    ));
}

#[test]
fn entries_are_seen_without_following_links() {
    let s = scene();
    s.plant_link("keys");
    fs::write(s.root().join("a"), "abc").unwrap();
    assert_eq!(s.tree.entry("keys").unwrap(), Entry::Link);
    assert!(matches!(
        s.tree.entry("keys/authorized_keys"),
        Err(TreeError::Link { .. })
    ));
    assert_eq!(
        s.tree.entry("a").unwrap(),
        Entry::File {
            bytes: 3,
            executable: false
        }
    );
    assert_eq!(s.tree.entry("b/c").unwrap(), Entry::Missing);
}

#[test]
fn paths_that_are_not_plain_relative_names_are_refused() {
    let s = scene();
    for bad in ["", "/etc/passwd", "a/../b", "./a", "a//b", "a/"] {
        assert!(
            matches!(
                s.tree.write(bad, b"x", PLAIN, Way::Clear),
                Err(TreeError::NotRelative { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn a_tracked_link_is_put_back_as_a_link() {
    let s = scene();
    fs::create_dir_all(s.root().join("docs")).unwrap();
    s.tree.write_link("docs", b"site/docs", Way::Clear).unwrap();
    assert_eq!(
        fs::read_link(s.root().join("docs")).unwrap(),
        Path::new("site/docs")
    );
}

#[test]
fn empty_folders_above_a_removed_file_go_up_to_the_root() {
    let s = scene();
    fs::create_dir_all(s.root().join("a/b/c")).unwrap();
    fs::write(s.root().join("a/keep"), "k").unwrap();
    s.tree.remove_empty_folders_above("a/b/c/file").unwrap();
    assert!(!s.root().join("a/b").exists());
    assert!(s.root().join("a/keep").exists());
}

#[test]
fn a_folder_is_listed_only_when_it_is_a_real_one() {
    let scene = scene();
    fs::create_dir_all(scene.root().join(".github/workflows")).unwrap();
    fs::write(scene.root().join(".github/workflows/ci.yml"), "on: push\n").unwrap();
    fs::write(
        scene.root().join(".github/workflows/lint.yaml"),
        "on: push\n",
    )
    .unwrap();
    assert_eq!(
        scene.tree.list(".github/workflows").unwrap(),
        Some(vec!["ci.yml".to_owned(), "lint.yaml".to_owned()])
    );
    assert_eq!(scene.tree.list("missing/folder").unwrap(), None);
    scene.plant_link(".gitlab");
    let err = scene.tree.list(".gitlab").unwrap_err();
    assert!(matches!(err, TreeError::Link { .. }), "{err}");
    fs::write(scene.root().join("file"), "").unwrap();
    assert!(scene.tree.list("file").is_err(), "a file is no folder");
}
