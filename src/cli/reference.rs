//! The flag reference (docs/guide/reference.md), rendered from the clap
//! definitions themselves so that it cannot say what the parser does not,
//! and help text that clap's template would otherwise mangle.

use std::fmt::Write;

use clap::builder::{styling::Style, StyledStr};
use clap::{Arg, ArgAction, Command, CommandFactory};

use super::Cli;

/// Markdown for every subcommand: its purpose, its usage line and each
/// argument with its long help, default and accepted values.
pub fn markdown() -> String {
    let mut cmd = Cli::command();
    // Usage lines and defaults are only filled in once clap has built it.
    cmd.build();
    let mut out = String::from(
        "# Flag reference\n\n\
         Generated from loadlab's flag definitions by `tests/doc_reference.rs`; \
         do not edit by hand (after changing a flag, run that test with \
         `LOADLAB_BLESS=1`). The same text is `loadlab COMMAND --help`.\n",
    );
    section(&mut out, &cmd, "loadlab");
    for sub in shown(&cmd) {
        section(&mut out, sub, &format!("loadlab {}", sub.get_name()));
    }
    out
}

/// The subcommands worth a section: not hidden, and not clap's own `help`.
fn shown(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

fn section(out: &mut String, cmd: &Command, path: &str) {
    let _ = write!(out, "\n## `{path}`\n\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = write!(out, "{}\n\n", plain(&about.to_string()));
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ").trim();
    let _ = write!(out, "```text\n{usage}\n```\n\n");
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
        .collect();
    for arg in args {
        let _ = writeln!(out, "- `{}`: {}", name(arg), describe(arg));
    }
    for sub in shown(cmd) {
        let about = sub.get_about().map(|a| plain(&a.to_string()));
        let _ = writeln!(
            out,
            "- [`{}`](#loadlab-{}): {}",
            sub.get_name(),
            sub.get_name(),
            about.unwrap_or_default()
        );
    }
}

/// How the argument is written: `-n, --requests <N>`, or `<URL>`.
fn name(arg: &Arg) -> String {
    let value = match arg.get_action() {
        ArgAction::Set | ArgAction::Append => arg
            .get_value_names()
            .map(|v| v.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>())
            .unwrap_or_else(|| vec![format!("<{}>", arg.get_id().as_str().to_uppercase())])
            .join(" "),
        _ => String::new(),
    };
    let mut flags = Vec::new();
    if let Some(s) = arg.get_short() {
        flags.push(format!("-{s}"));
    }
    if let Some(l) = arg.get_long() {
        flags.push(format!("--{l}"));
    }
    match (flags.is_empty(), value.is_empty()) {
        (true, _) => value,
        (false, true) => flags.join(", "),
        (false, false) => format!("{} {value}", flags.join(", ")),
    }
}

/// The argument's long help on one line, then its default and values.
fn describe(arg: &Arg) -> String {
    let help = arg.get_long_help().or(arg.get_help());
    let mut text = help.map(|h| plain(&h.to_string())).unwrap_or_default();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let flag = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
    if !defaults.is_empty() && !arg.is_hide_default_value_set() && !flag {
        let _ = write!(text, " Default: `{}`.", defaults.join(","));
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && !flag {
        let _ = write!(text, " Values: {}.", values.join(", "));
    }
    if arg.is_required_set() {
        text.push_str(" Required.");
    }
    text
}

/// Help text as one markdown line: paragraphs joined, a trailing full
/// stop, and `<`, `>` and `*` escaped so that `<timestamp>` is not read as
/// HTML nor `a*b` as emphasis.
fn plain(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let joined = joined
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('*', "\\*");
    if joined.is_empty() || joined.ends_with('.') {
        joined
    } else {
        format!("{joined}.")
    }
}

/// Help text whose `{n}` placeholders survive: clap's help template turns
/// a literal `{n}` into a line break, so the letter is styled on its own
/// (bold, as clap shows what is typed as is) and the braces never touch it
/// in the text clap scans; the reader still sees `{n}`.
pub fn placeholders(text: &str) -> StyledStr {
    let lit = Style::new().bold();
    text.replace("{n}", &format!("{{{lit}n{lit:#}}}")).into()
}
