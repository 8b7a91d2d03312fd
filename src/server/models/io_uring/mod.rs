//! The `io-uring` model: one ring and SO_REUSEPORT listener per worker
//! thread, driving the same `Session` as every model; blocking file work
//! goes to the shared `Offload` pool, which wakes the ring via an eventfd.

mod conn;
mod ring;
mod worker;

use std::net::TcpListener;

pub use ring::{build as build_ring, BufRing, Features, BUF_GROUP};

use crate::server::offload::Offload;
use crate::server::workers::per_listener;
use crate::server::{Ready, ServerConfig, Shutdown};

pub use conn::HELD_MAX;
pub use ring::{RECV_BUFS, RECV_BUF_SIZE};

/// What a completion belongs to, in the top byte of its user_data; a
/// connection's ops also carry its slab token and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Op {
    Accept = 1,
    Recv,
    Send,
    /// A send that leaves the connection waiting for its next request, so
    /// its completion is not waited for (`Conn::submit_output`).
    SendQuiet,
    /// File to the connection's pipe.
    SpliceIn,
    /// The connection's pipe to its socket.
    SpliceOut,
    /// The socket can take more (POLLOUT) after a splice found it full.
    Writable,
    /// The offload pool's eventfd was written.
    Wake,
    /// The shutdown descriptor turned readable.
    Stop,
    /// A cancel request's own completion (nothing to do).
    Cancel,
    /// The TICK timeout fired (multishot where quiet sends are on).
    Tick,
}

impl Op {
    fn from_u8(b: u8) -> Option<Op> {
        [
            Op::Accept,
            Op::Recv,
            Op::Send,
            Op::SendQuiet,
            Op::SpliceIn,
            Op::SpliceOut,
            Op::Writable,
            Op::Wake,
            Op::Stop,
            Op::Cancel,
            Op::Tick,
        ]
        .into_iter()
        .find(|op| *op as u8 == b)
    }
}

/// Bits of user_data that hold a connection's generation (the token has
/// the low 32, the op the top 8).
const GEN_BITS: u32 = 24;

/// user_data for `op` on the connection at `token` of generation `gen`.
fn user_data(op: Op, token: usize, gen: u32) -> u64 {
    ((op as u64) << 56)
        | (u64::from(gen & ((1 << GEN_BITS) - 1)) << 32)
        | (token as u64 & 0xffff_ffff)
}

/// The op, token and generation a user_data carries.
fn decode(ud: u64) -> Option<(Op, usize, u32)> {
    let op = Op::from_u8((ud >> 56) as u8)?;
    let gen = ((ud >> 32) as u32) & ((1 << GEN_BITS) - 1);
    Some((op, (ud & 0xffff_ffff) as usize, gen))
}

pub fn run(
    listener: TcpListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
    ready: Ready<'_>,
) -> anyhow::Result<()> {
    let offload = &Offload::for_model("io-uring")?;
    // Each worker builds its ring on its own thread (SINGLE_ISSUER binds a
    // ring to its creator) and says how that went before it serves.
    let names = ("io-uring", "uring");
    per_listener(listener, cfg, names, shutdown, ready, |l, share, set_up| {
        worker::run(l, cfg, share, offload, shutdown, set_up)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips() {
        for op in [Op::Accept, Op::Recv, Op::SpliceOut, Op::Cancel, Op::Tick] {
            for (token, gen) in [(0, 0), (9_999, 1), (u32::MAX as usize, (1 << GEN_BITS) - 1)] {
                assert_eq!(decode(user_data(op, token, gen)), Some((op, token, gen)));
            }
        }
        // A generation past its bits wraps, as the worker's counter does.
        assert_eq!(
            decode(user_data(Op::Recv, 1, 1 << GEN_BITS)),
            Some((Op::Recv, 1, 0))
        );
        assert_eq!(decode(0), None);
    }
}
