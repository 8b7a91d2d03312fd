//! The checks that watch the server's processes (targets whose pid check
//! knows): CPU burned while no client is connected, and descriptors that
//! grow with the requests served and stay.

use std::time::{Duration, Instant};

use crate::proc::monitor::{tree, Monitor, IDLE_CPU_LIMIT_PCT};

use super::outcome::Finding;
use super::probe::Want;
use super::subject::Subject;

/// How long the idle server is watched.
const IDLE_WATCH: Duration = Duration::from_secs(1);
/// Requests made for `fd-leak`, each on its own connection, at most in
/// [`FD_TIME`]: a leak per connection shows as hundreds.
const FD_REQUESTS: usize = 500;
const FD_TIME: Duration = Duration::from_secs(3);
/// Descriptors that may stay open per request served before it is a
/// leak: 1 in 10, and at least [`FD_LEAK_FLOOR`].
const FD_LEAK_SHARE: usize = 10;
const FD_LEAK_FLOOR: usize = 20;

/// `busy-when-idle`: the server's CPU over the second after every
/// connection of the check closed.
pub fn busy_when_idle(s: &Subject, out: &mut Vec<Finding>) {
    const ID: &str = "busy-when-idle";
    if !s.wants(ID) {
        return;
    }
    let Some(pid) = s.pid else {
        return out.push(Finding::skip(
            ID,
            "loadlab did not start this server, so it cannot watch its processes",
        ));
    };
    // Lingering closes end first.
    std::thread::sleep(Duration::from_millis(300));
    let m = Monitor::start(pid);
    std::thread::sleep(IDLE_WATCH);
    let used = m.finish();
    out.push(Finding::judge(
        ID,
        used.cpu_pct > IDLE_CPU_LIMIT_PCT,
        format!(
            "with no client connected, the server's processes used {:.0} % of a core over {} s",
            used.cpu_pct,
            IDLE_WATCH.as_secs()
        ),
    ));
}

/// Open descriptors of the process tree; None when /proc hides them.
fn open_fds(pid: u32) -> Option<usize> {
    let mut n = 0;
    for p in tree(pid) {
        n += std::fs::read_dir(format!("/proc/{p}/fd")).ok()?.count();
    }
    Some(n)
}

/// `fd-leak`: descriptors before, after up to 500 requests each on its
/// own connection, and once every connection closed.
pub fn fd_leak(s: &Subject, out: &mut Vec<Finding>) {
    const ID: &str = "fd-leak";
    if !s.wants(ID) {
        return;
    }
    let Some(pid) = s.pid else {
        return out.push(Finding::skip(
            ID,
            "loadlab did not start this server, so it cannot count its descriptors",
        ));
    };
    let Some(before) = open_fds(pid) else {
        return out.push(Finding::skip(
            ID,
            "the server's /proc/PID/fd cannot be read here",
        ));
    };
    let p = &s.probe;
    let bytes = p.get_close(&p.path);
    let start = Instant::now();
    let mut served = 0;
    while served < FD_REQUESTS && start.elapsed() < FD_TIME && !(s.stop)() && !s.out_of_time() {
        let t = p.exchange(&bytes, Want::answers(1).within(Duration::from_secs(2)));
        if t.answers.is_empty() {
            break;
        }
        served += 1;
    }
    let during = open_fds(pid);
    std::thread::sleep(Duration::from_millis(500));
    let Some(after) = open_fds(pid) else {
        return out.push(Finding::skip(ID, "the server's processes went away"));
    };
    if served == 0 {
        return out.push(Finding::skip(
            ID,
            "no request on a new connection was answered",
        ));
    }
    let grew = after.saturating_sub(before);
    let allowed = (served / FD_LEAK_SHARE).max(FD_LEAK_FLOOR);
    out.push(Finding::judge(
        ID,
        grew > allowed,
        format!(
            "open descriptors: {before} before, {} after {served} requests each on its own connection, {after} once every connection closed",
            during.map_or("?".into(), |d| d.to_string())
        ),
    ));
}
