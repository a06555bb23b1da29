//! The writer thread: puts finished responses on their fds in sequence order, everything that is ready in one
//! go, and stops writing at the first failure in sequence order.
use std::collections::BTreeMap;

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
    let mut ready: BTreeMap<u64, Item<E>> = BTreeMap::new();
    let mut failure: Option<EngineError<E>> = None;
    let mut batch = Vec::new();
    loop {
        let next_is_ready = ready.contains_key(&shared.window().next_write);
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
            let discarded = std::mem::take(&mut ready);
            let mut window = shared.window();
            window.in_flight -= discarded.len();
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
    ready: &mut BTreeMap<u64, Item<E>>,
    next: u64,
    batch: &mut Vec<(Response, super::Target)>,
    batch_bytes: usize,
) -> (u64, usize, Option<E>) {
    let (mut seq, mut bytes) = (next, 0usize);
    while batch.len() * 3 < IOV_MAX - 3 {
        let Some(item) = ready.remove(&seq) else { break };
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

fn accept<E>(shared: &Shared<'_>, ready: &mut BTreeMap<u64, Item<E>>, done: Vec<Finished<E>>) {
    let mut bytes = 0;
    for Finished { seq, item } in done {
        if let Item::Write(response, _) = &item {
            bytes += response.len();
        }
        ready.insert(seq, item);
    }
    shared.window().pending_bytes += bytes;
}
