//! Opening the client's sockets: a plain nonblocking connect, or, when
//! ab's -B or -b asks for it, a socket bound and sized before it connects
//! (the receive buffer must be set before the SYN for the window scale to
//! follow it).

use std::io;
use std::net::{IpAddr, SocketAddr};

use mio::net::TcpStream;
use socket2::{Domain, Protocol, Socket, Type};

/// How every connection of a run is opened.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dial {
    /// -B: bind to this address (any port) before connecting.
    pub local: Option<IpAddr>,
    /// -b: SO_SNDBUF and SO_RCVBUF, in bytes.
    pub buffer: Option<usize>,
}

impl Dial {
    /// Starts a nonblocking connect to `addr`; it completes when the
    /// socket turns writable.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        // Without -B and -b, mio's one-call connect, as before they existed.
        if self.local.is_none() && self.buffer.is_none() {
            return TcpStream::connect(addr);
        }
        let s = Socket::new(
            Domain::for_address(addr),
            Type::STREAM.nonblocking(),
            Some(Protocol::TCP),
        )?;
        if let Some(b) = self.buffer {
            s.set_send_buffer_size(b)?;
            s.set_recv_buffer_size(b)?;
        }
        if let Some(ip) = self.local {
            s.bind(&SocketAddr::new(ip, 0).into())?;
        }
        match s.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        Ok(TcpStream::from_std(s.into()))
    }
}

/// Whether `ip` can be bound on this host (-B is checked before the run,
/// so a wrong address is one usage error, not a run of failed connects).
pub fn check_bindable(ip: IpAddr) -> io::Result<()> {
    std::net::TcpListener::bind(SocketAddr::new(ip, 0)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b_sets_both_buffers_and_big_b_binds_the_local_address() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dial = Dial {
            local: Some("127.0.0.2".parse().unwrap()),
            buffer: Some(8192),
        };
        let s = dial.connect(server.local_addr().unwrap()).unwrap();
        let (_peer, from) = server.accept().unwrap();
        assert_eq!(from.ip().to_string(), "127.0.0.2");
        let s = socket2::SockRef::from(&s);
        // Linux doubles the value asked for, to leave room for its own
        // bookkeeping (socket(7)).
        assert_eq!(s.recv_buffer_size().unwrap(), 2 * 8192);
        assert_eq!(s.send_buffer_size().unwrap(), 2 * 8192);
        assert!(check_bindable("127.0.0.2".parse().unwrap()).is_ok());
        assert!(check_bindable("192.0.2.1".parse().unwrap()).is_err());
    }
}
