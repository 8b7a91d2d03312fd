//! Headless Chromium for the report tests: Debian's chromium, networking
//! pinned to a refusing proxy and no DNS, its own profile per page, and
//! console messages logged to stderr so a test can see them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's chromium; CI installs it (.ci/run). Missing is a failure with
/// the fix in the message, never a silent skip.
pub fn chromium() -> PathBuf {
    let p = PathBuf::from("/usr/bin/chromium");
    assert!(
        p.exists(),
        "chromium is not installed: the HTML report tests need Debian's chromium \
         (apt-get install -y chromium; .ci/run installs it)"
    );
    p
}

/// Runs headless Chromium on `page` with `extra` flags (`--dump-dom`,
/// `--screenshot=...`, `--log-net-log=...`); returns (stdout, stderr).
/// Even a request the page should not make goes nowhere: the proxy on
/// port 9 refuses and no name resolves.
pub fn run(page: &Path, work: &Path, extra: &[String]) -> (String, String) {
    let profile = work.join(format!(
        "profile-{}",
        page.file_stem().and_then(|s| s.to_str()).unwrap_or("page")
    ));
    let _ = std::fs::remove_dir_all(&profile);
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.extend(extra.iter().cloned());
    args.push(format!("file://{}", page.display()));
    let out = Command::new(chromium())
        .args(&args)
        .output()
        .expect("start chromium");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "chromium failed on {}: {stderr}",
        page.display()
    );
    (String::from_utf8_lossy(&out.stdout).to_string(), stderr)
}

/// The console messages Chromium logged for the page (`INFO:CONSOLE`
/// lines): the report has no script, so any message at all is the
/// browser objecting to the page (a blocked load, a parse error).
pub fn console_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// A screenshot of `page`, for a person to look at; it must not be blank.
pub fn screenshot(page: &Path, work: &Path, name: &str) -> PathBuf {
    let shot = work.join(name);
    run(
        page,
        work,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".to_string(),
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{name} looks blank"
    );
    shot
}
