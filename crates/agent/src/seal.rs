//! Claims sealed with the deployment's admin token: an agent token, a
//! share link and an inspector session are each a prefix, the claims as
//! base64url JSON, a dot, and an HMAC-SHA256 of the payload. One codec for
//! the three, each with its own prefix and signing domain, so a value of
//! one kind never passes for another.

use base64::Engine;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// One kind of sealed value.
pub(crate) struct Seal {
    /// What the value starts with (`stk_`).
    pub(crate) prefix: &'static str,
    /// What the signed text starts with before the payload (`share.`):
    /// the same claims signed for another kind do not verify here.
    pub(crate) domain: &'static str,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

impl Seal {
    fn sign(&self, key: &str, payload: &str) -> String {
        let signed = format!("{}{payload}", self.domain);
        stead_scheduler::signing::hmac_sha256_hex(key.as_bytes(), signed.as_bytes())
    }

    /// `claims`, sealed with `key`.
    pub(crate) fn seal(&self, key: &str, claims: &impl Serialize) -> String {
        let payload = b64().encode(serde_json::to_vec(claims).expect("claims serialize"));
        format!("{}{payload}.{}", self.prefix, self.sign(key, &payload))
    }

    /// The claims `value` carries, if it is of this kind and `key` sealed
    /// it (`None` for anything else, an empty key included).
    pub(crate) fn open<T: DeserializeOwned>(&self, key: &str, value: &str) -> Option<T> {
        let (payload, signature) = value.strip_prefix(self.prefix)?.split_once('.')?;
        let expected = self.sign(key, payload);
        if key.is_empty() || !constant_time_eq(signature.as_bytes(), expected.as_bytes()) {
            return None;
        }
        // Signed by us: the payload is ours, so a decoding failure is a
        // bug in an older format, still refused.
        let json = b64().decode(payload).ok()?;
        serde_json::from_slice(&json).ok()
    }
}

/// Compares secrets in constant time (the length is not secret).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: Seal = Seal {
        prefix: "tok_",
        domain: "",
    };
    const SHARE: Seal = Seal {
        prefix: "tok_",
        domain: "share.",
    };

    #[test]
    fn only_the_key_and_kind_that_sealed_a_value_open_it() {
        let sealed = TOKEN.seal("k", &vec![1, 2, 3]);
        assert!(sealed.starts_with("tok_"));
        assert_eq!(TOKEN.open::<Vec<i32>>("k", &sealed), Some(vec![1, 2, 3]));
        assert_eq!(TOKEN.open::<Vec<i32>>("other", &sealed), None);
        assert_eq!(TOKEN.open::<Vec<i32>>("", &sealed), None);
        // The same prefix, another domain: not the same kind.
        assert_eq!(SHARE.open::<Vec<i32>>("k", &sealed), None);
        let tampered = sealed.replacen("tok_", "tok_x", 1);
        assert_eq!(TOKEN.open::<Vec<i32>>("k", &tampered), None);
        assert_eq!(
            TOKEN.open::<String>("k", &sealed),
            None,
            "claims of another shape"
        );
        assert!(constant_time_eq(b"abc", b"abc") && !constant_time_eq(b"abc", b"abd"));
    }
}
