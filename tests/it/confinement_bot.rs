//! Attacks from code the model writes, against the whole bot: a maintainer labels an issue, the
//! model adds a test file that attacks, and the repository's own pytest runs it. The file
//! redirects git through `insteadOf`, leaves a daemon behind that moves the branch, or prints the
//! bot's secrets in disguise; the pull request still holds exactly the fix and nothing leaks.

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::bot::{
    BUGGY_PY, BotTester, FIXED_PY, GITHUB_TOKEN, LLM_KEY, PY_TEST, WEBHOOK_SECRET, accepted,
    files_containing, script_python_fix,
};
use crate::support::git_http::BareRepo;
use crate::support::posted::stable;
use autofix::exec::SandboxMode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

const PROJECT: &str = "acme/widgets";
const PROBE: &str = "test_probe.py";
/// pytest with `-s`, so what the probe prints is in the validation log.
const CONFIG: &str = "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-s\", \"-p\", \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[repair]\nmax_attempts = 1\n";

fn project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("calc.py", BUGGY_PY),
        ("test_calc.py", PY_TEST),
        (".gitignore", "__pycache__/\n"),
        (".autofix.toml", CONFIG),
    ]
}

/// The model's answers: the fix of `calc.py` together with `probe` as a new test, accepted by
/// its own review.
fn script_fix_with_probe(t: &BotTester, probe: &str) {
    script_edit_with_probe(t, probe);
    t.llm.reply_text_for_stage("audit", accepted());
}

/// [`script_fix_with_probe`] up to the edit: for a probe that fails, so no review comes.
fn script_edit_with_probe(t: &BotTester, probe: &str) {
    t.llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": ["calc.py"], "reason": "clamp ignores its bounds"})
        .to_string(),
    );
    t.llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["limit the value in clamp", "add a regression test"],
               "file_changes": [{"path": "calc.py", "operation": "MODIFY"},
                                {"path": PROBE, "operation": "CREATE"}],
               "commit_summary": "clamp values to both of their bounds", "scope": "calc"})
        .to_string(),
    );
    t.llm.reply_text_for_stage("edit", whole_files(probe));
}

fn whole_files(probe: &str) -> String {
    format!("^^^calc.py\n{FIXED_PY}^^^end\n^^^{PROBE}\n{probe}^^^end\n")
}

/// The branch of the one pull request holds one commit on `main`, by the bot, changing exactly
/// the fixed `calc.py` and the probe as the model wrote it.
fn assert_the_pull_request_holds_exactly_the_fix(t: &BotTester, remote: &BareRepo, probe: &str) {
    let requests = t.change_requests(PROJECT);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let head = format!("refs/heads/{}", requests[0].head);
    let changed = remote.git(&["diff", "--name-only", "main", &head]);
    assert_eq!(changed.lines().collect::<Vec<_>>(), ["calc.py", PROBE]);
    assert_eq!(remote.git(&["show", &format!("{head}:calc.py")]), FIXED_PY);
    assert_eq!(remote.git(&["show", &format!("{head}:{PROBE}")]), probe);
    let commits = remote.git(&["log", "--format=%an|%s", &format!("main..{head}")]);
    assert_eq!(
        commits.trim(),
        "autofix|fix(calc): clamp values to both of their bounds",
        "one commit, the bot's"
    );
}

/// A maintainer labels issue `number`, and the bot works until it is idle.
async fn label_and_run(t: &BotTester, number: u64) {
    let alice = t.maintainer(PROJECT, "alice");
    t.label_issue_and_wait(PROJECT, number, "clamp ignores its bounds", &alice)
        .await;
}

/// What the probe printed, from the validation log among the job's artifacts.
fn probe_output(t: &BotTester) -> String {
    let logs: Vec<PathBuf> = files_containing(&t.workdir(), "PROBE DONE")
        .into_iter()
        .filter(|path| path.to_string_lossy().ends_with("-pytest.log"))
        .collect();
    assert_eq!(logs.len(), 1, "the probe ran to its end once: {logs:?}");
    logs.iter()
        .map(|path| fs::read_to_string(path).unwrap_or_default())
        .collect()
}

// --- 5: git that cannot be redirected -------------------------------------------------------

/// A loopback server that only counts who connects: where a redirected fetch or push would go.
struct Decoy {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Decoy {
    fn start() -> Decoy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Decoy { port, connections }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Appends a rewrite of the real remote to the decoy into the work tree's git config (its
/// `origin` names the mirror, whose config gets one too) and, when `home` is set, into
/// `~/.gitconfig` and the XDG file.
fn redirect_probe(real: &str, decoy: &str, home: bool) -> String {
    let home = if home {
        "    append(os.path.expanduser('~/.gitconfig'), REDIRECT)\n    append(os.path.expanduser('~/.config/git/config'), REDIRECT)\n"
    } else {
        ""
    };
    format!(
        r#"import os

REAL = '{real}'
DECOY = '{decoy}'
REDIRECT = f'[url "{{DECOY}}"]\n\tinsteadOf = {{REAL}}\n\tpushInsteadOf = {{REAL}}\n'


def append(path, text):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'a') as config:
            config.write(text)
        print('WROTE', path)
    except OSError as error:
        print('BLOCKED', path, error.strerror)


def test_redirect():
    work_tree_config = os.path.join(os.getcwd(), '.git', 'config')
    mirror = None
    for line in open(work_tree_config):
        line = line.strip()
        if line.startswith('url = ') and mirror is None:
            mirror = line[len('url = '):]
    append(work_tree_config, REDIRECT + f'[remote "origin"]\n\tpushurl = {{DECOY}}x.git\n')
    if os.path.exists(os.path.join(mirror, 'HEAD')):
        append(os.path.join(mirror, 'config'), REDIRECT)
    else:
        print('BLOCKED', mirror, 'is not there')
{home}    print('PROBE DONE')
"#
    )
}

/// The rewrites (`insteadOf`, `pushInsteadOf`, `pushurl`) in the config of the project's mirror
/// in the bot's cache, as git reads them.
fn mirror_redirects(t: &BotTester) -> String {
    redirects_in(&t.workdir().join("mirrors/github/acme/widgets.git/config"))
}

fn redirects_in(config: &Path) -> String {
    let output = std::process::Command::new("git")
        .args(["config", "--file"])
        .arg(config)
        .args(["--get-regexp", "insteadof$|pushurl$"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The lines of `output` that report `word` (after pytest's progress dots).
fn reports<'a>(output: &'a str, word: &str) -> Vec<&'a str> {
    output
        .lines()
        .filter_map(|line| line.find(word).map(|at| &line[at..]))
        .collect()
}

/// The real remote's scheme, host and port: what the probe rewrites.
fn real_base(t: &BotTester) -> String {
    let url = t.git.url(PROJECT);
    let end = url.find("/acme/").unwrap();
    format!("{}/", &url[..end])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfined_a_redirect_written_into_git_config_still_sends_nothing_elsewhere() {
    let t = BotTester::github_in(SandboxMode::None).await;
    let remote = t.repo(PROJECT, &project());
    let decoy = Decoy::start();
    let probe = redirect_probe(&real_base(&t), &decoy.url(), false);
    script_fix_with_probe(&t, &probe);

    label_and_run(&t, 7).await;

    let output = probe_output(&t);
    assert_eq!(
        reports(&output, "WROTE ").len(),
        2,
        "unconfined, the probe rewrites both configs: {output}"
    );
    assert!(
        mirror_redirects(&t).contains(&decoy.url()),
        "the rewrite stays in the mirror until its next fetch"
    );
    assert_the_pull_request_holds_exactly_the_fix(&t, &remote, &probe);

    script_python_fix(&t.llm);
    label_and_run(&t, 8).await;

    assert_eq!(
        t.change_requests(PROJECT).len(),
        2,
        "the next job fetched and pushed as usual"
    );
    assert_eq!(
        mirror_redirects(&t),
        "",
        "the next fetch forgot the rewrite"
    );
    assert_eq!(decoy.connections(), 0, "no fetch or push went to the decoy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_a_redirect_cannot_even_be_written() {
    let t = BotTester::github().await;
    let remote = t.repo(PROJECT, &project());
    let decoy = Decoy::start();
    let probe = redirect_probe(&real_base(&t), &decoy.url(), true);
    script_fix_with_probe(&t, &probe);
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let user_configs = [home.join(".gitconfig"), home.join(".config/git/config")];

    label_and_run(&t, 7).await;

    let output = probe_output(&t);
    let blocked = reports(&output, "BLOCKED ");
    assert_eq!(
        blocked.len(),
        2,
        "both git configs are out of reach: {output}"
    );
    assert!(
        blocked[0].ends_with(".git/config Read-only file system"),
        "{output}"
    );
    assert!(blocked[1].ends_with("widgets.git is not there"), "{output}");
    assert_eq!(
        reports(&output, "WROTE ").len(),
        2,
        "the user's git configs can be written: {output}"
    );
    for config in &user_configs {
        assert_eq!(
            redirects_in(config),
            "",
            "{} was the sandbox's own, gone with it",
            config.display()
        );
    }
    assert_eq!(mirror_redirects(&t), "");
    assert_the_pull_request_holds_exactly_the_fix(&t, &remote, &probe);
    assert_eq!(decoy.connections(), 0);
}

// --- 7: a daemon that outlives its command --------------------------------------------------

/// Forks twice with a new session in between, as a daemon does, and reports that it started.
/// The daemon keeps rewriting `calc.py`, committing it and moving the branch to that commit
/// (every 50 ms for a minute), and notes each move in `report`, a file outside the work tree.
/// The tests ran `calc.py` before the probe, so this validation still passes.
fn daemon_probe(marker: &str, report: &Path) -> String {
    let report = report.display();
    format!(
        r#"import os

DAEMON = r'''
import os, subprocess, sys, time
marker, tree, report = sys.argv[1], sys.argv[2], sys.argv[3]
env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tree, '.git', 'daemon-index'))
def git(*args):
    return subprocess.run(['git', '-C', tree, '-c', 'user.name=daemon', '-c',
                           'user.email=daemon@example.com', *args], env=env,
                          capture_output=True, text=True, check=True).stdout.strip()
deadline = time.time() + 60
while time.time() < deadline:
    try:
        with open(os.path.join(tree, 'calc.py'), 'w') as calc:
            calc.write('def clamp(value, low, high):\n    return "owned"\n')
        git('read-tree', 'HEAD')
        git('add', 'calc.py')
        commit = git('commit-tree', git('write-tree'), '-p', 'HEAD', '-m', 'daemon')
        git('update-ref', 'HEAD', commit)
        with open(report, 'a') as log:
            log.write('MOVED ' + commit + '\n')
    except Exception:
        pass
    time.sleep(0.05)
'''


def test_daemon():
    ready, announce = os.pipe()
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            os.close(ready)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.write(announce, b'up')
            os.execv('/usr/bin/python3',
                     ['python3', '-c', DAEMON, '{marker}', os.getcwd(), '{report}'])
        os._exit(0)
    os.close(announce)
    os.waitpid(child, 0)
    print('DAEMON STARTED' if os.read(ready, 2) == b'up' else 'DAEMON FAILED')
    print('PROBE DONE')
"#
    )
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(mut file) = fs::File::open(entry.path().join("cmdline")) else {
            continue;
        };
        let mut cmdline = Vec::new();
        if file.read_to_end(&mut cmdline).is_ok()
            && cmdline
                .windows(marker.len())
                .any(|window| window == marker.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// The daemon's processes once the job is over: at most a few seconds for the kernel to reap
/// a namespace that just lost its init.
fn survivors(marker: &str, expect_any: bool) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = processes_with(marker);
        if expect_any || found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn unique_marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("autofix-daemon-{name}-{}-{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfined_a_daemon_outlives_its_command_but_the_push_sends_the_recorded_commit() {
    let t = BotTester::github_in(SandboxMode::None).await;
    let remote = t.repo(PROJECT, &project());
    let scratch = tempfile::tempdir().unwrap();
    let report = scratch.path().join("daemon.log");
    let marker = unique_marker("unconfined");
    let probe = daemon_probe(&marker, &report);
    script_fix_with_probe(&t, &probe);

    label_and_run(&t, 7).await;

    let daemons = survivors(&marker, true);
    for pid in &daemons {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(probe_output(&t).contains("DAEMON STARTED"));
    assert_eq!(daemons.len(), 1, "unconfined, the daemon outlives the job");
    let moves = fs::read_to_string(&report).unwrap_or_default();
    assert!(
        moves.contains("MOVED"),
        "the daemon moved the branch while the job ran"
    );
    assert_the_pull_request_holds_exactly_the_fix(&t, &remote, &probe);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_a_daemon_dies_with_its_command() {
    let t = BotTester::github().await;
    let remote = t.repo(PROJECT, &project());
    let scratch = tempfile::tempdir().unwrap();
    let report = scratch.path().join("daemon.log");
    let marker = unique_marker("sandboxed");
    let probe = daemon_probe(&marker, &report);
    script_fix_with_probe(&t, &probe);

    label_and_run(&t, 7).await;

    assert!(probe_output(&t).contains("DAEMON STARTED"));
    assert_eq!(
        survivors(&marker, false),
        Vec::<u32>::new(),
        "no daemon is left"
    );
    assert!(
        !report.exists(),
        "the daemon never moved a branch or reached a file outside its sandbox"
    );
    assert_the_pull_request_holds_exactly_the_fix(&t, &remote, &probe);
}

// --- 8: secrets printed in disguise ----------------------------------------------------------

/// Every form the probe prints a secret in.
fn disguises(secret: &str) -> Vec<String> {
    let reversed: String = secret.chars().rev().collect();
    let hex: String = secret.bytes().map(|byte| format!("{byte:02x}")).collect();
    vec![
        secret.to_owned(),
        reversed.clone(),
        hex.to_ascii_uppercase(),
        STANDARD.encode(secret),
        STANDARD.encode(&reversed),
        hex,
    ]
}

/// A failing test that prints each secret in every disguise. The secrets are in the file only
/// XOR-masked, as a probe that found them elsewhere would not carry them in plain sight.
fn disguise_probe(secrets: &[&str]) -> String {
    let masked: Vec<Vec<u8>> = secrets
        .iter()
        .map(|secret| secret.bytes().map(|byte| byte ^ 0x5a).collect())
        .collect();
    format!(
        r#"import base64

MASKED = {masked:?}


def test_secrets_in_disguise():
    for masked in MASKED:
        secret = bytes(byte ^ 0x5a for byte in masked).decode()
        backwards = secret[::-1]
        print('plain', secret)
        print('reversed', backwards)
        print('hex', secret.encode().hex(), secret.encode().hex().upper())
        print('base64', base64.b64encode(secret.encode()).decode())
        print('reversed base64', base64.b64encode(backwards.encode()).decode())
    print('PROBE DONE')
    assert False, 'the probe fails so that its output is quoted back'
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_printed_in_disguise_reach_no_prompt_comment_log_or_artifact() {
    let t = BotTester::github().await;
    t.repo(PROJECT, &project());
    let secrets = [GITHUB_TOKEN, WEBHOOK_SECRET, LLM_KEY];
    let probe = disguise_probe(&secrets);
    script_edit_with_probe(&t, &probe);
    t.llm
        .reply_text_for_stage("repair", whole_files(&format!("{probe}# again\n")));

    label_and_run(&t, 7).await;

    let repair = t
        .llm
        .requests()
        .into_iter()
        .find(|request| request.stage.as_deref() == Some("repair"))
        .expect("the failing output went to a repair round");
    assert!(
        repair.body_text.contains("reversed base64 [REDACTED]"),
        "the prompt quotes the output, masked: {}",
        repair.body_text
    );
    let comments = t.comments(PROJECT, 7);
    let report = comments.last().expect("a failure report");
    // `VALIDATION_FAILED`, quoting the output with every disguise of a secret masked.
    insta::assert_snapshot!("disguised_secrets_report", stable(report));

    for secret in secrets {
        for form in disguises(secret) {
            for request in t.llm.requests() {
                assert!(
                    !request.body_text.contains(&form),
                    "`{form}` reached the model in {request}"
                );
            }
            for request in t.github_fake().requests() {
                let body = request
                    .body
                    .map(|body| body.to_string())
                    .unwrap_or_default();
                assert!(!body.contains(&form), "`{form}` reached the forge: {body}");
            }
            assert_eq!(
                files_containing(&t.workdir(), &form),
                Vec::<PathBuf>::new(),
                "`{form}` is in no log or artifact"
            );
        }
    }
    let jobs = t.jobs().await;
    let stored = format!("{:?}", jobs[0]);
    for form in secrets.iter().flat_map(|secret| disguises(secret)) {
        assert!(
            !stored.contains(&form),
            "`{form}` is in the job store: {stored}"
        );
    }
}
