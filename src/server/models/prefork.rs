//! N worker processes forked after binding, each serving one connection at
//! a time. The parent restarts dead workers, removes their abandoned uploads,
//! and stays single-threaded so that forking replacements is safe.

use std::collections::HashMap;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

use crate::server::handlers::files::stale;
use crate::server::shutdown::TICK;
use crate::server::{accept, blocking};
use crate::server::{ServerConfig, Shutdown};

/// A worker that dies within this time of starting is not restarted at
/// once: a worker that crashes on start would otherwise fork-bomb.
const RESPAWN_PAUSE: Duration = Duration::from_millis(100);

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let n = cfg.workers.max(1);
    // Each worker's pid and when it started.
    let mut workers = HashMap::new();
    for i in 0..n {
        match spawn_worker(&listener, cfg, shutdown) {
            Ok(pid) => {
                workers.insert(pid, Instant::now());
            }
            Err(e) => {
                // The workers already forked would go on serving the
                // listener after the server reported that it failed.
                stop(&mut workers, cfg.shutdown_grace);
                anyhow::bail!("cannot fork prefork worker {} of {n}: {e}", i + 1);
            }
        }
    }
    while !shutdown.is_set() {
        shutdown.sleep(TICK);
        let mut died_young = false;
        let gone = reap(&mut workers);
        for &(pid, started) in &gone {
            eprintln!("loadlab: prefork worker {pid} exited; starting a replacement");
            died_young |= started.elapsed() < RESPAWN_PAUSE;
        }
        if !gone.is_empty() {
            remove_abandoned_uploads(cfg);
        }
        if died_young {
            std::thread::sleep(RESPAWN_PAUSE);
        }
        while workers.len() < n && !shutdown.is_set() {
            match spawn_worker(&listener, cfg, shutdown) {
                Ok(pid) => {
                    workers.insert(pid, Instant::now());
                }
                Err(e) => {
                    eprintln!("loadlab: cannot fork a worker: {e}");
                    std::thread::sleep(RESPAWN_PAUSE);
                    break;
                }
            }
        }
    }
    // Shut for the workers too (they share the socket): clients arriving
    // while the workers finish are refused, not queued for a reset.
    accept::stop_listening(&listener);
    drop(listener);
    stop(&mut workers, cfg.shutdown_grace);
    Ok(())
}

/// SIGTERM to every worker, `grace` for them to finish, then SIGKILL.
fn stop(workers: &mut HashMap<Pid, Instant>, grace: Duration) {
    for &pid in workers.keys() {
        let _ = kill(pid, Signal::SIGTERM);
    }
    let until = Instant::now() + grace;
    while !workers.is_empty() && Instant::now() < until {
        reap(workers);
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in workers.keys() {
        let _ = kill(pid, Signal::SIGKILL);
    }
    // Reaped, so none is left a zombie while the caller goes on.
    for &pid in workers.keys() {
        let _ = waitpid(pid, None);
    }
}

/// Removes a killed worker's temporary upload now, not at the next start:
/// its lock died with it, so the startup sweep tells it from live ones.
fn remove_abandoned_uploads(cfg: &ServerConfig) {
    if let Some(dir) = &cfg.app.files_dir {
        if let Err(e) = stale::remove_stale_uploads(dir) {
            eprintln!(
                "loadlab: cannot clear temporary uploads in {}: {e}",
                dir.display()
            );
        }
    }
}

/// Collects exited workers; returns their pids and start times.
fn reap(workers: &mut HashMap<Pid, Instant>) -> Vec<(Pid, Instant)> {
    let mut gone = Vec::new();
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, _)) | Ok(WaitStatus::Signaled(pid, _, _)) => {
                if let Some(started) = workers.remove(&pid) {
                    gone.push((pid, started));
                }
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return gone,
            Ok(_) => {}
        }
    }
}

fn spawn_worker(
    listener: &TcpListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
) -> anyhow::Result<Pid> {
    // SAFETY: the parent is single-threaded (prefork's parent never spawns
    // threads), so the child does not inherit locks held by other threads.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => Ok(child),
        ForkResult::Child => {
            // Keep the inherited signal state: a SIGTERM that reached the
            // parent before this worker ran must stop it too.
            blocking::serve_serially(listener, cfg, shutdown, false);
            // Exit without unwinding into the parent's code path.
            std::process::exit(0)
        }
    }
}
