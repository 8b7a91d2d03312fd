//! What sampled call stacks say, from their folded form (one stack a
//! line, `comm;outer;...;leaf COUNT`, kernel frames ending `_[k]` as
//! inferno's perf collapser marks them): samples, the kernel's share, the
//! areas and the functions the samples were taken in, and the static
//! flame graph they draw. Plain data, so a bench run's server block and a
//! sweep's profile.json give one account of a profile.

use serde::{Deserialize, Serialize};

/// How many functions each top list names.
const TOP: usize = 8;

/// Where a sample's time went, by the frames its stack passes through
/// (kernel function names, stable across recent kernels): a sample counts
/// in every area one of its frames names, so the shares may add up past
/// 100 %.
const AREAS: &[(&str, &[&str])] = &[
    (
        "TCP/IP",
        &[
            "tcp_",
            "inet_",
            "ip_finish",
            "__dev_queue_xmit",
            "net_rx_action",
        ],
    ),
    // Not start_thread: every thread's stack begins there.
    (
        "thread start and exit",
        &[
            "copy_process",
            "kernel_clone",
            "do_exit",
            "pthread_create",
            "__nptl_free_stacks",
        ],
    ),
    (
        "scheduler",
        &[
            "__schedule",
            "finish_task_switch",
            "try_to_wake_up",
            "schedule_timeout",
        ],
    ),
    (
        "memory maps and faults",
        &[
            "do_mmap",
            "__vm_munmap",
            "do_mprotect",
            "exc_page_fault",
            "do_madvise",
        ],
    ),
    ("epoll", &["do_epoll_wait", "ep_poll", "do_epoll_ctl"]),
    (
        "io_uring",
        &["io_uring_enter", "io_submit_sqes", "io_issue_sqe"],
    ),
    (
        "accept and close",
        &["do_accept", "__sys_accept4", "__fput", "sock_close"],
    ),
];

/// A function and its share of the samples, %.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub function: String,
    pub pct: f64,
}

/// What folded stacks say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub samples: u64,
    /// Samples whose innermost frame is the kernel's, %.
    pub kernel_pct: f64,
    /// Of the user-space samples, those whose stack reaches a loadlab
    /// function, %; None when not asked or without user samples.
    pub user_in_loadlab_pct: Option<f64>,
    /// Innermost frames by share of all samples (self time), largest
    /// first, at most `TOP` each.
    pub top_kernel: Vec<Share>,
    pub top_user: Vec<Share>,
    /// Samples whose stack passes through each area (`AREAS`), largest
    /// first, those under 1 % left out.
    pub areas: Vec<Share>,
    /// Samples perf recorded that are in no stack above (unreadable: a
    /// thread caught as it exited).
    #[serde(default)]
    pub left_out: u64,
}

/// Folded stacks (`comm;outer;...;inner N` per line, kernel frames
/// ending `_[k]`) as a profile's figures, with the `left_out` samples the
/// folder could not read; `loadlab` says whether to count the user samples
/// that reach a loadlab function.
pub fn summarize(folded: &str, left_out: u64, loadlab: bool) -> Summary {
    let mut in_area = vec![0u64; AREAS.len()];
    let mut total = 0u64;
    let (mut kernel, mut user, mut reached) = (0u64, 0u64, 0u64);
    let mut by_leaf: Vec<(String, bool, u64)> = Vec::new();
    for line in folded.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        let in_kernel = leaf.ends_with("_[k]");
        total += n;
        for (i, (_, names)) in AREAS.iter().enumerate() {
            if stack
                .split(';')
                .any(|f| names.iter().any(|p| f.starts_with(p)))
            {
                in_area[i] += n;
            }
        }
        if in_kernel {
            kernel += n;
        } else {
            user += n;
            // Past the first frame, the process's name (loadlab too).
            let frames = stack.split_once(';').map_or("", |(_, f)| f);
            let ours = frames.contains("loadlab::") || frames.contains("7loadlab");
            reached += if ours { n } else { 0 };
        }
        let name = leaf.trim_end_matches("_[k]").to_string();
        match by_leaf
            .iter_mut()
            .find(|(f, k, _)| *f == name && *k == in_kernel)
        {
            Some((_, _, c)) => *c += n,
            None => by_leaf.push((name, in_kernel, n)),
        }
    }
    by_leaf.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    let pct = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / total as f64
        }
    };
    let top = |k: bool| -> Vec<Share> {
        by_leaf
            .iter()
            .filter(|(_, in_k, _)| *in_k == k)
            .take(TOP)
            .map(|(f, _, n)| Share {
                function: f.clone(),
                pct: pct(*n),
            })
            .collect()
    };
    let mut areas: Vec<Share> = AREAS
        .iter()
        .zip(&in_area)
        .map(|((name, _), &n)| Share {
            function: name.to_string(),
            pct: pct(n),
        })
        .filter(|s| s.pct >= 1.0)
        .collect();
    areas.sort_by(|a, b| b.pct.total_cmp(&a.pct));
    Summary {
        left_out,
        samples: total,
        kernel_pct: pct(kernel),
        user_in_loadlab_pct: (loadlab && user > 0).then(|| reached as f64 * 100.0 / user as f64),
        top_kernel: top(true),
        top_user: top(false),
        areas,
    }
}

/// The folded stacks as a static SVG (inferno), scripts removed.
pub fn flame_graph(folded: &str, title: &str) -> Result<String, String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = "samples".into();
    options.image_width = Some(1200);
    // The same function gets the same colour in every graph.
    options.hash = true;
    options.no_javascript = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg)
        .map_err(|e| format!("cannot draw the flame graph: {e}"))?;
    let svg = String::from_utf8(svg).map_err(|e| format!("flame graph: {e}"))?;
    Ok(without_scripts(&svg))
}

/// A flame graph SVG with nothing that runs: every `<script>` element and
/// every `on...=` event attribute removed (the report's page allows no
/// script; each frame's `<title>` still shows its figures on hover).
pub fn without_scripts(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find("<script") {
        out.push_str(&rest[..i]);
        rest = match rest[i..].find("</script>") {
            Some(j) => &rest[i + j + "</script>".len()..],
            None => "",
        };
    }
    out.push_str(rest);
    strip_event_attributes(&out)
}

/// ` onload="..."` and the like, removed.
fn strip_event_attributes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" on") {
        let after = &rest[i + 3..];
        let name_len = after.chars().take_while(char::is_ascii_alphabetic).count();
        let attr = &after[name_len..];
        if name_len > 0 && attr.starts_with("=\"") {
            out.push_str(&rest[..i]);
            rest = match attr[2..].find('"') {
                Some(end) => &attr[2 + end + 1..],
                None => "",
            };
        } else {
            out.push_str(&rest[..i + 3]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_stacks_give_the_kernel_share_and_the_top_functions() {
        let folded = "loadlab;main;loadlab::serve;tcp_sendmsg_[k] 60\n\
                      loadlab;main;loadlab::serve;memcpy 30\n\
                      loadlab;[unknown];memcpy 10\n";
        let s = summarize(folded, 0, true);
        assert_eq!((s.samples, s.kernel_pct), (100, 60.0));
        assert_eq!(
            s.user_in_loadlab_pct,
            Some(75.0),
            "30 of the 40 user samples"
        );
        assert_eq!(s.top_kernel[0].function, "tcp_sendmsg");
        let top_user = &s.top_user[0];
        assert_eq!((top_user.function.as_str(), top_user.pct), ("memcpy", 40.0));
        assert_eq!(s.areas.len(), 1);
        assert_eq!(
            (s.areas[0].function.as_str(), s.areas[0].pct),
            ("TCP/IP", 60.0)
        );
        assert_eq!(summarize(folded, 0, false).user_in_loadlab_pct, None);
    }

    #[test]
    fn a_flame_graph_keeps_its_shapes_and_loses_what_runs() {
        let svg = "<svg onload=\"init(evt)\" x=\"1\"><script type=\"a\"><![CDATA[x<1]]></script>\
                   <g onmouseover=\"s(this)\" onclick=\"z()\"><title>f (1 samples)</title></g>\
                   <text>one only</text></svg>";
        let clean = without_scripts(svg);
        assert_eq!(
            clean,
            "<svg x=\"1\"><g><title>f (1 samples)</title></g><text>one only</text></svg>"
        );
    }
}
