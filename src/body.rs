//! Reading a request body in large pieces.
//!
//! The default reader of a request body hands over 4 KiB at a time in the
//! local runtime: a 64 MiB upload was 16,384 awaits and copies. A BYOB
//! ("bring your own buffer") reader fills a buffer as large as the caller
//! asks, so an upload reads about as many pieces as it stores chunks. Where
//! the body is not a byte stream, the default reader is used.

use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::Request;

/// Reads a request body, appending to a caller's buffer.
pub struct BodyReader {
    reader: JsValue,
    read: Function,
    byob: bool,
}

fn get(target: &JsValue, key: &str) -> Result<JsValue, JsValue> {
    Reflect::get(target, &JsValue::from_str(key))
}

impl BodyReader {
    /// A reader of `req`'s body, or `None` when it has none.
    pub fn new(req: &Request) -> Result<Option<Self>, JsValue> {
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
    pub async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, JsValue> {
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
