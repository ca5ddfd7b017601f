//! Random identifiers and secrets, from the platform's CSPRNG
//! (`crypto.getRandomValues`).

use js_sys::{Function, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

/// `chars` random lowercase hex digits (4 bits of entropy each).
pub(crate) fn random_hex(chars: usize) -> Result<String, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))?;
    let fill: Function =
        Reflect::get(&crypto, &JsValue::from_str("getRandomValues"))?.dyn_into()?;
    let bytes = Uint8Array::new_with_length(chars.div_ceil(2) as u32);
    fill.call1(&crypto, &bytes)?;
    let mut out: String = bytes.to_vec().iter().map(|b| format!("{b:02x}")).collect();
    out.truncate(chars);
    Ok(out)
}
