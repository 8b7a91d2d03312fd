//! Setting up one worker's ring: the flags this kernel takes, checks for
//! what the model needs, the features the start-up line lists, and the
//! provided-buffer ring that multishot receives fill.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// Submission queue entries per ring; a larger batch goes in pieces.
pub(super) const SQ_ENTRIES: u32 = 1024;
/// Completion queue entries: room for a batch's multishot completions
/// (the kernel keeps any overflow).
const CQ_ENTRIES: u32 = 8 * SQ_ENTRIES;
/// Receive buffers per ring (a power of two, as the kernel requires).
/// Each is handed back once copied out, so this bounds one batch's input.
pub const RECV_BUFS: u16 = 256;
/// Size of one receive buffer: the most one receive completion carries.
pub const RECV_BUF_SIZE: usize = 16 * 1024;
/// The buffer group id of the receive buffers (one group per ring).
pub const BUF_GROUP: u16 = 0;
/// The oldest kernel with multishot receive (accept and buffer rings are
/// older).
const MIN_KERNEL: (u32, u32) = (6, 0);
/// The oldest kernel with multishot timeouts, which quiet sends need.
const QUIET_KERNEL: (u32, u32) = (6, 4);

/// Ring features in use, for the start-up line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    /// A round of only quiet sends waits for one more event too. Needs a
    /// multishot tick: one fired just before that wait does not end it.
    pub quiet_sends: bool,
}

impl Features {
    /// The start-up line's `ring=` value: fixed, then optional features.
    pub fn list(&self) -> String {
        let mut f = vec![
            "multishot-accept",
            "multishot-recv",
            "buf-ring",
            "batched-submit",
            "splice",
            "ring-timeout",
            "eventfd-wake",
        ];
        if self.single_issuer {
            f.push("single-issuer");
        }
        if self.defer_taskrun {
            f.push("defer-taskrun");
        }
        if self.quiet_sends {
            f.push("quiet-sends");
        }
        f.join(",")
    }
}

/// Why io_uring cannot serve here, in the one line `serve` exits with.
fn unavailable(e: &io::Error) -> io::Error {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| format!("kernel.io_uring_disabled={}", s.trim()))
        .unwrap_or_else(|_| "kernel.io_uring_disabled unreadable".into());
    io::Error::new(
        e.kind(),
        format!(
            "io_uring cannot be set up here ({e}; {disabled}; a seccomp profile may also \
             block it); no fallback: choose another --model"
        ),
    )
}

/// Builds this thread's ring with the most the kernel allows; SINGLE_ISSUER
/// binds it to this thread, so every worker builds its own.
pub fn build() -> io::Result<(IoUring, Features)> {
    let kernel = check_kernel()?;
    let attempt = |single: bool, defer: bool| {
        let mut b = IoUring::builder();
        b.setup_cqsize(CQ_ENTRIES).setup_submit_all();
        if single {
            b.setup_single_issuer();
        }
        if defer {
            b.setup_defer_taskrun();
        }
        b.build(SQ_ENTRIES)
    };
    // Older kernels refuse optional flags with EINVAL, so drop them one by
    // one; any other error means no io_uring at all.
    let tries = [(true, true), (true, false), (false, false)];
    let mut last = None;
    for (single, defer) in tries {
        match attempt(single, defer) {
            Ok(ring) => {
                return Ok((
                    ring,
                    Features {
                        single_issuer: single,
                        defer_taskrun: defer,
                        quiet_sends: kernel >= QUIET_KERNEL,
                    },
                ))
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(unavailable(&e)),
        }
    }
    Err(unavailable(
        &last.unwrap_or_else(|| io::ErrorKind::Unsupported.into()),
    ))
}

/// The kernel's (major, minor); an error if it lacks multishot receive.
fn check_kernel() -> io::Result<(u32, u32)> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let mut parts = release.split(['.', '-']).map(|p| p.parse::<u32>().ok());
    let version = (parts.next().flatten(), parts.next().flatten());
    match version {
        (Some(major), Some(minor)) if (major, minor) >= MIN_KERNEL => Ok((major, minor)),
        _ => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "io_uring multishot receive needs Linux {}.{} or later, this is {release:?}; \
                 no fallback: choose another --model",
                MIN_KERNEL.0, MIN_KERNEL.1
            ),
        )),
    }
}

/// A provided-buffer ring: buffers the kernel picks from for multishot
/// receives, handed back once their bytes are copied out.
pub struct BufRing {
    /// The ring of entries shared with the kernel (page-aligned).
    entries: *mut BufRingEntry,
    layout: Layout,
    /// One allocation, never moved while registered. A raw pointer: the
    /// kernel writes some buffers while we read others.
    bufs: *mut u8,
    bufs_layout: Layout,
    /// The kernel may still use the buffers, so they are never freed.
    leaked: bool,
    /// Our tail, published to the kernel by `publish`.
    tail: u16,
}

impl BufRing {
    /// Allocates and registers the ring with `ring`, every buffer given.
    pub fn register(ring: &IoUring) -> io::Result<BufRing> {
        let size = usize::from(RECV_BUFS) * std::mem::size_of::<BufRingEntry>();
        let layout = Layout::from_size_align(size, 4096)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: the layout has a non-zero size.
        let entries = unsafe { alloc_zeroed(layout) }.cast::<BufRingEntry>();
        if entries.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let bufs_layout = Layout::from_size_align(usize::from(RECV_BUFS) * RECV_BUF_SIZE, 4096)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: the layout has a non-zero size.
        let bufs = unsafe { alloc_zeroed(bufs_layout) };
        if bufs.is_null() {
            // SAFETY: allocated just above with this layout, freed once.
            unsafe { dealloc(entries.cast(), layout) };
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut br = BufRing {
            entries,
            layout,
            bufs,
            bufs_layout,
            leaked: false,
            tail: 0,
        };
        // SAFETY: the entries stay allocated, and the buffers in place,
        // until `br` is dropped, which the worker does only after its ring
        // (declared before it) is gone.
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(entries as u64, RECV_BUFS, BUF_GROUP, 0)
        }
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("io_uring buffer ring cannot be registered ({e}); no fallback"),
            )
        })?;
        for bid in 0..RECV_BUFS {
            br.give(bid);
        }
        br.publish();
        Ok(br)
    }

    /// The first `len` bytes the kernel put in buffer `bid`.
    pub fn get(&self, bid: u16, len: usize) -> &[u8] {
        let bid = bid.min(RECV_BUFS - 1);
        let start = usize::from(bid) * RECV_BUF_SIZE;
        // SAFETY: buffer `bid` lies inside the allocation, and the kernel
        // handed it to us with this completion: it does not write it again
        // until `give` returns it, which needs `&mut self`, so not while
        // this borrow lives.
        unsafe { std::slice::from_raw_parts(self.bufs.add(start), len.min(RECV_BUF_SIZE)) }
    }

    /// Hands buffer `bid` back (seen by the kernel after `publish`).
    pub fn give(&mut self, bid: u16) {
        if bid >= RECV_BUFS {
            return;
        }
        let slot = usize::from(self.tail & (RECV_BUFS - 1));
        let addr = self.bufs as u64 + (usize::from(bid) * RECV_BUF_SIZE) as u64;
        // SAFETY: `slot` is below RECV_BUFS, the number of entries
        // allocated; the kernel reads only entries between its head and
        // the published tail, and this one is past the published tail.
        let e = unsafe { &mut *self.entries.add(slot) };
        e.set_addr(addr);
        e.set_len(RECV_BUF_SIZE as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the buffers given since the last call visible to the kernel.
    pub fn publish(&self) {
        // SAFETY: the tail field lives in the first entry of our live
        // allocation, is 2-byte aligned, and the kernel only reads it; the
        // release store orders the entries written before it.
        unsafe {
            let tail = BufRingEntry::tail(self.entries).cast::<AtomicU16>();
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl BufRing {
    /// Never frees the ring or its buffers: some receive may not have ended.
    pub fn leak(&mut self) {
        self.leaked = true;
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if self.leaked {
            return;
        }
        // SAFETY: both allocated in `register` with these layouts, freed
        // once.
        unsafe {
            dealloc(self.entries.cast(), self.layout);
            dealloc(self.bufs, self.bufs_layout);
        }
    }
}
