//! The exit statuses `bench`, `sweep`, `stress` and `merge` share, and the
//! error that carries a status other than 1 or 2 up to `cli::main`, which
//! prints its reason and exits with it.

/// Measured, and nothing the user asked to check failed.
pub const OK: i32 = 0;
/// The run measured nothing usable (no 2xx/3xx answer at all, every
/// connect refused, every sweep cell failed), or loadlab itself failed.
pub const NOTHING_USABLE: i32 = 1;
/// A bad argument.
pub const USAGE: i32 = 2;
/// The run measured something, and a `--fail-on` condition held (for
/// stress: a transfer failed or a file was left behind).
pub const CONDITION_HELD: i32 = 3;
/// Ctrl-C, as a shell reports a command ended by SIGINT (128 + 2), so a
/// script running `loadlab sweep ... && next` stops there.
pub const INTERRUPTED: i32 = 130;

/// Ends the command with `code` after its report is out; each line of
/// `reason` goes to stderr as one `loadlab: ` line.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct Exit {
    pub code: i32,
    pub reason: String,
}

impl Exit {
    pub fn interrupted(what: &str) -> anyhow::Error {
        Exit {
            code: INTERRUPTED,
            reason: format!("interrupted; {what}"),
        }
        .into()
    }

    /// One line per condition that held.
    pub fn conditions_held(lines: &[String]) -> anyhow::Error {
        Exit {
            code: CONDITION_HELD,
            reason: lines.join("\n"),
        }
        .into()
    }
}

/// The status an error ends the command with: its own for an [`Exit`], 2
/// for a usage error, 1 for anything else.
pub fn code_of(e: &anyhow::Error) -> i32 {
    if let Some(x) = e.downcast_ref::<Exit>() {
        return x.code;
    }
    match e.downcast_ref::<super::values::UsageError>() {
        Some(_) => USAGE,
        None => NOTHING_USABLE,
    }
}
