//! Stream slots: `--max-connections` streams run at once. A connection takes a slot only once its hello says it is
//! a stream (plain or `connect`), so connections that say nothing, or ask for `stats`, never hold one.
use std::sync::{Condvar, Mutex, MutexGuard};

/// The slots, shared by the connection threads.
#[derive(Debug)]
pub(super) struct Slots {
    max: usize,
    state: Mutex<SlotState>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct SlotState {
    used: usize,
    waiting: usize,
    /// The daemon is stopping: no slot is given any more.
    closed: bool,
}

/// Why no slot was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoSlot {
    /// All are taken (and the caller would not wait).
    Full,
    /// The daemon is shutting down.
    Closed,
}

/// A taken slot, given back on drop.
#[derive(Debug)]
pub(super) struct Slot<'a>(&'a Slots);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.lock().used -= 1;
        self.0.freed.notify_one();
    }
}

impl Slots {
    pub(super) fn new(max: usize) -> Slots {
        Slots { max: max.max(1), state: Mutex::default(), freed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes a slot; when all are taken, waits for one if `wait`, else fails with [`NoSlot::Full`].
    pub(super) fn take(&self, wait: bool) -> Result<Slot<'_>, NoSlot> {
        let mut state = self.lock();
        state.waiting += 1;
        while !state.closed && state.used >= self.max && wait {
            state = self.freed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.waiting -= 1;
        if state.closed {
            return Err(NoSlot::Closed);
        }
        if state.used >= self.max {
            return Err(NoSlot::Full);
        }
        state.used += 1;
        Ok(Slot(self))
    }

    /// Stops giving slots: every waiter and every later caller gets [`NoSlot::Closed`].
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.freed.notify_all();
    }

    /// (slots taken, connections waiting for one).
    pub(super) fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.used, state.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_given_back_and_waiters_are_released_by_close() {
        let slots = Slots::new(1);
        let first = slots.take(false).unwrap();
        assert_eq!(slots.take(false).unwrap_err(), NoSlot::Full);
        drop(first);
        let held = slots.take(true).unwrap();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| slots.take(true).map(|_| ()));
            while slots.counts().1 == 0 {
                std::thread::yield_now();
            }
            slots.close();
            assert_eq!(waiter.join().unwrap(), Err(NoSlot::Closed));
        });
        drop(held);
        assert_eq!(slots.take(true).unwrap_err(), NoSlot::Closed);
        assert_eq!(slots.counts(), (0, 0));
    }
}
