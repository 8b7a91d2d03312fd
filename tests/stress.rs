//! `loadlab stress` end to end, through the CLI: a small matrix where
//! clients outnumber server workers finishes with 0 failures, writes its
//! three files, and leaves no temporary files or scratch space behind;
//! the quick E2 preset; clients that time out; a server that does not
//! start; `--scratch`; `--url`.

mod failures;
mod runs;
pub mod support;
