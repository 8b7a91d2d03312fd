//! PUT/POST of one file: the body streams, in fixed-size blocks, into a
//! temporary file (hashed on the way if asked), which a job fsyncs and
//! renames over the name under the commit lock, re-checking preconditions.

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

/// New bytes after which the kernel is asked to start writeback, so the
/// final fsync does not flush the whole file while the client waits.
const WRITEBACK_STEP: u64 = 8 * 1024 * 1024;
/// Size of the blocks body chunks are gathered into: a write per block
/// costs less than one per socket read, and a block outlives the read so it
/// can be hashed meanwhile. Small enough for `digest`'s blocks in flight.
const BLOCK: usize = 1024 * 1024;
/// On a thread that may block (`App::may_block`) and with no digest, a
/// chunk at least this large is written straight from the read buffer,
/// sparing the copy into a block; smaller chunks are still gathered.
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
    /// The file and its digest, locked only so a step can run on another
    /// thread; steps and the final job run one at a time while `data`
    /// waits, so the lock is never contended.
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
    /// An upload dropped unfinished (abort, 413, ENOSPC) unlinks it; a
    /// killed process's leftover is found by its missing flock (`stale`).
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
    /// by a step, run before more is decoded and off any event loop's thread.
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
