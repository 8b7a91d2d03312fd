//! Which cells the two sides have in common. A cell matches on its target
//! (or on nothing when each side has one target: that is the change
//! being compared) and its dimensions; a dimension that is fixed on each
//! side and belongs to the target (workers) or the run's name
//! (experiment) does not keep two cells apart. Equal load first; a cell
//! whose only match has another load is paired and marked, for the
//! caller to refuse or, forced, show.

use super::model::{Cell, Side};

/// Dimensions left out of the key when each side has a single value.
const SIDE_FIXED: [&str; 2] = ["experiment", "workers"];

/// Two cells compared.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    pub a: &'a Cell,
    pub b: &'a Cell,
    /// Their runs applied different loads.
    pub load_differs: bool,
}

/// The sides' cells, sorted into pairs and cells of one side only.
#[derive(Debug, Clone, Default)]
pub struct Matched<'a> {
    pub pairs: Vec<Pair<'a>>,
    pub only_a: Vec<&'a Cell>,
    pub only_b: Vec<&'a Cell>,
}

type Key = (String, Vec<(&'static str, String)>);

/// How cells are keyed for this pair of sides.
struct Keying {
    by_target: bool,
    dropped: Vec<&'static str>,
}

impl Keying {
    fn of(a: &Side, b: &Side) -> Keying {
        let single = |s: &Side, d: &str| {
            let mut v: Vec<&str> = s
                .cells
                .iter()
                .flat_map(|c| c.dims.iter().filter(|(k, _)| *k == d))
                .map(|(_, v)| v.as_str())
                .collect();
            v.dedup();
            v.len() <= 1
        };
        Keying {
            by_target: !(a.targets().len() == 1 && b.targets().len() == 1),
            dropped: SIDE_FIXED
                .into_iter()
                .filter(|d| single(a, d) && single(b, d))
                .collect(),
        }
    }

    fn key(&self, c: &Cell) -> Key {
        let target = if self.by_target {
            c.target.clone()
        } else {
            String::new()
        };
        let dims = c
            .dims
            .iter()
            .filter(|(k, _)| !self.dropped.contains(k))
            .cloned()
            .collect();
        (target, dims)
    }
}

/// Pairs the cells of `a` and `b`: same key and load first, then same key
/// with another load (marked).
pub fn match_cells<'a>(a: &'a Side, b: &'a Side) -> Matched<'a> {
    let keying = Keying::of(a, b);
    let kb: Vec<Key> = b.cells.iter().map(|c| keying.key(c)).collect();
    let mut used = vec![false; b.cells.len()];
    let mut out = Matched::default();
    let mut left: Vec<&Cell> = a.cells.iter().collect();
    for same_load in [true, false] {
        let mut rest = Vec::new();
        for ca in left {
            let k = keying.key(ca);
            let fits =
                |i: usize| !used[i] && kb[i] == k && (!same_load || b.cells[i].load == ca.load);
            match (0..b.cells.len()).find(|&i| fits(i)) {
                Some(i) => {
                    used[i] = true;
                    out.pairs.push(Pair {
                        a: ca,
                        b: &b.cells[i],
                        load_differs: b.cells[i].load != ca.load,
                    });
                }
                None => rest.push(ca),
            }
        }
        left = rest;
    }
    out.only_a = left;
    out.only_b = (0..b.cells.len())
        .filter(|&i| !used[i])
        .map(|i| &b.cells[i])
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::model::Kind;

    fn cell(target: &str, c: &str, load: &str) -> Cell {
        Cell {
            target: target.into(),
            dims: vec![("c", c.into()), ("workers", "4".into())],
            load: load.into(),
            ..Cell::default()
        }
    }

    fn side(cells: Vec<Cell>) -> Side {
        Side {
            source: String::new(),
            kind: Kind::Sweep,
            version: None,
            machine: None,
            cpu_split: Vec::new(),
            host: Vec::new(),
            cells,
        }
    }

    #[test]
    fn one_target_a_side_matches_by_dimensions_and_load_differences_are_marked() {
        let a = side(vec![
            cell("x", "1", "100 requests"),
            cell("x", "2", "100 requests"),
            cell("x", "3", "1 s"),
        ]);
        // Workers fixed on each side belong to the target: 8 against 4
        // does not keep cells apart.
        let mut b = side(vec![
            cell("y", "2", "100 requests"),
            cell("y", "3", "2 s"),
            cell("y", "9", "1 s"),
        ]);
        for c in &mut b.cells {
            c.dims[1].1 = "8".into();
        }
        let m = match_cells(&a, &b);
        assert_eq!(m.pairs.len(), 2);
        assert!(!m.pairs[0].load_differs && m.pairs[1].load_differs);
        assert_eq!(m.only_a.len(), 1);
        assert_eq!(m.only_b[0].dims[0].1, "9");
        // Two targets a side: the target names must match.
        let mut two = a.clone();
        two.cells.push(cell("z", "1", "100 requests"));
        assert!(match_cells(&two, &b).pairs.is_empty());
    }
}
