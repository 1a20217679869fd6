//! A check's log read off the network chunk by chunk, keeping only its end: the one reader both
//! forge clients use, so a log of any size costs at most [`MAX_CHECK_LOG_BYTES`] of memory.

use std::time::Duration;

use tokio::time::Instant;

use super::{ForgeError, MAX_CHECK_LOG_BYTES};

/// Bytes of one log downloaded at most; a longer log is cut off there.
pub const MAX_CHECK_LOG_READ_BYTES: u64 = 512 * 1024 * 1024;

/// How long downloading one log may take, from the request to its last byte.
pub const MAX_CHECK_LOG_READ_TIME: Duration = Duration::from_secs(300);

/// How much of a log is read and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimits {
    /// The end of the log kept, in bytes.
    pub keep: usize,
    /// Bytes read at most.
    pub max_read: u64,
    /// How long the whole read may take.
    pub max_time: Duration,
}

impl Default for LogLimits {
    fn default() -> Self {
        LogLimits {
            keep: MAX_CHECK_LOG_BYTES,
            max_read: MAX_CHECK_LOG_READ_BYTES,
            max_time: MAX_CHECK_LOG_READ_TIME,
        }
    }
}

/// What a log read is, for its errors: the forge and the action (`read the log of check …`).
pub(crate) struct LogSource<'a> {
    pub forge: &'static str,
    pub action: &'a str,
}

impl LogSource<'_> {
    fn broke_off(&self, message: String) -> ForgeError {
        ForgeError::Transient {
            forge: self.forge,
            action: self.action.to_owned(),
            message,
        }
    }
}

/// Why a read ended before the log did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CutShort {
    Bytes(u64),
    Time(Duration),
}

/// Sends `request` (to an address that needs no credential) and reads its successful answer's
/// body to its end, the byte cap or the deadline (`limits.max_time` from now), whichever first.
pub(crate) async fn download(
    request: reqwest::RequestBuilder,
    limits: &LogLimits,
    source: &LogSource<'_>,
) -> Result<String, ForgeError> {
    let deadline = Instant::now() + limits.max_time;
    let response = match tokio::time::timeout_at(deadline, request.send()).await {
        Err(_) => {
            return Err(source.broke_off(format!(
                "the log download did not answer within {} s",
                limits.max_time.as_secs()
            )));
        }
        Ok(Err(error)) => {
            return Err(source.broke_off(format!("the log download failed: {error}")));
        }
        Ok(Ok(response)) => response,
    };
    if !response.status().is_success() {
        return Err(source.broke_off(format!(
            "the log download answered {}",
            response.status().as_u16()
        )));
    }
    read_tail(response, limits, deadline, source).await
}

/// Reads `response`'s body chunk by chunk into a tail of `limits.keep` bytes until it ends, the
/// byte cap or `deadline`; a read cut short says so on its last line.
pub(crate) async fn read_tail(
    mut response: reqwest::Response,
    limits: &LogLimits,
    deadline: Instant,
    source: &LogSource<'_>,
) -> Result<String, ForgeError> {
    let started = Instant::now();
    let mut tail = Tail::new(limits.keep);
    let cut = loop {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => break Some(CutShort::Time(started.elapsed())),
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => break None,
            Ok(Err(error)) if error.is_timeout() => break Some(CutShort::Time(started.elapsed())),
            Ok(Err(error)) => {
                return Err(source.broke_off(format!(
                    "the log download broke off after {} bytes: {error}",
                    tail.seen
                )));
            }
        };
        let room = limits.max_read.saturating_sub(tail.seen);
        if (chunk.len() as u64) > room {
            tail.push(&chunk[..room as usize]);
            break Some(CutShort::Bytes(limits.max_read));
        }
        tail.push(&chunk);
    };
    // Closes the connection of a read cut short instead of draining what is left.
    drop(response);
    let mut text = tail.into_text();
    match cut {
        None => {}
        Some(CutShort::Bytes(bytes)) => text.push_str(&format!(
            "\n[autofix stopped reading this log here, after {bytes} bytes, its most; the log goes on]"
        )),
        Some(CutShort::Time(took)) => text.push_str(&format!(
            "\n[autofix stopped reading this log here, after {} s, its longest; the log goes on]",
            took.as_secs()
        )),
    }
    Ok(text)
}

/// The text of the last `keep` bytes of `bytes` (a log some transport read whole).
pub(crate) fn tail_of(bytes: &[u8], keep: usize) -> String {
    let mut tail = Tail::new(keep);
    tail.push(bytes);
    tail.into_text()
}

/// The last `capacity` bytes pushed into it, in a buffer that never grows past `capacity`.
struct Tail {
    bytes: Vec<u8>,
    capacity: usize,
    /// Once full: where the next byte goes, which is where the oldest kept byte is.
    next: usize,
    /// Every byte pushed, kept or not.
    seen: u64,
}

impl Tail {
    fn new(capacity: usize) -> Tail {
        Tail {
            bytes: Vec::new(),
            capacity,
            next: 0,
            seen: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.seen += chunk.len() as u64;
        if self.capacity == 0 {
            return;
        }
        let mut chunk = &chunk[chunk.len().saturating_sub(self.capacity)..];
        if self.bytes.len() < self.capacity {
            let room = self.capacity - self.bytes.len();
            let (now, rest) = chunk.split_at(room.min(chunk.len()));
            self.bytes.extend_from_slice(now);
            chunk = rest;
        }
        while !chunk.is_empty() {
            let n = (self.capacity - self.next).min(chunk.len());
            self.bytes[self.next..self.next + n].copy_from_slice(&chunk[..n]);
            self.next = (self.next + n) % self.capacity;
            chunk = &chunk[n..];
        }
    }

    /// The kept bytes as text, oldest first. When the start of the log was dropped, the kept
    /// part starts at its first whole line (or, with no line break, its first whole character).
    fn into_text(mut self) -> String {
        self.bytes.rotate_left(self.next);
        let dropped = self.seen > self.bytes.len() as u64;
        let start = if !dropped {
            0
        } else {
            match self.bytes.iter().position(|&byte| byte == b'\n') {
                Some(newline) if newline + 1 < self.bytes.len() => newline + 1,
                _ => self
                    .bytes
                    .iter()
                    .position(|&byte| (byte & 0b1100_0000) != 0b1000_0000)
                    .unwrap_or(self.bytes.len()),
            }
        };
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(capacity: usize, chunks: &[&[u8]]) -> (Vec<u8>, u64) {
        let mut tail = Tail::new(capacity);
        for chunk in chunks {
            tail.push(chunk);
        }
        let seen = tail.seen;
        let mut bytes = tail.bytes;
        bytes.rotate_left(tail.next);
        (bytes, seen)
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_whatever_the_chunks() {
        let log: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        for chunk_size in [1, 7, 64, 999, 1000, 1001, 10_000] {
            let chunks: Vec<&[u8]> = log.chunks(chunk_size).collect();
            let (bytes, seen) = kept(1000, &chunks);
            assert_eq!(bytes, &log[9000..], "chunks of {chunk_size}");
            assert_eq!(seen, 10_000);
        }
        let (bytes, _) = kept(1000, &[&log[..300]]);
        assert_eq!(bytes, &log[..300], "a short log is kept whole");
    }

    #[test]
    fn a_cut_log_starts_at_its_first_whole_line() {
        assert_eq!(
            tail_of(b"first line\nsecond line\nthird\n", 16),
            "third\n",
            "`cond line` is a piece of a line"
        );
        assert_eq!(tail_of(b"whole\nlog\n", 100), "whole\nlog\n");
        let one_line = "é".repeat(10);
        assert_eq!(tail_of(one_line.as_bytes(), 5), "éé", "no half character");
    }

    /// A server on a real socket answering one request with `status` and then `body` in
    /// `chunk`-sized writes, holding the connection open afterwards when `hang` is set.
    async fn serve(status: u16, body: Vec<u8>, chunk: usize, hang: bool) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                let read = socket.read(&mut buffer).await.unwrap();
                request.extend_from_slice(&buffer[..read]);
            }
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            for part in body.chunks(chunk) {
                if socket.write_all(part).await.is_err() {
                    return;
                }
            }
            if hang {
                std::future::pending::<()>().await;
            }
        });
        format!("http://{address}/log")
    }

    fn limits(keep: usize, max_read: u64, max_time: Duration) -> LogLimits {
        LogLimits {
            keep,
            max_read,
            max_time,
        }
    }

    async fn fetch(url: &str, limits: &LogLimits) -> Result<String, ForgeError> {
        let source = LogSource {
            forge: "GitHub",
            action: "read the log of check `test`",
        };
        download(reqwest::Client::new().get(url), limits, &source).await
    }

    fn lines(count: usize) -> Vec<u8> {
        (0..count)
            .map(|n| format!("step {n:06} compiles\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[tokio::test]
    async fn a_long_log_read_whole_keeps_its_last_lines() {
        let mut log = lines(50_000);
        log.extend_from_slice(b"test_calc.py::test_end FAILED\n");
        let url = serve(200, log, 8192, false).await;

        let text = fetch(&url, &limits(4096, 10 << 20, Duration::from_secs(60)))
            .await
            .unwrap();

        assert!(text.ends_with("step 049999 compiles\ntest_calc.py::test_end FAILED\n"));
        assert!(text.len() <= 4096 && text.starts_with("step "), "{text}");
    }

    #[tokio::test]
    async fn a_log_longer_than_the_byte_cap_is_cut_there_and_says_so() {
        let url = serve(200, lines(100_000), 8192, false).await;

        let text = fetch(&url, &limits(4096, 64 * 1024, Duration::from_secs(60)))
            .await
            .unwrap();

        let (log, note) = text.rsplit_once('\n').unwrap();
        assert_eq!(
            note,
            "[autofix stopped reading this log here, after 65536 bytes, its most; the log goes on]"
        );
        // 65,536 bytes are 3,120 lines of 21 bytes and the start of the next.
        assert!(
            log.ends_with("step 003119 compiles\nstep 003120 comp"),
            "{log}"
        );
    }

    #[tokio::test]
    async fn a_log_that_stops_coming_is_cut_at_the_time_cap() {
        let url = serve(200, lines(10), 1000, true).await;

        let text = fetch(&url, &limits(4096, 1 << 20, Duration::from_millis(300)))
            .await
            .unwrap();

        assert!(text.starts_with("step 000000 compiles\n"), "{text}");
        assert!(text.contains("step 000009 compiles\n"), "{text}");
        assert!(
            text.ends_with("its longest; the log goes on]"),
            "the read ended at its deadline: {text}"
        );
    }

    #[tokio::test]
    async fn a_refused_download_is_a_transient_error_naming_the_status() {
        let url = serve(503, b"busy".to_vec(), 4, false).await;

        let error = fetch(&url, &LogLimits::default()).await.unwrap_err();

        assert!(error.is_retryable());
        assert!(error.to_string().contains("answered 503"), "{error}");
    }
}
