//! Caps on what one stream may hold (marks, blobs it defines, bytes it spills to disk): a cap of its own, and a
//! count shared by every stream of the process (a daemon's) with a cap on that. Each stream holds its share in a
//! [`Held`], which gives it back when the stream ends.
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One cap. `None` is no cap (as in git, for what the one-shot binary leaves uncapped).
#[derive(Debug, Clone, Default)]
pub struct Limit {
    pub per_stream: Option<u64>,
    /// The count every stream of the process adds to, and its cap.
    pub shared: Option<(Arc<AtomicU64>, u64)>,
}

/// Which cap a stream would have passed, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    PerStream(u64),
    Shared(u64),
}

/// What one stream holds against a [`Limit`].
#[derive(Debug, Default)]
pub(crate) struct Held {
    limit: Limit,
    held: u64,
}

impl Held {
    pub(crate) fn new(limit: Limit) -> Held {
        Held { limit, held: 0 }
    }

    /// Takes `n` more, unless that passes a cap (then nothing is taken).
    pub(crate) fn take(&mut self, n: u64) -> Result<(), Exceeded> {
        if let Some(most) = self.limit.per_stream.filter(|most| self.held.saturating_add(n) > *most) {
            return Err(Exceeded::PerStream(most));
        }
        if let Some((count, most)) = &self.limit.shared {
            // Add first and undo on failure, so two streams racing for the last units cannot both pass.
            if count.fetch_add(n, Ordering::Relaxed).saturating_add(n) > *most {
                count.fetch_sub(n, Ordering::Relaxed);
                return Err(Exceeded::Shared(*most));
            }
        }
        self.held += n;
        Ok(())
    }

    /// Gives back `n` of what was taken.
    pub(crate) fn give_back(&mut self, n: u64) {
        let n = n.min(self.held);
        self.held -= n;
        if let Some((count, _)) = &self.limit.shared {
            count.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.give_back(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_up_to_each_cap_and_gives_back_on_drop() {
        let shared = Arc::new(AtomicU64::new(0));
        let limit = Limit { per_stream: Some(4), shared: Some((Arc::clone(&shared), 6)) };
        let mut first = Held::new(limit.clone());
        first.take(3).unwrap();
        assert_eq!(first.take(2), Err(Exceeded::PerStream(4)));
        first.take(1).unwrap();
        let mut second = Held::new(limit);
        second.take(2).unwrap();
        assert_eq!(second.take(1), Err(Exceeded::Shared(6)));
        assert_eq!((shared.load(Ordering::Relaxed), second.held), (6, 2));
        second.give_back(1);
        second.take(1).unwrap();
        drop(first);
        assert_eq!(shared.load(Ordering::Relaxed), 2, "a stream's share is given back when it ends");
        Held::new(Limit::default()).take(u64::MAX).unwrap();
    }
}
