//! Decoding a JSON request body into its Rust type, with the API's errors:
//! malformed JSON, or JSON of the wrong shape (a missing, mistyped or
//! unknown field) named as such.

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
    Ok(serde_json::from_slice(body)?)
}
