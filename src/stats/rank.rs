//! Ranking into groups that can be told apart: the items in order of
//! their estimate, a new group wherever an adjacent pair is decided (its
//! ratio's interval excludes 1). Items inside a group are not decided
//! apart from their neighbours; "a ≈ b, then c" reads off the groups.

/// Which way is better for what is ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Capacity, requests/s: the highest first.
    HighFirst,
    /// Cost, latency: the lowest first.
    LowFirst,
}

/// Groups of indices into `estimates`, best first. `decided(a, b)` says
/// whether the pair (a the better estimate) is told apart, typically
/// `ratio::paired(...)` decided. Items whose estimate is not a number
/// are left out.
pub fn groups(
    estimates: &[f64],
    order: Order,
    decided: impl Fn(usize, usize) -> bool,
) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..estimates.len())
        .filter(|&i| estimates[i].is_finite())
        .collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (estimates[a], estimates[b]);
        match order {
            Order::HighFirst => y.total_cmp(&x),
            Order::LowFirst => x.total_cmp(&y),
        }
    });
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in idx {
        match out.last_mut() {
            Some(g) if !decided(*g.last().unwrap_or(&i), i) => g.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// The ends of each "≈" chain that are told apart although every
/// neighbour holds 1 with the next (a ≈ b ≈ c, yet a and c differ): the
/// pair (first, last) of each such group. A reader must not take a chain
/// for a set of equals.
pub fn ends_apart(
    groups: &[Vec<usize>],
    decided: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    groups
        .iter()
        .filter(|g| g.len() > 2)
        .map(|g| (g[0], g[g.len() - 1]))
        .filter(|&(a, b)| decided(a, b))
        .collect()
}

/// "a ≈ b, then c, then d ≈ e": the groups in words.
pub fn sentence(groups: &[Vec<usize>], name: impl Fn(usize) -> String) -> String {
    groups
        .iter()
        .map(|g| g.iter().map(|&i| name(i)).collect::<Vec<_>>().join(" ≈ "))
        .collect::<Vec<_>>()
        .join(", then ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_group_starts_where_the_adjacent_pair_is_decided() {
        // Costs (µs/request): 11.2, 11.5 and 12.8 cannot be told apart
        // pairwise, 16.6 can from 12.8, 35.0 from 16.6.
        let est = [16.6, 11.2, 35.0, 12.8, 11.5, f64::NAN];
        let decided = |a: usize, b: usize| (est[b] / est[a]) > 1.2;
        let g = groups(&est, Order::LowFirst, decided);
        assert_eq!(g, vec![vec![1, 4, 3], vec![0], vec![2]]);
        let names = ["tpc", "el", "pool", "re", "uring", "nan"];
        assert_eq!(
            sentence(&g, |i| names[i].to_string()),
            "el ≈ uring ≈ re, then tpc, then pool"
        );
        // 11.2 and 12.8 are told apart though each is ≈ 11.5.
        let chain = |a: usize, b: usize| (est[b] / est[a]) > 1.1;
        assert_eq!(ends_apart(&g, chain), vec![(1, 3)]);
        assert!(ends_apart(&g, decided).is_empty());
        let up = groups(&[1.0, 3.0, 2.0], Order::HighFirst, |_, _| true);
        assert_eq!(up, vec![vec![1], vec![2], vec![0]]);
        assert!(groups(&[], Order::HighFirst, |_, _| true).is_empty());
    }
}
