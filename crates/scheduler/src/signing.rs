//! Signatures of outgoing webhook calls.
//!
//! A schedule that calls a webhook signs each body with its own secret, so
//! the receiver can tell the call came from this agent and was not altered:
//! `x-stead-signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`
//! with `x-stead-timestamp: <ms>`. Signing the timestamp with the body lets
//! the receiver refuse replays of old calls.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Lower-case hex of HMAC-SHA256(`key`, `message`).
pub fn hmac_sha256_hex(key: &[u8], message: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    hex(&mac.finalize().into_bytes())
}

/// The `x-stead-signature` value for `body` sent at `timestamp_ms`.
pub fn signature(secret: &str, timestamp_ms: i64, body: &[u8]) -> String {
    let mut message = format!("{timestamp_ms}.").into_bytes();
    message.extend_from_slice(body);
    format!("sha256={}", hmac_sha256_hex(secret.as_bytes(), &message))
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        assert_eq!(
            hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn signature_covers_timestamp_and_body() {
        let base = signature("s3cret", 1000, b"{}");
        assert!(base.starts_with("sha256=") && base.len() == 7 + 64);
        assert_eq!(
            base,
            format!("sha256={}", hmac_sha256_hex(b"s3cret", b"1000.{}"))
        );
        assert_ne!(base, signature("s3cret", 1001, b"{}"));
        assert_ne!(base, signature("s3cret", 1000, b"{ }"));
        assert_ne!(base, signature("other", 1000, b"{}"));
    }
}
