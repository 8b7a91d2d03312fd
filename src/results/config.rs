//! The run configuration: the one list of fields that say what a run
//! measured (experiment, target, workers, CPUs, path, concurrency, load,
//! keep-alive, slow clients). Every record that carries a configuration
//! (raw.csv rows, summary rows, failed runs) gets these fields from
//! `with_run_config!`, so adding a sweep dimension is an edit to the list
//! below, not to each record.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

/// Declares a record struct with the configuration fields between its own
/// leading and trailing fields (`..RunConfig,` marks the spot), and
/// implements `Configured` for it. The `@fields` rule holds the list of
/// configuration fields, in the order they stand in raw.csv and
/// summary.csv: the only place they are named. Its second list holds the
/// fields added later: a record whose columns may not move (raw.csv) ends
/// with `..RunConfigTail,` to put them last; elsewhere they follow the
/// first list.
#[macro_export]
macro_rules! with_run_config {
    (@fields $($then:tt)*) => {
        $crate::with_run_config! { $($then)* [
            /// Preset name (`e1`..`e5`, `default`) or `sweep`.
            experiment: String,
            /// Target label as given: `model:event-loop`, `nginx`, `cmd:...`, `url:...`.
            target: String,
            /// Workers the target ran with (0: not applicable or on demand).
            workers: u64,
            /// Cores the target was restricted to; 0 = not restricted.
            cpus: u64,
            path: String,
            concurrency: u64,
            /// Requests per run; 0 when runs were time-limited. A
            /// concurrency above it still gets one request per connection.
            requests: u64,
            /// Seconds per run when time-limited; 0 otherwise.
            duration_s: f64,
            keepalive: bool,
            /// Slow clients held beside the measured client during the
            /// run: none, header, body or read.
            slow: $crate::catalog::slow::SlowKind,
            /// How many slow connections were held; 0 with `slow` none.
            slow_conns: u64,
        ] [
            // Added after raw.csv's first release: at the end of a row
            // that marks `..RunConfigTail,` (see `results::raw`), beside
            // the others otherwise.
            /// Offered rate of an open-loop run (requests/s, latency from
            /// the scheduled send time); empty for a closed-loop run.
            rate: Option<f64>,
        ] }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$bm:meta])* pub $b:ident : $bt:ty, )*
            ..RunConfig,
            $( $(#[$mm:meta])* pub $m:ident : $mt:ty, )*
            ..RunConfigTail,
            $( $(#[$zm:meta])* pub $z:ident : $zt:ty, )*
        }
    ) => {
        $crate::with_run_config! { @fields @record
            [$(#[$meta])*] $name
            [$( $(#[$bm])* pub $b : $bt, )*]
            [$( $(#[$mm])* pub $m : $mt, )*]
            [$( $(#[$zm])* pub $z : $zt, )*]
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$bm:meta])* pub $b:ident : $bt:ty, )*
            ..RunConfig,
            $( $(#[$am:meta])* pub $a:ident : $at:ty, )*
        }
    ) => {
        $crate::with_run_config! { @fields @record
            [$(#[$meta])*] $name
            [$( $(#[$bm])* pub $b : $bt, )*]
            []
            [$( $(#[$am])* pub $a : $at, )*]
        }
    };
    (
        @record [$($meta:tt)*] $name:ident [$($before:tt)*] [$($middle:tt)*] [$($after:tt)*]
        [$( $(#[$fm:meta])* $f:ident : $ft:ty, )*]
        [$( $(#[$tm:meta])* $t:ident : $tt:ty, )*]
    ) => {
        $($meta)*
        pub struct $name {
            $($before)*
            $( $(#[$fm])* pub $f: $ft, )*
            $($middle)*
            $( $(#[$tm])* pub $t: $tt, )*
            $($after)*
        }

        impl $crate::results::config::Configured for $name {
            fn run_config(&self) -> $crate::results::config::RunConfig {
                $crate::results::config::RunConfig {
                    $( $f: self.$f.clone(), )*
                    $( $t: self.$t.clone(), )*
                }
            }

            fn set_run_config(&mut self, c: &$crate::results::config::RunConfig) {
                $( self.$f = c.$f.clone(); )*
                $( self.$t = c.$t.clone(); )*
            }
        }
    };
    (@key [$( $(#[$fm:meta])* $f:ident : $ft:ty, )*] [$( $(#[$tm:meta])* $t:ident : $tt:ty, )*]) => {
        impl PartialEq for RunConfig {
            fn eq(&self, other: &Self) -> bool {
                true $( && KeyPart::same(&self.$f, &other.$f) )*
                    $( && KeyPart::same(&self.$t, &other.$t) )*
            }
        }

        impl Hash for RunConfig {
            fn hash<H: Hasher>(&self, state: &mut H) {
                $( KeyPart::hash_part(&self.$f, state); )*
                $( KeyPart::hash_part(&self.$t, state); )*
            }
        }
    };
}

crate::with_run_config! {
    /// What makes two runs repeats of each other. The load is part of it:
    /// 100 and 1,000 requests (or 1 s and 10 s) are different
    /// measurements, not repeats to average.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct RunConfig {
        ..RunConfig,
    }
}

crate::with_run_config! { @fields @key }

// Durations come from millisecond flags, so equal durations have equal
// bits and the key can compare them exactly.
impl Eq for RunConfig {}

/// A configuration field as part of a hashable key.
trait KeyPart {
    fn same(&self, other: &Self) -> bool;
    fn hash_part<H: Hasher>(&self, state: &mut H);
}

macro_rules! key_part_by_value {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
            fn hash_part<H: Hasher>(&self, state: &mut H) {
                self.hash(state)
            }
        }
    )*};
}

key_part_by_value!(String, u64, bool, crate::catalog::slow::SlowKind);

impl KeyPart for f64 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
    fn hash_part<H: Hasher>(&self, state: &mut H) {
        self.to_bits().hash(state)
    }
}

impl KeyPart for Option<f64> {
    fn same(&self, other: &Self) -> bool {
        self.map(f64::to_bits) == other.map(f64::to_bits)
    }
    fn hash_part<H: Hasher>(&self, state: &mut H) {
        self.map(f64::to_bits).hash(state)
    }
}

/// A record that carries a run configuration.
pub trait Configured {
    fn run_config(&self) -> RunConfig;
    fn set_run_config(&mut self, c: &RunConfig);
}

impl RunConfig {
    /// The configuration a record carries.
    pub fn of(r: &impl Configured) -> RunConfig {
        r.run_config()
    }

    /// Length of a time-limited run in whole microseconds (0 for a
    /// request-count run), for ordering.
    pub fn duration_us(&self) -> u64 {
        duration_us(self.duration_s)
    }

    /// "1000 requests" or "2.5 s" for tables and legends.
    pub fn load_label(&self) -> String {
        load_label(self.requests, self.duration_s)
    }

    /// "5000/s" for an open-loop run, "closed" for a closed-loop one.
    pub fn rate_label(&self) -> String {
        rate_label(self.rate)
    }
}

/// An offered rate as tables show it: "5000/s", or "closed" (closed loop:
/// each connection sends when its last answer came).
pub fn rate_label(rate: Option<f64>) -> String {
    match rate {
        Some(r) => format!("{r}/s"),
        None => "closed".into(),
    }
}

/// Seconds as whole microseconds; durations are given in milliseconds, so
/// nothing is lost.
pub fn duration_us(secs: f64) -> u64 {
    if secs.is_finite() && secs > 0.0 {
        (secs * 1e6).round() as u64
    } else {
        0
    }
}

/// "1000 requests", "2.5 s", or "–" for a row with neither (a target that
/// did not start).
pub fn load_label(requests: u64, duration_s: f64) -> String {
    if requests > 0 {
        format!("{requests} requests")
    } else if duration_s > 0.0 {
        format!("{duration_s} s")
    } else {
        "–".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    crate::with_run_config! {
        #[derive(Debug, Clone, Default)]
        pub struct Probe {
            pub id: u64,
            ..RunConfig,
            pub tail: bool,
        }
    }

    #[test]
    fn records_carry_the_configuration_both_ways() {
        let c = RunConfig {
            target: "nginx".into(),
            duration_s: 0.5,
            concurrency: 7,
            ..RunConfig::default()
        };
        let mut p = Probe {
            id: 3,
            tail: true,
            ..Probe::default()
        };
        p.set_run_config(&c);
        assert_eq!((p.id, p.concurrency, p.tail), (3, 7, true));
        assert_eq!(RunConfig::of(&p), c);
        let mut set = HashSet::new();
        set.insert(c.clone());
        assert!(set.contains(&RunConfig::of(&p)));
        p.duration_s = 1.0;
        assert!(!set.contains(&RunConfig::of(&p)));
        assert_eq!(RunConfig::of(&p).load_label(), "1 s");
    }
}
