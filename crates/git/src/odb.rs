//! The object database: loose objects (`objects/ab/cdef...`, zlib of
//! `<kind> <size>\0<content>`) and packs, read by id; new objects are
//! written loose, as `git add` and `git commit` do.

use std::cell::OnceCell;
use std::io::Write;

use gix_hash::ObjectId;
use gix_object::Kind;

use crate::error::{At, Error, Result};
use crate::files::{self, Files};
use crate::pack::Pack;

/// The objects of one repository.
pub struct Odb<'a> {
    files: &'a dyn Files,
    /// `<git dir>/objects`.
    dir: String,
    packs: OnceCell<Vec<Pack>>,
}

/// The id git gives `data` as an object of `kind`.
pub fn hash(kind: Kind, data: &[u8]) -> ObjectId {
    gix_object::compute_hash(gix_hash::Kind::Sha1, kind, data).expect("sha1 of an object")
}

impl<'a> Odb<'a> {
    pub fn new(files: &'a dyn Files, git_dir: &str) -> Self {
        Odb {
            files,
            dir: files::join(git_dir, "objects"),
            packs: OnceCell::new(),
        }
    }

    fn loose_path(&self, id: &ObjectId) -> String {
        let hex = id.to_hex().to_string();
        format!("{}/{}/{}", self.dir, &hex[..2], &hex[2..])
    }

    fn packs(&self) -> Result<&[Pack]> {
        if let Some(packs) = self.packs.get() {
            return Ok(packs);
        }
        let dir = files::join(&self.dir, "pack");
        let mut packs = Vec::new();
        match self.files.list(&dir) {
            Ok(entries) => {
                for entry in entries {
                    if entry.name.starts_with("pack-") && entry.name.ends_with(".idx") {
                        packs.push(Pack::open(self.files, &files::join(&dir, &entry.name))?);
                    }
                }
            }
            Err(crate::files::FileError::NotFound) => {}
            Err(e) => return Err(e).at(&dir),
        }
        Ok(self.packs.get_or_init(|| packs))
    }

    /// Whether the repository holds `id`.
    pub fn contains(&self, id: &ObjectId) -> Result<bool> {
        if self.files.stat(&self.loose_path(id)).is_ok() {
            return Ok(true);
        }
        Ok(self.packs()?.iter().any(|p| p.contains(id)))
    }

    /// The object `id`: its kind and content.
    pub fn read(&self, id: &ObjectId) -> Result<(Kind, Vec<u8>)> {
        let path = self.loose_path(id);
        if let Some(raw) = files::read_optional(self.files, &path).at(&path)? {
            return parse_loose(&raw).ok_or_else(|| {
                Error::Corrupt(format!("loose object {id} (stored in {path}) is corrupt"))
            });
        }
        let base = |base: &ObjectId| self.read(base);
        for pack in self.packs()? {
            if let Some((kind, data)) = pack.read(self.files, id, &base)? {
                // A damaged pack must not pass off one object as another.
                if hash(kind, &data) != *id {
                    return Err(Error::Corrupt(format!(
                        "packed object {id} is corrupt (its content hashes otherwise)"
                    )));
                }
                return Ok((kind, data));
            }
        }
        Err(Error::Missing(id.to_string()))
    }

    /// The object `id`, which must be of `kind` (git's message otherwise).
    pub fn read_kind(&self, id: &ObjectId, kind: Kind) -> Result<Vec<u8>> {
        let (found, data) = self.read(id)?;
        if found != kind {
            return Err(Error::Fatal(format!(
                "object {id} is a {found}, not a {kind}"
            )));
        }
        Ok(data)
    }

    /// Stores `data` as an object of `kind` (once: an object already there
    /// is left alone) and returns its id.
    pub fn write(&self, kind: Kind, data: &[u8]) -> Result<ObjectId> {
        let id = hash(kind, data);
        if self.contains(&id)? {
            return Ok(id);
        }
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let header = format!("{kind} {}\0", data.len());
        encoder
            .write_all(header.as_bytes())
            .and_then(|()| encoder.write_all(data))
            .expect("writing into memory");
        let compressed = encoder.finish().expect("writing into memory");
        let path = self.loose_path(&id);
        self.files.write(&path, &compressed).at(&path)?;
        Ok(id)
    }

    /// Every object id starting with the hex `prefix` (at most `limit`).
    pub fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<ObjectId>> {
        let mut out = Vec::new();
        if prefix.len() >= 2 {
            let dir = files::join(&self.dir, &prefix[..2]);
            if let Ok(entries) = self.files.list(&dir) {
                for entry in entries {
                    let hex = format!("{}{}", &prefix[..2], entry.name);
                    if hex.starts_with(prefix) {
                        if let Ok(id) = ObjectId::from_hex(hex.as_bytes()) {
                            out.push(id);
                        }
                    }
                }
            }
        }
        for pack in self.packs()? {
            pack.ids_with_prefix(prefix, limit, &mut out);
        }
        out.sort();
        out.dedup();
        out.truncate(limit);
        Ok(out)
    }

    /// The shortest unique abbreviation of `id`, at least `min` digits.
    pub fn abbreviate(&self, id: &ObjectId, min: usize) -> Result<String> {
        let hex = id.to_hex().to_string();
        let mut len = min.clamp(4, 40);
        while len < 40 && self.ids_with_prefix(&hex[..len], 2)?.len() > 1 {
            len += 1;
        }
        Ok(hex[..len].to_string())
    }
}

/// A loose object's kind and content, from its compressed file.
fn parse_loose(raw: &[u8]) -> Option<(Kind, Vec<u8>)> {
    let mut decoder = flate2::read::ZlibDecoder::new(raw);
    let mut all = Vec::new();
    std::io::Read::read_to_end(&mut decoder, &mut all).ok()?;
    let nul = all.iter().position(|&b| b == 0)?;
    let header = std::str::from_utf8(&all[..nul]).ok()?;
    let (kind, size) = header.split_once(' ')?;
    let kind = Kind::from_bytes(kind.as_bytes()).ok()?;
    let size: usize = size.parse().ok()?;
    let body = all.split_off(nul + 1);
    (body.len() == size).then_some((kind, body))
}
