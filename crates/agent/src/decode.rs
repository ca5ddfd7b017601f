//! Decoding a JSON request body into its Rust type, with the API's errors:
//! malformed JSON, or JSON of the wrong shape (a missing, mistyped or
//! unknown field) named as such, with the path of the field at fault
//! (`edits[0].old: invalid type ...`), so a caller (or a model) knows what
//! to fix.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// Decodes a JSON request body; an empty body is a missing object, not
/// malformed JSON.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    check_not_empty(body)?;
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(at_path)?;
    deserializer.end()?;
    Ok(value)
}

/// Parses a JSON request body once, for a request that both looks into it
/// and decodes it (see [`decode_value`]); errors as [`decode`]'s.
pub fn parse(body: &[u8]) -> Result<Value, ApiError> {
    check_not_empty(body)?;
    Ok(serde_json::from_slice(body)?)
}

/// Decodes a request body already parsed by [`parse`] into its Rust type,
/// with the same errors as [`decode`] (the field at fault named by path).
pub fn decode_value<T: DeserializeOwned>(value: &Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(at_path)
}

fn check_not_empty(body: &[u8]) -> Result<(), ApiError> {
    match body.iter().all(u8::is_ascii_whitespace) {
        true => Err(ApiError::InvalidRequest(
            "the request body must be a JSON object".into(),
        )),
        false => Ok(()),
    }
}

/// A decoding error, with the path of the field at fault.
fn at_path(error: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = error.path().to_string();
    match ApiError::from(error.into_inner()) {
        ApiError::InvalidRequest(message) if path != "." => {
            ApiError::InvalidRequest(format!("{path}: {message}"))
        }
        other => other,
    }
}

/// Checks a request field is within the bound the API documents; out of
/// range is an error that names the field and the bound, never a value
/// silently clamped.
pub fn within<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    value: T,
    min: T,
    max: T,
) -> Result<T, ApiError> {
    if value < min || value > max {
        return Err(ApiError::InvalidRequest(format!(
            "{field} must be between {min} and {max} (got {value})"
        )));
    }
    Ok(value)
}

/// A page position handed to clients as an opaque `next_cursor`: the
/// listing it belongs to and where it stopped. A cursor that was not made
/// here, or was made for another listing, is refused rather than read as
/// some other position.
pub struct Cursor;

impl Cursor {
    /// The cursor for `position` in a listing of `kind`.
    pub fn encode(kind: &str, position: &str) -> String {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(position);
        format!("{kind}.{encoded}")
    }

    /// The position of a cursor of a `kind` listing.
    pub fn decode(kind: &str, cursor: &str) -> Result<String, ApiError> {
        use base64::Engine;
        let invalid = || {
            ApiError::InvalidRequest(format!(
                "cursor {cursor:?} is not a {kind} cursor: pass back the next_cursor of the previous page"
            ))
        };
        let encoded = cursor
            .strip_prefix(kind)
            .and_then(|rest| rest.strip_prefix('.'))
            .ok_or_else(invalid)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| invalid())?;
        String::from_utf8(bytes).map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Edit {
        old: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        edits: Vec<Edit>,
    }

    /// Every `.rs` file under `dir`.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// A bound in a message a caller reads is in words (`between 1 and
    /// 20`, as [`within`] says it), never Rust's range syntax: no string
    /// literal in the crates that answer requests holds `..=`.
    #[test]
    fn no_message_states_a_bound_in_rust_syntax() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for crate_dir in [".", "../scheduler"] {
            sources(&root.join(crate_dir).join("src"), &mut files);
        }
        // Spelt in two pieces, so this test does not find itself.
        let range = concat!("..", "=");
        let mut found = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                // The odd pieces between quotes are string literals.
                if code
                    .split('"')
                    .skip(1)
                    .step_by(2)
                    .any(|s| s.contains(range))
                {
                    found.push(format!(
                        "{}:{}: {}",
                        file.display(),
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
        assert!(found.is_empty(), "bounds in Rust syntax: {found:#?}");
    }

    #[test]
    fn errors_name_the_field_at_fault() {
        let error = decode::<Body>(br#"{"edits":[{"old":"a"},{"old":3}]}"#).unwrap_err();
        assert_eq!(error.code(), "INVALID_REQUEST");
        assert!(
            error.to_string().contains("edits[1].old: invalid type"),
            "{error}"
        );
        let error = decode::<Body>(br#"{"edits":[]} x"#).unwrap_err();
        assert_eq!(error.code(), "MALFORMED_JSON");
        let error = decode::<Body>(br#"{"edits":"#).unwrap_err();
        assert_eq!(error.code(), "MALFORMED_JSON");
        assert!(decode::<Body>(b" {\"edits\":[]}\n ").is_ok());
    }
}
