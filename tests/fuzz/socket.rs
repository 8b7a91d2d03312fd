//! The raw-socket pass: mutated requests sent to a real server of one
//! model, each on its own connection. The server must answer or close each
//! within a bound, never crash or panic, and still serve a normal request
//! afterwards.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use loadlab::http::Limits;

use crate::common::sansio::{drive, Answers, Ev, Rng, Split};
use crate::common::{assert_alive, loadlab_bin, TestServer};
use crate::fuzz::corpus;
use crate::fuzz::mutate::{self, MUTATORS};

/// Mutated requests per model in every test run: enough to reach every
/// mutator on every seed a few times, quick enough for CI (about a second
/// per model, plus the stalled cases below).
pub const CASES: u64 = 300;
/// One case in this many is cut short and keeps its side of the
/// connection open, so only the server's own timeouts can end it.
const STALL_EVERY: u64 = 100;
/// Most stalled cases per model: each waits out a server timeout, and a
/// blocking model serves nothing else meanwhile, so more buy little.
const MAX_STALLED: u64 = 10;
/// Stalled cases open at once.
const STALL_LANES: usize = 2;
/// The server's header, body and idle timeouts in this pass: short, so a
/// stalled case ends quickly.
const SERVER_TIMEOUT: &str = "1s";
/// How long a connection may stay silent before the server counts as hung:
/// far above the server's timeouts, for a loaded CI machine.
const HANG: Duration = Duration::from_secs(10);
/// Most response bytes read from one connection; the corpus asks for
/// nothing near this, so more means a runaway response.
const MAX_REPLY: usize = 1 << 20;

/// What the server did with one connection.
enum Outcome {
    /// Answered (the first status) and closed.
    Answered(u16),
    /// Closed or reset without a response.
    Closed,
}

/// Runs the pass against `model` with `cases` mutated requests from `seed`.
pub fn pass(model: &str, cases: u64, seed: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path().join("files");
    std::fs::create_dir(&files).expect("files dir");
    let log = dir.path().join("stderr");
    // The server's stderr goes to a file: a panicking connection thread or
    // a dying worker leaves the server answering, so only its stderr
    // shows them.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"log=$1; shift; exec "$@" 2>"$log""#)
        .arg("sh")
        .arg(&log)
        .arg(loadlab_bin())
        .args(["serve", "--model", model, "--addr", "127.0.0.1:0"])
        .arg("--files")
        .arg(&files)
        .args(["--header-timeout", SERVER_TIMEOUT])
        .args(["--body-timeout", SERVER_TIMEOUT])
        .args(["--idle-timeout", SERVER_TIMEOUT]);
    let mut server = TestServer::start_command(cmd);

    let seeds = corpus::seeds();
    let all: Vec<&[u8]> = seeds.iter().map(|s| &s.bytes[..]).collect();
    let mut rng = Rng::new(seed);
    let inputs: Vec<Vec<u8>> = (0..cases)
        .map(|i| {
            let mut input = rng.pick(&seeds).bytes.clone();
            if stalls(i) {
                // A seed cut short, not mutated (a mutation would mostly
                // be refused at once): the server waits for the rest.
                input.truncate(1 + rng.below(input.len() - 1));
                return input;
            }
            for _ in 0..1 + rng.below(3) {
                let m = rng.below(MUTATORS.len());
                mutate::apply(&mut rng, &mut input, m, &all);
            }
            input
        })
        .collect();
    let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
    let mut closed = 0;
    let mut tally = |i: usize, stall: bool, got: Result<Outcome, String>, took: Duration| match got
    {
        Ok(Outcome::Answered(s)) => *statuses.entry(s).or_default() += 1,
        Ok(Outcome::Closed) => closed += 1,
        Err(e) => panic!(
            "{model}: case {i} (seed {seed:#x}, stall={stall}) after {took:?}: {e}; request {:?}",
            String::from_utf8_lossy(&inputs[i][..inputs[i].len().min(400)])
        ),
    };
    // The stalled cases wait out the server's timeouts beside the others,
    // `STALL_LANES` at a time (a blocking model serves nothing else
    // meanwhile, so a case waits behind at most that many).
    let stalled: Vec<usize> = (0..inputs.len()).filter(|&i| stalls(i as u64)).collect();
    let stalled = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..STALL_LANES)
            .map(|lane| {
                let (server, inputs, stalled) = (&server, &inputs, &stalled);
                scope.spawn(move || {
                    let run = |&i: &usize| {
                        let started = Instant::now();
                        (i, one(server, &inputs[i], true), started.elapsed())
                    };
                    stalled
                        .iter()
                        .skip(lane)
                        .step_by(STALL_LANES)
                        .map(run)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (i, input) in inputs.iter().enumerate() {
            if stalls(i as u64) {
                continue;
            }
            let started = Instant::now();
            let got = one(&server, input, false).and_then(|got| agrees(input, got));
            tally(i, false, got, started.elapsed());
        }
        lanes
            .into_iter()
            .flat_map(|l| l.join().expect("stalled cases thread"))
            .collect::<Vec<_>>()
    });
    for (i, got, took) in stalled {
        tally(i, true, got, took);
    }
    assert!(
        server.child.try_wait().expect("try_wait").is_none(),
        "{model}: the server exited"
    );
    eprintln!("{model}: {cases} cases, statuses {statuses:?}, {closed} closed unanswered");
    assert_alive(&server);
    let errors = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !errors.contains("panicked") && !errors.contains("exited"),
        "{model}: the server's stderr shows a crash:\n{errors}"
    );
    assert!(
        !statuses.contains_key(&500),
        "{model}: a mutated request made an internal error: {statuses:?}"
    );
    assert_eq!(server.terminate(), Some(0), "{model}: unclean exit");
}

/// A request the protocol core refuses before any head must get that
/// status from every model, as the first response on the connection: the
/// models differ only in how they move bytes.
fn agrees(input: &[u8], got: Outcome) -> Result<Outcome, String> {
    let limits = Limits::default();
    let core = drive(input, Split::Feed(usize::MAX), &limits, Answers::AtEnd).events;
    let first = core.iter().find(|e| !matches!(e, Ev::Stall(..)));
    match (first, &got) {
        (Some(Ev::Error(want)), Outcome::Answered(s)) if s != want => Err(format!(
            "answered {s}, where the core refuses the request with {want}"
        )),
        (Some(Ev::Error(want)), Outcome::Closed) => {
            Err(format!("closed unanswered, where the core answers {want}"))
        }
        _ => Ok(got),
    }
}

/// Whether case `i` is cut short and left open.
fn stalls(i: u64) -> bool {
    i % STALL_EVERY == STALL_EVERY - 1 && i / STALL_EVERY < MAX_STALLED
}

/// Sends one request on its own connection and reads until the server
/// closes. Err when the server stays silent for `HANG` or sends nonsense.
fn one(server: &TestServer, input: &[u8], stall: bool) -> Result<Outcome, String> {
    let mut s = TcpStream::connect(server.addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(HANG)).unwrap();
    s.set_write_timeout(Some(HANG)).unwrap();
    // The server may answer and close before reading everything (431,
    // 413): a failed write is not a failure, the answer is what counts.
    let _ = s.write_all(input);
    if !stall {
        let _ = s.shutdown(Shutdown::Write);
    }
    let mut reply = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                reply.extend_from_slice(&buf[..n]);
                if reply.len() > MAX_REPLY {
                    return Err(format!("more than {MAX_REPLY} bytes of reply"));
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!(
                    "hung: nothing for {HANG:?} after {} bytes",
                    reply.len()
                ));
            }
            // A reset is a close: the server gave up on the connection.
            Err(_) => break,
        }
    }
    if reply.is_empty() {
        return Ok(Outcome::Closed);
    }
    let status = reply
        .strip_prefix(b"HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|d| std::str::from_utf8(d).ok())
        .and_then(|d| d.parse::<u16>().ok())
        .ok_or_else(|| format!("not a response: {:?}", String::from_utf8_lossy(&reply)))?;
    Ok(Outcome::Answered(status))
}
