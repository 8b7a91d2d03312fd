//! The embedded docroot served when no `--root` is given: the pages the
//! reference experiments request, so a first run needs nothing on disk.

/// (name, content) of every embedded file; `/` serves `index.html`.
pub const EMBEDDED_FILES: [(&str, &[u8]); 3] = [
    (
        "index.html",
        include_bytes!("../../../assets/docroot/index.html"),
    ),
    (
        "500B.html",
        include_bytes!("../../../assets/docroot/500B.html"),
    ),
    (
        "20KB.html",
        include_bytes!("../../../assets/docroot/20KB.html"),
    ),
];

/// Writes the embedded files into `dir`, so another server (nginx) can
/// serve byte-identical content in a comparison.
pub fn write_embedded_docroot(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, content) in EMBEDDED_FILES {
        std::fs::write(dir.join(name), content)?;
    }
    Ok(())
}
