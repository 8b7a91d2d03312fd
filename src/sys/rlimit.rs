//! The process's open-file limit, raised once at start by every command
//! that holds many sockets (the server's connections, the bench's).

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Raises the soft RLIMIT_NOFILE to the hard limit and returns the limit in
/// force afterwards. The soft default (often 1,024) is far below what E3's
/// 10,000 connections need, while the hard limit usually allows it.
pub fn raise_nofile_limit() -> nix::Result<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Ok(hard);
    }
    Ok(soft)
}
