//! Watching a spawned command: reading its output pipe while waiting for it to exit or time
//! out, killing its process group, and reaping it without ever racing a reused pid.

use std::io::{self, PipeReader, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::Child;
use std::time::{Duration, Instant};

use super::StopSignal;
use super::capture::{CappedOutput, CapturedText};

/// Bytes read from the pipe at once: its default capacity on Linux.
const READ_CHUNK: usize = 64 * 1024;
/// How often to look at the child when the kernel offers no pidfd to wake us on its exit.
const EXIT_CHECK_INTERVAL: Duration = Duration::from_millis(20);
/// How long to keep reading after the group is killed. Its members die at once; only a
/// process that left the group (a new session) could hold the pipe open longer.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How often a command that may be stopped looks at its stop signal.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// How the supervised command ended.
pub(super) struct Supervised {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Ended by its stop signal.
    pub stopped: bool,
    pub duration: Duration,
    pub output: CapturedText,
}

/// Why watching a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    Exited,
    TimedOut,
    Stopped,
}

/// Runs `child` (the leader of its own process group, writing to `pipe`) to its end.
///
/// The child is not reaped until its group has been killed: as an unreaped zombie it keeps
/// its pid, so the group id we signal cannot have been handed to another process.
pub(super) fn supervise(
    child: &mut Child,
    pipe: PipeReader,
    timeout: Duration,
    output_limit: usize,
    stop: Option<&StopSignal>,
) -> io::Result<Supervised> {
    let started = Instant::now();
    let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
    let mut output = OutputPipe::new(pipe, output_limit);
    let watched = watch(pid, &mut output, started.checked_add(timeout), stop);
    let duration = started.elapsed();

    // On timeout this ends the command; after a normal exit it clears away what the command
    // left behind (a background job still holding the pipe). The child itself is killed by
    // pid as well, in case it moved to another group; unreaped, its pid is still its own.
    // This also runs when watching failed, so no error leaves a command running.
    kill_group(pid);
    let _ = child.kill();
    let drained = output.drain(DRAIN_GRACE);
    let status = child.wait()?;
    let watched = watched?;
    let mut captured = output.finish();
    if !drained? {
        captured.text.push_str(
            "[... stopped reading: a process outside the command's group kept its output open ...]\n",
        );
    }
    Ok(Supervised {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out: watched == Watched::TimedOut,
        stopped: watched == Watched::Stopped,
        duration,
        output: captured,
    })
}

/// Reads output until the child exits, `deadline` passes or `stop` is set.
fn watch(
    pid: libc::pid_t,
    output: &mut OutputPipe,
    deadline: Option<Instant>,
    stop: Option<&StopSignal>,
) -> io::Result<Watched> {
    let exit_notice = open_pidfd(pid);
    while !has_exited(pid)? {
        if stop.is_some_and(StopSignal::is_stopped) {
            return Ok(Watched::Stopped);
        }
        let remaining = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        });
        if remaining.is_zero() {
            return Ok(Watched::TimedOut);
        }
        let mut wait = if exit_notice.is_some() {
            remaining
        } else {
            remaining.min(EXIT_CHECK_INTERVAL)
        };
        if stop.is_some() {
            wait = wait.min(STOP_CHECK_INTERVAL);
        }
        output.read_when_ready(exit_notice.as_ref().map(AsFd::as_fd), wait)?;
    }
    Ok(Watched::Exited)
}

/// The read end of the command's output pipe and what has been captured from it.
struct OutputPipe {
    reader: PipeReader,
    open: bool,
    buffer: Vec<u8>,
    captured: CappedOutput,
}

impl OutputPipe {
    fn new(reader: PipeReader, limit: usize) -> Self {
        Self {
            reader,
            open: true,
            buffer: vec![0; READ_CHUNK],
            captured: CappedOutput::new(limit),
        }
    }

    /// Waits up to `wait` for output (reading one chunk of it) or for `exit_notice`.
    fn read_when_ready(
        &mut self,
        exit_notice: Option<BorrowedFd<'_>>,
        wait: Duration,
    ) -> io::Result<()> {
        let pipe = self.open.then(|| self.reader.as_fd());
        if poll_readable(pipe, exit_notice, wait)? {
            self.read_chunk();
        }
        Ok(())
    }

    /// Reads until every writer has closed the pipe; false when `grace` ran out first.
    fn drain(&mut self, grace: Duration) -> io::Result<bool> {
        let give_up_at = Instant::now() + grace;
        while self.open {
            let remaining = give_up_at.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(false);
            }
            if poll_readable(Some(self.reader.as_fd()), None, remaining)? {
                self.read_chunk();
            }
        }
        Ok(true)
    }

    fn read_chunk(&mut self) {
        match self.reader.read(&mut self.buffer) {
            Ok(0) => self.open = false,
            Ok(n) => self.captured.push(&self.buffer[..n]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!(%error, "reading a command's output failed; the rest is lost");
                self.open = false;
            }
        }
    }

    fn finish(self) -> CapturedText {
        self.captured.finish()
    }
}

/// Polls until `pipe` is readable (data or end of file), `exit_notice` fires, or `wait`
/// passes. Returns whether the pipe is ready; an interrupted poll counts as a wake-up.
fn poll_readable(
    pipe: Option<BorrowedFd<'_>>,
    exit_notice: Option<BorrowedFd<'_>>,
    wait: Duration,
) -> io::Result<bool> {
    let mut fds: Vec<libc::pollfd> = [pipe, exit_notice]
        .into_iter()
        .map(|fd| libc::pollfd {
            fd: fd.map_or(-1, |fd| fd.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let timeout_ms = libc::c_int::try_from(wait.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a valid array of pollfd for the duration of the call; a negative fd
    // is ignored by poll.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if ready < 0 {
        let error = io::Error::last_os_error();
        return if error.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(error)
        };
    }
    Ok(pipe.is_some() && fds[0].revents != 0)
}

/// Whether the child has exited, without reaping it.
fn has_exited(pid: libc::pid_t) -> io::Result<bool> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` outlives the call; WNOWAIT leaves the child to be reaped by `Child::wait`.
        let result = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if result == 0 {
            // SAFETY: waitid succeeded, so si_pid is set (zero when the child is still running).
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// SIGKILLs every process in the group led by `pid`. An empty group is not an error.
fn kill_group(pid: libc::pid_t) {
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe { libc::killpg(pid, libc::SIGKILL) };
}

/// A descriptor that becomes readable when `pid` exits, so waiting costs no polling.
/// `None` where the kernel does not offer one; the caller then checks periodically.
#[cfg(target_os = "linux")]
fn open_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the descriptor was just returned to us by the kernel and nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(not(target_os = "linux"))]
fn open_pidfd(_pid: libc::pid_t) -> Option<OwnedFd> {
    None
}
