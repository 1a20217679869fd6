//! Stories about the command runner, told with real processes: output order, timeouts that
//! take the whole process group down, floods, the environment allow-list and refusals.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use autofix::exec::{CommandOutcome, CommandSpec, StopSignal, run, run_async};
use tempfile::TempDir;

const NO_ARGS: [&str; 0] = [];

/// A generous timeout for commands that are expected to finish on their own.
const NEVER_IN_PRACTICE: Duration = Duration::from_secs(120);

fn workdir() -> TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Writes an executable `#!/bin/sh` script named `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}")).expect("script written");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("script made executable");
    path
}

fn run_script(dir: &Path, body: &str) -> CommandOutcome {
    script(dir, "task.sh", body);
    run(&CommandSpec::new("./task.sh", NO_ARGS, dir).with_timeout(NEVER_IN_PRACTICE))
        .expect("the script starts")
}

fn pid_written_to(path: PathBuf) -> i32 {
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} should hold a pid: {e}", path.display()))
        .trim()
        .parse()
        .expect("a pid")
}

/// Whether `pid` is still a live process: it exists, is not a zombie waiting for its new
/// parent to reap it, and has no SIGKILL pending (a killed process may take a moment to
/// finish dying, but nothing can stop it any more).
fn process_is_alive(pid: i32) -> bool {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_owned()
    };
    let zombie = field("State:").starts_with(['Z', 'X']);
    let kill_pending = ["SigPnd:", "ShdPnd:"].iter().any(|name| {
        u64::from_str_radix(&field(name), 16)
            .is_ok_and(|mask| mask & (1 << (libc::SIGKILL - 1)) != 0)
    });
    !zombie && !kill_pending
}

fn error_of(spec: CommandSpec) -> String {
    run(&spec)
        .expect_err("the command should be refused")
        .to_string()
}

#[test]
fn stdout_and_stderr_arrive_interleaved_in_the_order_they_were_written() {
    let dir = workdir();
    let outcome = run_script(
        dir.path(),
        "i=1\nwhile [ $i -le 50 ]; do\n  echo \"out $i\"\n  echo \"err $i\" >&2\n  i=$((i + 1))\ndone\n",
    );

    let expected: String = (1..=50).map(|i| format!("out {i}\nerr {i}\n")).collect();
    assert_eq!(outcome.output, expected);
    assert!(outcome.success());
    assert!(!outcome.truncated);
    assert_eq!(outcome.output_bytes, expected.len() as u64);
}

#[test]
fn a_timeout_kills_the_whole_process_group_including_a_background_grandchild() {
    let dir = workdir();
    script(
        dir.path(),
        "hang.sh",
        "sleep 300 &\necho $! > grandchild.pid\necho started\nsleep 300\n",
    );

    let outcome =
        run(&CommandSpec::new("./hang.sh", NO_ARGS, dir.path())
            .with_timeout(Duration::from_secs(2)))
        .expect("the script starts");

    assert!(outcome.timed_out);
    assert!(!outcome.success());
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.output, "started\n");
    assert!(
        outcome.describe().starts_with("killed after timeout of "),
        "{}",
        outcome.describe()
    );
    let grandchild = pid_written_to(dir.path().join("grandchild.pid"));
    assert!(
        !process_is_alive(grandchild),
        "the background sleep {grandchild} survived the timeout"
    );
}

#[test]
fn a_stopped_command_ends_with_its_whole_group_and_says_it_was_stopped() {
    let dir = workdir();
    script(
        dir.path(),
        "long.sh",
        "sleep 300 &\necho $! > grandchild.pid\necho started\nsleep 300\necho finished\n",
    );
    let stop = StopSignal::new();
    let stopper = stop.clone();
    let marker = dir.path().join("grandchild.pid");
    let waiter = std::thread::spawn(move || {
        while !marker.exists() {
            std::thread::sleep(Duration::from_millis(20));
        }
        stopper.stop();
    });

    let outcome = run(&CommandSpec::new("./long.sh", NO_ARGS, dir.path())
        .with_timeout(NEVER_IN_PRACTICE)
        .stopped_by(stop))
    .expect("the script starts");
    waiter.join().unwrap();

    assert!(!outcome.timed_out, "stopped, not timed out");
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert!(
        outcome.output.starts_with("started\n") && !outcome.output.contains("finished"),
        "{}",
        outcome.output
    );
    assert!(
        outcome.output.contains("stopped before its end"),
        "{}",
        outcome.output
    );
    let grandchild = pid_written_to(dir.path().join("grandchild.pid"));
    assert!(
        !process_is_alive(grandchild),
        "the background sleep {grandchild} survived the stop"
    );
}

#[test]
fn a_grandchild_holding_the_output_open_does_not_keep_the_runner_waiting() {
    let dir = workdir();
    script(
        dir.path(),
        "leave-behind.sh",
        "sleep 600 &\necho $! > grandchild.pid\necho 'parent done'\nexit 0\n",
    );

    // Were the runner to wait for end of file, the sleep would hold it until the timeout.
    let outcome = run(&CommandSpec::new("./leave-behind.sh", NO_ARGS, dir.path())
        .with_timeout(Duration::from_secs(60)))
    .expect("the script starts");

    assert!(
        !outcome.timed_out,
        "the runner waited for the background sleep"
    );
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.output, "parent done\n");
    let grandchild = pid_written_to(dir.path().join("grandchild.pid"));
    assert!(
        !process_is_alive(grandchild),
        "the left-behind sleep {grandchild} is still running"
    );
}

#[test]
fn a_two_gigabyte_flood_is_counted_but_only_the_limit_is_kept() {
    let dir = workdir();
    let limit = 64 * 1024;
    let written: u64 = 2_000_000_000;
    let spec = CommandSpec::new(
        "head",
        ["-c", &written.to_string(), "/dev/zero"],
        dir.path(),
    )
    .with_output_limit(limit)
    .with_timeout(Duration::from_secs(1800));

    let outcome = run(&spec).expect("head starts");

    assert!(outcome.success(), "{}", outcome.describe());
    assert_eq!(outcome.output_bytes, written);
    assert!(outcome.truncated);
    let marker = format!("\n[... {} bytes omitted ...]\n", written - limit as u64);
    assert!(outcome.output.contains(&marker));
    assert_eq!(outcome.output.len(), limit + marker.len());
}

#[test]
fn a_long_output_keeps_its_beginning_and_its_end() {
    let dir = workdir();
    let spec = CommandSpec::new("seq", ["1", "100000"], dir.path()).with_output_limit(1000);

    let outcome = run(&spec).expect("seq starts");

    let everything: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(outcome.output_bytes, everything.len() as u64);
    assert!(outcome.truncated);
    assert!(outcome.output.starts_with("1\n2\n3\n4\n"));
    assert!(outcome.output.ends_with("99998\n99999\n100000\n"));
    let omitted = everything.len() - 1000;
    assert!(
        outcome
            .output
            .contains(&format!("[... {omitted} bytes omitted ...]\n"))
    );
}

#[test]
fn output_that_fits_is_not_marked_truncated() {
    let dir = workdir();
    let outcome = run(&CommandSpec::new("echo", ["hello"], dir.path()).with_output_limit(6))
        .expect("echo starts");

    assert_eq!(outcome.output, "hello\n");
    assert!(!outcome.truncated);
}

#[test]
fn invalid_utf8_from_a_command_is_shown_with_replacement_characters() {
    let dir = workdir();
    let outcome = run(&CommandSpec::new(
        "printf",
        ["ok \\377\\376 done\\n"],
        dir.path(),
    ))
    .expect("printf starts");

    assert!(outcome.success());
    assert_eq!(outcome.output, "ok \u{FFFD}\u{FFFD} done\n");
    assert_eq!(outcome.output_bytes, 11);
}

#[test]
fn a_variable_of_the_test_process_reaches_the_command_only_when_allowed() {
    // cargo sets CARGO_PKG_NAME for the test process, so it is there to leak.
    assert_eq!(std::env::var("CARGO_PKG_NAME").as_deref(), Ok("autofix"));
    let dir = workdir();

    let by_default = run(&CommandSpec::new("env", NO_ARGS, dir.path())).expect("env starts");
    let allowed = run(&CommandSpec::new("env", NO_ARGS, dir.path()).allowing_env("CARGO_PKG_NAME"))
        .expect("env starts");

    assert!(
        by_default
            .output
            .lines()
            .any(|line| line.starts_with("PATH="))
    );
    assert!(
        !by_default.output.contains("CARGO_PKG_NAME="),
        "{}",
        by_default.output
    );
    assert!(
        allowed
            .output
            .lines()
            .any(|line| line == "CARGO_PKG_NAME=autofix")
    );
}

#[test]
fn variables_set_for_the_command_reach_it() {
    let dir = workdir();
    let outcome =
        run(&CommandSpec::new("env", NO_ARGS, dir.path()).with_env("GREETING", "hello there"))
            .expect("env starts");

    assert!(
        outcome
            .output
            .lines()
            .any(|line| line == "GREETING=hello there")
    );
}

/// Set in the environment of this test binary when it is re-run as the helper below.
const SECRET_HELPER_SWITCH: &str = "EXEC_RUNNER_SECRET_HELPER";

#[test]
fn a_secret_looking_variable_never_reaches_the_command_even_when_allowed() {
    if std::env::var_os(SECRET_HELPER_SWITCH).is_some() {
        // The re-run: this process holds the variables; show what a command gets of them.
        let dir = workdir();
        let spec = CommandSpec::new("env", NO_ARGS, dir.path())
            .allowing_env("DEPLOY_API_TOKEN")
            .allowing_env("SIGNING_KEY")
            .allowing_env("HARMLESS_SETTING");
        // On a line of its own: libtest prints `test … ... ` before a captured-less test's output.
        print!("\n{}", run(&spec).expect("env starts").output);
        return;
    }
    // The runner reads variables from its own process, and a test may not set its own
    // (set_var is unsafe), so the test re-runs itself with them in its environment.
    let helper = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "exec_runner::a_secret_looking_variable_never_reaches_the_command_even_when_allowed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SECRET_HELPER_SWITCH, "1")
        .env("DEPLOY_API_TOKEN", "s3cret-token")
        .env("SIGNING_KEY", "s3cret-key")
        .env("HARMLESS_SETTING", "plain")
        .output()
        .expect("the helper runs");

    let seen = String::from_utf8_lossy(&helper.stdout);
    assert!(
        helper.status.success(),
        "{seen}\n{}",
        String::from_utf8_lossy(&helper.stderr)
    );
    assert!(
        seen.lines().any(|line| line == "HARMLESS_SETTING=plain"),
        "{seen}"
    );
    assert!(!seen.contains("s3cret"), "{seen}");
}

#[test]
fn setting_a_secret_looking_variable_for_a_command_is_refused() {
    let dir = workdir();
    let message =
        error_of(CommandSpec::new("env", NO_ARGS, dir.path()).with_env("GITHUB_TOKEN", "ghp_x"));

    assert_eq!(
        message,
        "cannot run `env`: refusing to set `GITHUB_TOKEN` for the command: its name looks like a secret"
    );
}

#[test]
fn an_environment_name_with_an_equals_sign_is_refused() {
    let dir = workdir();
    let message = error_of(CommandSpec::new("env", NO_ARGS, dir.path()).allowing_env("A=B"));

    assert_eq!(
        message,
        "cannot run `env`: `A=B` is not a valid environment variable name"
    );
}

#[test]
fn the_program_is_looked_up_on_the_commands_own_path() {
    let dir = workdir();
    let message =
        error_of(CommandSpec::new("ls", NO_ARGS, dir.path()).with_env("PATH", "/nonexistent"));

    assert_eq!(message, "cannot run `ls`: not found on PATH `/nonexistent`");
}

#[test]
fn exit_codes_are_recorded() {
    let dir = workdir();
    let failed = run(&CommandSpec::new("false", NO_ARGS, dir.path())).expect("false starts");
    let custom = run_script(dir.path(), "exit 42\n");

    assert_eq!(failed.exit_code, Some(1));
    assert!(!failed.success());
    assert!(
        failed.describe().starts_with("exit 1 after "),
        "{}",
        failed.describe()
    );
    assert_eq!(custom.exit_code, Some(42));
    assert_eq!(custom.signal, None);
}

#[test]
fn a_command_killed_by_a_signal_records_the_signal() {
    let dir = workdir();
    let outcome = run_script(dir.path(), "kill -TERM $$\nsleep 5\n");

    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(libc::SIGTERM));
    assert!(!outcome.timed_out);
    assert!(
        outcome
            .describe()
            .starts_with("killed by signal 15 (SIGTERM) after "),
        "{}",
        outcome.describe()
    );
}

#[test]
fn a_relative_script_runs_as_itself_from_the_working_directory() {
    let dir = workdir();
    script(dir.path(), "build.sh", "echo \"building in $(pwd)\"\n");

    let outcome =
        run(&CommandSpec::new("./build.sh", NO_ARGS, dir.path())).expect("build.sh starts");

    let real_dir = dir.path().canonicalize().expect("the directory exists");
    assert_eq!(
        outcome.output,
        format!("building in {}\n", real_dir.display())
    );
}

#[test]
fn arguments_reach_the_program_as_they_are_without_a_shell() {
    let dir = workdir();
    let outcome = run(&CommandSpec::new(
        "printf",
        ["%s|", "$HOME", "a b", "; rm -rf /", "*"],
        dir.path(),
    ))
    .expect("printf starts");

    assert_eq!(outcome.output, "$HOME|a b|; rm -rf /|*|");
}

#[test]
fn stdin_is_empty() {
    let dir = workdir();
    let outcome =
        run(&CommandSpec::new("cat", NO_ARGS, dir.path()).with_timeout(NEVER_IN_PRACTICE))
            .expect("cat starts");

    assert!(outcome.success());
    assert_eq!(outcome.output, "");
}

#[test]
fn a_missing_program_is_named_in_the_error() {
    let dir = workdir();
    let message = error_of(CommandSpec::new(
        "no-such-program-for-autofix",
        NO_ARGS,
        dir.path(),
    ));

    assert!(
        message.starts_with("cannot run `no-such-program-for-autofix`: not found on PATH `"),
        "{message}"
    );
}

#[test]
fn a_missing_script_is_named_with_its_full_path() {
    let dir = workdir();
    let message = error_of(CommandSpec::new("./build.sh", NO_ARGS, dir.path()));

    let expected_path = dir.path().join("./build.sh");
    assert_eq!(
        message,
        format!(
            "cannot run `./build.sh`: `{}` does not exist",
            expected_path.display()
        )
    );
}

#[test]
fn a_script_that_is_not_executable_is_refused() {
    let dir = workdir();
    let path = script(dir.path(), "build.sh", "echo hi\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("permissions changed");

    let message = error_of(CommandSpec::new("./build.sh", NO_ARGS, dir.path()));

    assert!(
        message.starts_with("cannot run `./build.sh`: `"),
        "{message}"
    );
    assert!(
        message.ends_with("build.sh` is not executable (mode 644); make it executable (chmod +x)"),
        "{message}"
    );
}

#[test]
fn a_script_without_a_shebang_is_refused_rather_than_handed_to_a_shell() {
    let dir = workdir();
    let path = dir.path().join("build.sh");
    fs::write(&path, "echo hi\n").expect("script written");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("permissions changed");

    let message = error_of(CommandSpec::new("./build.sh", NO_ARGS, dir.path()));

    assert!(
        message.contains("build.sh` has no `#!` line and is not a binary"),
        "{message}"
    );
}

#[test]
fn a_directory_is_not_a_program() {
    let dir = workdir();
    fs::create_dir(dir.path().join("tools")).expect("directory created");

    let message = error_of(CommandSpec::new("./tools", NO_ARGS, dir.path()));

    assert!(message.ends_with("tools` is a directory"), "{message}");
}

#[test]
fn an_empty_program_name_is_refused() {
    let dir = workdir();
    assert_eq!(
        error_of(CommandSpec::new("", NO_ARGS, dir.path())),
        "cannot run ``: the program name is empty"
    );
}

#[test]
fn a_missing_working_directory_is_named_in_the_error() {
    let dir = workdir();
    let gone = dir.path().join("gone");

    let message = error_of(CommandSpec::new("true", NO_ARGS, &gone));

    assert_eq!(
        message,
        format!(
            "cannot run `true`: working directory `{}` does not exist",
            gone.display()
        )
    );
}

#[test]
fn a_file_as_working_directory_is_refused() {
    let dir = workdir();
    let file = dir.path().join("notes.txt");
    fs::write(&file, "not a directory").expect("file written");

    let message = error_of(CommandSpec::new("true", NO_ARGS, &file));

    assert_eq!(
        message,
        format!(
            "cannot run `true`: working directory `{}` is not a directory",
            file.display()
        )
    );
}

#[tokio::test]
async fn the_runner_can_be_awaited_from_async_code() {
    let dir = workdir();
    let outcome = run_async(CommandSpec::new("echo", ["from", "async"], dir.path()))
        .await
        .expect("echo starts");

    assert_eq!(outcome.output, "from async\n");
}

#[test]
fn an_outcome_describes_itself_in_one_line() {
    let ended = |exit_code, signal, timed_out, millis| CommandOutcome {
        exit_code,
        signal,
        timed_out,
        duration: Duration::from_millis(millis),
        output: String::new(),
        output_bytes: 0,
        truncated: false,
    };

    assert_eq!(
        ended(Some(1), None, false, 2_300).describe(),
        "exit 1 after 2.3 s"
    );
    assert_eq!(
        ended(None, Some(9), true, 10_004).describe(),
        "killed after timeout of 10 s"
    );
    assert_eq!(
        ended(None, Some(9), false, 400).describe(),
        "killed by signal 9 (SIGKILL) after 0.4 s"
    );
}
