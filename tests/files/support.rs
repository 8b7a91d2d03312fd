//! A server with its own upload directory, and the helpers every file-service
//! test shares: directory entries, digests, JSON, deterministic content.

use std::path::{Path, PathBuf};

use crate::common::*;
use sha2::{Digest, Sha256};

/// A server with an upload directory `root/files` (so escapes into `root`
/// can be checked) that both live as long as this value.
pub struct Env {
    pub server: TestServer,
    pub root: tempfile::TempDir,
}

impl Env {
    pub fn start(model: &str, extra: &[&str]) -> Env {
        let root = tempfile::tempdir().unwrap();
        let files = root.path().join("files");
        let files_arg = files.to_str().unwrap().to_string();
        let mut args = vec!["--files", files_arg.as_str()];
        args.extend_from_slice(extra);
        let server = TestServer::start(model, &args);
        Env { server, root }
    }

    pub fn dir(&self) -> PathBuf {
        self.root.path().join("files")
    }

    /// Names in the upload directory, temporary files included, sorted.
    pub fn entries(&self) -> Vec<String> {
        entries(&self.dir())
    }

    pub fn request(&self, raw: &[u8]) -> RawResponse {
        exchange(&self.server, raw)
    }

    pub fn put(&self, name: &str, body: &[u8]) -> RawResponse {
        let mut req = format!(
            "PUT /files/{name} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nWant-Repr-Digest: sha-256=1\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        self.request(&req)
    }

    pub fn get(&self, target: &str, extra_headers: &str) -> RawResponse {
        self.request(
            format!("GET {target} HTTP/1.1\r\nHost: t\r\n{extra_headers}Connection: close\r\n\r\n")
                .as_bytes(),
        )
    }
}

pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Any name that starts like the service's temporary files: broader than
/// the exact shape, so a leftover of another shape is caught too.
pub fn is_temp(name: &str) -> bool {
    name.starts_with(loadlab::results::files::TEMP_PREFIX)
}

pub fn sha_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn json(r: &RawResponse) -> serde_json::Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&r.body)))
}

/// Deterministic test content, different per seed.
pub fn data(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .rotate_left(seed as u32) as u8
                ^ seed
        })
        .collect()
}

pub fn listing_names(env: &Env, query: &str) -> Vec<String> {
    let r = env.get(&format!("/files/{query}"), "");
    assert_eq!(r.status, 200);
    json(&r)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}
