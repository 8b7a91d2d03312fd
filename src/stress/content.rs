//! Each client's file: a seeded random byte stream that any offset of can
//! be regenerated, so files of any size need neither disk nor memory; its
//! SHA-256 is computed when first needed, inside a transfer's deadline.

use sha2::{Digest, Sha256};

/// Bytes generated per step when streaming or hashing a file.
pub const BLOCK: usize = 256 * 1024;

/// `len` bytes of the stream identified by `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Content {
    pub seed: u64,
    pub len: u64,
}

impl Content {
    /// The file of client `client` at size `len` in the run `nonce`:
    /// different for every client, size and run.
    pub fn for_client(nonce: u64, client: usize, len: u64) -> Content {
        let seed = mix(nonce ^ mix(client as u64 ^ mix(len)));
        Content { seed, len }
    }

    /// Fills `buf` with the bytes at `offset` (which may be anywhere).
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let mut word = offset / 8;
        let skip = (offset % 8) as usize;
        let mut rest = &mut buf[..];
        if skip != 0 {
            let b = self.word(word).to_le_bytes();
            let n = (8 - skip).min(rest.len());
            rest[..n].copy_from_slice(&b[skip..skip + n]);
            rest = &mut rest[n..];
            word += 1;
        }
        let mut chunks = rest.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.word(word).to_le_bytes());
            word += 1;
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let n = tail.len();
            tail.copy_from_slice(&self.word(word).to_le_bytes()[..n]);
        }
    }

    /// SHA-256 of the whole file, or None as soon as `go_on` says to
    /// stop (asked once per block): hashing a large file takes seconds, and
    /// it counts inside the transfer's deadline like the rest of it.
    pub fn digest_while(&self, go_on: impl Fn() -> bool) -> Option<[u8; 32]> {
        let mut h = Sha256::new();
        let mut buf = vec![0u8; BLOCK];
        let mut off = 0;
        while off < self.len {
            if !go_on() {
                return None;
            }
            let n = (self.len - off).min(BLOCK as u64) as usize;
            self.fill(off, &mut buf[..n]);
            h.update(&buf[..n]);
            off += n as u64;
        }
        Some(h.finalize().into())
    }

    /// Counter-mode generation: word `i` depends only on (seed, i), which
    /// is what makes any offset cheap to regenerate.
    fn word(&self, i: u64) -> u64 {
        mix(self
            .seed
            .wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
    }
}

/// splitmix64's finaliser: a fast, well-mixed 64-bit permutation.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_offset_regenerates_the_same_bytes() {
        let c = Content::for_client(7, 3, 1000);
        let mut whole = vec![0u8; 1000];
        c.fill(0, &mut whole);
        for (off, len) in [
            (0, 1),
            (1, 7),
            (3, 20),
            (8, 8),
            (13, 0),
            (999, 1),
            (500, 500),
        ] {
            let mut part = vec![0u8; len];
            c.fill(off as u64, &mut part);
            assert_eq!(part, whole[off..off + len], "offset {off} len {len}");
        }
    }

    #[test]
    fn digest_matches_the_bytes_and_files_differ() {
        let c = Content::for_client(1, 0, BLOCK as u64 + 5);
        let mut whole = vec![0u8; c.len as usize];
        c.fill(0, &mut whole);
        let want: [u8; 32] = Sha256::digest(&whole).into();
        assert_eq!(c.digest_while(|| true), Some(want));
        let other = Content::for_client(1, 1, c.len);
        assert_ne!(other.digest_while(|| true), Some(want));
        // Told to stop, it stops.
        assert_eq!(c.digest_while(|| false), None);
    }
}
