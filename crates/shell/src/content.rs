//! Content kept in the object store, as the light shell meets it.
//!
//! The interpreter is synchronous and runs inside one SQLite transaction,
//! while a chunk whose bytes moved to the object store (see
//! `stead_vfs::tier`) can only be read asynchronously. So, as with the
//! network (`crate::net`), an exec that needs such a chunk runs as a
//! replay: every filesystem call that answers [`VfsError::Tiered`] notes
//! the chunks it named in the exec's [`ContentWait`], and the budget ends
//! the exec at its next command or loop iteration
//! ([`LimitKind::ContentWait`]). The host rolls the exec back, brings the
//! chunks back into the database (verified against their hashes) and runs
//! the exec again from the start, until a run meets none: that run is the
//! one kept, so no script ever sees a half-read file. A run that noted a
//! chunk is never kept, whatever the utility did with the error (printed
//! it, or went on without the bytes).
//!
//! The wait reaches the filesystem calls through [`with_wait`] (a
//! thread-local for the length of the exec). Without one (a host with no
//! object store) a tiered chunk is the plain `EIO` error it always was.
//!
//! [`LimitKind::ContentWait`]: crate::LimitKind::ContentWait

use std::cell::RefCell;
use std::rc::Rc;

use stead_vfs::VfsError;

/// The tiered chunks one run of an exec needed.
#[derive(Debug, Default)]
pub struct ContentWait {
    chunks: RefCell<Vec<i64>>,
}

impl ContentWait {
    /// The chunks noted since the last call, each once, in id order.
    pub fn take(&self) -> Vec<i64> {
        let mut chunks = self.chunks.take();
        chunks.sort_unstable();
        chunks.dedup();
        chunks
    }

    /// Whether the run noted any.
    pub fn waiting(&self) -> bool {
        !self.chunks.borrow().is_empty()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<ContentWait>>> = const { RefCell::new(None) };
}

/// Runs `body` (an exec) noting the tiered chunks it meets in `wait`.
pub fn with_wait<R>(wait: &Rc<ContentWait>, body: impl FnOnce() -> R) -> R {
    struct Reset(Option<Rc<ContentWait>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|current| current.replace(previous));
        }
    }
    let previous = CURRENT.with(|current| current.replace(Some(wait.clone())));
    let _reset = Reset(previous);
    body()
}

/// Notes the chunks `error` names, when it is that they are tiered and the
/// exec has a wait.
pub(crate) fn note(error: &VfsError) {
    if let VfsError::Tiered { chunks } = error {
        CURRENT.with(|current| {
            if let Some(wait) = current.borrow().as_ref() {
                wait.chunks.borrow_mut().extend_from_slice(chunks);
            }
        });
    }
}

/// Whether the exec running now has met a tiered chunk (it must stop).
pub(crate) fn waiting() -> bool {
    CURRENT.with(|current| current.borrow().as_ref().is_some_and(|w| w.waiting()))
}
