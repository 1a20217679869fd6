//! The benchmarks' real repositories: the git directory of `owner/name` in the folder given,
//! and one commit's files written out as a work tree.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The git directory of `repo` under `repos`: `owner+name` itself, or a folder inside it.
pub fn git_dir(repos: &Path, repo: &str) -> PathBuf {
    let folder = repos.join(repo.replace('/', "+"));
    if folder.join("HEAD").is_file() {
        return folder;
    }
    std::fs::read_dir(&folder)
        .unwrap_or_else(|err| panic!("{}: {err}", folder.display()))
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.join("HEAD").is_file() && path.join("objects").is_dir())
        .unwrap_or_else(|| panic!("no git directory in {}", folder.display()))
}

/// Writes the regular files of `commit`'s tree into `into` (`git ls-tree`, then one
/// `git cat-file --batch`); blobs the copy of the repository lacks (large files a shallow or
/// partial copy leaves out) are skipped, as are symlinks and submodules.
pub fn extract(git_dir: &Path, commit: &str, into: &Path) {
    let git = |args: &[&str]| {
        let mut command = Command::new("git");
        command.arg("--git-dir").arg(git_dir).args(args);
        command
    };
    let listing = git(&["ls-tree", "-r", "-z", commit])
        .output()
        .expect("git ls-tree runs");
    assert!(
        listing.status.success(),
        "git ls-tree {commit} in {}",
        git_dir.display()
    );
    let mut blobs: Vec<(String, String)> = Vec::new();
    for entry in listing.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let fields: Vec<&str> = meta.split(' ').collect();
        if fields.len() == 3 && fields[1] == "blob" && fields[0] != "120000" {
            blobs.push((fields[2].to_owned(), path.to_owned()));
        }
    }
    let mut batch = git(&["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git cat-file starts");
    let mut stdin = batch.stdin.take().expect("a pipe");
    let ids: Vec<String> = blobs.iter().map(|(id, _)| id.clone()).collect();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        for id in ids {
            writeln!(stdin, "{id}").expect("git cat-file reads");
        }
    });
    let mut out = std::io::BufReader::new(batch.stdout.take().expect("a pipe"));
    for (_, path) in &blobs {
        use std::io::{BufRead, Read};
        let mut header = String::new();
        out.read_line(&mut header).expect("a header");
        if header.trim_end().ends_with("missing") {
            continue;
        }
        let size: usize = header
            .split(' ')
            .nth(2)
            .and_then(|n| n.trim().parse().ok())
            .expect("a size");
        let mut content = vec![0; size + 1];
        out.read_exact(&mut content).expect("the blob");
        content.pop();
        let target = into.join(path);
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("a folder");
        std::fs::write(target, content).expect("the file is written");
    }
    writer.join().expect("the writer ends");
    assert!(batch.wait().expect("git cat-file ends").success());
}
