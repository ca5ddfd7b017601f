//! Packs on the wire: one received from a server is checked and indexed
//! into `objects/pack` (what `git index-pack` does), and one to send is
//! built from the objects a push adds (what `git pack-objects` does).
//!
//! Indexing reads the pack twice: once to find where each entry ends and
//! which entries others are deltas of, once to resolve every object and
//! hash it. Only the objects some later delta still needs are kept in
//! memory, each dropped once its last delta is applied, so resolving costs
//! about the largest set of bases live at once, not the whole pack
//! inflated. The pack's own checksum, its object count and every entry
//! are checked before anything is written; then the pack and its index
//! are written under temporary names and renamed into place (pack first:
//! git and this crate find packs by their index), so a pack cut short or
//! damaged leaves nothing in the repository.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use gix_hash::ObjectId;
use gix_object::Kind;
use gix_pack::data::entry::Header;

use crate::error::{At, Error, Result};
use crate::files::{self, Files};
use crate::odb::{self, Odb};
use crate::pack::apply_delta;
use crate::repo::Repo;

fn corrupt(what: impl Into<String>) -> Error {
    Error::Corrupt(format!("index-pack failed: {}", what.into()))
}

/// One entry as the first pass finds it.
struct Entry {
    offset: usize,
    /// Where its zlib data starts and ends.
    data: std::ops::Range<usize>,
    header: Header,
    size: u64,
    crc: u32,
}

/// Inflates the zlib stream at the start of `input`, which must come to
/// `size` bytes: the bytes and how much input the stream took.
fn inflate_counted(input: &[u8], size: u64) -> Option<(Vec<u8>, usize)> {
    let size = usize::try_from(size).ok()?;
    let mut out = Vec::with_capacity(size.min(1 << 26));
    let mut decoder = flate2::Decompress::new(true);
    loop {
        let before = out.len();
        if out.capacity() == out.len() {
            out.reserve((size - out.len()).clamp(64, 1 << 20));
        }
        let consumed = decoder.total_in() as usize;
        let status = decoder
            .decompress_vec(
                &input[consumed..],
                &mut out,
                flate2::FlushDecompress::Finish,
            )
            .ok()?;
        match status {
            flate2::Status::StreamEnd => break,
            _ if out.len() == before && decoder.total_in() as usize == consumed => return None,
            _ => {}
        }
        if out.len() > size {
            return None;
        }
    }
    (out.len() == size).then(|| (out, decoder.total_in() as usize))
}

/// Where each entry of `pack` lies; checks the header and trailer.
fn scan(pack: &[u8]) -> Result<(Vec<Entry>, ObjectId)> {
    if pack.len() < 32 || &pack[..4] != b"PACK" {
        return Err(corrupt("the answer is not a pack"));
    }
    let version = u32::from_be_bytes(pack[4..8].try_into().expect("4 bytes"));
    if version != 2 && version != 3 {
        return Err(corrupt(format!("pack version {version} unsupported")));
    }
    let count = u32::from_be_bytes(pack[8..12].try_into().expect("4 bytes")) as usize;
    let body = pack.len() - 20;
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(&pack[..body]);
    let checksum = hasher
        .try_finalize()
        .map_err(|e| corrupt(format!("hashing the pack: {e}")))?;
    if checksum.as_slice() != &pack[body..] {
        return Err(corrupt(
            "pack is truncated or corrupt (its checksum does not match)",
        ));
    }
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    let mut at = 12;
    for _ in 0..count {
        if at >= body {
            return Err(corrupt("pack has fewer objects than it says"));
        }
        let entry =
            gix_pack::data::Entry::from_bytes(&pack[at..body], at as u64, gix_hash::Kind::Sha1)
                .map_err(|e| corrupt(e.to_string()))?;
        let start = at + entry.header_size();
        let (_, used) = inflate_counted(&pack[start..body], entry.decompressed_size)
            .ok_or_else(|| corrupt(format!("bad zlib data at offset {at}")))?;
        let end = start + used;
        let mut crc = flate2::Crc::new();
        crc.update(&pack[at..end]);
        entries.push(Entry {
            offset: at,
            data: start..end,
            header: entry.header,
            size: entry.decompressed_size,
            crc: crc.sum(),
        });
        at = end;
    }
    if at != body {
        return Err(corrupt("pack has junk after its last object"));
    }
    Ok((entries, checksum))
}

/// Resolves every entry to its object id (in entry order).
fn resolve(pack: &[u8], entries: &[Entry], odb: &Odb<'_>) -> Result<Vec<ObjectId>> {
    let by_offset: HashMap<usize, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.offset, i))
        .collect();
    // How many deltas each entry is the base of (by offset), and the ids
    // other entries are deltas of (by id).
    let mut uses: HashMap<usize, usize> = HashMap::new();
    let mut ref_bases: HashSet<ObjectId> = HashSet::new();
    for entry in entries {
        match entry.header {
            Header::OfsDelta { base_distance } => {
                let base = (entry.offset as u64)
                    .checked_sub(base_distance)
                    .filter(|_| base_distance > 0)
                    .and_then(|o| by_offset.get(&(o as usize)))
                    .ok_or_else(|| corrupt(format!("delta at {} has no base", entry.offset)))?;
                *uses.entry(*base).or_default() += 1;
            }
            Header::RefDelta { base_id } => {
                ref_bases.insert(base_id);
            }
            _ => {}
        }
    }
    let mut kept: HashMap<usize, (Kind, Rc<Vec<u8>>)> = HashMap::new();
    let mut by_id: HashMap<ObjectId, (Kind, Rc<Vec<u8>>)> = HashMap::new();
    let mut ids = vec![None; entries.len()];
    let mut waiting: Vec<usize> = Vec::new();
    let bases: HashSet<usize> = uses.keys().copied().collect();
    let finish = |i: usize,
                  kind: Kind,
                  data: Vec<u8>,
                  kept: &mut HashMap<usize, (Kind, Rc<Vec<u8>>)>,
                  by_id: &mut HashMap<ObjectId, (Kind, Rc<Vec<u8>>)>,
                  ids: &mut Vec<Option<ObjectId>>| {
        let id = odb::hash(kind, &data);
        ids[i] = Some(id);
        let data = Rc::new(data);
        if bases.contains(&i) {
            kept.insert(i, (kind, data.clone()));
        }
        if ref_bases.contains(&id) {
            by_id.insert(id, (kind, data));
        }
    };
    let body = |entry: &Entry| {
        inflate_counted(&pack[entry.data.clone()], entry.size)
            .map(|(d, _)| d)
            .ok_or_else(|| corrupt(format!("bad zlib data at offset {}", entry.offset)))
    };
    for (i, entry) in entries.iter().enumerate() {
        let (kind, data) = match entry.header {
            Header::Commit => (Kind::Commit, body(entry)?),
            Header::Tree => (Kind::Tree, body(entry)?),
            Header::Blob => (Kind::Blob, body(entry)?),
            Header::Tag => (Kind::Tag, body(entry)?),
            Header::OfsDelta { base_distance } => {
                let base_index = by_offset[&(entry.offset - base_distance as usize)];
                let (kind, base) = kept
                    .get(&base_index)
                    .cloned()
                    .ok_or_else(|| corrupt("a delta's base comes after it"))?;
                let left = uses.get_mut(&base_index).expect("counted");
                *left -= 1;
                if *left == 0 {
                    kept.remove(&base_index);
                }
                let object = apply_delta(&base, &body(entry)?)
                    .ok_or_else(|| corrupt(format!("corrupt delta at {}", entry.offset)))?;
                (kind, object)
            }
            Header::RefDelta { base_id } => match by_id.get(&base_id).cloned() {
                Some((kind, base)) => {
                    let object = apply_delta(&base, &body(entry)?)
                        .ok_or_else(|| corrupt(format!("corrupt delta at {}", entry.offset)))?;
                    (kind, object)
                }
                None => {
                    waiting.push(i);
                    continue;
                }
            },
        };
        finish(i, kind, data, &mut kept, &mut by_id, &mut ids);
    }
    // Ref deltas whose base came later in the pack, or is in the
    // repository already (a thin pack).
    while !waiting.is_empty() {
        let before = waiting.len();
        let mut still = Vec::new();
        for i in waiting {
            let entry = &entries[i];
            let Header::RefDelta { base_id } = entry.header else {
                unreachable!("only ref deltas wait")
            };
            let base = match by_id.get(&base_id).cloned() {
                Some(found) => Some(found),
                None if odb.contains(&base_id)? => {
                    let (kind, data) = odb.read(&base_id)?;
                    Some((kind, Rc::new(data)))
                }
                None => None,
            };
            match base {
                Some((kind, base)) => {
                    let object = apply_delta(&base, &body(entry)?)
                        .ok_or_else(|| corrupt(format!("corrupt delta at {}", entry.offset)))?;
                    finish(i, kind, object, &mut kept, &mut by_id, &mut ids);
                }
                None => still.push(i),
            }
        }
        if still.len() == before {
            return Err(corrupt(format!(
                "{} deltas have no base in the pack or the repository",
                still.len()
            )));
        }
        waiting = still;
    }
    Ok(ids
        .into_iter()
        .map(|id| id.expect("every entry resolved"))
        .collect())
}

/// The version 2 index of a pack whose entries have `ids`.
fn index_bytes(entries: &[Entry], ids: &[ObjectId], checksum: &ObjectId) -> Vec<u8> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| ids[a].cmp(&ids[b]));
    let mut out = Vec::with_capacity(8 + 1024 + ids.len() * 28 + 40);
    out.extend_from_slice(&[0xff, b't', b'O', b'c', 0, 0, 0, 2]);
    let mut fanout = [0u32; 256];
    for id in ids {
        fanout[id.as_slice()[0] as usize] += 1;
    }
    let mut total = 0;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for &i in &order {
        out.extend_from_slice(ids[i].as_slice());
    }
    for &i in &order {
        out.extend_from_slice(&entries[i].crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for &i in &order {
        let offset = entries[i].offset as u64;
        if offset < 0x8000_0000 {
            out.extend_from_slice(&(offset as u32).to_be_bytes());
        } else {
            out.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
            large.push(offset);
        }
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(checksum.as_slice());
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(&out);
    let own = hasher.try_finalize().expect("sha1 of an index");
    out.extend_from_slice(own.as_slice());
    out
}

/// Checks and indexes `pack` into the repository at `git_dir`; how many
/// objects it held. An empty pack writes nothing.
pub fn store(files: &dyn Files, git_dir: &str, pack: &[u8]) -> Result<usize> {
    let (entries, checksum) = scan(pack)?;
    if entries.is_empty() {
        return Ok(0);
    }
    let odb = Odb::new(files, git_dir);
    let ids = resolve(pack, &entries, &odb)?;
    let index = index_bytes(&entries, &ids, &checksum);
    let dir = files::join(git_dir, "objects/pack");
    let name = format!("pack-{checksum}");
    let (pack_path, idx_path) = (
        files::join(&dir, &format!("{name}.pack")),
        files::join(&dir, &format!("{name}.idx")),
    );
    if files.stat(&idx_path).is_ok() {
        return Ok(entries.len());
    }
    let (tmp_pack, tmp_idx) = (
        files::join(&dir, &format!("tmp_pack_{checksum}")),
        files::join(&dir, &format!("tmp_idx_{checksum}")),
    );
    files.write(&tmp_pack, pack).at(&tmp_pack)?;
    files.write(&tmp_idx, &index).at(&tmp_idx)?;
    files.rename(&tmp_pack, &pack_path).at(&pack_path)?;
    files.rename(&tmp_idx, &idx_path).at(&idx_path)?;
    Ok(entries.len())
}

fn type_number(kind: Kind) -> u8 {
    match kind {
        Kind::Commit => 1,
        Kind::Tree => 2,
        Kind::Blob => 3,
        Kind::Tag => 4,
    }
}

/// A pack of `ids` (each whole, zlib-compressed), with its checksum.
pub fn build(odb: &Odb<'_>, ids: &[ObjectId]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    out.extend_from_slice(b"PACK");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(ids.len() as u32).to_be_bytes());
    for id in ids {
        let (kind, data) = odb.read(id)?;
        let mut size = data.len();
        let mut byte = (type_number(kind) << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            out.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        out.push(byte);
        let mut encoder = flate2::write::ZlibEncoder::new(&mut out, flate2::Compression::fast());
        std::io::Write::write_all(&mut encoder, &data).expect("writing into memory");
        encoder.finish().expect("writing into memory");
    }
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(&out);
    let checksum = hasher.try_finalize().expect("sha1 of a pack");
    out.extend_from_slice(checksum.as_slice());
    Ok(out)
}

/// Every tree and blob under tree `id` not in `seen`, added to `seen` and
/// (in walk order) to `out`.
fn walk_tree(
    repo: &Repo<'_>,
    id: ObjectId,
    seen: &mut HashSet<ObjectId>,
    out: &mut Vec<ObjectId>,
) -> Result<()> {
    if !seen.insert(id) {
        return Ok(());
    }
    out.push(id);
    for entry in repo.tree(&id)? {
        if entry.is_tree() {
            walk_tree(repo, entry.id, seen, out)?;
        } else if entry.mode != crate::index::MODE_GITLINK && seen.insert(entry.id) {
            out.push(entry.id);
        }
    }
    Ok(())
}

/// What a push of `tips` must send to a server that has `theirs` (its
/// refs' ids; those this repository lacks are ignored): the annotated
/// tags among `tips` it lacks, the commits reachable from `tips` (tags
/// peeled) and not from `theirs`, and their trees and blobs that the
/// commits the server has do not already hold.
pub fn objects_to_send(
    repo: &Repo<'_>,
    tips: &[ObjectId],
    theirs: &[ObjectId],
) -> Result<Vec<ObjectId>> {
    // Everything reachable from what the server has, as far as we have it.
    let mut known_commits = HashSet::new();
    let mut todo: Vec<ObjectId> = Vec::new();
    for id in theirs {
        if repo.odb.contains(id)? {
            let (kind, peeled) = repo.peel(*id)?;
            if kind == Kind::Commit {
                todo.push(peeled);
            }
        }
    }
    while let Some(id) = todo.pop() {
        if known_commits.insert(id) {
            todo.extend(repo.commit(&id)?.parents);
        }
    }
    // Tags first: each tag object on the way to a commit is sent.
    let mut tags = Vec::new();
    let mut todo: Vec<ObjectId> = Vec::new();
    for tip in tips {
        let mut id = *tip;
        loop {
            let (kind, data) = repo.odb.read(&id)?;
            match kind {
                Kind::Tag => {
                    if !theirs.contains(&id) && !tags.contains(&id) {
                        tags.push(id);
                    }
                    id = crate::objects::Tag::parse(&data)?.target;
                }
                Kind::Commit => break todo.push(id),
                Kind::Tree | Kind::Blob => {
                    return Err(Error::Fatal(format!(
                        "stead: pushing a tag of a {} is not in the light shell's git; run it on the computer",
                        kind
                    )))
                }
            }
        }
    }
    // Ours: reachable from the tips, stopping at what they have.
    let mut commits = Vec::new();
    let mut seen = HashSet::new();
    let mut boundary = HashSet::new();
    while let Some(id) = todo.pop() {
        if known_commits.contains(&id) {
            boundary.insert(id);
            continue;
        }
        if seen.insert(id) {
            let commit = repo.commit(&id)?;
            todo.extend(commit.parents.iter().copied());
            commits.push((id, commit.tree));
        }
    }
    let mut known_objects = HashSet::new();
    let mut ignored = Vec::new();
    for id in boundary {
        let tree = repo.commit(&id)?.tree;
        walk_tree(repo, tree, &mut known_objects, &mut ignored)?;
    }
    let mut out: Vec<ObjectId> = tags;
    out.extend(commits.iter().map(|(id, _)| *id));
    for (_, tree) in commits {
        walk_tree(repo, tree, &mut known_objects, &mut out)?;
    }
    Ok(out)
}
