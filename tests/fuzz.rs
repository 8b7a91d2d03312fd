//! The fuzz harness, on stable Rust inside `cargo test`: mutated requests
//! from a seed corpus through the sans-IO core (no panic, and the same
//! events whether the bytes arrive whole or one at a time), through the
//! handlers, and over raw sockets against every model.
//!
//! Fixed seeds, so a failure reproduces; `LOADLAB_FUZZ_ITERS` and
//! `LOADLAB_FUZZ_SEED` run a longer or different search (README, "Tests").

use crate::common;

pub mod corpus;
pub mod coverage;
pub mod mutate;
pub mod socket;

use self::coverage::Coverage;
use self::mutate::MUTATORS;
use common::sansio::{drive, Answers, Ev, Rng, Split};
use loadlab::http::Limits;

/// Mutated requests through the core per run: the floor, which
/// takes a few seconds in release.
const ITERS: u64 = 50_000;
/// The fixed seed of every run unless `LOADLAB_FUZZ_SEED` says otherwise.
const SEED: u64 = 0x5EED_F022;
/// The body limit in the core: small, so changed sizes cross it often.
const MAX_BODY: u64 = 16 * 1024;
/// One case in this many starts from a large seed (8 KiB request line,
/// 100 fields, 8 KB of field values), which costs tens of times more to
/// feed one byte at a time.
const LARGE_EVERY: u64 = 16;
/// Largest read in the cases also fed in reads of random sizes.
const MAX_READ: usize = 64;
/// Most mutators stacked on one case.
const MAX_MUTATIONS: usize = 4;

/// A number from the environment, for longer opt-in runs.
fn env(key: &str) -> Option<u64> {
    let v = std::env::var(key).ok()?;
    let v = v.replace('_', "");
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

fn limits() -> Limits {
    Limits {
        max_body: MAX_BODY,
        ..Limits::default()
    }
}

#[test]
fn mutated_requests_never_panic_and_give_the_same_events_whole_or_byte_by_byte() {
    let iters = env("LOADLAB_FUZZ_ITERS").unwrap_or(ITERS);
    let seed = env("LOADLAB_FUZZ_SEED").unwrap_or(SEED);
    let limits = limits();
    let seeds = corpus::seeds();
    let all: Vec<&[u8]> = seeds.iter().map(|s| &s.bytes[..]).collect();
    let (large, small): (Vec<usize>, Vec<usize>) = (0..seeds.len()).partition(|&i| seeds[i].large);
    let whole = |input: &[u8]| drive(input, Split::Feed(usize::MAX), &limits, Answers::Varied);
    // What each seed does unmutated: the seeds are valid requests, and a
    // mutator's effect is measured against them.
    let baseline: Vec<_> = seeds.iter().map(|s| whole(&s.bytes).events).collect();
    for s in &seeds {
        let plain = drive(&s.bytes, Split::Feed(usize::MAX), &limits, Answers::AtEnd);
        assert!(
            !plain.events.iter().any(|e| matches!(e, Ev::Error(_))),
            "seed {:?} is refused: {:?}",
            s.name,
            plain.events
        );
    }

    let mut rng = Rng::new(seed);
    let mut cov = Coverage::default();
    for i in 0..iters {
        let from = if i % LARGE_EVERY == LARGE_EVERY - 1 {
            *rng.pick(&large)
        } else {
            *rng.pick(&small)
        };
        let mut input = seeds[from].bytes.clone();
        // Half the cases one mutation, so each mutator's own effect shows.
        let n = if rng.below(2) == 0 {
            1
        } else {
            2 + rng.below(MAX_MUTATIONS - 1)
        };
        let used: Vec<usize> = (0..n).map(|_| rng.below(MUTATORS.len())).collect();
        for &m in &used {
            mutate::apply(&mut rng, &mut input, m, &all);
        }
        let at_once = whole(&input);
        // One byte at a time through both ways in: `feed` and the
        // `read_buf`/`filled` pair the models use; and for some cases reads
        // of other sizes too, which move the buffer's contents around.
        let one = if i % 2 == 0 {
            Split::Feed(1)
        } else {
            Split::ReadBuf(1)
        };
        let mut splits = vec![one];
        if i % 4 == 3 {
            splits.push(Split::ReadBuf(2 + rng.below(MAX_READ - 1)));
        }
        let mut traces = vec![at_once];
        for split in splits {
            let got = drive(&input, split, &limits, Answers::Varied);
            assert_eq!(
                got.events,
                traces[0].events,
                "seed {seed:#x} case {i}: {:?} mutated by {:?}, fed {split:?}: {:?}",
                seeds[from].name,
                used.iter().map(|&m| MUTATORS[m]).collect::<Vec<_>>(),
                String::from_utf8_lossy(&input[..input.len().min(600)])
            );
            traces.push(got);
        }
        let changed = traces[0].events != baseline[from];
        cov.record(&traces.iter().collect::<Vec<_>>(), &used, changed);
    }
    cov.check();
}

/// Random and mutated requests aimed at every route, through the whole
/// exchange (`Session` and the handlers, not only the protocol core),
/// never panic, and every session ends or waits for input in bounded steps.
#[test]
fn random_requests_through_the_handlers_never_panic() {
    use loadlab::server::{blocking::process_inline, session::Session, App};
    let files = tempfile::tempdir().unwrap();
    let mut app = App::new(None, Some(files.path().to_path_buf()), 10_000).unwrap();
    app.max_upload = 10_000;
    let routes: &[&str] = &[
        "/",
        "/500B.html",
        "/20KB.html",
        "/bytes/7",
        "/bytes/-1",
        "/bytes/99999999999",
        "/status/204",
        "/status/205",
        "/status/99",
        "/echo",
        "/files/",
        "/files/a.txt",
        "/files/..",
        "/files/%2e%2e",
        "/files/.hidden",
        "/files/a%00b",
        "/files/?sort=size",
        "/%c0%ae",
        "/files/a.txt?sha256",
    ];
    let methods: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];
    let extras: &[&str] = &[
        "Range: bytes=0-3\r\n",
        "Range: bytes=9-2\r\n",
        "Range: bytes=-5\r\n",
        "If-None-Match: *\r\n",
        "If-Match: *\r\n",
        "If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT\r\n",
        "Content-Range: bytes 0-1/2\r\n",
        "Expect: 100-continue\r\n",
        "Connection: close\r\n",
        "",
    ];
    let mut rng = Rng::new(0xF11E);
    let mut sink = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .unwrap();
    for i in 0..3_000 {
        let mut req = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let m = rng.pick(methods);
            let t = rng.pick(routes);
            let x = rng.pick(extras);
            let body = match rng.below(3) {
                0 => "Content-Length: 5\r\n\r\nhello".to_string(),
                1 => "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".to_string(),
                _ => "\r\n".to_string(),
            };
            req.extend_from_slice(format!("{m} {t} HTTP/1.1\r\nHost: h\r\n{x}{body}").as_bytes());
        }
        if i % 3 == 0 {
            let same = [&req[..]];
            let mut mutated = req.clone();
            for _ in 0..1 + rng.below(MAX_MUTATIONS) {
                let m = rng.below(MUTATORS.len());
                mutate::apply(&mut rng, &mut mutated, m, &same);
            }
            req = mutated;
        }
        let mut s = Session::new(limits());
        s.conn.feed(&req);
        s.conn.feed_eof();
        let mut steps = 0;
        while !s.is_done() {
            process_inline(&mut s, &app);
            if s.out.is_empty() && !s.conn.wants_read() && s.is_done() {
                break;
            }
            let before = s.out.queued();
            let _ = s.out.write_to(&mut sink, u64::MAX);
            if s.out.queued() == before && s.out.is_empty() {
                // Nothing to write and nothing more can arrive: the
                // session must have ended or be idle at EOF.
                process_inline(&mut s, &app);
                break;
            }
            steps += 1;
            assert!(
                steps < 10_000,
                "case {i} does not finish: {:?}",
                String::from_utf8_lossy(&req)
            );
        }
    }
}

/// Mutated requests over raw sockets, each on its own connection: the
/// model answers or closes every one within a bound, never crashes, and
/// serves a normal request afterwards. `LOADLAB_FUZZ_ITERS` scales it too
/// (one socket case per 200 core cases, at least `socket::CASES`).
fn raw_socket_pass(model: &str) {
    let cases = env("LOADLAB_FUZZ_ITERS").map_or(socket::CASES, |n| (n / 200).max(socket::CASES));
    let seed = env("LOADLAB_FUZZ_SEED").unwrap_or(SEED);
    socket::pass(model, cases, seed);
}

per_model!(raw_socket_pass);
