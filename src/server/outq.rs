//! Outgoing bytes of one connection: response heads and small bodies
//! coalesced into one buffer (one write per batch of pipelined responses),
//! large bodies as separate segments, files sent with sendfile.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;

use bytes::Bytes;

/// Bodies up to this size are copied next to their head so a response
/// leaves in a single write.
const COALESCE_MAX: usize = 16 * 1024;
/// Stop decoding pipelined requests once this much output is queued.
const HIGH_WATER: usize = 256 * 1024;

#[derive(Debug)]
enum Seg {
    Buf(Vec<u8>),
    Bytes(Bytes),
    File { file: File, offset: u64, end: u64 },
}

#[derive(Debug, Default)]
pub struct OutQueue {
    segs: VecDeque<Seg>,
    /// Bytes already written from the front segment (Buf and Bytes).
    front_pos: usize,
    queued: u64,
    /// A drained buffer kept for the next batch, so steady keep-alive
    /// traffic does not allocate per response.
    spare: Vec<u8>,
}

impl OutQueue {
    /// Bytes still to be written.
    pub fn queued(&self) -> u64 {
        self.queued
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Enough is queued that decoding more requests should wait.
    pub fn is_full(&self) -> bool {
        self.queued as usize >= HIGH_WATER
            || self.segs.iter().any(|s| matches!(s, Seg::File { .. }))
    }

    /// The buffer to encode the next head into (the tail buffer, so heads and
    /// small bodies of pipelined responses share one write).
    pub fn buf(&mut self) -> &mut Vec<u8> {
        if !matches!(self.segs.back(), Some(Seg::Buf(_))) {
            let spare = std::mem::take(&mut self.spare);
            self.segs.push_back(Seg::Buf(spare));
        }
        match self.segs.back_mut() {
            Some(Seg::Buf(b)) => b,
            _ => unreachable!("a Buf segment was just ensured"),
        }
    }

    /// Call after writing into `buf()` so the queue knows its size.
    pub fn recount(&mut self) {
        self.queued = self
            .segs
            .iter()
            .map(|s| match s {
                Seg::Buf(b) => b.len() as u64,
                Seg::Bytes(b) => b.len() as u64,
                Seg::File { offset, end, .. } => end - offset,
            })
            .sum::<u64>()
            - self.front_pos as u64;
    }

    pub fn push_bytes(&mut self, b: Bytes) {
        if b.len() <= COALESCE_MAX {
            self.buf().extend_from_slice(&b);
        } else {
            self.segs.push_back(Seg::Bytes(b));
        }
        self.recount();
    }

    pub fn push_file(&mut self, file: File, offset: u64, len: u64) {
        if len > 0 {
            self.segs.push_back(Seg::File {
                file,
                offset,
                end: offset + len,
            });
        }
        self.recount();
    }

    /// Writes as much as the socket takes. Returns Ok(true) when everything
    /// is written, Ok(false) on WouldBlock; other errors (including a file
    /// that shrank under sendfile) end the connection. Non-blocking sockets
    /// must be written until WouldBlock, or an edge-triggered loop stalls.
    pub fn write_to<S: Write + AsFd>(&mut self, sock: &mut S) -> io::Result<bool> {
        loop {
            match self.write_once(sock)? {
                Some(true) => return Ok(true),
                Some(false) => {}
                None => return Ok(false),
            }
        }
    }

    /// One write or sendfile call: Some(true) when everything is written,
    /// Some(false) after progress with more queued, None on WouldBlock.
    /// Blocking sockets use this so the caller regains control between
    /// calls (to notice shutdown and deadlines) however fast the peer reads.
    pub fn write_once<S: Write + AsFd>(&mut self, sock: &mut S) -> io::Result<Option<bool>> {
        let Some(seg) = self.segs.front_mut() else {
            self.queued = 0;
            return Ok(Some(true));
        };
        let mut sent = 0;
        let r = match seg {
            Seg::Buf(b) => sock.write(&b[self.front_pos..]),
            Seg::Bytes(b) => sock.write(&b[self.front_pos..]),
            Seg::File { file, offset, end } => {
                let mut off = *offset as libc::off_t;
                let count = (*end - *offset).min(1 << 30) as usize;
                match nix::sys::sendfile::sendfile(
                    sock.as_fd(),
                    file.as_fd(),
                    Some(&mut off),
                    count,
                ) {
                    Ok(0) => Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file shrank while being sent",
                    )),
                    Ok(n) => {
                        *offset += n as u64;
                        sent = n;
                        Ok(0)
                    }
                    Err(e) => Err(io::Error::from(e)),
                }
            }
        };
        match r {
            Ok(n) => {
                self.front_pos += n;
                // Kept exact as bytes go out, so callers see progress.
                self.queued = self.queued.saturating_sub((n + sent) as u64);
                let done = match seg {
                    Seg::Buf(b) => self.front_pos >= b.len(),
                    Seg::Bytes(b) => self.front_pos >= b.len(),
                    Seg::File { offset, end, .. } => offset >= end,
                };
                if n == 0 && !matches!(seg, Seg::File { .. }) {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                if done {
                    if let Some(Seg::Buf(mut b)) = self.segs.pop_front() {
                        if b.capacity() <= 64 * 1024 {
                            b.clear();
                            self.spare = b;
                        }
                    }
                    self.front_pos = 0;
                }
                if self.segs.is_empty() {
                    self.queued = 0;
                    return Ok(Some(true));
                }
                Ok(Some(false))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.recount();
                Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Some(false)),
            Err(e) => Err(e),
        }
    }
}
