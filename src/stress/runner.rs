//! Runs the cells: for each server (spawned per model and worker count, or
//! the one at `--url`), each size and each client pool, the operations in
//! order. A cell releases all its client threads at once and times each
//! transfer; verification and cleanup happen outside the timed part.
//!
//! A transfer either succeeds (the server answered with success and the
//! bytes verified) or fails (anything else, including a wrong digest); a
//! server that does not start fails all its cells, and the run goes on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::client::{self, Until};
use super::content::{mix, Content};
use super::matrix::{Cell, Matrix, Op};
use super::outcome::{failed, row, Outcome};
use super::scratch::Scratch;
use super::target::{self, SpawnedServer};
use crate::catalog::models::Model;
use crate::net::url::HttpUrl;
use crate::proc::affinity;
use crate::results::diagnosis::Diagnosis;
use crate::results::stress::{StressReport, StressRow, SCHEMA};

/// Bytes read back from a random place of every uploaded file.
const SAMPLE: u64 = 64 * 1024;
/// Deadline of the untimed requests around cells (setup uploads use the
/// transfer timeout instead).
const HOUSEKEEPING_TIMEOUT: Duration = Duration::from_secs(60);

/// The server a run talks to.
#[derive(Debug, Clone)]
pub enum Target {
    /// Start `loadlab serve` for every (model, workers) of the matrix.
    Spawn,
    /// A running server that speaks the file API.
    Url { url: String, endpoint: HttpUrl },
}

#[derive(Debug, Clone)]
pub struct StressConfig {
    pub matrix: Matrix,
    pub target: Target,
    /// How long one client may take for one transfer, waiting included.
    pub timeout: Duration,
    /// Where the run makes its scratch directory (spawned servers' upload
    /// directories); None: the system's temporary directory.
    pub scratch: Option<PathBuf>,
    /// The CPUs the servers stress starts are restricted to (their first
    /// N), its clients on the others; None: all shared.
    pub cpus: Option<usize>,
}

/// What a stress run tells its caller as it goes (the CLI draws a
/// progress bar with it), in the shape a sweep's `SweepEvent` has.
#[derive(Debug)]
pub enum StressEvent<'a> {
    /// Before the first cell: how many cells the run has.
    Planned {
        cells: usize,
    },
    /// A line for the user about what the run is doing.
    Note(&'a str),
    CellStarted(&'a Cell),
    CellDone(&'a StressRow),
}

/// The check made of each server before its first cell (the CLI's, so
/// stress need not know check): given the server's label, where it
/// listens and its pid when stress started it; None when checks are off.
pub type PreCheck<'a> = &'a (dyn Fn(&str, &HttpUrl, Option<u32>) -> Option<Diagnosis> + Sync);

struct Run<'a> {
    cfg: &'a StressConfig,
    check: PreCheck<'a>,
    diagnoses: Vec<Diagnosis>,
    /// Ctrl-C: no cell starts after it; the rows so far are the report.
    stop: &'a (dyn Fn() -> bool + Sync),
    nonce: u64,
    /// SHA-256 of each client file, computed the first time a transfer
    /// needs it and inside that transfer's deadline.
    digests: Mutex<HashMap<Content, [u8; 32]>>,
    rows: Vec<StressRow>,
    notes: Vec<String>,
    leftover_temp_files: usize,
    leftover_files: usize,
}

/// Runs the matrix; once `stop` says so (Ctrl-C) the cells in progress
/// finish, their files are cleaned up, and no further cell starts.
pub fn run(
    cfg: &StressConfig,
    check: PreCheck,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(StressEvent),
) -> anyhow::Result<StressReport> {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let m = &cfg.matrix;
    let external = matches!(cfg.target, Target::Url { .. });
    on_event(StressEvent::Planned {
        cells: m.cells(external),
    });
    let nonce = mix(started
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64
        ^ ((std::process::id() as u64) << 32));
    let mut run = Run {
        cfg,
        check,
        diagnoses: Vec::new(),
        stop,
        nonce,
        digests: Mutex::new(HashMap::new()),
        rows: Vec::new(),
        notes: Vec::new(),
        leftover_temp_files: 0,
        leftover_files: 0,
    };
    // Only servers started here need scratch space; --url needs none.
    let closed = match &cfg.target {
        Target::Spawn => {
            let scratch = Scratch::create(cfg.scratch.as_deref())?;
            // Client threads start from this one and inherit its mask.
            let _pinned = run.split_cpus();
            for &model in &m.models {
                for &workers in m.server_workers.iter().take_while(|_| !stop()) {
                    run.with_spawned(scratch.path(), model, workers, on_event);
                }
            }
            let closed = scratch.close();
            if let Some(e) = &closed.error {
                run.notes.push(format!("removing scratch space: {e}"));
            }
            Some(closed)
        }
        Target::Url { url, endpoint } => {
            run.pre_check(url, endpoint, None, on_event);
            run.server_cells(Ok(endpoint), None, on_event);
            None
        }
    };
    let mut rows = std::mem::take(&mut run.rows);
    rows.sort_by_key(|r| {
        (
            r.op,
            r.size,
            r.clients,
            r.server_workers,
            model_rank(m, &r.model),
        )
    });
    Ok(StressReport {
        schema: SCHEMA,
        loadlab_version: env!("CARGO_PKG_VERSION"),
        target: match &cfg.target {
            Target::Spawn => "spawned".into(),
            Target::Url { url, .. } => url.clone(),
        },
        timeout_s: cfg.timeout.as_secs_f64(),
        matrix: m.clone(),
        started_unix_ms: started
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64,
        elapsed_s: t0.elapsed().as_secs_f64(),
        rows,
        // Temporary files are hidden from a server's API; only the
        // directories of servers started here can be looked into.
        leftover_temp_files: (!external).then_some(run.leftover_temp_files),
        leftover_files: run.leftover_files,
        scratch: closed.as_ref().map(|c| c.path.display().to_string()),
        scratch_removed: closed.as_ref().map_or(true, |c| c.removed),
        notes: run.notes,
        diagnoses: run.diagnoses,
    })
}

fn model_rank(m: &Matrix, name: &str) -> usize {
    m.models
        .iter()
        .position(|x| x.name() == name)
        .unwrap_or(usize::MAX)
}

impl Run<'_> {
    /// Starts a server, runs its cells, stops it and inspects what it left.
    /// A server that does not start fails its cells; the run goes on.
    fn with_spawned(
        &mut self,
        scratch: &Path,
        model: Model,
        workers: usize,
        on_event: &mut dyn FnMut(StressEvent),
    ) {
        let tag = format!("{model}-{workers}");
        let dir = scratch.join(format!("files-{tag}"));
        // The largest file plus room, so the limit never decides a cell.
        let max_upload = self.cfg.matrix.max_size().saturating_add(1 << 20);
        let server = match SpawnedServer::start(model, workers, &dir, max_upload, self.cfg.cpus) {
            Ok(s) => s,
            Err(e) => {
                let why = format!("{e:#}");
                self.notes.push(why.clone());
                self.server_cells(Err(&why), Some((model, workers)), on_event);
                let _ = std::fs::remove_dir_all(&dir);
                return;
            }
        };
        let endpoint = server.endpoint.clone();
        let label = format!("model:{model}:workers={workers}");
        self.pre_check(&label, &endpoint, Some(server.pid()), on_event);
        self.server_cells(Ok(&endpoint), Some((model, workers)), on_event);
        if let Err(e) = server.stop() {
            self.notes
                .push(format!("{model} with {workers} workers: {e}"));
        }
        let (temps, others) = target::leftovers(&dir);
        if temps + others > 0 {
            self.notes.push(format!(
                "{model} with {workers} workers left {temps} temporary and {others} other files"
            ));
        }
        self.leftover_temp_files += temps;
        self.leftover_files += others;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pins this thread (and so every client thread it starts) to the CPUs
    /// the servers were not given, and says how the CPUs were split; None
    /// when nothing is split.
    fn split_cpus(&mut self) -> Option<affinity::PinnedThread> {
        let n = self.cfg.cpus?;
        let servers = affinity::first_allowed(n).ok()?;
        let clients = affinity::others_than_first(n);
        if clients.is_empty() {
            self.notes.push(format!(
                "--cpus {n} leaves no other CPU for the clients: they share CPU {} with the servers",
                affinity::list_text(&servers)
            ));
            return None;
        }
        let pinned = affinity::pin_current_thread(&clients).ok()?;
        self.notes.push(format!(
            "CPUs split (--cpus {n}): the servers run on CPU {}, the clients on CPU {}",
            affinity::list_text(&servers),
            affinity::list_text(&clients)
        ));
        Some(pinned)
    }

    /// Checks a server before its first cell, when checks are on, and
    /// says what was found.
    fn pre_check(
        &mut self,
        label: &str,
        ep: &HttpUrl,
        pid: Option<u32>,
        on_event: &mut dyn FnMut(StressEvent),
    ) {
        if (self.stop)() {
            return;
        }
        if let Some(d) = (self.check)(label, ep, pid) {
            on_event(StressEvent::Note(&format!(
                "check {label}: {}",
                d.headline()
            )));
            self.diagnoses.push(d);
        }
    }

    /// Every (size, clients) cell pair against one server, in the
    /// matrix's order. `Err(why)`: the server did not start, and every
    /// client of every cell fails with that reason, so the table still
    /// has a row for each cell.
    fn server_cells(
        &mut self,
        ep: Result<&HttpUrl, &str>,
        server: Option<(Model, usize)>,
        on_event: &mut dyn FnMut(StressEvent),
    ) {
        let m = self.cfg.matrix.clone();
        for &size in &m.sizes {
            for &clients in &m.clients {
                if (self.stop)() {
                    return;
                }
                // Which clients' files are on the server, verified.
                let mut present = vec![false; clients];
                for &op in &m.ops {
                    let cell = Cell {
                        op,
                        size,
                        clients,
                        server,
                    };
                    let outcomes = match ep {
                        Ok(ep) => {
                            if op == Op::Download && present.contains(&false) {
                                self.setup(ep, &cell, &mut present);
                            }
                            on_event(StressEvent::CellStarted(&cell));
                            let outcomes = self.transfer(ep, &cell);
                            // Ctrl-C cut this cell short: its failures are
                            // the interruption's, not the server's, so it
                            // has no row (as a sweep drops the run it was
                            // in); its files are still cleaned up.
                            if (self.stop)() {
                                break;
                            }
                            if op == Op::Upload {
                                for (p, o) in present.iter_mut().zip(&outcomes) {
                                    *p = o.verified;
                                }
                            }
                            outcomes
                        }
                        Err(why) => {
                            on_event(StressEvent::CellStarted(&cell));
                            (0..clients).map(|_| failed(why)).collect()
                        }
                    };
                    let row = row(&cell, &outcomes);
                    on_event(StressEvent::CellDone(&row));
                    self.rows.push(row);
                }
                if let Ok(ep) = ep {
                    self.cleanup(ep, size, clients);
                }
            }
        }
    }

    /// The SHA-256 of `content`, computed the first time it is needed,
    /// within `until` (it counts inside the transfer's `--timeout`).
    fn want(&self, content: &Content, until: Until) -> Result<[u8; 32], String> {
        let known = |d: &Mutex<HashMap<Content, [u8; 32]>>| {
            d.lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(content)
                .copied()
        };
        if let Some(d) = known(&self.digests) {
            return Ok(d);
        }
        let go_on = || !(until.stop)() && Instant::now() < until.deadline;
        let d = content
            .digest_while(go_on)
            .ok_or_else(|| match (until.stop)() {
                true => client::STOPPED.to_string(),
                false => "timed out computing the SHA-256 of the test content".to_string(),
            })?;
        self.digests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(*content, d);
        Ok(d)
    }

    fn name(&self, client: usize, size: u64) -> String {
        format!("stress-{:016x}-{client}-{size}.bin", self.nonce)
    }

    fn content(&self, client: usize, size: u64) -> Content {
        Content::for_client(self.nonce, client, size)
    }

    /// Runs one cell: all clients start together; each is timed alone.
    fn transfer(&self, ep: &HttpUrl, cell: &Cell) -> Vec<Outcome> {
        let go = Barrier::new(cell.clients);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..cell.clients)
                .map(|i| {
                    let go = &go;
                    std::thread::Builder::new()
                        .name(format!("client-{i}"))
                        .stack_size(256 * 1024)
                        .spawn_scoped(s, move || {
                            // The deadline starts before the digest the
                            // transfer is checked against, which is made
                            // before the clients start together, so it
                            // counts inside --timeout but not in the times.
                            let until = Until {
                                deadline: Instant::now() + self.cfg.timeout,
                                stop: self.stop,
                            };
                            let want = self.want(&self.content(i, cell.size), until);
                            go.wait();
                            match want {
                                Ok(want) => self.client(ep, cell.op, i, cell.size, until, want),
                                Err(e) => failed(&e),
                            }
                        })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| failed("client thread panicked")),
                    Err(e) => failed(&format!("cannot start a client thread: {e}")),
                })
                .collect()
        })
    }

    /// One client's timed transfer, checked against `want`, its file's
    /// SHA-256.
    fn client(
        &self,
        ep: &HttpUrl,
        op: Op,
        i: usize,
        size: u64,
        until: Until,
        want: [u8; 32],
    ) -> Outcome {
        let name = self.name(i, size);
        let content = self.content(i, size);
        let start = Instant::now();
        let result = match op {
            Op::Upload => client::upload(ep, &name, &content, until).map(|u| (u.size, u.sha256)),
            Op::Download => client::download(ep, &name, until).map(|(n, d)| (n, hex(&d))),
        };
        let end = Instant::now();
        let mut o = Outcome {
            start,
            end,
            verified: false,
            error: None,
        };
        match result {
            Err(e) => o.error = Some(e.to_string()),
            Ok((n, digest)) if n != size || digest != hex(&want) => {
                o.error = Some(format!(
                    "{op} of {name}: got {n} bytes with sha256 {digest}"
                ));
            }
            Ok(_) if op == Op::Upload => match self.read_back(ep, &name, &content, i) {
                Ok(()) => o.verified = true,
                Err(e) => o.error = Some(e),
            },
            Ok(_) => o.verified = true,
        }
        o
    }

    /// Compares a random slice of an uploaded file with the client's bytes:
    /// the digest the server returned could be right while what it stored
    /// is not.
    fn read_back(
        &self,
        ep: &HttpUrl,
        name: &str,
        content: &Content,
        i: usize,
    ) -> Result<(), String> {
        let len = SAMPLE.min(content.len);
        if len == 0 {
            return Ok(());
        }
        let span = content.len - len + 1;
        let start = mix(self.nonce ^ mix(i as u64 ^ content.len)) % span;
        let until = Until {
            deadline: Instant::now() + self.cfg.timeout,
            stop: self.stop,
        };
        let got = client::read_range(ep, name, start, len, until)
            .map_err(|e| format!("read-back of {name}: {e}"))?;
        let mut want = vec![0u8; len as usize];
        content.fill(start, &mut want);
        if got != want {
            return Err(format!("read-back of {name} at {start}: bytes differ"));
        }
        Ok(())
    }

    /// Uploads (untimed) the files a download cell needs that are missing.
    fn setup(&mut self, ep: &HttpUrl, cell: &Cell, present: &mut [bool]) {
        let missing: Vec<usize> = (0..cell.clients).filter(|&i| !present[i]).collect();
        let until = Until {
            deadline: Instant::now() + self.cfg.timeout,
            stop: self.stop,
        };
        let run = &*self;
        let results: Vec<bool> = std::thread::scope(|s| {
            let hs: Vec<_> = missing
                .iter()
                .map(|&i| {
                    let name = run.name(i, cell.size);
                    let content = run.content(i, cell.size);
                    s.spawn(move || {
                        let Ok(want) = run.want(&content, until) else {
                            return false;
                        };
                        client::upload(ep, &name, &content, until)
                            .is_ok_and(|u| u.sha256 == hex(&want))
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or(false)).collect()
        });
        for (&i, ok) in missing.iter().zip(results) {
            present[i] = ok;
        }
        if present.contains(&false) {
            self.notes
                .push(format!("{cell}: setup could not upload every file"));
        }
    }

    /// Deletes this pair's files; a file that stays is a leftover. One
    /// deadline for the whole pass, no longer than the transfer timeout, so
    /// a server that stopped answering cannot hold the run up for long.
    fn cleanup(&mut self, ep: &HttpUrl, size: u64, clients: usize) {
        // Not cut short by Ctrl-C: an interrupted run still cleans up.
        let until = Until::deadline(Instant::now() + HOUSEKEEPING_TIMEOUT.min(self.cfg.timeout));
        for i in 0..clients {
            let name = self.name(i, size);
            match client::delete(ep, &name, until) {
                Ok(204) | Ok(404) => {}
                Ok(s) => self.notes.push(format!("DELETE {name}: HTTP {s}")),
                Err(e) => self.notes.push(format!("DELETE {name}: {e}")),
            }
        }
        if matches!(self.cfg.target, Target::Url { .. }) {
            match client::list(ep, until) {
                Ok(names) => {
                    let prefix = format!("stress-{:016x}-", self.nonce);
                    self.leftover_files += names.iter().filter(|n| n.starts_with(&prefix)).count();
                }
                Err(e) => self.notes.push(format!("listing after cleanup: {e}")),
            }
        }
    }
}

fn hex(d: &[u8; 32]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
