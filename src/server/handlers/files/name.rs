//! File-service names: decoded once and refused before any filesystem call
//! unless they name exactly one entry directly inside the upload directory.

use crate::server::handlers::{decode_path, PathError};

/// Longest name accepted, in bytes (NAME_MAX on Linux file systems).
pub const MAX_NAME_BYTES: usize = 255;

/// Why a name was refused; every case is answered with 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("file name is empty")]
    Empty,
    #[error("file name contains '/'")]
    Slash,
    #[error("file name is badly encoded: {0:?}")]
    Encoding(PathError),
    #[error("file name starts with '.'")]
    LeadingDot,
    #[error("file name contains a control character")]
    Control,
    #[error("file name is longer than 255 bytes")]
    TooLong,
}

/// Decodes and checks the raw name from a `/files/NAME` path. A leading dot
/// is refused, keeping `.`, `..` and temporary uploads out of reach; inner
/// dots (`a..b`) are safe, as a name is never split into segments.
pub fn parse(raw: &str) -> Result<String, NameError> {
    if raw.is_empty() {
        return Err(NameError::Empty);
    }
    if raw.contains('/') {
        return Err(NameError::Slash);
    }
    // decode_path refuses encoded separators, backslashes, NUL, invalid
    // UTF-8 and `..`; it drops `.`, which leaves nothing.
    let mut segments = decode_path(raw).map_err(|e| match e {
        PathError::DotDot => NameError::LeadingDot,
        e => NameError::Encoding(e),
    })?;
    let name = match (segments.pop(), segments.is_empty()) {
        (Some(name), true) => name,
        (None, _) => return Err(NameError::LeadingDot),
        (Some(_), false) => return Err(NameError::Slash),
    };
    check(&name)?;
    Ok(name)
}

/// Checks an already decoded name (also used to filter directory listings).
pub fn check(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong);
    }
    if name.starts_with('.') {
        return Err(NameError::LeadingDot);
    }
    if name.contains(['/', '\\']) {
        return Err(NameError::Slash);
    }
    if name.chars().any(char::is_control) {
        return Err(NameError::Control);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_and_encoded_names() {
        assert_eq!(parse("a.txt").unwrap(), "a.txt");
        assert_eq!(parse("my%20file.bin").unwrap(), "my file.bin");
        assert_eq!(parse("caf%C3%A9").unwrap(), "café");
        assert_eq!(parse("%252e%252e").unwrap(), "%2e%2e");
        assert_eq!(parse(&"x".repeat(255)).unwrap().len(), 255);
    }

    #[test]
    fn dots_inside_a_name_are_allowed() {
        for ok in ["a..b", "x..", "a...b", "v1..2.txt", "a.%2e.b", "a%2e%2eb"] {
            let name = parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
            assert!(name.contains(".."), "{ok:?} -> {name:?}");
        }
        // A whole `..` segment, or a name starting with a dot, is not.
        for bad in ["..", "..b", "%2e%2eb", "a/../b", "a%2f..%2fb", "..%5cb"] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn refuses_every_bad_form() {
        let long = "x".repeat(256);
        for bad in [
            "",
            ".",
            "..",
            "%2e",
            "%2e%2e",
            ".hidden",
            ".upload-123.tmp",
            "a/b",
            "a%2fb",
            "a%2Fb",
            "a\\b",
            "a%5cb",
            "a%00b",
            "a%0ab",
            "a%7fb",
            "a%c2%85b",
            "%c0%ae%c0%ae",
            "%zz",
            long.as_str(),
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
