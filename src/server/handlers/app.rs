//! What every handler reads: the server's static root, upload directory
//! and body limits, built once per server from its config.

use std::path::PathBuf;

use super::static_files::StaticRoot;

/// Upload limit when `--max-upload` is not given.
pub const DEFAULT_MAX_UPLOAD: u64 = 1 << 30;

/// Everything the handlers need, built once per server from its config.
#[derive(Debug)]
pub struct App {
    pub root: StaticRoot,
    /// Upload directory of the file service under `/files/`, if enabled.
    pub files_dir: Option<PathBuf>,
    /// Largest upload the file service accepts (413 above it).
    pub max_upload: u64,
    /// Largest body `/echo` streams back (`--max-body`).
    pub max_echo: u64,
    /// The handler's thread serves only this connection (blocking models),
    /// so an upload may write to disk inside `data` straight from the read
    /// buffer. False on the event loops, which must never wait on the disk.
    pub may_block: bool,
}

impl App {
    pub fn new(
        root: Option<PathBuf>,
        files_dir: Option<PathBuf>,
        max_echo: u64,
    ) -> anyhow::Result<App> {
        Ok(App {
            root: StaticRoot::new(root)?,
            files_dir,
            max_upload: DEFAULT_MAX_UPLOAD,
            max_echo,
            may_block: false,
        })
    }
}
