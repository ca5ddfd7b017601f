//! A fake object store (named as such: R2 cannot run in a host test), in
//! memory, with injected faults: the n-th next request fails (a kill point:
//! the caller's future ends there with the error), and a read may answer
//! bytes that are not the object's. Built with the `fake-store` feature,
//! for this crate's tests and the agent's fake host.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::task::{Context, Poll, Waker};

use super::{ObjectStore, StoreError, StoreOp};

/// The fake store: objects in a map, faults armed by the test.
#[derive(Default)]
pub struct FakeStore {
    pub objects: RefCell<BTreeMap<String, Vec<u8>>>,
    requests: Cell<u64>,
    fail_at: Cell<Option<u64>>,
    corrupt_reads: Cell<u32>,
}

impl FakeStore {
    /// The `n`-th request from now (1 is the next) fails.
    pub fn fail_in(&self, n: u64) {
        self.fail_at.set(Some(self.requests.get() + n));
    }

    /// The next `n` reads of an object answer altered bytes.
    pub fn corrupt_reads(&self, n: u32) {
        self.corrupt_reads.set(n);
    }

    /// No fault is armed any more.
    pub fn heal(&self) {
        self.fail_at.set(None);
        self.corrupt_reads.set(0);
    }

    pub fn requests(&self) -> u64 {
        self.requests.get()
    }

    /// Keys under `prefix`.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        self.objects
            .borrow()
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Bytes stored under `chunks/`.
    pub fn chunk_bytes(&self) -> u64 {
        self.objects
            .borrow()
            .iter()
            .filter(|(k, _)| k.starts_with("chunks/"))
            .map(|(_, v)| v.len() as u64)
            .sum()
    }

    fn request(&self, op: StoreOp, key: &str) -> Result<(), StoreError> {
        let n = self.requests.get() + 1;
        self.requests.set(n);
        if self.fail_at.get() == Some(n) {
            self.fail_at.set(None);
            return Err(StoreError::Failed {
                op,
                key: key.to_string(),
                reason: "injected fault".into(),
            });
        }
        Ok(())
    }
}

impl ObjectStore for FakeStore {
    async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.request(StoreOp::Put, key)?;
        self.objects
            .borrow_mut()
            .insert(key.to_string(), bytes.to_vec());
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.request(StoreOp::Get, key)?;
        let mut found = self.objects.borrow().get(key).cloned();
        if let Some(bytes) = found.as_mut().filter(|_| self.corrupt_reads.get() > 0) {
            self.corrupt_reads.set(self.corrupt_reads.get() - 1);
            match bytes.first_mut() {
                Some(first) => *first ^= 0xff,
                None => bytes.push(0),
            }
        }
        Ok(found)
    }

    async fn head(&self, key: &str) -> Result<Option<u64>, StoreError> {
        self.request(StoreOp::Head, key)?;
        Ok(self.objects.borrow().get(key).map(|v| v.len() as u64))
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.request(StoreOp::Delete, key)?;
        self.objects.borrow_mut().remove(key);
        Ok(())
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.request(StoreOp::List, prefix)?;
        let mut keys = self.keys(prefix);
        keys.truncate(limit);
        Ok(keys)
    }
}

/// Runs a future that never waits (the fake store answers at once).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
}
