//! The writer thread: puts finished responses on their fds in sequence order, everything that is ready in one
//! go, and stops writing at the first failure in sequence order.
use std::collections::VecDeque;

use crossbeam_channel::Receiver;

use super::{EngineConfig, EngineError, Finished, Item, Shared};
use crate::io::writev::IOV_MAX;
use crate::response::encode::Response;

/// Runs until the front end closes the queue; returns the first failure in sequence order.
pub(super) fn write_in_order<E>(
    shared: &Shared<'_>,
    results: Receiver<Vec<Finished<E>>>,
    config: EngineConfig,
) -> Option<EngineError<E>> {
    let mut ready = Ready::default();
    let mut failure: Option<EngineError<E>> = None;
    let mut batch = Vec::new();
    loop {
        let next_is_ready = ready.has(shared.window().next_write);
        if !next_is_ready || failure.is_some() {
            match results.recv() {
                Ok(done) => accept(shared, &mut ready, done),
                Err(_) => return failure,
            }
            // Everything else that is already finished joins this round.
            for done in results.try_iter() {
                accept(shared, &mut ready, done);
            }
        }
        if failure.is_some() {
            // Nothing after a failure is written; release the window so the front end can finish.
            let discarded = ready.clear();
            let mut window = shared.window();
            window.in_flight -= discarded;
            window.pending_bytes = 0;
            shared.notify(&window);
            continue;
        }
        // Read only now: while nothing was in flight the front end may have written on its own thread. From here
        // on `ready` is not empty, so it counts as in flight and the front end leaves the output to us.
        let next = shared.window().next_write;
        let (end, bytes, failed) = take_run(&mut ready, next, &mut batch, config.batch_bytes);
        failure = failed.map(EngineError::Job);
        if end == next {
            // The next response in order is still being worked on.
            continue;
        }
        if let Err(error) = shared.output().write(&batch)
            && failure.is_none()
        {
            failure = Some(error.into());
        }
        let mut window = shared.window();
        window.next_write = end;
        window.in_flight -= (end - next) as usize;
        window.pending_bytes = window.pending_bytes.saturating_sub(bytes);
        window.failed |= failure.is_some();
        shared.notify(&window);
        drop(window);
        batch.clear();
    }
}

/// Moves the longest run of ready responses from `next` into `batch`, within the batch limits (IOV_MAX iovecs,
/// and `batch_bytes` unless one response is larger). Returns the sequence number after the run, the run's
/// bytes, and the failure that ends it, if one does (it counts as part of the run: nothing after it is written).
fn take_run<E>(
    ready: &mut Ready<E>,
    next: u64,
    batch: &mut Vec<(Response, super::Target)>,
    batch_bytes: usize,
) -> (u64, usize, Option<E>) {
    let (mut seq, mut bytes) = (next, 0usize);
    while batch.len() * 3 < IOV_MAX - 3 {
        let Some(item) = ready.take(seq) else { break };
        seq += 1;
        match item {
            Item::Write(response, target) => {
                bytes += response.len();
                batch.push((response, target));
            }
            Item::Failed(error) => return (seq, bytes, Some(error)),
        }
        if bytes >= batch_bytes {
            break;
        }
    }
    (seq, bytes, None)
}

fn accept<E>(shared: &Shared<'_>, ready: &mut Ready<E>, done: Vec<Finished<E>>) {
    let mut window = shared.window();
    if ready.slots.is_empty() {
        // Nothing is waiting: the front end may have written on its own thread since, and no response still to
        // come is before its next write.
        ready.first = window.next_write;
    }
    for Finished { seq, item } in done {
        if let Item::Write(response, _) = &item {
            window.pending_bytes += response.len();
        }
        ready.insert(seq, item);
    }
}

/// Finished responses not yet written, by sequence number from `first`: a ring, since they arrive nearly in order
/// and leave in order. A `BTreeMap` here moved each response in and out of its nodes, and shifted a node's
/// entries at every removal from the front: 18% of `--batch-check`'s instructions (100,000 random ids).
struct Ready<E> {
    /// The sequence number of `slots[0]`.
    first: u64,
    slots: VecDeque<Option<Item<E>>>,
    /// Slots that hold an item.
    len: usize,
}

impl<E> Default for Ready<E> {
    fn default() -> Self {
        Ready { first: 0, slots: VecDeque::new(), len: 0 }
    }
}

impl<E> Ready<E> {
    /// `seq` is never below `first`: responses before it are written, or were before anything waited.
    fn insert(&mut self, seq: u64, item: Item<E>) {
        let at = (seq - self.first) as usize;
        if at >= self.slots.len() {
            self.slots.resize_with(at + 1, || None);
        }
        self.len += usize::from(self.slots[at].is_none());
        self.slots[at] = Some(item);
    }

    /// Is the response `seq` here, and the first waiting?
    fn has(&self, seq: u64) -> bool {
        seq == self.first && self.slots.front().is_some_and(Option::is_some)
    }

    /// The response `seq`, if it is the first waiting and here.
    fn take(&mut self, seq: u64) -> Option<Item<E>> {
        if !self.has(seq) {
            return None;
        }
        self.first += 1;
        self.len -= 1;
        self.slots.pop_front().flatten()
    }

    /// Drops every waiting response; returns how many there were.
    fn clear(&mut self) -> usize {
        self.slots.clear();
        std::mem::take(&mut self.len)
    }
}
