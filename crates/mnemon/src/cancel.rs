//! A flag through which a caller withdraws a write it has sent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation flag for writes: an [`crate::Engine`] handle made with
/// [`crate::Engine::with_cancel`] carries it into each write it sends.
///
/// The writer thread looks at the flag once per write, when it takes the
/// write into a group and before it plans anything: a write whose flag is
/// raised by then is skipped and answers [`crate::Error::Cancelled`],
/// having written nothing. A write planned before the flag rose commits
/// as usual and answers its outcome (the log holds it); cancelling cannot
/// undo it. Clones share one flag; raising it cannot be undone.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A flag not raised.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Raises the flag (for every clone).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// True once [`CancelToken::cancel`] was called on any clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}
