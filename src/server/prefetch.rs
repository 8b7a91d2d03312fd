//! Prefetching a connection's state before use: with many connections it
//! is out of cache by its next event, and asking for all its cache lines
//! at once overlaps the memory waits instead of taking them one by one.

/// Starts loading every cache line of `x` into the cache, without waiting.
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = (x as *const T).cast::<i8>();
        let mut off = 0;
        while off < std::mem::size_of::<T>() {
            // SAFETY: a prefetch is only a hint: it reads nothing the
            // program sees and cannot fault, and the address is within `x`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
