//! The file service's contract on disk: the exact shape of the temporary
//! files an upload writes before its rename. The server creates them and
//! removes a crashed server's leftovers; stress checks that a run left
//! none. Both read the shape here, so neither imports the other.

/// Prefix of in-progress uploads; the leading dot keeps them out of
/// listings and out of reach of any request (names may not start with '.').
pub const TEMP_PREFIX: &str = ".upload-";
/// Suffix of temporary upload files.
pub const TEMP_SUFFIX: &str = ".tmp";
/// Random alphanumeric characters between prefix and suffix.
pub const TEMP_RAND_LEN: usize = 6;

/// Whether `name` has exactly the shape of the service's temporary files
/// (`.upload-XXXXXX.tmp`): the startup cleanup touches nothing else, so a
/// user's own `.upload-notes` survives it.
pub fn is_temp_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|r| r.len() == TEMP_RAND_LEN && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_have_one_exact_shape() {
        assert!(is_temp_name(".upload-a1B2c3.tmp"));
        for other in [
            ".upload-a1B2c.tmp",
            ".upload-a1B2c3d.tmp",
            ".upload-a1-2c3.tmp",
            ".upload-a1B2c3.tmp2",
            ".upload-a1B2c3",
            ".upload-notes",
            "upload-a1B2c3.tmp",
            "x.upload-a1B2c3.tmp",
        ] {
            assert!(!is_temp_name(other), "{other}");
        }
    }
}
