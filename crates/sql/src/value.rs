//! Values crossing the SQL boundary.
//!
//! Parameters borrow ([`Param`]) so that writing a 512 KiB chunk does not copy
//! it once more on the Rust side; results own ([`Value`]).

use crate::SqlError;

/// A bound parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    Null,
    Integer(i64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Param::Integer(value)
    }
}

impl From<u32> for Param<'_> {
    fn from(value: u32) -> Self {
        Param::Integer(i64::from(value))
    }
}

impl From<bool> for Param<'_> {
    fn from(value: bool) -> Self {
        Param::Integer(i64::from(value))
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Param::Text(value)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(value: &'a String) -> Self {
        Param::Text(value)
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(value: &'a [u8]) -> Self {
        Param::Blob(value)
    }
}

impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Param::Null, Into::into)
    }
}

/// A column value read back from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Integer(_) => "integer",
            Value::Real(_) => "real",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
        }
    }
}

/// One result row: its columns in statement order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row(pub Vec<Value>);

impl Row {
    fn column(&self, column: usize) -> Result<&Value, SqlError> {
        self.0.get(column).ok_or(SqlError::MissingColumn { column })
    }

    fn mismatch(&self, column: usize, expected: &'static str) -> SqlError {
        SqlError::ColumnType {
            column,
            expected,
            found: self.0[column].type_name(),
        }
    }

    /// The column as an integer.
    pub fn int(&self, column: usize) -> Result<i64, SqlError> {
        match self.column(column)? {
            Value::Integer(value) => Ok(*value),
            // JavaScript numbers come back as reals when they are not safe integers.
            Value::Real(value) if value.fract() == 0.0 => Ok(*value as i64),
            _ => Err(self.mismatch(column, "integer")),
        }
    }

    /// The column as an integer, or `None` when it is NULL.
    pub fn opt_int(&self, column: usize) -> Result<Option<i64>, SqlError> {
        match self.column(column)? {
            Value::Null => Ok(None),
            _ => self.int(column).map(Some),
        }
    }

    /// The column as text.
    pub fn text(&self, column: usize) -> Result<&str, SqlError> {
        match self.column(column)? {
            Value::Text(value) => Ok(value),
            _ => Err(self.mismatch(column, "text")),
        }
    }

    /// The column as text, or `None` when it is NULL.
    pub fn opt_text(&self, column: usize) -> Result<Option<&str>, SqlError> {
        match self.column(column)? {
            Value::Null => Ok(None),
            _ => self.text(column).map(Some),
        }
    }

    /// Takes the column out as bytes (a BLOB; an empty BLOB may read back as NULL).
    pub fn take_blob(&mut self, column: usize) -> Result<Vec<u8>, SqlError> {
        match self.0.get_mut(column) {
            Some(Value::Blob(bytes)) => Ok(std::mem::take(bytes)),
            Some(Value::Null) => Ok(Vec::new()),
            Some(_) => Err(self.mismatch(column, "blob")),
            None => Err(SqlError::MissingColumn { column }),
        }
    }

    /// The column as borrowed bytes.
    pub fn blob(&self, column: usize) -> Result<&[u8], SqlError> {
        match self.column(column)? {
            Value::Blob(bytes) => Ok(bytes),
            Value::Null => Ok(&[]),
            _ => Err(self.mismatch(column, "blob")),
        }
    }
}
