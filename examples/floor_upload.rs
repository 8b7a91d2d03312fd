//! The floor for upload cost: a minimal HTTP upload receiver written for
//! the file-service comparison (scripts/bench-files.sh). One connection at
//! a time; the Content-Length body is read into one 1 MiB buffer and
//! written to one file, which is fsynced before the 201. No digest, no
//! temporary file and rename, no checks beyond what the transfer needs:
//! what an upload costs here is the kernel's and the disk's share, which
//! any server pays, so loadlab's upload is reported as a ratio to it.
//!
//! Usage: floor_upload DIR   (listens on 127.0.0.1, port chosen by the
//! kernel and printed as `listening on http://127.0.0.1:PORT`)

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};

/// Request heads larger than this are refused (curl's is ~200 bytes).
const MAX_HEAD: usize = 16 * 1024;
const BUF: usize = 1024 * 1024;

fn main() {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: floor_upload DIR");
        std::process::exit(2);
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| {
        eprintln!("floor_upload: bind: {e}");
        std::process::exit(1)
    });
    println!("listening on http://{}", listener.local_addr().unwrap());
    let mut buf = vec![0u8; BUF];
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let status = match receive(&mut stream, &dir, &mut buf) {
            Ok(()) => "201 Created",
            Err(e) => {
                eprintln!("floor_upload: {e}");
                "400 Bad Request"
            }
        };
        let answer = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        let _ = stream.write_all(answer.as_bytes());
    }
}

/// Reads one request and writes its body to DIR/upload.bin.
fn receive(stream: &mut TcpStream, dir: &Path, buf: &mut [u8]) -> Result<(), String> {
    let (head_len, got) = read_head(stream, buf)?;
    let head = String::from_utf8_lossy(&buf[..head_len]).to_ascii_lowercase();
    let mut left: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no Content-Length")?;
    if head.contains("expect: 100-continue") {
        stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|e| e.to_string())?;
    }
    let mut file = File::create(dir.join("upload.bin")).map_err(|e| e.to_string())?;
    let early = (got - head_len).min(left);
    file.write_all(&buf[head_len..head_len + early])
        .map_err(|e| e.to_string())?;
    left -= early;
    while left > 0 {
        let want = left.min(buf.len());
        let n = stream.read(&mut buf[..want]).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("body cut short".into());
        }
        file.write_all(&buf[..n]).map_err(|e| e.to_string())?;
        left -= n;
    }
    file.sync_data().map_err(|e| e.to_string())
}

/// Reads until the blank line; returns the head's length (with the blank
/// line) and how many bytes were read in all.
fn read_head(stream: &mut TcpStream, buf: &mut [u8]) -> Result<(usize, usize), String> {
    let mut got = 0;
    loop {
        if let Some(p) = buf[..got].windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok((p + 4, got));
        }
        if got >= MAX_HEAD {
            return Err("request head too large".into());
        }
        let n = stream
            .read(&mut buf[got..MAX_HEAD])
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before the head ended".into());
        }
        got += n;
    }
}
