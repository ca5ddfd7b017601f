//! The network as the light shell's utilities see it: HTTP requests
//! answered from a [`Journal`] the host fills in between runs of an exec.
//!
//! The interpreter is synchronous and runs inside one SQLite transaction,
//! while the platform's outbound fetch is asynchronous: a utility cannot
//! wait for an answer. So an exec that needs the network runs as a
//! deterministic replay. When a utility (git's transport) asks for a
//! request the journal has no answer for, the journal notes it and the
//! utility ends the exec with [`LimitKind::NetworkWait`]; the host rolls
//! the exec's changes back, makes the request, records the answer and runs
//! the exec again from the start. Everything before that point happens
//! again exactly (same files, same input, the host replays the same clock
//! readings), so the utility asks for the same requests in the same order
//! and gets the recorded answers, until a run finishes without waiting:
//! that run is the one kept. A run that asks for something else than was
//! recorded at that place gets an error, never another request's answer.
//!
//! The journal reaches the utilities through [`with_journal`] (a
//! thread-local for the length of the exec) rather than through the
//! interpreter, which never sees it.
//!
//! [`LimitKind::NetworkWait`]: crate::LimitKind::NetworkWait

use std::cell::{Cell, RefCell};
use std::rc::Rc;

pub use stead_git::transport::{Method, Request, Response};

/// What a request got: the answer, or why it could not be made.
pub type Answer = Result<Response, String>;

/// The requests one exec made and their answers, in order.
#[derive(Debug, Default)]
pub struct Journal {
    answers: RefCell<Vec<(Request, Answer)>>,
    /// How many answers this run has used.
    next: Cell<usize>,
    /// The request this run stopped for.
    pending: RefCell<Option<Request>>,
}

/// What a utility gets when it asks for a request.
pub(crate) enum Lookup {
    Ready(Answer),
    /// Not answered yet: the exec must stop (the host will make it).
    Wait,
}

impl Journal {
    /// Starts another run of the exec: answers are used from the first.
    pub fn begin_run(&self) {
        self.next.set(0);
        self.pending.replace(None);
    }

    /// The request the last run stopped for, if it stopped for one.
    pub fn take_pending(&self) -> Option<Request> {
        self.pending.take()
    }

    /// Whether the last run stopped for a request.
    pub fn waiting(&self) -> bool {
        self.pending.borrow().is_some()
    }

    /// Records the answer to the next request.
    pub fn record(&self, request: Request, answer: Answer) {
        self.answers.borrow_mut().push((request, answer));
    }

    /// How many requests have been answered.
    pub fn len(&self) -> usize {
        self.answers.borrow().len()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn lookup(&self, request: &Request) -> Lookup {
        let at = self.next.get();
        self.next.set(at + 1);
        match self.answers.borrow().get(at) {
            Some((asked, answer)) if asked == request => Lookup::Ready(answer.clone()),
            Some((asked, _)) => Lookup::Ready(Err(format!(
                "the exec asked for {} where it had asked for {} when it first ran (the script \
                 is not deterministic)",
                request.url, asked.url
            ))),
            None => {
                self.pending.replace(Some(request.clone()));
                Lookup::Wait
            }
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Journal>>> = const { RefCell::new(None) };
}

/// Runs `body` (an exec) with `journal` as its network.
pub fn with_journal<R>(journal: &Rc<Journal>, body: impl FnOnce() -> R) -> R {
    struct Reset(Option<Rc<Journal>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|current| current.replace(previous));
        }
    }
    let previous = CURRENT.with(|current| current.replace(Some(journal.clone())));
    let _reset = Reset(previous);
    body()
}

/// The journal of the exec running now; `None` when the host gave none
/// (there is no network).
pub(crate) fn current() -> Option<Rc<Journal>> {
    CURRENT.with(|current| current.borrow().clone())
}
