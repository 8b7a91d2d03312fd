//! The docs that must follow the code: the flag reference generated from
//! the clap definitions, the check guide's list of defect ids, and the
//! help text a user reads for --launcher.

use std::process::Command;

use crate::common::loadlab_bin;
use loadlab::check::catalogue::DEFECTS;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// docs/guide/reference.md is what the flag definitions render to; with
/// LOADLAB_BLESS=1 the test writes it instead (as the golden tests do).
#[test]
fn the_flag_reference_is_what_the_flags_say() {
    let path = format!("{ROOT}/docs/guide/reference.md");
    let rendered = loadlab::cli::reference::markdown();
    if std::env::var_os("LOADLAB_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == rendered,
        "docs/guide/reference.md is stale: a flag changed. Regenerate it with \
         LOADLAB_BLESS=1 cargo nextest run --cargo-profile test-fast -E 'test(/doc_reference/)'"
    );
    // Every subcommand and a flag of each kind made it in.
    for want in [
        "## `loadlab sweep`",
        "## `loadlab check`",
        "- `-n <requests>`: Number of requests",
        "- `--launcher <COMMAND>`: Start each cell's shards with this command instead: {n} becomes",
    ] {
        assert!(rendered.contains(want), "reference lacks {want}");
    }
}

/// `sweep --help` shows the launcher's placeholder as typed, not eaten by
/// clap's help template (which reads `{n}` as a line break).
#[test]
fn the_launcher_help_shows_its_placeholder() {
    let out = Command::new(loadlab_bin())
        .args(["sweep", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("instead: {n} becomes the shard count")
            && flat.contains("e.g. 'srun -n {n} --ntasks-per-node=1'"),
        "{help}"
    );
    assert!(!help.contains('\u{1b}'), "styling reached a pipe: {help:?}");
}

/// Every defect check can report has its row in the check guide, with the
/// rule and the fix the catalogue gives it.
#[test]
fn every_defect_id_is_in_the_check_guide() {
    let guide = std::fs::read_to_string(format!("{ROOT}/docs/guide/check.md")).unwrap();
    for d in DEFECTS {
        let row = guide
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", d.id)))
            .unwrap_or_else(|| panic!("docs/guide/check.md has no row for {}", d.id));
        assert!(
            row.contains(d.rule) && row.contains(d.fix),
            "docs/guide/check.md's row for {} differs from the catalogue: {row}",
            d.id
        );
    }
}
