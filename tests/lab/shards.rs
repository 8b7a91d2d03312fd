//! `sweep --shards N`: each cell's load as N local `loadlab bench`
//! processes (or a `--launcher`'s tasks), merged before the row is
//! written; and every way it cannot work is one line and a non-zero exit,
//! never a row from fewer shards. (Through srun: tests/slurm.rs.)

use std::path::Path;

use super::support::*;
use crate::common::shards::check_sharded_row;
use loadlab::results::raw;

/// Requests per cell: odd, so the shards' shares differ (500 and 501).
const REQUESTS: &str = "1001";

fn sharded_sweep(out: &Path, extra: &[&str]) -> (String, String, i32) {
    let mut args = vec![
        "-T",
        "model:event-loop",
        "--concurrency",
        "4",
        "--requests",
        REQUESTS,
        "--repeat",
        "1",
        "--threads",
        "1",
    ];
    args.extend_from_slice(extra);
    sweep(&args, out)
}

#[test]
fn sweep_over_two_local_shards_writes_their_merged_row() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (_, stderr, code) = sharded_sweep(&out, &["--shards", "2"]);
    assert_eq!(code, 0, "{stderr}");
    check_sharded_row(&out, 2, 1001, None);
}

/// The sweep stops with one line (the last on stderr: notes about a busy
/// host may come before), exit 1, and raw.csv holds no measured row.
fn assert_stopped_without_a_row(out: &Path, extra: &[&str], says: &str) {
    let (_, stderr, code) = sharded_sweep(out, extra);
    assert_eq!(code, 1, "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains(says), "{stderr}");
    let rows = raw::read(out).unwrap();
    assert!(rows.iter().all(|r| !r.is_measured()), "{rows:?}");
}

#[test]
fn regression_a_failing_launcher_stops_the_sweep_without_a_row() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    assert_stopped_without_a_row(
        &dir.path().join("r"),
        &["--shards", "2", "--launcher", "sh -c 'exit 7' {n}"],
        "failed (exit status: 7)",
    );
}

#[test]
fn regression_a_launcher_starting_too_few_shards_names_the_missing_one() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // Starts shard 0 of 2 alone: shard 1 never writes its file.
    assert_stopped_without_a_row(
        &dir.path().join("r"),
        &[
            "--shards",
            "2",
            "--launcher",
            "env SLURM_PROCID=0 SLURM_NTASKS={n} {cmd}",
        ],
        "shard 1 of 2 wrote no result",
    );
}

/// Refused before any target starts: one line, exit 2 (a usage error).
fn assert_refused(extra: &[&str], says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr, code) = sharded_sweep(&dir.path().join("r"), extra);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
}

#[test]
fn shards_below_one_are_refused() {
    assert_refused(&["--shards", "0"], "--shards must be at least 1");
}

#[test]
fn more_shards_than_connections_are_refused() {
    assert_refused(
        &["--shards", "5"],
        "--shards 5 is more than --concurrency 4: every shard needs a connection",
    );
}

#[test]
fn a_launcher_without_the_count_is_refused() {
    assert_refused(&["--shards", "2", "--launcher", "srun"], "has no {n}");
}

#[test]
fn a_launcher_without_shards_is_refused() {
    assert_refused(&["--launcher", "srun -n {n}"], "--shards");
}
