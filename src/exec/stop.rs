//! A stop signal for running commands: set from another task to end a command at once (its
//! process group killed, as a timeout would), e.g. when another candidate already won.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cheap to clone; every clone sees the same flag. A [`child`](StopSignal::child) is stopped
/// by its own flag or by any of its ancestors'.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    own: Arc<AtomicBool>,
    ancestors: Vec<Arc<AtomicBool>>,
}

impl StopSignal {
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// Stops this signal and its children, not its ancestors.
    pub fn stop(&self) {
        self.own.store(true, Ordering::SeqCst);
    }

    pub fn is_stopped(&self) -> bool {
        self.own.load(Ordering::SeqCst)
            || self
                .ancestors
                .iter()
                .any(|flag| flag.load(Ordering::SeqCst))
    }

    /// A new signal stopped by its own `stop` or by this one's.
    pub fn child(&self) -> StopSignal {
        let mut ancestors = self.ancestors.clone();
        ancestors.push(self.own.clone());
        StopSignal {
            own: Arc::new(AtomicBool::new(false)),
            ancestors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_stops_with_its_parent_but_not_the_other_way_round() {
        let job = StopSignal::new();
        let first = job.child();
        let second = job.child();
        first.stop();
        assert!(first.is_stopped());
        assert!(!second.is_stopped(), "a sibling runs on");
        assert!(!job.is_stopped(), "the parent runs on");
        job.stop();
        assert!(second.is_stopped(), "stopping the job stops every child");
    }
}
