//! Attacks on what autofix itself writes into a work tree, outside the sandbox: a test the model
//! wrote turns the folder of one of the model's files into a link to the service user's
//! `~/.ssh`, and autofix then puts the model's files back (after validation, during a
//! revalidation on a moved base, in a rollback). Nothing may land behind the link, and the job
//! ends as it would have without the attack.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::fix_cli::{Fix, revalidation_options, unreachable_model};
use crate::support::repo::{BUGGY_PY, Repo};
use crate::support::scripted_llm::ScriptedLlm;
use autofix::pipeline::fix;
use serde_json::{Value, json};

const FIXED_PY: &str = "def clamp(value, low, high):\n    return max(low, min(value, high))\n";
const PY_VALIDATE: &str = "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-s\", \"-p\", \"no:cacheprovider\"]\ntimeout_secs = 120\n";
const PROBE: &str = "test_probe.py";
const MODEL_KEY: &str = "ssh-ed25519 AAAA-the-model-wrote-this test@fixture\n";
const OWNER_KEY: &str = "ssh-ed25519 AAAA-the-service-owner's-own-key owner@host\n";

/// A folder standing for the service user's `~/.ssh`, which nothing autofix does may touch.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(home.ssh()).unwrap();
        fs::write(home.ssh().join("authorized_keys"), OWNER_KEY).unwrap();
        fs::write(
            home.ssh().join("known_hosts"),
            "github.com ssh-ed25519 AAAA\n",
        )
        .unwrap();
        home
    }

    fn ssh(&self) -> PathBuf {
        self.dir.path().join(".ssh")
    }

    fn assert_untouched(&self) {
        let mut names: Vec<String> = fs::read_dir(self.ssh())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["authorized_keys", "known_hosts"],
            "a file appeared in ~/.ssh"
        );
        assert_eq!(
            fs::read_to_string(self.ssh().join("authorized_keys")).unwrap(),
            OWNER_KEY,
            "~/.ssh/authorized_keys was overwritten"
        );
    }
}

/// A pytest test that replaces the folder `keys/` with a link to `ssh` (and, if `fail`, fails).
fn link_planting_probe(ssh: &Path, fail: bool) -> String {
    let outcome = if fail {
        "    assert False, 'PROBE PLANTED THE LINK'\n"
    } else {
        "    print('PROBE PLANTED THE LINK')\n"
    };
    format!(
        "import os\nimport shutil\n\n\ndef test_plant_a_link():\n    if os.path.lexists('keys'):\n        if os.path.islink('keys') or os.path.isfile('keys'):\n            os.remove('keys')\n        else:\n            shutil.rmtree('keys')\n    os.symlink({ssh:?}, 'keys')\n{outcome}",
        ssh = ssh.display().to_string()
    )
}

fn script_job(llm: &ScriptedLlm, probe: &str, accepted: bool) {
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": ["calc.py"], "reason": "clamp ignores its bounds"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["limit the value in clamp", "add a key fixture and a test"],
               "file_changes": [{"path": "calc.py", "operation": "MODIFY"},
                                {"path": "keys/authorized_keys", "operation": "CREATE"},
                                {"path": PROBE, "operation": "CREATE"}],
               "commit_summary": "clamp values to both of their bounds", "scope": "calc"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "edit",
        format!(
            "^^^calc.py\n{FIXED_PY}^^^end\n^^^keys/authorized_keys\n{MODEL_KEY}^^^end\n^^^{PROBE}\n{probe}^^^end\n"
        ),
    );
    if accepted {
        llm.reply_text_for_stage(
            "audit",
            json!({"decision": "accepted", "reasons": ["fixes the bug"], "must_fixes": [],
                   "nice_to_haves": []})
            .to_string(),
        );
    }
}

fn issue() -> Value {
    json!({"number": 7, "title": "clamp ignores its bounds",
           "body": "clamp(5, 0, 3) returns 5.", "labels": []})
}

#[test]
fn a_folder_of_the_models_turned_into_a_link_to_ssh_gets_its_file_back_in_a_real_folder() {
    let home = Home::new();
    let repo = Repo::python_project(&[(".autofix.toml", PY_VALIDATE)]);
    let llm = ScriptedLlm::start();
    let probe = link_planting_probe(&home.ssh(), false);
    script_job(&llm, &probe, true);

    let fix = Fix::run(repo.path(), &llm, &issue());

    home.assert_untouched();
    let stdout = fix.stdout();
    assert_eq!(
        fix.output.status.code(),
        Some(0),
        "{stdout}\n{}",
        fix.run_log()
    );
    assert!(
        fix.run_log()
            .contains("`keys/authorized_keys` was changed by a command"),
        "{}",
        fix.run_log()
    );
    // The commit holds exactly the model's three files, the key as the model wrote it.
    let branch = fix.result()["branch"].as_str().unwrap().to_owned();
    let changed = repo.git(&["diff", "--name-only", "main", &branch]);
    assert_eq!(
        changed.lines().collect::<Vec<_>>(),
        ["calc.py", "keys/authorized_keys", PROBE]
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:keys/authorized_keys")]),
        MODEL_KEY
    );
    let keys = fs::symlink_metadata(repo.path().join("keys")).unwrap();
    assert!(keys.is_dir(), "the link is gone and a real folder is back");
}

#[test]
fn a_folder_turned_into_a_link_by_a_failing_test_is_rolled_back_without_touching_ssh() {
    let home = Home::new();
    let config = format!("{PY_VALIDATE}\n[repair]\nmax_attempts = 0\n");
    let repo = Repo::python_project(&[
        (".autofix.toml", config.as_str()),
        (
            "keys/authorized_keys",
            "ssh-ed25519 AAAA-tracked fixture@repo\n",
        ),
    ]);
    let baseline = repo.head();
    let llm = ScriptedLlm::start();
    let probe = link_planting_probe(&home.ssh(), true);
    script_job(&llm, &probe, false);

    let fix = Fix::run(repo.path(), &llm, &issue());

    home.assert_untouched();
    let stdout = fix.stdout();
    assert_eq!(
        fix.output.status.code(),
        Some(11),
        "VALIDATION_FAILED: {stdout}\n{}",
        fix.run_log()
    );
    repo.assert_untouched(&baseline);
    assert_eq!(repo.read("calc.py"), BUGGY_PY);
    assert_eq!(
        repo.read("keys/authorized_keys"),
        "ssh-ed25519 AAAA-tracked fixture@repo\n"
    );
    assert!(
        fs::symlink_metadata(repo.path().join("keys"))
            .unwrap()
            .is_dir()
    );
}

#[tokio::test]
async fn a_link_planted_during_a_revalidation_on_a_moved_base_is_never_written_through() {
    let home = Home::new();
    let repo = Repo::python_project(&[(".autofix.toml", PY_VALIDATE)]);
    let head = repo.head();
    let out = tempfile::tempdir().unwrap();
    let options = revalidation_options(repo.path(), out.path());
    let files = BTreeMap::from([
        ("calc.py".to_owned(), Some(FIXED_PY.to_owned())),
        (
            "keys/authorized_keys".to_owned(),
            Some(MODEL_KEY.to_owned()),
        ),
        (
            PROBE.to_owned(),
            Some(link_planting_probe(&home.ssh(), false)),
        ),
    ]);

    let summary = fix::revalidate(&options, unreachable_model().as_ref(), files)
        .await
        .unwrap();

    home.assert_untouched();
    assert!(summary.failure.is_none(), "{:?}", summary.failure);
    assert!(summary.validated);
    let log = fs::read_to_string(out.path().join("run/run.log")).unwrap();
    assert!(
        log.contains("`keys/authorized_keys` was changed by a command"),
        "{log}"
    );
    assert_eq!(repo.head(), head);
    assert_eq!(repo.status(), "", "the work tree is put back");
    assert_eq!(repo.read("calc.py"), BUGGY_PY);
}

#[test]
fn a_github_folder_linked_to_the_process_folder_is_refused_and_the_operators_file_never_read() {
    // The operator's own configuration sits in the folder autofix runs from.
    let operator = tempfile::tempdir().unwrap();
    fs::write(
        operator.path().join("autofix.toml"),
        "[llm]\napi_key = \"sk-OPERATOR-SECRET\"\nthis line is not toml\n",
    )
    .unwrap();
    let repo = Repo::python_project(&[]);
    std::os::unix::fs::symlink("/proc/self/cwd", repo.path().join(".github")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "a .github that points at whoever reads it",
    ]);
    let llm = ScriptedLlm::start();

    let fix = Fix::run_with(repo.path(), &llm, &issue(), |command| {
        command.current_dir(operator.path());
    });

    let stdout = fix.stdout();
    let stderr = String::from_utf8_lossy(&fix.output.stderr);
    assert!(
        stdout.contains(
            "`.github` is a symbolic link; autofix never follows a link inside a work tree"
        ),
        "{stdout}\n{stderr}"
    );
    assert_ne!(fix.output.status.code(), Some(0));
    let everything = format!("{stdout}{stderr}{}", files_text(fix.artifacts.path()));
    assert!(!everything.contains("OPERATOR"), "{everything}");
    assert!(!everything.contains("not toml"), "{everything}");
    assert_eq!(llm.requests().len(), 0, "the model is never asked");
}

/// Every file under `dir`, concatenated: what a run left for anyone to read.
fn files_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&files_text(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(
                &fs::read(&path).unwrap_or_default(),
            ));
        }
    }
    text
}
