//! Responses counted by exact status code (oha's and hey's "Status code
//! distribution"): one array slot per three-digit code, so counting a
//! response is an index and an add, with no allocation on the hot path.

use std::collections::BTreeMap;

/// Slots for codes 0..=999: every status a three-digit status line can
/// carry (the parser gives 0 where none could be read).
pub const STATUS_SLOTS: usize = 1000;

/// Counts by status code; allocated once per load thread, before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCodes(Box<[u64]>);

impl Default for StatusCodes {
    fn default() -> Self {
        StatusCodes(vec![0; STATUS_SLOTS].into_boxed_slice())
    }
}

impl StatusCodes {
    /// Counts one response. Called per response: no allocation, no map.
    #[inline]
    pub fn record(&mut self, code: u16) {
        if let Some(slot) = self.0.get_mut(usize::from(code)) {
            *slot += 1;
        }
    }

    /// Adds `n` responses of `code` (from a JSON file); false when the code
    /// has no slot, or the sum does not fit in 64 bits (the slot then
    /// saturates).
    pub fn add(&mut self, code: u16, n: u64) -> bool {
        match self.0.get_mut(usize::from(code)) {
            Some(slot) => match slot.checked_add(n) {
                Some(v) => {
                    *slot = v;
                    true
                }
                None => {
                    *slot = u64::MAX;
                    false
                }
            },
            None => false,
        }
    }

    /// Codes seen, ascending, with their counts.
    pub fn seen(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
    }

    /// Responses counted in all.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0, |a, &b| a.saturating_add(b))
    }

    /// The JSON form: code -> count, codes seen only.
    pub fn to_map(&self) -> BTreeMap<u16, u64> {
        self.seen().collect()
    }

    /// Adds another thread's (or run's) counts; false if a sum saturated.
    pub fn merge(&mut self, o: &StatusCodes) -> bool {
        o.seen().fold(true, |ok, (code, n)| self.add(code, n) && ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_exact_code_and_merges() {
        let mut a = StatusCodes::default();
        for code in [200, 200, 404, 0, 999] {
            a.record(code);
        }
        a.record(1000); // no such status line; not counted
        let mut b = StatusCodes::default();
        b.record(404);
        assert!(a.merge(&b));
        let seen: Vec<_> = a.seen().collect();
        assert_eq!(seen, [(0, 1), (200, 2), (404, 2), (999, 1)]);
        assert_eq!(a.total(), 6);
        assert!(!a.add(200, u64::MAX), "a sum past u64::MAX is reported");
        assert!(!a.add(1000, 1), "a code without a slot is reported");
    }
}
