//! Asking the memory system for a line before it is read, so that two cache misses that do not depend on each
//! other overlap instead of following one another.
//!
//! `--batch-check` of random ids is bound by misses, not by instructions: the entry header of the object asked
//! for (a page of the pack first touched), the kind memo's slot for it, and at each link of a chain walk the base's
//! header and slot again. Each slot's address is known as soon as the offset is, before the header is read; a
//! load of it would hold up the instructions behind it once it reached the head of the reorder buffer, where a
//! prefetch retires at once.

/// Starts bringing the line that holds `*at` into the cache; does nothing elsewhere than on x86-64.
#[inline(always)]
pub(in crate::store) fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: SSE is part of every x86-64 CPU (the target's baseline), and a prefetch reads nothing the program
    // can see and never faults, whatever the address; this one comes from a live reference.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(at).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
