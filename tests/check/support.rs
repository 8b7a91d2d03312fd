//! Runs `loadlab check` and reads its JSON: each check's verdict by id.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::common::loadlab_bin;

/// One `loadlab check` run: its exit code, its JSON and stderr.
pub struct Checked {
    pub code: i32,
    pub doc: Value,
    pub stderr: String,
}

impl Checked {
    /// Each check's verdict, by id.
    pub fn verdicts(&self) -> BTreeMap<String, String> {
        self.doc["checks"]
            .as_array()
            .unwrap_or_else(|| panic!("no checks: {}\n{}", self.doc, self.stderr))
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().to_string(),
                    c["verdict"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// The ids whose verdict is `verdict`.
    pub fn with(&self, verdict: &str) -> Vec<String> {
        self.verdicts()
            .into_iter()
            .filter(|(_, v)| v == verdict)
            .map(|(id, _)| id)
            .collect()
    }

    /// The evidence of check `id`.
    pub fn evidence(&self, id: &str) -> String {
        self.doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .map(|c| c["evidence"].as_str().unwrap().to_string())
            .unwrap_or_default()
    }
}

/// `loadlab check --format json ARGS... TARGET`, with `env` added.
pub fn check_json(target: &str, args: &[&str], env: &[(&str, &str)]) -> Checked {
    let out = Command::new(loadlab_bin())
        .args(["check", "--format", "json"])
        .args(args)
        .arg(target)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    Checked {
        code: out.status.code().unwrap_or(-1),
        doc,
        stderr,
    }
}
