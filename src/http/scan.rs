//! Byte searches eight bytes at a time, for the scans every request makes
//! of its target and path.
//!
//! Why: every request scans its target several times (split at `?`, refuse
//! `#`, look for `%`, `\`, NUL and `/`), and a byte loop over each is a
//! visible share of a small request's work.

/// One in every byte.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
pub(crate) const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit set in each zero byte of `x`, and maybe in bytes after one
/// (read little-endian): subtracting one from a zero byte borrows from the
/// next, so a byte of 0x01 after a zero is flagged too. No byte before the
/// first zero is ever flagged, so the lowest flag is exact.
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// The index of the first byte of `hay` that is one of `needles`.
pub(crate) fn find_any<const N: usize>(hay: &[u8], needles: [u8; N]) -> Option<usize> {
    let hits = |word: &[u8]| {
        let x = u64::from_le_bytes(word.try_into().unwrap());
        let mut hits = 0;
        for n in needles {
            hits |= zero_bytes(x ^ (ONES * u64::from(n)));
        }
        // The lowest flag of each needle is its first match, so the lowest
        // of them all is the first match of any.
        (hits != 0).then(|| hits.trailing_zeros() as usize / 8)
    };
    let mut i = 0;
    while let Some(word) = hay.get(i..i + 8) {
        if let Some(at) = hits(word) {
            return Some(i + at);
        }
        i += 8;
    }
    if i == hay.len() {
        return None;
    }
    // The rest, shorter than a word: the last eight bytes, whose first
    // ones were searched already and hold no match (so they cannot be
    // flagged either). One more word is cheaper than a byte loop over the
    // tail.
    match hay.len().checked_sub(8) {
        Some(last) => hits(&hay[last..]).map(|at| last + at),
        None => hay.iter().position(|b| needles.iter().any(|n| n == b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word search finds what a byte loop finds, for every length
    /// around a word and every place of one or two matches, including the
    /// bytes (0x01 after a match, the needle plus or minus one) that a
    /// borrow could flag wrongly.
    #[test]
    fn find_any_matches_a_byte_loop() {
        let needles = [b'?', b'#', 0];
        let fillers = [
            b'a',
            b'?' - 1,
            b'?' + 1,
            b'#' ^ 1,
            1,
            0x80,
            0xFF,
            0x3F ^ 0x80,
        ];
        let naive = |h: &[u8]| h.iter().position(|b| needles.contains(b));
        for len in 0..20 {
            for &fill in &fillers {
                let base = vec![fill; len];
                let check = |h: &[u8]| assert_eq!(find_any(h, needles), naive(h), "{h:?}");
                check(&base);
                for a in 0..len {
                    for &n in &[b'?', b'#', 0, 1] {
                        let mut h = base.clone();
                        h[a] = n;
                        check(&h);
                        for b in a + 1..len {
                            let mut h2 = h.clone();
                            h2[b] = b'#';
                            check(&h2);
                        }
                    }
                }
            }
        }
    }
}
