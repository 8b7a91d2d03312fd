//! What both floor responders (floor_server.rs, epoll; floor_uring.rs,
//! io_uring) take on the command line, and the one response they send.

/// `NAME PORT [close] [WORKERS]`: port, one request per connection, and
/// the number of loops (each with its own SO_REUSEPORT listener). Exits 2
/// with a usage line on anything else.
pub struct FloorArgs {
    pub port: u16,
    pub close: bool,
    pub workers: usize,
    /// The fixed 500-byte response, with the Connection header the mode
    /// calls for.
    pub response: &'static [u8],
}

fn parse(name: &str) -> FloorArgs {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: {name} PORT [close] [WORKERS]");
        std::process::exit(2)
    };
    let port: u16 = args
        .get(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| usage());
    let close = args.get(2).is_some_and(|a| a == "close");
    let workers: usize = match args.get(if close { 3 } else { 2 }) {
        None => 1,
        Some(w) => w.parse().ok().filter(|&w| w > 0).unwrap_or_else(|| usage()),
    };
    let mut response =
        b"HTTP/1.1 200 OK\r\nServer: floor\r\nContent-Type: text/html\r\nContent-Length: 500\r\n"
            .to_vec();
    // Said either way, as nginx does: an HTTP/1.0 client (ab) keeps a
    // connection only when the answer says keep-alive.
    response.extend_from_slice(if close {
        b"Connection: close\r\n"
    } else {
        b"Connection: keep-alive\r\n"
    });
    response.extend_from_slice(b"\r\n");
    response.extend_from_slice(&[b'x'; 500]);
    FloorArgs {
        port,
        close,
        workers,
        response: response.leak(),
    }
}

/// Parses the arguments, binds every listener (each with SO_REUSEPORT when
/// there are several) before any loop starts, so that the port is fully
/// served once it is announced, then runs `serve` on one thread per
/// listener until they end.
pub fn run(name: &str, serve: fn(std::net::TcpListener, &'static [u8], bool)) {
    let a = parse(name);
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], a.port).into();
    let listeners: Vec<_> = (0..a.workers)
        .map(|_| loadlab::server::bind(addr, a.workers > 1, true).expect("bind"))
        .collect();
    println!("listening on http://{addr} workers={}", a.workers);
    let (response, close) = (a.response, a.close);
    let loops: Vec<_> = listeners
        .into_iter()
        .map(|l| std::thread::spawn(move || serve(l, response, close)))
        .collect();
    for l in loops {
        let _ = l.join();
    }
}
