//! SHA-256 of an upload, computed beside the transfer: inline while small,
//! then on a hashing thread of its own, so hashing one block overlaps
//! receiving and writing the next.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

/// Bytes hashed inline before a hashing thread is started: below this, the
/// thread would cost more than it saves.
const THREAD_FROM: u64 = 4 * 1024 * 1024;
/// Blocks allocated per upload at most, counting the one being filled; a
/// full queue makes the receiver wait for the hasher, bounding memory.
const BLOCKS_IN_FLIGHT: usize = 4;

/// The running digest of one upload.
pub struct BodyDigest {
    block_size: usize,
    /// Bytes absorbed so far.
    absorbed: u64,
    state: State,
}

enum State {
    Inline(Sha256),
    Threaded {
        /// Full blocks to the hasher. Dropping it ends the hasher.
        full: SyncSender<Vec<u8>>,
        /// Hashed blocks back for reuse.
        free: Receiver<Vec<u8>>,
        allocated: usize,
        hasher: JoinHandle<Sha256>,
    },
    /// Only while switching from one state to the other.
    Moving,
}

/// The hashing thread went away (it cannot fail by itself; only a failed
/// spawn or a panic gets here).
#[derive(Debug)]
pub struct HasherGone;

impl BodyDigest {
    /// A digest fed blocks of `block_size` bytes (the last may be shorter).
    pub fn new(block_size: usize) -> Self {
        BodyDigest {
            block_size,
            absorbed: 0,
            state: State::Inline(Sha256::new()),
        }
    }

    /// Adds a filled block and returns an empty one to fill next (the same
    /// allocation when hashing inline, a recycled one otherwise).
    pub fn absorb(&mut self, mut block: Vec<u8>) -> Result<Vec<u8>, HasherGone> {
        self.absorbed += block.len() as u64;
        if self.absorbed >= THREAD_FROM {
            self.start_thread();
        }
        match &mut self.state {
            State::Inline(h) => {
                h.update(&block);
                block.clear();
                Ok(block)
            }
            State::Threaded {
                full,
                free,
                allocated,
                ..
            } => {
                full.send(block).map_err(|_| HasherGone)?;
                match free.try_recv() {
                    Ok(b) => Ok(b),
                    Err(TryRecvError::Empty) if *allocated < BLOCKS_IN_FLIGHT => {
                        *allocated += 1;
                        Ok(Vec::with_capacity(self.block_size))
                    }
                    Err(TryRecvError::Empty) => free.recv().map_err(|_| HasherGone),
                    Err(TryRecvError::Disconnected) => Err(HasherGone),
                }
            }
            State::Moving => Err(HasherGone),
        }
    }

    /// Waits for every block to be hashed and returns the digest.
    pub fn finish(self) -> Result<[u8; 32], HasherGone> {
        let hasher = match self.state {
            State::Inline(h) => h,
            State::Threaded { full, hasher, .. } => {
                drop(full);
                hasher.join().map_err(|_| HasherGone)?
            }
            State::Moving => return Err(HasherGone),
        };
        Ok(hasher.finalize().into())
    }

    /// Moves the inline state to a hashing thread; stays inline if the
    /// thread cannot be started (slower, still correct).
    fn start_thread(&mut self) {
        let mut h = match std::mem::replace(&mut self.state, State::Moving) {
            State::Inline(h) => h,
            threaded => {
                self.state = threaded;
                return;
            }
        };
        // The receiver holds one block (being filled) and the queue the
        // rest, so allocation never exceeds BLOCKS_IN_FLIGHT.
        let (full_tx, full_rx) = sync_channel::<Vec<u8>>(BLOCKS_IN_FLIGHT - 1);
        let (free_tx, free_rx) = sync_channel::<Vec<u8>>(BLOCKS_IN_FLIGHT);
        let (state_tx, state_rx) = sync_channel::<Sha256>(1);
        let spawned = std::thread::Builder::new()
            .name("upload-sha256".into())
            .spawn(move || {
                let Ok(mut h) = state_rx.recv() else {
                    return Sha256::new();
                };
                for mut block in full_rx {
                    h.update(&block);
                    block.clear();
                    // The receiver may have finished and gone; the block is
                    // then simply freed.
                    let _ = free_tx.try_send(block);
                }
                h
            });
        self.state = match spawned {
            Ok(hasher) => {
                // The thread is waiting for exactly this one message.
                let _ = state_tx.send(h);
                State::Threaded {
                    full: full_tx,
                    free: free_rx,
                    allocated: 1,
                    hasher,
                }
            }
            Err(_) => {
                // Get the state back: the closure, with `state_rx`, was
                // dropped unrun, so a send would fail and return it.
                h = match state_tx.try_send(h) {
                    Err(std::sync::mpsc::TrySendError::Disconnected(h)) => h,
                    _ => Sha256::new(),
                };
                State::Inline(h)
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `total` bytes in blocks of `block`, as an upload does.
    fn digest_of(data: &[u8], block: usize) -> [u8; 32] {
        let mut d = BodyDigest::new(block);
        let mut buf = Vec::with_capacity(block);
        for chunk in data.chunks(block) {
            buf.extend_from_slice(chunk);
            buf = d.absorb(buf).unwrap();
            assert!(buf.is_empty());
            assert!(buf.capacity() >= block);
        }
        d.finish().unwrap()
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 7) as u8).collect()
    }

    #[test]
    fn threaded_digest_equals_one_pass_hash() {
        // Past THREAD_FROM, so the hashing thread does most of it, with
        // a short last block.
        let data = pattern(3 * THREAD_FROM as usize + 12_345);
        let want: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(digest_of(&data, 256 * 1024), want);
        assert_eq!(digest_of(&data, 4096), want);
    }

    #[test]
    fn small_bodies_are_hashed_inline() {
        let data = pattern(100_000);
        let mut d = BodyDigest::new(8192);
        let mut buf = Vec::with_capacity(8192);
        for chunk in data.chunks(8192) {
            buf.extend_from_slice(chunk);
            buf = d.absorb(buf).unwrap();
        }
        assert!(matches!(d.state, State::Inline(_)));
        let want: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(d.finish().unwrap(), want);
    }

    #[test]
    fn empty_body_has_the_empty_digest() {
        let want: [u8; 32] = Sha256::digest(b"").into();
        assert_eq!(BodyDigest::new(64).finish().unwrap(), want);
    }

    #[test]
    fn an_abandoned_upload_ends_its_hashing_thread() {
        let mut d = BodyDigest::new(1 << 20);
        for _ in 0..8 {
            let mut b = Vec::new();
            b.resize(1 << 20, 7);
            d.absorb(b).unwrap();
        }
        let State::Threaded { hasher, full, .. } = std::mem::replace(&mut d.state, State::Moving)
        else {
            panic!("8 MiB should have started the hashing thread");
        };
        drop(full);
        hasher.join().unwrap();
    }
}
