//! Decoding a JSON request body into its Rust type, with the API's errors:
//! malformed JSON, or JSON of the wrong shape (a missing, mistyped or
//! unknown field) named as such, with the path of the field at fault
//! (`edits[0].old: invalid type ...`), so a caller (or a model) knows what
//! to fix.

use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Decodes a JSON request body; an empty body is a missing object, not
/// malformed JSON.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::InvalidRequest(
            "the request body must be a JSON object".into(),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        match ApiError::from(error.into_inner()) {
            ApiError::InvalidRequest(message) if path != "." => {
                ApiError::InvalidRequest(format!("{path}: {message}"))
            }
            other => other,
        }
    })?;
    deserializer.end()?;
    Ok(value)
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
