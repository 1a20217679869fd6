//! The command runner: argv only (never a shell), a timeout that kills the whole process
//! group, interleaved output captured under a cap, an environment allow-list, and the sandbox.

mod capture;
mod environment;
mod program;
pub mod sandbox;
mod stop;
mod supervise;
mod warnings;

pub use environment::{DEFAULT_ENV_ALLOW, looks_like_secret};
pub use sandbox::{Access, Jail, Limits, Sandbox, SandboxMode};
pub use stop::StopSignal;
pub use warnings::warning_lines;

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use environment::ChildEnvironment;

/// What to run and under which limits.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// argv[0]: a program on PATH, or a path (a script such as `./build.sh` is run as itself).
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// Names of environment variables passed through from this process when set; no others.
    /// Names that look like secrets are never passed (see [`looks_like_secret`]).
    pub env_allow: Vec<String>,
    /// Variables set explicitly for the command (never secrets: a secret-looking name is refused).
    pub env_set: Vec<(String, String)>,
    /// Most bytes of output kept; the rest is counted and dropped (head and tail kept).
    pub output_limit: usize,
    /// The sandbox and limits the command runs in; `None` runs it as this process's own child
    /// with no limits (only for the user's own commands on the user's own files).
    pub jail: Option<Jail>,
    /// Ends the command early (its group killed) once set; `None`: it runs to its end.
    pub stop: Option<StopSignal>,
}

impl CommandSpec {
    /// Ten minutes: long enough for a cold build, short enough to notice a hang.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
    /// One MiB: more than a compiler's worth of errors, small enough to store and to show.
    pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

    /// `program args…` in `cwd`, with the default timeout, output limit and
    /// [`DEFAULT_ENV_ALLOW`], and no variables set.
    pub fn new<I>(program: impl Into<String>, args: I, cwd: impl Into<PathBuf>) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            timeout: Self::DEFAULT_TIMEOUT,
            env_allow: DEFAULT_ENV_ALLOW
                .iter()
                .map(|name| name.to_string())
                .collect(),
            env_set: Vec::new(),
            output_limit: Self::DEFAULT_OUTPUT_LIMIT,
            jail: None,
            stop: None,
        }
    }

    /// Runs the command in `jail` (confined unless its sandbox is turned off, limited always).
    pub fn confined(mut self, jail: Jail) -> Self {
        self.jail = Some(jail);
        self
    }

    /// Ends the command as soon as `stop` is set.
    pub fn stopped_by(mut self, stop: StopSignal) -> Self {
        self.stop = Some(stop);
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_output_limit(mut self, output_limit: usize) -> Self {
        self.output_limit = output_limit;
        self
    }

    /// Sets `name=value` for the command, replacing any passed-through value.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env_set.push((name.into(), value.into()));
        self
    }

    /// Passes `name` through from this process when it is set there.
    pub fn allowing_env(mut self, name: impl Into<String>) -> Self {
        self.env_allow.push(name.into());
        self
    }
}

/// How a finished (or killed) command ended.
#[derive(Debug, Clone)]
pub struct CommandOutcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    /// stdout and stderr interleaved in the order written, lossily decoded, capped.
    pub output: String,
    /// Bytes the command wrote in all, including any dropped by the cap.
    pub output_bytes: u64,
    pub truncated: bool,
}

impl CommandOutcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// Whether a validation step passes: [`success`](Self::success), and no warning lines
    /// when warnings are to fail it.
    pub fn passes(&self, fail_on_warnings: bool) -> bool {
        self.success() && (!fail_on_warnings || warning_lines(&self.output).is_empty())
    }

    /// One line saying how the command ended: `exit 1 after 2.3 s`,
    /// `killed after timeout of 10 s`, `killed by signal 9 (SIGKILL) after 0.4 s`.
    pub fn describe(&self) -> String {
        let took = seconds(self.duration);
        match (self.timed_out, self.exit_code, self.signal) {
            (true, _, _) => format!("killed after timeout of {took}"),
            (false, Some(code), _) => format!("exit {code} after {took}"),
            (false, None, Some(signal)) => match signal_name(signal) {
                Some(name) => format!("killed by signal {signal} ({name}) after {took}"),
                None => format!("killed by signal {signal} after {took}"),
            },
            (false, None, None) => format!("ended without an exit status after {took}"),
        }
    }
}

/// Tenths of a second for short runs; whole seconds once the tenths stop mattering.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.1} s")
    } else {
        format!("{secs:.0} s")
    }
}

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

/// The command could not be started at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The sandbox did not start, so the command never ran: the job fails closed.
    #[error(
        "the sandbox could not start `{program}`: {detail}; {}",
        sandbox::HOW_TO_FIX
    )]
    SandboxUnavailable { program: String, detail: String },
}

impl ExecError {
    pub fn is_sandbox_unavailable(&self) -> bool {
        matches!(self, ExecError::SandboxUnavailable { .. })
    }
}

/// The PATH a command gets when it sets none of its own: this process's, passed through (or
/// the runner's fallback when it has none).
pub fn command_path() -> OsString {
    let allow: Vec<String> = DEFAULT_ENV_ALLOW
        .iter()
        .map(|name| name.to_string())
        .collect();
    ChildEnvironment::build(&allow, &[])
        .ok()
        .and_then(|environment| environment.path().map(OsString::from))
        .unwrap_or_else(|| OsString::from(program::FALLBACK_PATH))
}

/// Where a command would find `program` (a name without a slash) on [`command_path`], as the
/// runner looks it up before it starts the command; `None` when it is not there.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() || program.contains('/') {
        return None;
    }
    program::look_up_on_path(program, &command_path()).ok()
}

/// The end of a command's output, where errors usually are: at most `limit` bytes, starting
/// on a whole line, after a marker saying how much came before (the full output is in a log).
pub fn output_tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    let tail = tail.find('\n').map_or(tail, |at| &tail[at + 1..]);
    format!(
        "[... {} earlier bytes in the full log ...]\n{tail}",
        text.len() - tail.len()
    )
}

/// Runs `spec` to completion or timeout. Blocking: call from `spawn_blocking` in async code
/// (or use [`run_async`]).
///
/// The program is executed directly with `args` as its argv, never through a shell; stdin
/// is `/dev/null`; stdout and stderr share one pipe so their order is kept. The command leads
/// its own process group, which is SIGKILLed on timeout and, after a normal exit, to clear
/// away background processes that would otherwise keep the output open.
pub fn run(spec: &CommandSpec) -> Result<CommandOutcome, ExecError> {
    let spawn_error = |source| ExecError::Spawn {
        program: spec.program.clone(),
        source,
    };
    let cwd = program::working_directory(&spec.cwd).map_err(spawn_error)?;
    let environment =
        ChildEnvironment::build(&spec.env_allow, &spec.env_set).map_err(spawn_error)?;
    let executable =
        program::resolve(&spec.program, &cwd, environment.path()).map_err(spawn_error)?;
    let launch = Launch::new(spec, executable, &cwd, &environment)?;
    let (pipe, status, mut child) = spawn_retrying_busy(&launch).map_err(|source| {
        if launch.confined {
            ExecError::SandboxUnavailable {
                program: spec.program.clone(),
                detail: format!("cannot start `{}`: {source}", launch.executable.display()),
            }
        } else {
            spawn_error(source)
        }
    })?;
    tracing::debug!(program = %spec.program, cwd = %cwd.display(), pid = child.id(), confined = launch.confined, "command started");

    let ended = supervise::supervise(
        &mut child,
        pipe,
        spec.timeout,
        spec.output_limit,
        spec.stop.as_ref(),
    )
    .map_err(|error| {
        spawn_error(io::Error::new(
            error.kind(),
            format!("lost track of the running command: {error}"),
        ))
    })?;
    if let Some(status) = status
        && !sandbox_started(status)
        && !ended.timed_out
        && !ended.stopped
    {
        return Err(ExecError::SandboxUnavailable {
            program: spec.program.clone(),
            detail: ended.output.text.trim().to_string(),
        });
    }
    let mut output = ended.output.text;
    if ended.stopped {
        output.push_str("\n[... stopped before its end: the job no longer needs its result ...]\n");
    }
    let outcome = CommandOutcome {
        exit_code: ended.exit_code,
        signal: ended.signal,
        timed_out: ended.timed_out,
        duration: ended.duration,
        output,
        output_bytes: ended.output.total,
        truncated: ended.output.truncated,
    };
    tracing::debug!(program = %spec.program, outcome = %outcome.describe(), "command ended");
    Ok(outcome)
}

/// Whether bubblewrap reported starting the command on its status descriptor. It writes the
/// child's pid there once every namespace and mount is in place, and nothing when setting up
/// failed (no user namespaces, a mount refused).
fn sandbox_started(mut status: io::PipeReader) -> bool {
    let mut text = String::new();
    let _ = status.read_to_string(&mut text);
    text.contains("\"child-pid\"")
}

/// The descriptor bubblewrap writes its status to, inside the child before exec.
const STATUS_FD: i32 = 3;

/// Everything `exec` needs, worked out before forking: what to execute with which argv and
/// environment, and the limits to set.
struct Launch {
    executable: PathBuf,
    arg0: OsString,
    args: Vec<OsString>,
    cwd: PathBuf,
    variables: Vec<(OsString, OsString)>,
    limits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    confined: bool,
    /// The command's own bytecode folder when it runs unconfined, removed when it ends.
    _bytecode: Option<tempfile::TempDir>,
}

/// Where Python keeps bytecode for a command on repository content: a folder of that command's
/// own, never the work tree's `__pycache__`, so no command imports bytecode an earlier (rolled
/// back) attempt compiled from a source of the same size and second.
const BYTECODE_VARIABLE: &str = "PYTHONPYCACHEPREFIX";

impl Launch {
    fn new(
        spec: &CommandSpec,
        executable: PathBuf,
        cwd: &Path,
        environment: &ChildEnvironment,
    ) -> Result<Launch, ExecError> {
        let mut variables: Vec<(OsString, OsString)> = environment
            .variables()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let plain = |executable: PathBuf, variables| Launch {
            executable,
            arg0: OsString::from(&spec.program),
            args: spec.args.iter().map(OsString::from).collect(),
            cwd: cwd.to_path_buf(),
            variables,
            limits: spec
                .jail
                .as_ref()
                .map(|jail| jail.sandbox().limits().settings())
                .unwrap_or_default(),
            confined: false,
            _bytecode: None,
        };
        let Some(jail) = spec.jail.as_ref() else {
            return Ok(plain(executable, variables));
        };
        variables.retain(|(name, _)| name != BYTECODE_VARIABLE);
        if !jail.sandbox().is_confined() {
            let bytecode = tempfile::Builder::new()
                .prefix("autofix-pycache-")
                .tempdir()
                .map_err(|source| ExecError::Spawn {
                    program: spec.program.clone(),
                    source,
                })?;
            variables.push((BYTECODE_VARIABLE.into(), bytecode.path().into()));
            return Ok(Launch {
                _bytecode: Some(bytecode),
                ..plain(executable, variables)
            });
        }
        // The sandbox's `/tmp` is its own and empty at the start.
        variables.push((BYTECODE_VARIABLE.into(), "/tmp/pycache".into()));
        jail.adjust_environment(&mut variables);
        let bwrap = program::resolve(jail.sandbox().program(), cwd, environment.path()).map_err(
            |source| ExecError::SandboxUnavailable {
                program: spec.program.clone(),
                detail: format!("bubblewrap (`{}`): {source}", jail.sandbox().program()),
            },
        )?;
        let mut args = jail.bwrap_args(cwd, STATUS_FD);
        args.push(executable.into_os_string());
        args.extend(spec.args.iter().map(OsString::from));
        Ok(Launch {
            arg0: OsString::from("bwrap"),
            args,
            confined: true,
            ..plain(bwrap, variables)
        })
    }
}
/// [`run`] on tokio's blocking pool. Dropping the future does not stop the command; its own
/// timeout does.
pub async fn run_async(spec: CommandSpec) -> Result<CommandOutcome, ExecError> {
    let program = spec.program.clone();
    match tokio::task::spawn_blocking(move || run(&spec)).await {
        Ok(result) => result,
        Err(join_error) if join_error.is_panic() => {
            std::panic::resume_unwind(join_error.into_panic())
        }
        Err(_) => Err(ExecError::Spawn {
            program,
            source: io::Error::other("the async runtime shut down before the command finished"),
        }),
    }
}

/// How often to retry a spawn refused with "text file busy", and the first pause between tries
/// (doubled each time: about 1.3 s in all).
const BUSY_RETRIES: u32 = 8;
const BUSY_FIRST_PAUSE: Duration = Duration::from_millis(5);

/// [`spawn`], retried while the kernel reports the program "text file busy". A script written
/// just before (by the edit step) stays open for writing in any child another thread forked
/// meanwhile, until that child execs; the refusal lasts only that long.
fn spawn_retrying_busy(launch: &Launch) -> io::Result<Spawned> {
    let mut pause = BUSY_FIRST_PAUSE;
    for _ in 0..BUSY_RETRIES {
        match spawn(launch) {
            Err(error) if error.kind() == io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            result => return result,
        }
    }
    spawn(launch)
}

/// The output pipe's read end, the sandbox's status pipe (when confined) and the child.
type Spawned = (io::PipeReader, Option<io::PipeReader>, Child);

/// Starts the command with both output streams on the write end of one pipe, and returns the
/// read end. The parent's copies of the write ends are gone when this returns (the `Command`
/// holding them is dropped), so end of file means every process that inherited them is done.
fn spawn(launch: &Launch) -> io::Result<Spawned> {
    let (reader, writer) = io::pipe()?;
    let mut command = Command::new(&launch.executable);
    command
        .arg0(&launch.arg0)
        .args(&launch.args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(launch.variables.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0);
    die_with_the_caller(&mut command);
    limit(&mut command, launch.limits.clone());
    let status_pipe = if launch.confined {
        let (status_reader, status_writer) = io::pipe()?;
        hand_over_status_fd(&mut command, status_writer.as_raw_fd());
        Some((status_reader, status_writer))
    } else {
        None
    };
    let child = command.spawn()?;
    drop(command);
    // Only the child (bubblewrap) keeps the write end: end of file means it is gone.
    let status = status_pipe.map(|(status_reader, _status_writer)| status_reader);
    Ok((reader, status, child))
}

/// Sets the command's resource limits (hard and soft) before it starts.
fn limit(command: &mut Command, settings: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>) {
    if settings.is_empty() {
        return;
    }
    // SAFETY: the closure only calls setrlimit on a vector allocated before the fork.
    unsafe {
        command.pre_exec(move || sandbox::limits::apply(&settings));
    }
}

/// Puts the status pipe's write end at [`STATUS_FD`] in the child, open across exec.
fn hand_over_status_fd(command: &mut Command, fd: i32) {
    // SAFETY: dup2 and fcntl are async-signal-safe; nothing is allocated.
    unsafe {
        command.pre_exec(move || {
            if fd == STATUS_FD {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(fd, STATUS_FD) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Has the kernel SIGKILL the command when the thread that started it dies, as every thread does
/// when this process is SIGKILLed (a crash, an OOM kill): an orphaned build must not go on writing
/// into a worktree that a restarted job makes again at the same path. The starting thread waits
/// for the command, so otherwise it outlives it.
#[cfg(target_os = "linux")]
fn die_with_the_caller(command: &mut Command) {
    let caller = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs in the forked child before exec and calls only prctl and getppid,
    // both async-signal-safe; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The caller may have died before the request took effect: then nobody waits for us.
            if libc::getppid() != caller {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_the_caller(_command: &mut Command) {}

#[cfg(test)]
mod tail_tests {
    use super::output_tail;

    #[test]
    fn a_long_output_keeps_its_last_whole_lines() {
        let text = "first line\nsecond line\nthird line\n";
        assert_eq!(output_tail(text, 100), text);
        assert_eq!(
            output_tail(text, 15),
            "[... 23 earlier bytes in the full log ...]\nthird line\n"
        );
    }
}
