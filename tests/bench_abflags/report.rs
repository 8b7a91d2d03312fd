//! ab's report variants beside real ab on the same server: -w's HTML
//! table with -x -y -z, -S's min/avg/max layout, -d without percentiles;
//! -V; and the ab flags loadlab refuses by name.

use std::process::Command;

use crate::common::bench::bench_text;
use crate::common::*;

/// Runs real ab with `args`; its stdout.
pub(super) fn ab(args: &[&str]) -> String {
    let out = tool("ab").args(args).output().expect("run ab");
    assert!(out.status.success(), "ab {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `loadlab bench ARGS...`'s stdout, which must succeed.
fn loadlab(args: &[&str]) -> String {
    let (out, err, code) = bench_text(args);
    assert_eq!(code, 0, "{err}");
    out
}

/// The lines of an HTML table with every cell's text replaced, so that
/// two runs compare by layout: rows, labels, attributes.
fn table_shape(out: &str) -> Vec<String> {
    let start = out.find("<table").expect("a table");
    out[start..]
        .lines()
        .map(|l| {
            let mut shaped = String::new();
            let mut rest = l;
            // Keep the tags and th labels; blank what a td holds.
            while let Some(i) = rest.find("<td") {
                let close = rest[i..].find('>').map_or(rest.len(), |c| i + c + 1);
                shaped.push_str(&rest[..close]);
                rest = &rest[close..];
                let end = rest.find("</td>").unwrap_or(rest.len());
                shaped.push('#');
                rest = &rest[end..];
            }
            shaped.push_str(rest);
            shaped
        })
        .collect()
}

/// Lines from "Connection Times" to the end of ab's part, numbers
/// replaced by `#` and runs of spaces by one, so layouts compare.
fn times_shape(out: &str) -> Vec<String> {
    let start = out.find("Connection Times (ms)").expect("connection times");
    let end = out.find("\nBeyond ab").unwrap_or(out.len());
    out[start..end]
        .lines()
        .map(|l| {
            let mut s = String::new();
            let mut last = ' ';
            for ch in l.chars() {
                let c = if ch.is_ascii_digit() || ch == '.' {
                    '#'
                } else {
                    ch
                };
                if !(c == last && (c == '#' || c == ' ')) {
                    s.push(c);
                }
                last = c;
            }
            s.trim_end().to_string()
        })
        // ab's warnings about the spread are another part's work (not
        // -S's layout) and depend on the run's luck.
        .filter(|l| !l.is_empty() && !is_spread_warning(l))
        .collect()
}

fn is_spread_warning(l: &str) -> bool {
    [
        "WARNING: The median",
        "ERROR: The median",
        "These results are",
        "deviation apart",
    ]
    .iter()
    .any(|w| l.contains(w))
}

#[test]
fn w_prints_abs_html_table_with_x_y_z_attributes() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let attrs = ["-x", "border=1", "-y", "class=r", "-z", "align=left"];
    for ka in [false, true] {
        let mut args = vec!["-n", "20", "-c", "2", "-w"];
        args.extend(attrs);
        if ka {
            args.push("-k");
        }
        args.push(&url);
        let theirs = ab(&args);
        let mut ours_args = vec!["-q"];
        ours_args.extend(&args);
        let ours = loadlab(&ours_args);
        assert_eq!(table_shape(&ours), table_shape(&theirs), "-k {ka}\n{ours}");
        assert!(ours.contains("<table border=1>"), "{ours}");
        assert!(ours.contains("<td colspan=2 align=left>20</td>"), "{ours}");
        assert!(!ours.contains("Beyond ab"), "only ab's table: {ours}");
    }
    // ab's defaults: no table or row attributes, white cells.
    let plain = loadlab(&["-q", "-n", "3", "-w", &url]);
    assert!(
        plain.contains("<table >\n<tr ><th colspan=2 bgcolor=white>"),
        "{plain}"
    );
    // Attributes without -w, or -w with another format, are refused.
    for bad in [
        vec!["-x", "border=1", url.as_str()],
        vec!["-w", "--format", "json", url.as_str()],
    ] {
        let (_, err, code) = bench_text(&bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn big_s_and_d_give_abs_layouts_without_estimators_or_percentiles() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    for flags in [vec!["-S"], vec!["-d"], vec!["-S", "-d"], vec![]] {
        let mut args = vec!["-q", "-n", "20", "-c", "2"];
        args.extend(&flags);
        args.push(&url);
        let theirs = ab(&args);
        let ours = loadlab(&args);
        assert_eq!(
            times_shape(&ours),
            times_shape(&theirs),
            "{flags:?}\n{ours}"
        );
        let estimators = ours.contains("min  mean[+/-sd] median   max");
        assert_eq!(estimators, !flags.contains(&"-S"), "{ours}");
        let plain = ours.contains("\n              min   avg   max\n");
        assert_eq!(plain, flags.contains(&"-S"), "{ours}");
        let percentiles = ours.contains("Percentage of the requests served");
        assert_eq!(percentiles, !flags.contains(&"-d"), "{ours}");
    }
}

#[test]
fn big_v_prints_the_version_and_exits_0_without_a_url() {
    let out = Command::new(loadlab_bin())
        .args(["bench", "-V"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
    // Without -V the URL is still required, in one line.
    let (_, err, code) = bench_text(&["-n", "1"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn ab_flags_loadlab_lacks_are_refused_by_name_in_one_line() {
    for (flag, value) in [("-W", Some("4")), ("-R", Some("10")), ("-Q", None)] {
        let mut args = vec![flag];
        args.extend(value);
        args.push("http://127.0.0.1:9/");
        let (out, err, code) = bench_text(&args);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("bench {flag}:")), "{err}");
        assert!(!err.contains("unexpected argument"), "{err}");
    }
}
