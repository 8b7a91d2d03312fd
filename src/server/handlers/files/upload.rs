//! PUT/POST of one file: the body streams into a temporary file in the
//! upload directory, and when the client asks for it (RFC 9530
//! `Want-Repr-Digest: sha-256`) its SHA-256 is computed on the way, since
//! hashing costs about as much CPU as receiving and writing; at the end the file is
//! fsynced and renamed over the name, in a job (`finish` defers it), so an
//! event loop does not wait for the disk. The rename happens under the
//! directory's commit lock, after the request's preconditions are checked
//! once more (see `commit`): the loser of two racing conditional uploads
//! gets 412 and its temporary file is removed. Memory stays constant whatever the
//! size: the body is gathered into blocks of fixed size, each written and
//! then, if asked, hashed (on a thread of its own for a large upload, see
//! `digest`); on the blocking models, without a digest, large chunks are
//! written as they come instead (see `DIRECT_MIN`).
//!
//! The temporary file is a `NamedTempFile`: dropping the sink without
//! `finish` (client gone, bad framing, timeout, 413, ENOSPC) unlinks it, so
//! an aborted upload leaves nothing behind. Only a killed process leaves
//! one; the flock held on it (see `stale`) lets the next server that starts
//! on the directory tell it from a live upload and remove it.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tempfile::NamedTempFile;

use super::commit;
use super::digest::BodyDigest;
use super::reply::{hex, href, json, write_failure, FileDigest};
use super::repr_digest;
use super::stale;
use crate::results::files::TEMP_PREFIX;
use crate::results::files::{TEMP_RAND_LEN, TEMP_SUFFIX};
use crate::server::handlers::validators::Conditions;
use crate::server::handlers::{BodySink, Reply, Response, Step};

/// After this many new bytes the kernel is asked to start writing them
/// back, so the final fsync finds most of the file already on disk instead
/// of flushing all of it while the client waits.
const WRITEBACK_STEP: u64 = 8 * 1024 * 1024;
/// Body chunks are as large as whatever one socket read returned, often a
/// few KiB; they are gathered into blocks of this size, since a write
/// syscall per small chunk costs more than the copy into a block. The
/// block also outlives the read buffer, so it can be hashed while the next
/// one is received. Large enough that writes are few, small enough that
/// `digest`'s four blocks in flight hold little memory.
const BLOCK: usize = 1024 * 1024;
/// On a model whose thread may block (see `App::may_block`) and with no
/// digest asked, a body chunk at least this large is written to the file
/// straight from the connection's read buffer instead of being copied into
/// a block first: that copy is a large part of an upload's CPU, and a
/// write of this size costs no more than the floor receiver's. Smaller
/// chunks are still gathered.
const DIRECT_MIN: usize = 64 * 1024;
/// Temporary files made before giving up when a starting server's cleanup
/// keeps taking them (each loss needs a race within microseconds).
const CLAIM_ATTEMPTS: usize = 4;

pub struct Upload {
    dir: PathBuf,
    name: String,
    max: u64,
    /// The request's preconditions, checked again right before the rename.
    conditions: Conditions,
    /// The file and its digest. Only the steps that write blocks and the
    /// final job use it, and the session runs those one at a time with
    /// `data` waiting, so the lock is never contended; it makes the store
    /// shareable with the thread a step runs on.
    store: Arc<Mutex<Store>>,
    /// Bytes received but not yet handed to a step (capacity BLOCK,
    /// allocated with the temporary file).
    pending: Vec<u8>,
    size: u64,
    /// A full block's write, for the session to run before more body.
    step: Option<Step>,
    /// Large chunks are written inside `data` (see DIRECT_MIN).
    direct: bool,
}

/// The part of an upload that touches the disk.
struct Store {
    /// Created on the first byte (or at the end of an empty body), so a
    /// request refused before its body is read never touches the disk.
    tmp: Option<NamedTempFile>,
    /// The body's SHA-256 so far, when the client asked for it.
    digest: Option<BodyDigest>,
    /// Bytes written to the file so far.
    written: u64,
    /// Offset up to which writeback has been started.
    writeback_from: u64,
    /// An emptied block, for the next one to fill.
    spare: Option<Vec<u8>>,
}

impl Upload {
    pub fn new(
        dir: &Path,
        name: String,
        max: u64,
        conditions: Conditions,
        want_digest: bool,
        may_block: bool,
    ) -> Self {
        Upload {
            dir: dir.to_path_buf(),
            name,
            max,
            conditions,
            store: Arc::new(Mutex::new(Store {
                tmp: None,
                digest: want_digest.then(|| BodyDigest::new(BLOCK)),
                written: 0,
                writeback_from: 0,
                spare: None,
            })),
            pending: Vec::new(),
            size: 0,
            step: None,
            direct: may_block && !want_digest,
        }
    }

    fn store(&self) -> Result<MutexGuard<'_, Store>, Response> {
        self.store.lock().map_err(|_| Response::error(500))
    }

    /// Creates the temporary file (locked as in use, see `stale::claim`)
    /// on the first byte, so that it exists while the body arrives.
    fn open(&mut self) -> Result<(), Response> {
        let mut store = self.store()?;
        if store.tmp.is_none() {
            store.tmp = Some(create_temp(&self.dir)?);
            drop(store);
            let block = Vec::with_capacity(BLOCK);
            self.pending = block;
        }
        Ok(())
    }

    /// A block to fill: the one the last step emptied, or a new one.
    fn next_block(&self) -> Result<Vec<u8>, Response> {
        let mut store = self.store()?;
        Ok(store
            .spare
            .take()
            .unwrap_or_else(|| Vec::with_capacity(BLOCK)))
    }

    /// The rest of the body written, the digest finished, the file made
    /// durable and renamed: blocking work, run as a job.
    fn commit_all(mut self: Box<Self>) -> Response {
        let done = self
            .complete()
            .and_then(|sha256| Ok((sha256, self.commit()?)));
        match done {
            Ok((sha256, created)) => {
                let body = FileDigest {
                    name: &self.name,
                    size: self.size,
                    sha256: sha256.as_ref().map(|d| hex(d)),
                };
                let resp = json(if created { 201 } else { 200 }, &body)
                    .header("Location", &href(&self.name));
                match sha256 {
                    Some(d) => resp.header("Repr-Digest", &repr_digest::sha256_field(&d)),
                    None => resp,
                }
            }
            Err(resp) => resp,
        }
    }

    /// Writes (and hashes, if asked) what is left of the body; returns
    /// the digest, if asked.
    fn complete(&mut self) -> Result<Option<[u8; 32]>, Response> {
        self.open()?;
        let last = std::mem::take(&mut self.pending);
        let mut store = self.store()?;
        store.flush(last)?;
        store
            .digest
            .take()
            .map(|d| d.finish().map_err(|_| Response::error(500)))
            .transpose()
    }

    /// Makes the file durable and moves it into place. Returns whether the
    /// name is new (201) or replaced an older file (200).
    fn commit(&mut self) -> Result<bool, Response> {
        let tmp = self
            .store()?
            .tmp
            .take()
            .ok_or_else(|| Response::error(500))?;
        let f = tmp.as_file();
        // tempfile creates 0600; an uploaded file is as readable as any
        // other file the service serves.
        f.set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| write_failure(&e))?;
        f.sync_data().map_err(|e| write_failure(&e))?;
        let target = self.dir.join(&self.name);
        // From the check to the rename no other change of the directory
        // can come in between. On a refusal `tmp` is dropped: unlinked.
        let held = commit::hold(&self.dir, &self.name, &self.conditions)?;
        // Rename without replacing first: that tells new from replaced.
        let created = match tmp.persist_noclobber(&target) {
            Ok(_) => true,
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                e.file
                    .persist(&target)
                    .map_err(|e| write_failure(&e.error))?;
                false
            }
            Err(e) => return Err(write_failure(&e.error)),
        };
        drop(held);
        // The rename is durable once the directory is synced. The file is
        // already in place, so a failure here is not the client's to see.
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(created)
    }
}

/// A new temporary file in `dir`, locked as in use (see `stale::claim`).
fn create_temp(dir: &Path) -> Result<NamedTempFile, Response> {
    for _ in 0..CLAIM_ATTEMPTS {
        let tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .rand_bytes(TEMP_RAND_LEN)
            .suffix(TEMP_SUFFIX)
            .tempfile_in(dir)
            .map_err(|e| write_failure(&e))?;
        if stale::claim(tmp.as_file()).map_err(|e| write_failure(&e))? {
            return Ok(tmp);
        }
    }
    Err(Response::error(500))
}

impl Store {
    /// Writes a block, then passes it to the digest if there is one;
    /// keeps the emptied block for the next one.
    fn flush(&mut self, mut block: Vec<u8>) -> Result<(), Response> {
        self.write(&block)?;
        let empty = match &mut self.digest {
            Some(d) => d.absorb(block).map_err(|_| Response::error(500))?,
            None => {
                block.clear();
                block
            }
        };
        self.spare = Some(empty);
        Ok(())
    }

    /// Writes to the temporary file, starting writeback every
    /// WRITEBACK_STEP bytes.
    fn write(&mut self, bytes: &[u8]) -> Result<(), Response> {
        if bytes.is_empty() {
            return Ok(());
        }
        let tmp = self.tmp.as_mut().ok_or_else(|| Response::error(500))?;
        tmp.as_file_mut()
            .write_all(bytes)
            .map_err(|e| write_failure(&e))?;
        let fd = tmp.as_file().as_raw_fd();
        self.written += bytes.len() as u64;
        if self.written - self.writeback_from >= WRITEBACK_STEP {
            start_writeback(fd, self.writeback_from, self.written - self.writeback_from);
            self.writeback_from = self.written;
        }
        Ok(())
    }
}

impl BodySink for Upload {
    fn max_body(&self) -> u64 {
        self.max
    }

    /// Gathers the body into blocks. A full block is written (and hashed)
    /// by a step, which the session runs before it decodes more: an event
    /// loop gives it to another thread, since a write may wait for the
    /// disk and would hold up every connection on the loop.
    fn data(&mut self, mut chunk: &[u8]) -> Result<(), Response> {
        self.open()?;
        self.size += chunk.len() as u64;
        if self.direct && chunk.len() >= DIRECT_MIN && self.step.is_none() {
            // This thread may wait on the disk: write what was gathered so
            // far, then the chunk itself, in order, without copying it.
            let mut store = self.store.lock().map_err(|_| Response::error(500))?;
            store.write(&self.pending)?;
            self.pending.clear();
            return store.write(chunk);
        }
        while !chunk.is_empty() {
            if self.pending.len() == BLOCK {
                // A chunk is smaller than a block, so one `data` fills at
                // most one; the session has run the step before this call.
                let next = self.next_block()?;
                let full = std::mem::replace(&mut self.pending, next);
                let store = Arc::clone(&self.store);
                // Were a step left untaken, it would run first, in order.
                let before = self.step.take();
                self.step = Some(Box::new(move || {
                    if let Some(before) = before {
                        before()?;
                    }
                    store.lock().map_err(|_| Response::error(500))?.flush(full)
                }));
            }
            let take = chunk.len().min(BLOCK - self.pending.len());
            self.pending.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        Ok(())
    }

    fn take_step(&mut self) -> Option<Step> {
        self.step.take()
    }

    fn finish(self: Box<Self>) -> Reply {
        Reply::Defer(Box::new(move || self.commit_all()))
    }
}

/// Starts asynchronous writeback of a byte range (no waiting). Only a hint:
/// if it fails, the fsync at the end still does all the work.
fn start_writeback(fd: i32, offset: u64, len: u64) {
    // SAFETY: sync_file_range only reads its integer arguments; `fd` is the
    // open temporary file owned by the caller for the duration of the call.
    unsafe {
        libc::sync_file_range(
            fd,
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}
