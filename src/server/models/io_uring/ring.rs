//! Setting up one worker's ring: the flags this kernel takes (single
//! issuer, deferred task running), the checks for what the model cannot
//! do without (multishot accept and receive, buffer rings), the list of
//! features the start-up line prints, and the provided-buffer ring that
//! multishot receives fill.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// Submission queue entries per ring. A batch larger than this is
/// submitted in several pieces, so it bounds nothing but the batch size.
pub(super) const SQ_ENTRIES: u32 = 1024;
/// Completion queue entries per ring: room for one batch's multishot
/// completions (the kernel keeps any overflow; it drops none).
const CQ_ENTRIES: u32 = 8 * SQ_ENTRIES;
/// Receive buffers per ring (a power of two, as the kernel requires).
/// Data is copied out of a buffer and the buffer handed back as its
/// completion is handled, so this bounds the bytes received in one batch,
/// not what connections hold.
pub const RECV_BUFS: u16 = 256;
/// Size of one receive buffer: a multishot receive fills at most one
/// buffer per completion.
pub const RECV_BUF_SIZE: usize = 16 * 1024;
/// The buffer group id of the receive buffers (one group per ring).
pub const BUF_GROUP: u16 = 0;
/// The oldest kernel with multishot receive (6.0); multishot accept and
/// buffer rings came in 5.19.
const MIN_KERNEL: (u32, u32) = (6, 0);
/// The oldest kernel with multishot timeouts (6.4), which quiet sends
/// need (see `Features::quiet_sends`).
const QUIET_KERNEL: (u32, u32) = (6, 4);

/// Ring features in use, for the start-up line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    /// A round whose only submissions are quiet sends waits for the next
    /// event as well (the worker's `completions_to_wait_for`). Needs the
    /// TICK timeout multishot: a tick that fires just before such a wait
    /// begins does not end it, and the next fire must come by itself.
    pub quiet_sends: bool,
}

impl Features {
    /// The `ring=` value of the start-up line: the features every ring
    /// uses, then the optional ones this kernel gave.
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

/// Builds this thread's ring with the most the kernel allows. SINGLE_ISSUER
/// binds the ring to the calling thread, so every worker builds its own.
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
    // Both optional flags, then without deferred task running (6.1), then
    // without either (6.0); another error means no io_uring at all.
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

/// Refuses a kernel older than multishot receive, by its release; the
/// kernel's (major, minor) otherwise.
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

/// A provided-buffer ring: RECV_BUFS buffers of RECV_BUF_SIZE that the
/// kernel picks from for each multishot receive completion, and that are
/// handed back once their bytes are copied out.
pub struct BufRing {
    /// The ring of entries shared with the kernel (page-aligned).
    entries: *mut BufRingEntry,
    layout: Layout,
    /// The buffers themselves, one allocation never moved while
    /// registered. A raw pointer, not a slice: the kernel writes buffers
    /// while we read others, so no reference may cover them all.
    bufs: *mut u8,
    bufs_layout: Layout,
    /// Set when the worker could not wait for the kernel to finish with
    /// the buffers: then they are never freed.
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
    /// Never frees the ring or its buffers: for a worker that stopped
    /// before every receive ended.
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
