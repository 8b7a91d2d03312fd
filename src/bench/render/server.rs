//! The report's "Server" block (`--server-pid`), in ab's label-and-value
//! layout: what the server's process tree used per request over the run;
//! without `--server-pid`, one line saying how to get it.

use std::fmt::Write;

use crate::bench::result::BenchResult;
use crate::bench::server::{per_request, Counted, ServerFigures};
use crate::sys::stacks::Share;

/// The block, after loadlab's own figures.
pub fn block(o: &mut String, r: &BenchResult) {
    let Some(f) = &r.server else {
        let _ = writeln!(
            o,
            "\nServer: no figures (give --server-pid PID to watch the server's CPU, memory, run-queue wait and syscalls per request)"
        );
        return;
    };
    let n = r.stats.complete;
    let per = |v: f64| per_request(v, n);
    let _ = writeln!(
        o,
        "\nServer (pid {}, {} process{} at the end, watched over the run):",
        f.pid,
        f.processes,
        if f.processes == 1 { "" } else { "es" }
    );
    let _ = writeln!(
        o,
        "  CPU time:             {:.1} ms (user {:.0} ms, system {:.0} ms)",
        f.cpu_ms, f.cpu_user_ms, f.cpu_system_ms
    );
    if let Some(us) = f.cpu_us_per_request {
        let _ = writeln!(o, "  CPU per request:      {us:.2} µs");
    }
    let _ = writeln!(o, "  Peak memory (RSS):    {} KB", f.peak_rss_kb);
    let _ = writeln!(
        o,
        "  Run-queue wait:       {:.1} ms{}",
        f.runq_wait_ms,
        per(f.runq_wait_ms * 1000.0).map_or(String::new(), |v| format!(" ({v:.2} µs per request)"))
    );
    let _ = writeln!(
        o,
        "  Context switches:     {}{}, {} forced by the scheduler (/proc: lower bounds)",
        f.ctx_switches,
        per(f.ctx_switches as f64).map_or(String::new(), |v| format!(" ({v:.2} per request)")),
        f.ctx_involuntary
    );
    match (&f.counted, &f.counted_unavailable) {
        (Some(c), _) => counted(o, c),
        (None, Some(why)) => {
            let _ = writeln!(o, "  Syscalls:             not counted: {why}");
        }
        _ => {}
    }
    profile(o, f);
}

/// The counting pass's lines, per request of the pass.
fn counted(o: &mut String, c: &Counted) {
    let per = |v: u64| per_request(v as f64, c.requests).unwrap_or(0.0);
    let mut by: Vec<(&String, &u64)> = c.syscalls.iter().filter(|(_, &n)| n > 0).collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = by
        .iter()
        .map(|(k, &n)| format!("{k} {:.2}", per(n)))
        .collect();
    let _ = writeln!(
        o,
        "  Syscalls per request: {:.2}: {}",
        per(c.syscalls_total),
        parts.join(", ")
    );
    let _ = writeln!(
        o,
        "  Context switches per request (perf): {:.2}",
        per(c.ctx_switches)
    );
    if !c.ring_ops.is_empty() {
        let ops: Vec<String> = c
            .ring_ops
            .iter()
            .map(|(op, &n)| format!("{op} {:.2}", per(n)))
            .collect();
        let _ = writeln!(o, "  Ring entries per request: {}", ops.join(", "));
    }
    let _ = writeln!(
        o,
        "  (Counted by perf over {} requests of the same load before the run: the counters slow every syscall, so the run itself is not counted.)",
        c.requests
    );
}

fn top(v: &[Share]) -> String {
    v.iter()
        .take(3)
        .map(|f| format!("{} {:.1} %", f.function, f.pct))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fewer samples than this make shares rough to a few percent.
pub const FEW_SAMPLES: u64 = 200;

/// A word on a profile with few samples.
pub fn rough(samples: u64) -> &'static str {
    if samples < FEW_SAMPLES {
        " (few samples: shares are rough)"
    } else {
        ""
    }
}

/// `--profile`'s lines: where the CPU went, and the flame graph's file.
fn profile(o: &mut String, f: &ServerFigures) {
    if let Some(p) = &f.profile {
        let s = &p.stacks;
        let _ = writeln!(
            o,
            "  Profile:              {} samples, {:.1} % in the kernel, {:.1} % in user space{}",
            s.samples,
            s.kernel_pct,
            100.0 - s.kernel_pct,
            rough(s.samples)
        );
        if s.left_out > 0 {
            let _ = writeln!(
                o,
                "    left out:           {} samples perf could not attribute to a thread",
                s.left_out
            );
        }
        if !s.areas.is_empty() {
            let _ = writeln!(o, "    passing through:    {}", top(&s.areas));
        }
        let _ = writeln!(o, "    top kernel:         {}", top(&s.top_kernel));
        let _ = writeln!(o, "    top user space:     {}", top(&s.top_user));
        let _ = writeln!(o, "  Flame graph:          {}", p.flame_graph);
    } else if let Some(why) = &f.profile_unavailable {
        let _ = writeln!(o, "  Profile:              none: {why}");
    }
}
