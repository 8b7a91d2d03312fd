//! A capacity search's results in the report (capacity.json): the table
//! of each target's capacity within the objective, with its interval or
//! the bound it is (the ranking is `findings::capacity`).

use super::table::{Align, Table};
use crate::results::capacity::CapacityFile;

/// The capacity table: one line per target and setting.
pub fn table(f: &CapacityFile) -> Table {
    let mut t = Table::new(
        "capacity",
        "Capacity",
        &[
            ("target", Align::Left),
            ("keep-alive", Align::Left),
            ("c", Align::Right),
            ("requests/s", Align::Right),
            ("rounds", Align::Right),
            ("last passed", Align::Right),
            ("first failed", Align::Right),
            ("client busy", Align::Right),
            ("why the first failure failed", Align::Left),
        ],
    );
    t.note = Some(format!(
        "The highest offered rate served with no failed request, at least 95 % of the rate sent and {} ({} s probes): a ladder doubling from the first rate, bisection to 5 %, then the final bracket bisected again in interleaved rounds, whose mean and 95 % interval are shown. A rate failed only when it failed twice. \"≥ … (client limit)\": the load generator's busiest thread was at least 80 % busy at the first failing rate, so the server's capacity is higher than shown and unknown; \"<\": even the first rate failed.",
        f.objective.text(),
        f.run_s
    ));
    let n = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.0}"));
    for c in &f.results {
        let why = c
            .probes
            .iter()
            .find(|p| Some(p.rate) == c.first_fail && !p.passed)
            .map_or(String::new(), |p| p.why.clone());
        t.push(vec![
            c.target.clone(),
            if c.keepalive { "on" } else { "off" }.into(),
            c.concurrency.to_string(),
            c.text(),
            c.rounds.len().to_string(),
            n(c.last_pass),
            n(c.first_fail),
            c.client_busy_pct
                .map_or("–".to_string(), |b| format!("{b:.0} %")),
            why,
        ]);
    }
    t
}
