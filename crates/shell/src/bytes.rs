//! Raw bytes inside the shell's text.
//!
//! The interpreter works on Rust strings, but bash values are bytes: `$'\xff'`,
//! `printf '\351'` or command output that is not UTF-8 must come back out as
//! the same bytes. A byte that is not part of valid UTF-8 is carried as one
//! character of a private-use range (U+10FF80 + byte − 0x80), which counts
//! as one character like bash's invalid bytes in a UTF-8 locale, and is
//! turned back into the byte wherever the shell writes output.

use std::borrow::Cow;

const BASE: u32 = 0x10_FF00;

/// The character that carries raw byte `b` (0x80..=0xFF).
pub(crate) fn byte_char(b: u8) -> char {
    char::from_u32(BASE + u32::from(b)).unwrap_or('\u{fffd}')
}

/// The raw byte a character carries, if it is one of [`byte_char`]'s.
pub(crate) fn char_byte(c: char) -> Option<u8> {
    let v = c as u32;
    (BASE + 0x80..=BASE + 0xFF)
        .contains(&v)
        .then(|| (v - BASE) as u8)
}

/// Text from bytes: valid UTF-8 as is, every other byte as its carrier.
pub(crate) fn decode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let n = e.error_len().unwrap_or(bad.len()).max(1);
                for &b in &bad[..n] {
                    out.push(if b < 0x80 { b as char } else { byte_char(b) });
                }
                rest = &bad[n..];
            }
        }
    }
}

/// Bytes from the UTF-8 bytes of text: carriers (`F4 8F BE|BF xx`) back to
/// their bytes.
pub(crate) fn encode_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !bytes.contains(&0xF4) {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0xF4 && i + 3 < bytes.len() && bytes[i + 1] == 0x8F {
            if let Ok(s) = std::str::from_utf8(&bytes[i..i + 4]) {
                if let Some(b) = s.chars().next().and_then(char_byte) {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_bytes_round_trip_and_count_as_one_char() {
        let raw = b"a\xffb\xce\xbc\xce";
        let text = decode(raw);
        assert_eq!(text.chars().count(), 5);
        assert_eq!(&*encode_bytes(text.as_bytes()), raw);
        assert_eq!(&*encode_bytes("plain é".as_bytes()), "plain é".as_bytes());
    }
}
