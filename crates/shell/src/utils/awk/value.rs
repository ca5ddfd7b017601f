//! awk values: numbers, strings, and "strnums" (input that looks numeric
//! compares as a number), plus the insertion-ordered associative array.

use std::collections::HashMap;
use std::rc::Rc;

use super::format::num_to_string;

#[derive(Debug, Clone, Default)]
pub(crate) enum Value {
    /// Never assigned: both "" and 0, and compares as a number.
    #[default]
    Uninit,
    Num(f64),
    Str(Rc<str>),
    /// Text from input (fields, getline, split, ARGV, -v): numeric when it
    /// looks like a number.
    StrNum(Rc<str>),
}

impl Value {
    pub(crate) fn str(text: &str) -> Self {
        Value::Str(Rc::from(text))
    }

    pub(crate) fn to_num(&self) -> f64 {
        match self {
            Value::Uninit => 0.0,
            Value::Num(n) => *n,
            Value::Str(s) | Value::StrNum(s) => str_to_num(s),
        }
    }

    /// The string value, numbers converted with `convfmt`.
    pub(crate) fn to_str(&self, convfmt: &str) -> Rc<str> {
        match self {
            Value::Uninit => Rc::from(""),
            Value::Num(n) => Rc::from(num_to_string(*n, convfmt)),
            Value::Str(s) | Value::StrNum(s) => s.clone(),
        }
    }

    /// Appends the string value to `out` without an intermediate allocation
    /// for strings.
    pub(crate) fn push_to(&self, out: &mut String, fmt: &str) {
        match self {
            Value::Uninit => {}
            Value::Num(n) => out.push_str(&num_to_string(*n, fmt)),
            Value::Str(s) | Value::StrNum(s) => out.push_str(s),
        }
    }

    pub(crate) fn is_true(&self) -> bool {
        match self {
            Value::Uninit => false,
            Value::Num(n) => *n != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::StrNum(s) => match looks_numeric(s) {
                Some(n) => n != 0.0,
                None => !s.is_empty(),
            },
        }
    }

    /// The number this value compares as, if it compares numerically.
    pub(crate) fn numeric(&self) -> Option<f64> {
        match self {
            Value::Uninit => Some(0.0),
            Value::Num(n) => Some(*n),
            Value::Str(_) => None,
            Value::StrNum(s) => looks_numeric(s),
        }
    }
}

/// Length of the longest numeric prefix of `bytes` (after `start`).
fn numeric_prefix(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    if matches!(bytes.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits_start = i;
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut mantissa = i - digits_start;
    if bytes.get(i) == Some(&b'.') {
        let frac_start = i + 1;
        let mut j = frac_start;
        while bytes.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        mantissa += j - frac_start;
        if mantissa > 0 {
            i = j;
        }
    }
    if mantissa == 0 {
        return start;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_start = j;
        while bytes.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    i
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// awk's string-to-number: the leading numeric part, or 0.
pub(super) fn str_to_num(s: &str) -> f64 {
    let bytes = s.as_bytes();
    let start = bytes
        .iter()
        .position(|&b| !is_blank(b))
        .unwrap_or(bytes.len());
    let end = numeric_prefix(bytes, start);
    if end == start {
        return 0.0;
    }
    s[start..end].parse().unwrap_or(0.0)
}

/// The number a string stands for if it is entirely numeric (blanks around
/// allowed), as POSIX's "numeric string".
pub(super) fn looks_numeric(s: &str) -> Option<f64> {
    let bytes = s.as_bytes();
    let start = bytes.iter().position(|&b| !is_blank(b))?;
    let end = numeric_prefix(bytes, start);
    if end == start || !bytes[end..].iter().all(|&b| is_blank(b)) {
        return None;
    }
    s[start..end].parse().ok()
}

/// An associative array that iterates in insertion order.
#[derive(Debug, Default)]
pub(crate) struct Array {
    index: HashMap<Rc<str>, usize>,
    slots: Vec<Option<(Rc<str>, Value)>>,
}

impl Array {
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        let slot = *self.index.get(key)?;
        self.slots[slot].as_ref().map(|(_, v)| v)
    }

    /// The element, created uninitialized when missing (as a reference does in awk).
    pub(crate) fn entry(&mut self, key: Rc<str>) -> &mut Value {
        let slot = match self.index.get(&key) {
            Some(&slot) => slot,
            None => {
                self.slots.push(Some((key.clone(), Value::Uninit)));
                self.index.insert(key, self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        &mut self.slots[slot].as_mut().expect("indexed slot is live").1
    }

    pub(crate) fn set(&mut self, key: Rc<str>, value: Value) {
        *self.entry(key) = value;
    }

    pub(crate) fn remove(&mut self, key: &str) {
        if let Some(slot) = self.index.remove(key) {
            self.slots[slot] = None;
            if self.slots.len() > 32 && self.index.len() < self.slots.len() / 2 {
                self.compact();
            }
        }
    }

    fn compact(&mut self) {
        self.slots.retain(Option::is_some);
        for (i, (key, _)) in self.slots.iter().flatten().enumerate() {
            self.index.insert(key.clone(), i);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.index.clear();
        self.slots.clear();
    }

    /// Each element: key and value, in insertion order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&Rc<str>, &Value)> {
        self.slots.iter().flatten().map(|(k, v)| (k, v))
    }

    pub(crate) fn keys(&self) -> Vec<Rc<str>> {
        self.slots
            .iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    }
}
