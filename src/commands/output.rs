//! What the commands print on standard output: a reader that stops reading (`| head -c1`) ends
//! the command quietly, as it would a Unix tool, instead of a panic on the broken pipe.

use std::io::Write;

/// The exit status of a command whose reader went away: 128 + SIGPIPE, as a shell reports a
/// tool the signal ended.
pub const READER_GONE: i32 = 141;

/// Prints `line` and a newline.
pub fn line(line: &str) {
    write_all(&[line.as_bytes(), b"\n"]);
}

/// Prints `text` as it is.
pub fn text(text: &str) {
    write_all(&[text.as_bytes()]);
}

fn write_all(pieces: &[&[u8]]) {
    let mut out = std::io::stdout().lock();
    let written = pieces
        .iter()
        .try_for_each(|piece| out.write_all(piece))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(READER_GONE),
        // Another fault (a full disk behind a redirection): said once, and the command ends.
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "autofix: cannot write the output: {err}");
            std::process::exit(1)
        }
    }
}
