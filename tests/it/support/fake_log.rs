//! A check's log as the fake forges serve it: a text, or a log of any size generated while it is
//! sent (one 64 KiB block of build lines over and over, then its last lines), never held whole.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};

/// The lines the generated part is made of: a build that goes on and on without a failure.
const FILLER_LINE: &str = "2024-05-01T10:11:12.0000000Z    Compiling widget-parts v0.1.0\n";
const BLOCK_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeLog {
    Text(String),
    Generated {
        /// How many filler blocks come before `end`.
        blocks: u64,
        end: String,
    },
}

impl FakeLog {
    /// About `bytes` of filler lines, then `end`.
    pub fn generated(bytes: u64, end: &str) -> FakeLog {
        FakeLog::Generated {
            blocks: bytes / BLOCK_BYTES as u64,
            end: end.to_owned(),
        }
    }

    /// The body the fake sends, produced as it is read.
    pub fn body(&self) -> Body {
        match self {
            FakeLog::Text(text) => Body::from(text.clone()),
            FakeLog::Generated { blocks, end } => Body::new(Generated {
                block: filler_block(),
                blocks_left: *blocks,
                end: Some(Bytes::from(end.clone())),
            }),
        }
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            FakeLog::Text(text) => text.len() as u64,
            FakeLog::Generated { blocks, end } => {
                blocks * filler_block().len() as u64 + end.len() as u64
            }
        }
    }
}

impl From<&str> for FakeLog {
    fn from(text: &str) -> FakeLog {
        FakeLog::Text(text.to_owned())
    }
}

fn filler_block() -> Bytes {
    Bytes::from(FILLER_LINE.repeat(BLOCK_BYTES / FILLER_LINE.len()))
}

/// The generated log as an HTTP body: each frame is the same shared block.
struct Generated {
    block: Bytes,
    blocks_left: u64,
    end: Option<Bytes>,
}

impl http_body::Body for Generated {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.blocks_left > 0 {
            self.blocks_left -= 1;
            return Poll::Ready(Some(Ok(Frame::data(self.block.clone()))));
        }
        Poll::Ready(self.end.take().map(|end| Ok(Frame::data(end))))
    }

    fn is_end_stream(&self) -> bool {
        self.blocks_left == 0 && self.end.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let end = self.end.as_ref().map_or(0, |end| end.len() as u64);
        SizeHint::with_exact(self.blocks_left * self.block.len() as u64 + end)
    }
}
