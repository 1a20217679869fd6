//! Output capture under a byte cap: the first half kept as written, the last half in a ring,
//! everything counted, so a command printing gigabytes costs at most `limit` bytes of memory.

/// Bytes a command wrote, keeping only the head and the tail once they exceed the limit.
pub(super) struct CappedOutput {
    head: Vec<u8>,
    head_capacity: usize,
    tail: TailRing,
    total: u64,
}

/// The decoded result of a capture.
pub(super) struct CapturedText {
    pub text: String,
    pub total: u64,
    pub truncated: bool,
}

impl CappedOutput {
    pub fn new(limit: usize) -> Self {
        let head_capacity = limit / 2;
        Self {
            head: Vec::new(),
            head_capacity,
            tail: TailRing::new(limit - head_capacity),
            total: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room_in_head = self.head_capacity - self.head.len();
        let (for_head, rest) = bytes.split_at(room_in_head.min(bytes.len()));
        self.head.extend_from_slice(for_head);
        self.tail.push(rest);
    }

    /// Joins head and tail (with a marker line where bytes were dropped) and decodes them
    /// lossily: a command's invalid UTF-8 is shown, never an error.
    pub fn finish(self) -> CapturedText {
        let tail = self.tail.into_ordered();
        let kept = (self.head.len() + tail.len()) as u64;
        let omitted = self.total - kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if omitted > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[... {omitted} bytes omitted ...]\n"));
        }
        text.push_str(&String::from_utf8_lossy(&tail));
        CapturedText {
            text,
            total: self.total,
            truncated: omitted > 0,
        }
    }
}

/// The most recent `capacity` bytes. Grows only as output arrives, so a generous limit
/// costs nothing for a quiet command.
struct TailRing {
    bytes: Vec<u8>,
    capacity: usize,
    /// Once full: where the oldest byte sits, which is where the next byte overwrites.
    oldest: usize,
}

impl TailRing {
    fn new(capacity: usize) -> Self {
        Self {
            bytes: Vec::new(),
            capacity,
            oldest: 0,
        }
    }

    fn push(&mut self, mut incoming: &[u8]) {
        if self.capacity == 0 || incoming.is_empty() {
            return;
        }
        if incoming.len() >= self.capacity {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&incoming[incoming.len() - self.capacity..]);
            self.oldest = 0;
            return;
        }
        let room = self.capacity - self.bytes.len();
        let filling = room.min(incoming.len());
        self.bytes.extend_from_slice(&incoming[..filling]);
        incoming = &incoming[filling..];
        while !incoming.is_empty() {
            let run = (self.capacity - self.oldest).min(incoming.len());
            self.bytes[self.oldest..self.oldest + run].copy_from_slice(&incoming[..run]);
            self.oldest = (self.oldest + run) % self.capacity;
            incoming = &incoming[run..];
        }
    }

    fn into_ordered(mut self) -> Vec<u8> {
        self.bytes.rotate_left(self.oldest);
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limit: usize, chunks: &[&str]) -> CapturedText {
        let mut output = CappedOutput::new(limit);
        for chunk in chunks {
            output.push(chunk.as_bytes());
        }
        output.finish()
    }

    #[test]
    fn output_that_fits_exactly_is_kept_whole() {
        let captured = capture(10, &["01234", "56789"]);
        assert_eq!(captured.text, "0123456789");
        assert_eq!(captured.total, 10);
        assert!(!captured.truncated);
    }

    #[test]
    fn output_over_the_limit_keeps_its_first_and_last_halves() {
        let captured = capture(8, &["abcd\n", "middle", "\nwxyz"]);
        assert_eq!(captured.text, "abcd\n[... 8 bytes omitted ...]\nwxyz");
        assert_eq!(captured.total, 16);
        assert!(captured.truncated);
    }

    #[test]
    fn the_tail_follows_many_small_writes_around_the_ring() {
        let chunks: Vec<String> = (0..100).map(|n| format!("{n:02}")).collect();
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let captured = capture(10, &chunks);
        assert_eq!(captured.text, "00010\n[... 190 bytes omitted ...]\n79899");
    }

    #[test]
    fn a_single_huge_write_keeps_only_its_ends() {
        let huge = format!("HEAD{}TAIL", "x".repeat(10_000));
        let captured = capture(8, &[&huge]);
        assert_eq!(captured.text, "HEAD\n[... 10000 bytes omitted ...]\nTAIL");
    }

    #[test]
    fn a_zero_limit_keeps_nothing_but_counts_everything() {
        let captured = capture(0, &["hello"]);
        assert_eq!(captured.text, "[... 5 bytes omitted ...]\n");
        assert_eq!(captured.total, 5);
    }
}
