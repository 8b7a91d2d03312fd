//! The kernel's TCP counters (/proc/net/netstat and /proc/net/snmp) that
//! show what a run did to the network stack: listen-queue overflows and
//! drops, SYN cookies and retransmissions, resets, failed connects. They
//! count the whole network namespace, not one process.

use std::collections::BTreeMap;

/// The counters read, as (file section, name): the section is `TcpExt` in
/// /proc/net/netstat and `Tcp` in /proc/net/snmp.
pub const COUNTERS: [(&str, &str); 9] = [
    ("TcpExt", "ListenOverflows"),
    ("TcpExt", "ListenDrops"),
    ("TcpExt", "SyncookiesSent"),
    ("TcpExt", "TCPSynRetrans"),
    ("Tcp", "RetransSegs"),
    ("Tcp", "AttemptFails"),
    ("Tcp", "EstabResets"),
    ("Tcp", "OutRsts"),
    ("Tcp", "ActiveOpens"),
];

/// A reading: each counter that could be read, by name. One that could
/// not is absent, never 0.
pub type Reading = BTreeMap<String, u64>;

/// Reads every counter of [`COUNTERS`] the kernel gives.
pub fn read() -> Reading {
    let mut out = Reading::new();
    for file in ["/proc/net/netstat", "/proc/net/snmp"] {
        if let Ok(text) = std::fs::read_to_string(file) {
            parse_into(&text, &mut out);
        }
    }
    out
}

/// Takes the counters of [`COUNTERS`] from a netstat- or snmp-style text:
/// a line of names and the next of values, both led by `Section:`.
pub fn parse_into(text: &str, out: &mut Reading) {
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.windows(2) {
        let (Some((sec, names)), Some((sec2, values))) =
            (pair[0].split_once(':'), pair[1].split_once(':'))
        else {
            continue;
        };
        // A names line is followed by a values line of the same section.
        if sec != sec2
            || names
                .split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u64>().is_ok())
        {
            continue;
        }
        for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
            let wanted = COUNTERS.iter().any(|&(s, n)| s == sec && n == name);
            if let (true, Ok(v)) = (wanted, value.parse::<u64>()) {
                out.insert(name.to_string(), v);
            }
        }
    }
}

/// What rose between two readings; a counter missing from either is
/// absent (a counter that went down, wrapped or reset, too).
pub fn delta(before: &Reading, after: &Reading) -> Reading {
    before
        .iter()
        .filter_map(|(k, b)| Some((k.clone(), after.get(k)?.checked_sub(*b)?)))
        .collect()
}

/// Connects beyond `own` that ActiveOpens rose by over a run, when
/// enough more to be other programs' traffic in this namespace and not
/// a few of loadlab's own (a monitor's, a retry's): more than 5 and more
/// than 5 % of `own`. None when ActiveOpens is unknown or `own` is 0 (a
/// file written before connects were counted).
pub fn other_opens(active_opens: Option<u64>, own: u64) -> Option<u64> {
    let rose = active_opens?;
    let extra = rose.checked_sub(own)?;
    (own > 0 && extra > 5 && extra * 20 > own).then_some(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NETSTAT: &str =
        "TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPSynRetrans\n\
TcpExt: 3 0 17 18 40\n\
IpExt: InNoRoutes InTruncatedPkts\n\
IpExt: 0 0\n";
    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Tcp: RtoAlgorithm RtoMin ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts\n\
Tcp: 1 200 1000 990 2 5 10 5000 5100 7 0 12\n";

    #[test]
    fn the_wanted_counters_are_read_and_nothing_else() {
        let mut r = Reading::new();
        parse_into(NETSTAT, &mut r);
        parse_into(SNMP, &mut r);
        let want: Reading = [
            ("SyncookiesSent", 3),
            ("ListenOverflows", 17),
            ("ListenDrops", 18),
            ("TCPSynRetrans", 40),
            ("ActiveOpens", 1000),
            ("AttemptFails", 2),
            ("EstabResets", 5),
            ("RetransSegs", 7),
            ("OutRsts", 12),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(r, want);
    }

    #[test]
    fn a_counter_missing_on_either_side_is_absent_from_the_delta() {
        let before: Reading = [("ListenDrops".to_string(), 5), ("OutRsts".to_string(), 1)].into();
        let after: Reading = [("ListenDrops".to_string(), 9)].into();
        assert_eq!(
            delta(&before, &after),
            [("ListenDrops".to_string(), 4)].into()
        );
    }

    #[test]
    fn this_kernel_gives_the_counters() {
        // Linux always has /proc/net/snmp's Tcp line.
        assert!(read().contains_key("ActiveOpens"), "{:?}", read());
    }

    #[test]
    fn only_opens_well_beyond_our_own_are_other_traffic() {
        assert_eq!(other_opens(Some(130), 100), Some(30));
        assert_eq!(other_opens(Some(130), 126), None, "4 more is noise");
        assert_eq!(other_opens(Some(130), 0), None, "own count unknown");
        assert_eq!(other_opens(None, 100), None);
        assert_eq!(other_opens(Some(10_400), 10_000), None, "under 5 %");
    }
}
