//! What a fuzz run reached, and the check that it reached everything: every
//! event kind, every error status, every way a request is answered, and
//! every mutator changing some outcome on its own. A weak mutator or a
//! narrow corpus fails here instead of passing quietly.

use std::collections::BTreeMap;

use crate::common::sansio::{Ev, Trace, KINDS, STATUSES};
use crate::fuzz::mutate::MUTATORS;

#[derive(Default)]
pub struct Coverage {
    kinds: [u64; KINDS.len()],
    statuses: BTreeMap<u16, u64>,
    /// Where input ran out while the peer stayed: phase name -> count.
    stalls: BTreeMap<String, u64>,
    /// How requests were answered: "end keep", "early close", ...
    answers: BTreeMap<&'static str, u64>,
    /// Per mutator: times applied, and times it alone changed the events
    /// of its seed.
    applied: [u64; MUTATORS.len()],
    changed_alone: [u64; MUTATORS.len()],
    cases: u64,
}

impl Coverage {
    /// Takes in one case: the traces of its drives, the mutators applied,
    /// and whether its events differ from its seed's.
    pub fn record(&mut self, traces: &[&Trace], mutators: &[usize], changed: bool) {
        self.cases += 1;
        for t in traces {
            for (k, n) in self.kinds.iter_mut().zip(t.kinds) {
                *k += n;
            }
        }
        for m in mutators {
            self.applied[*m] += 1;
        }
        if let [m] = mutators {
            self.changed_alone[*m] += changed as u64;
        }
        for e in &traces[0].events {
            let answer = match e {
                Ev::Error(s) => {
                    *self.statuses.entry(*s).or_default() += 1;
                    continue;
                }
                Ev::Stall(phase, timeout) => {
                    if let Some(s) = timeout {
                        *self.statuses.entry(*s).or_default() += 1;
                    }
                    *self.stalls.entry(format!("{phase:?}")).or_default() += 1;
                    continue;
                }
                Ev::End(true) => "end keep",
                Ev::End(false) => "end close",
                Ev::Early(true) => "early keep",
                Ev::Early(false) => "early close",
                _ => continue,
            };
            *self.answers.entry(answer).or_default() += 1;
        }
    }

    /// Prints what was reached and fails on anything not reached.
    pub fn check(&self) {
        eprintln!("fuzz: {} cases", self.cases);
        eprintln!(
            "  events: {:?}",
            KINDS.iter().zip(self.kinds).collect::<Vec<_>>()
        );
        eprintln!("  statuses: {:?}", self.statuses);
        eprintln!("  stalls: {:?}", self.stalls);
        eprintln!("  answers: {:?}", self.answers);
        let per_mutator: Vec<_> = MUTATORS
            .iter()
            .zip(self.applied.iter().zip(self.changed_alone))
            .collect();
        eprintln!("  mutators (applied, changed alone): {per_mutator:?}");
        for (kind, n) in KINDS.iter().zip(self.kinds) {
            assert!(n > 0, "no {kind} event in {} cases", self.cases);
        }
        for s in STATUSES {
            assert!(
                self.statuses.contains_key(&s),
                "no {s} in {} cases: {:?}",
                self.cases,
                self.statuses
            );
        }
        for phase in ["Idle", "Head", "Body"] {
            assert!(self.stalls.contains_key(phase), "no stall in {phase}");
        }
        for answer in ["end keep", "end close", "early keep", "early close"] {
            assert!(self.answers.contains_key(answer), "no {answer}");
        }
        for (name, n) in MUTATORS.iter().zip(self.changed_alone) {
            assert!(n > 0, "mutator {name:?} alone never changed an outcome");
        }
    }
}
