//! The zoo: small Python servers under tests/zoo/, each with one defect
//! (or none), started on a free loopback port with the parameters a test
//! chooses, and killed when dropped.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The path of zoo server `name` (e.g. "extra_bytes.py").
pub fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/zoo")
        .join(name)
}

/// A running zoo server.
pub struct ZooServer {
    pub addr: SocketAddr,
    child: Child,
}

impl ZooServer {
    /// Starts `name` as `python3 name PORT ARGS...` and waits (10 s at
    /// most) until it accepts connections.
    pub fn start(name: &str, args: &[String]) -> ZooServer {
        for _ in 0..5 {
            let port = loadlab::proc::ports::free_port().unwrap();
            let mut child = Command::new("python3")
                .arg(path(name))
                .arg(port.to_string())
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("python3 runs the zoo servers");
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                if TcpStream::connect(addr).is_ok() {
                    return ZooServer { addr, child };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: another one
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("zoo server {name} never accepted a connection");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for ZooServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
