//! (being written)

use super::Table;

pub(crate) const UTILITIES: Table = &[];
