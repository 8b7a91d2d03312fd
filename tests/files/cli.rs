//! The file service's flags: the start-up line, the default directory, and a
//! bad --max-upload.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common::*;

use super::support::Env;

#[test]
fn startup_line_names_the_files_dir() {
    let env = Env::start("event-loop", &[]);
    let dir = std::fs::canonicalize(env.dir()).unwrap();
    assert!(
        env.server
            .line
            .ends_with(&format!(" files={}", dir.display())),
        "{}",
        env.server.line
    );
}

#[test]
fn default_files_dir_is_under_the_data_dir() {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("XDG_DATA_HOME", data.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let want = std::fs::canonicalize(data.path().join("loadlab/files")).unwrap();
    assert!(
        line.trim_end()
            .ends_with(&format!(" files={}", want.display())),
        "{line}"
    );
}

#[test]
fn bad_max_upload_is_a_usage_error() {
    let out = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0", "--max-upload", "lots"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let file = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0", "--files"])
        .arg(file.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
}
