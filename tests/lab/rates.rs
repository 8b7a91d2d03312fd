//! Offered rate as a sweep dimension (issue 42 item 3): each rate is its
//! own open-loop cell, and a cell that did not keep its rate says
//! rate-short in raw.csv, the progress lines, summary.json, the tables
//! and the findings.

use loadlab::results::raw::{self, RawRow};

use super::support::{serial, summary_json, sweep, sweep_env};

#[test]
fn each_rate_is_a_cell_and_one_out_of_reach_is_rate_short_everywhere() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // 500/s is easy for any server; 5 million/s is beyond this client.
    let (_, stderr, code) = sweep_env(
        &[
            "-T",
            "model:event-loop",
            "--rate",
            "5000000,500",
            "--duration",
            "1s",
            "--repeat",
            "1",
            "--no-check",
        ],
        &out,
        &[],
        false,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("rate=500/s c=50") && stderr.contains("[rate-short: "),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 2 runs were rate-short"), "{stderr}");

    let rows: Vec<RawRow> = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let at = |r: f64| rows.iter().find(|x| x.rate == Some(r)).unwrap();
    let (easy, far) = (at(500.0), at(5e6));
    assert!(easy.error.is_empty() && far.error.is_empty());
    assert_eq!(easy.concurrency, 50, "50 connections carry a rate");
    let kept = easy.achieved_rate.unwrap();
    assert!((475.0..=525.0).contains(&kept), "{kept}");
    assert!(!easy.rate_short() && far.rate_short(), "{far:?}");

    let json = summary_json(&out);
    let errs = crate::common::schema::validate("summary-v4.schema.json", &json);
    assert!(
        errs.is_empty(),
        "summary.json against its schema: {errs:#?}"
    );
    let confs = json["configurations"].as_array().unwrap();
    assert_eq!(confs[0]["rate"], 500.0, "rates in increasing order");
    assert_eq!(confs[1]["rate"], 5e6);
    assert_eq!(confs[0]["status"], "ok");
    assert_eq!(confs[1]["status"], "rate-short");
    assert_eq!(confs[1]["rate_short"], true);
    assert!(confs[1]["achieved_rate_mean"].as_f64().unwrap() < 0.95 * 5e6);
    let kinds: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"rate-short"), "{kinds:?}");

    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| rate ") && md.contains("5000000/s"), "{md}");
    assert!(md.contains("rate-short"), "{md}");
}

#[test]
fn rates_are_not_appended_to_a_raw_csv_without_the_rate_column() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("old");
    std::fs::create_dir(&out).unwrap();
    // The columns an older loadlab wrote: everything before `rate`.
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(RawRow::default()).unwrap();
    let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
    let header = text.lines().next().unwrap();
    let older = &header[..header.find(",rate,").expect("a rate column")];
    std::fs::write(out.join("raw.csv"), format!("{older}\n")).unwrap();
    let (_, stderr, code) = sweep(
        &["-T", "model:event-loop", "--rate", "100", "--no-check"],
        &out,
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("without the rate column") && stderr.trim().lines().count() == 1,
        "{stderr}"
    );
}
