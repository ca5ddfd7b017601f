//! Packfiles: `objects/pack/pack-*.idx` (version 2) and the `.pack` beside
//! it, as `git gc`, `git repack` and a clone leave them.
//!
//! An index is a 256-entry fan-out table over the sorted object ids, their
//! CRCs, and 4-byte offsets (8-byte ones in a table of their own past
//! 2 GiB). A pack entry's header is decoded by `gix-pack`; its data is
//! zlib, whole (a base object) or a delta against a base found by offset
//! (`OFS_DELTA`) or id (`REF_DELTA`), applied here.

use std::cell::RefCell;
use std::io::Read;

use gix_hash::ObjectId;
use gix_object::Kind;
use gix_pack::data::entry::Header;

use crate::error::{At, Error, Result};
use crate::files::Files;

/// How deep a delta chain may go before the pack counts as corrupt (git's
/// own packs stay within 50; a loop would never end).
const MAX_DELTA_CHAIN: usize = 10_000;

/// Reads a `REF_DELTA`'s base by id, from anywhere in the repository.
pub(crate) type BaseReader<'a> = dyn Fn(&ObjectId) -> Result<(Kind, Vec<u8>)> + 'a;

/// One pack: its index, and its data once an object in it is read.
pub(crate) struct Pack {
    idx: Vec<u8>,
    count: usize,
    pack_path: String,
    data: RefCell<Option<std::rc::Rc<Vec<u8>>>>,
}

fn corrupt(path: &str, what: &str) -> Error {
    Error::Corrupt(format!("{path}: {what}"))
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

impl Pack {
    /// Reads the index at `idx_path` (the pack's data is read when needed).
    pub(crate) fn open(files: &dyn Files, idx_path: &str) -> Result<Pack> {
        let idx = files.read(idx_path).at(idx_path)?;
        if idx.len() < 8 + 256 * 4 + 40 || idx[..4] != [0xff, b't', b'O', b'c'] {
            return Err(corrupt(idx_path, "not a pack index (version 2)"));
        }
        if be32(&idx, 4) != 2 {
            return Err(corrupt(idx_path, "unsupported pack index version"));
        }
        let count = be32(&idx, 8 + 255 * 4) as usize;
        // fan-out, ids, crcs, offsets, trailer; large offsets may follow.
        if idx.len() < 8 + 256 * 4 + count * (20 + 4 + 4) + 40 {
            return Err(corrupt(idx_path, "pack index is truncated"));
        }
        let pack_path = format!("{}.pack", idx_path.trim_end_matches(".idx"));
        Ok(Pack {
            idx,
            count,
            pack_path,
            data: RefCell::new(None),
        })
    }

    fn fanout(&self, byte: usize) -> usize {
        be32(&self.idx, 8 + byte * 4) as usize
    }

    fn id_at(&self, i: usize) -> &[u8] {
        let at = 8 + 256 * 4 + i * 20;
        &self.idx[at..at + 20]
    }

    /// The position of `id` in the index.
    fn position(&self, id: &ObjectId) -> Option<usize> {
        let bytes = id.as_slice();
        let first = bytes[0] as usize;
        let lo = if first == 0 {
            0
        } else {
            self.fanout(first - 1)
        };
        let hi = self.fanout(first);
        let (mut lo, mut hi) = (lo, hi.min(self.count));
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.id_at(mid).cmp(bytes) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    pub(crate) fn contains(&self, id: &ObjectId) -> bool {
        self.position(id).is_some()
    }

    /// Ids in this pack whose hex starts with `prefix` (at most `limit`).
    pub(crate) fn ids_with_prefix(&self, prefix: &str, limit: usize, out: &mut Vec<ObjectId>) {
        // Every id in a bucket of the first byte, filtered by hex.
        let Ok(first) = u8::from_str_radix(&prefix[..2.min(prefix.len())], 16) else {
            return;
        };
        let range = if prefix.len() >= 2 {
            let first = first as usize;
            (if first == 0 {
                0
            } else {
                self.fanout(first - 1)
            })..self.fanout(first)
        } else {
            0..self.count
        };
        for i in range {
            if out.len() >= limit {
                return;
            }
            let id = ObjectId::from_bytes_or_panic(self.id_at(i));
            if id.to_hex().to_string().starts_with(prefix) {
                out.push(id);
            }
        }
    }

    fn offset(&self, position: usize) -> Result<u64> {
        let base = 8 + 256 * 4 + self.count * 24;
        let small = be32(&self.idx, base + position * 4);
        if small & 0x8000_0000 == 0 {
            return Ok(u64::from(small));
        }
        let large = base + self.count * 4 + (small & 0x7fff_ffff) as usize * 8;
        let bytes = self
            .idx
            .get(large..large + 8)
            .ok_or_else(|| corrupt(&self.pack_path, "large offset out of range"))?;
        Ok(u64::from_be_bytes(bytes.try_into().expect("8 bytes")))
    }

    fn data(&self, files: &dyn Files) -> Result<std::rc::Rc<Vec<u8>>> {
        if let Some(data) = self.data.borrow().as_ref() {
            return Ok(data.clone());
        }
        let data = files.read(&self.pack_path).at(&self.pack_path)?;
        if data.len() < 12 + 20 || &data[..4] != b"PACK" {
            return Err(corrupt(&self.pack_path, "not a pack"));
        }
        let data = std::rc::Rc::new(data);
        *self.data.borrow_mut() = Some(data.clone());
        Ok(data)
    }

    /// The object `id`, if this pack has it; `base` reads a `REF_DELTA`'s
    /// base from anywhere in the repository.
    pub(crate) fn read(
        &self,
        files: &dyn Files,
        id: &ObjectId,
        base: &BaseReader<'_>,
    ) -> Result<Option<(Kind, Vec<u8>)>> {
        let Some(position) = self.position(id) else {
            return Ok(None);
        };
        let offset = self.offset(position)?;
        let data = self.data(files)?;
        self.read_at(&data, offset, base).map(Some)
    }

    fn read_at(&self, data: &[u8], offset: u64, base: &BaseReader<'_>) -> Result<(Kind, Vec<u8>)> {
        // Walk down the delta chain, then apply the deltas from the base up.
        let mut deltas = Vec::new();
        let mut offset = offset;
        let (kind, mut object) = loop {
            if deltas.len() > MAX_DELTA_CHAIN {
                return Err(corrupt(&self.pack_path, "delta chain too long"));
            }
            let start = usize::try_from(offset)
                .ok()
                .filter(|&o| o < data.len().saturating_sub(20))
                .ok_or_else(|| corrupt(&self.pack_path, "offset out of range"))?;
            let entry =
                gix_pack::data::Entry::from_bytes(&data[start..], offset, gix_hash::Kind::Sha1)
                    .map_err(|e| corrupt(&self.pack_path, &e.to_string()))?;
            let body = inflate(
                &data[start + entry.header_size()..],
                entry.decompressed_size,
            )
            .ok_or_else(|| corrupt(&self.pack_path, "bad zlib data"))?;
            match entry.header {
                Header::Commit => break (Kind::Commit, body),
                Header::Tree => break (Kind::Tree, body),
                Header::Blob => break (Kind::Blob, body),
                Header::Tag => break (Kind::Tag, body),
                Header::OfsDelta { base_distance } => {
                    deltas.push(body);
                    offset = offset
                        .checked_sub(base_distance)
                        .filter(|_| base_distance > 0)
                        .ok_or_else(|| corrupt(&self.pack_path, "delta base out of range"))?;
                }
                Header::RefDelta { base_id } => {
                    deltas.push(body);
                    break base(&base_id)?;
                }
            }
        };
        for delta in deltas.iter().rev() {
            object = apply_delta(&object, delta)
                .ok_or_else(|| corrupt(&self.pack_path, "corrupt delta"))?;
        }
        Ok((kind, object))
    }
}

/// Inflates one zlib stream of `size` bytes from the start of `input`.
pub(crate) fn inflate(input: &[u8], size: u64) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(size).ok()?.min(1 << 26));
    let mut decoder = flate2::read::ZlibDecoder::new(input);
    decoder.read_to_end(&mut out).ok()?;
    (out.len() as u64 == size).then_some(out)
}

/// A delta's size header: a little-endian base-128 number.
fn delta_size(delta: &[u8], at: &mut usize) -> Option<usize> {
    let mut size = 0usize;
    let mut shift = 0;
    loop {
        let byte = *delta.get(*at)?;
        *at += 1;
        size |= usize::from(byte & 0x7f).checked_shl(shift)?;
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(size);
        }
    }
}

/// Applies a git delta (copy-from-base and insert instructions) to `base`.
pub(crate) fn apply_delta(base: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    if delta_size(delta, &mut at)? != base.len() {
        return None;
    }
    let size = delta_size(delta, &mut at)?;
    let mut out = Vec::with_capacity(size);
    while at < delta.len() {
        let op = delta[at];
        at += 1;
        if op & 0x80 != 0 {
            let mut offset = 0usize;
            let mut len = 0usize;
            for bit in 0..4 {
                if op & (1 << bit) != 0 {
                    offset |= usize::from(*delta.get(at)?) << (8 * bit);
                    at += 1;
                }
            }
            for bit in 0..3 {
                if op & (0x10 << bit) != 0 {
                    len |= usize::from(*delta.get(at)?) << (8 * bit);
                    at += 1;
                }
            }
            if len == 0 {
                len = 0x10000;
            }
            out.extend_from_slice(base.get(offset..offset.checked_add(len)?)?);
        } else if op != 0 {
            let len = usize::from(op);
            out.extend_from_slice(delta.get(at..at + len)?);
            at += len;
        } else {
            return None;
        }
    }
    (out.len() == size).then_some(out)
}
