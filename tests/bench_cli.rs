//! `loadlab bench` as a command: the progress bar on a real terminal (a
//! pseudo-terminal from util-linux's `script`), the open-file limit it
//! raises, flags that change nothing or are another name for one, the
//! defaults, the lines of its report that ab does not have, and the
//! run's verdict in every output.

mod exit;
mod flags;
mod report;
mod verdict;
