//! A request body as the agent reads it ([`stead_agent::Body`]), in large
//! pieces.
//!
//! The default reader of a request body hands over 4 KiB at a time in the
//! local runtime: a 64 MiB upload was 16,384 awaits and copies. A BYOB
//! ("bring your own buffer") reader fills a buffer as large as the caller
//! asks, so an upload reads about as many pieces as it stores chunks. Where
//! the body is not a byte stream, the default reader is used.

use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
use stead_agent::ApiError;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::Request;

/// Reads a request body, appending to a caller's buffer.
struct BodyReader {
    reader: JsValue,
    read: Function,
    byob: bool,
}

/// The body of a request to the agent.
pub(crate) struct RequestBody {
    /// The length the client declared, if it did.
    declared: Option<usize>,
    /// The request, until its body is first read.
    request: Option<Request>,
    reader: Option<BodyReader>,
}

fn platform(error: impl std::fmt::Debug) -> ApiError {
    ApiError::Internal(format!("reading the request body: {error:?}"))
}

impl RequestBody {
    pub(crate) fn new(request: Request) -> Result<Self, ApiError> {
        let declared = request
            .headers()
            .get("content-length")
            .map_err(platform)?
            .and_then(|v| v.parse::<usize>().ok());
        Ok(RequestBody {
            declared,
            request: Some(request),
            reader: None,
        })
    }
}

impl stead_agent::Body for RequestBody {
    fn declared_len(&self) -> Option<usize> {
        self.declared
    }

    async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, ApiError> {
        if let Some(mut request) = self.request.take() {
            if self.declared.is_some_and(|len| len <= max) {
                // A declared length that fits: read it in one go, which
                // costs one await instead of one per piece.
                let bytes = request.bytes().await.map_err(platform)?;
                buffer.extend_from_slice(&bytes);
                return Ok(bytes.len());
            }
            self.reader = BodyReader::new(&request).map_err(platform)?;
        }
        match &mut self.reader {
            Some(reader) => reader.read_into(buffer, max).await.map_err(platform),
            None => Ok(0),
        }
    }
}

fn get(target: &JsValue, key: &str) -> Result<JsValue, JsValue> {
    Reflect::get(target, &JsValue::from_str(key))
}

impl BodyReader {
    /// A reader of `req`'s body, or `None` when it has none.
    fn new(req: &Request) -> Result<Option<Self>, JsValue> {
        let Some(body) = req.inner().body() else {
            return Ok(None);
        };
        let get_reader: Function = get(&body, "getReader")?.dyn_into()?;
        let options = Object::new();
        Reflect::set(&options, &"mode".into(), &"byob".into())?;
        let (reader, byob) = match get_reader.call1(&body, &options) {
            Ok(reader) => (reader, true),
            Err(_) => (get_reader.call0(&body)?, false),
        };
        let read = get(&reader, "read")?.dyn_into()?;
        Ok(Some(BodyReader { reader, read, byob }))
    }

    /// Appends up to `max` bytes to `buffer`; returns how many, 0 at the end.
    /// (The default reader may return a piece larger than `max`; it is
    /// appended whole.)
    async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, JsValue> {
        let pending = if self.byob {
            let view = Uint8Array::new_with_length(max as u32);
            self.read.call1(&self.reader, &view)?
        } else {
            self.read.call0(&self.reader)?
        };
        let result = JsFuture::from(pending.dyn_into::<Promise>()?).await?;
        if get(&result, "done")?.as_bool().unwrap_or(false) {
            return Ok(0);
        }
        let value: Uint8Array = get(&result, "value")?.dyn_into()?;
        let len = value.length() as usize;
        let start = buffer.len();
        buffer.resize(start + len, 0);
        value.copy_to(&mut buffer[start..]);
        Ok(len)
    }
}
