//! RFC 9530 integrity fields of the file service: whether a request asks
//! for the SHA-256 of what it uploads (`Want-Repr-Digest`), and the
//! `Repr-Digest` field that answers it.

use base64::Engine as _;

use crate::http::request::RequestHead;

/// Whether a `Want-Repr-Digest` field lists `sha-256` with a preference of
/// 1 to 10 (RFC 9530 4: 0 means "not acceptable"). Members that do not
/// parse are ignored, as the RFC allows.
pub fn wants_sha256(head: &RequestHead) -> bool {
    head.headers()
        .filter(|(name, _)| name.eq_ignore_ascii_case("want-repr-digest"))
        .filter_map(|(_, value)| std::str::from_utf8(value).ok())
        .flat_map(|value| value.split(','))
        .any(|member| {
            // Parameters (`;...`) do not change the preference.
            let member = member.split(';').next().unwrap_or("").trim();
            let (key, pref) = member.split_once('=').unwrap_or((member, "1"));
            key.trim() == "sha-256"
                && pref
                    .trim()
                    .parse::<u8>()
                    .is_ok_and(|p| (1..=10).contains(&p))
        })
}

/// The `Repr-Digest` field value for a SHA-256: `sha-256=:BASE64:` (a
/// structured byte sequence).
pub fn sha256_field(digest: &[u8; 32]) -> String {
    format!(
        "sha-256=:{}:",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &str) -> RequestHead {
        let raw = format!("PUT /files/a HTTP/1.1\r\nHost: t\r\n{fields}\r\n");
        let mut scan = crate::http::head::HeadScan::default();
        crate::http::head::parse_request(raw.as_bytes(), &mut scan, &mut Default::default())
            .expect("a valid head")
            .expect("a whole head")
            .0
    }

    #[test]
    fn sha256_is_wanted_with_a_preference_from_1_to_10() {
        for fields in [
            "Want-Repr-Digest: sha-256=1\r\n",
            "Want-Repr-Digest: sha-512=3, sha-256=10\r\n",
            "want-repr-digest: sha-512=3\r\nWant-Repr-Digest: sha-256=2;x=1\r\n",
            "Want-Repr-Digest: sha-256\r\n",
        ] {
            assert!(wants_sha256(&head(fields)), "{fields:?}");
        }
    }

    #[test]
    fn sha256_is_not_wanted_at_0_or_unasked() {
        for fields in [
            "",
            "Want-Repr-Digest: sha-256=0\r\n",
            "Want-Repr-Digest: sha-512=3\r\n",
            "Want-Repr-Digest: sha-256=11\r\n",
            "Want-Content-Digest: sha-256=1\r\n",
        ] {
            assert!(!wants_sha256(&head(fields)), "{fields:?}");
        }
    }

    #[test]
    fn the_field_is_a_structured_byte_sequence() {
        // SHA-256 of the empty string, as RFC 9530's examples write it.
        let empty = [
            0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f,
            0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b,
            0x78, 0x52, 0xb8, 0x55,
        ];
        assert_eq!(
            sha256_field(&empty),
            "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"
        );
    }
}
