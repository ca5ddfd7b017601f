//! `stead push` and `stead pull`: a directory tree each way, by content
//! hash, in the computer's sync terms ([`stead_sync::Change`]).
//!
//! Both sides name content by the blake3 hashes of its 512 KiB chunks, so
//! a push sends only chunks the workspace lacks (`transfer/missing`), and a
//! pull fetches only chunks no local file holds. A push stages its chunks,
//! then applies every change in one transaction; a pull writes each file
//! beside its place and renames it in whole, keeping fetched chunks in
//! `.stead-pull/` under the destination until it is done. So an
//! interrupted run leaves no file half-written, and the next run finishes
//! it, sending or fetching only what is still missing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use stead_sync::{frame, hash_chunk, Change, ChunkHash, Entry, IgnoreRules, CHUNK_SIZE};

use crate::client::{agent_path, error_of, read_body, workspace_path};
use crate::error::{CliError, Failure, Result};
use crate::output;
use crate::Context;

/// The folder a pull keeps fetched chunks in until it is done.
const PULL_STAGING: &str = ".stead-pull";
/// Bytes of chunk content per `transfer/chunks` request.
const BATCH_BYTES: usize = 12 << 20;
/// Hashes per `transfer/missing` request (the server's bound).
const MISSING_BATCH: usize = 10_000;
/// Chunks per `transfer/fetch` request (the server's bound).
const FETCH_BATCH: usize = 24;
/// Applies tried when staged content went missing meanwhile.
const APPLY_ATTEMPTS: usize = 3;

/// What `push` and `pull` take beside their paths.
pub struct Options {
    pub delete: bool,
    pub dry_run: bool,
}

/// One path of a local tree, relative to its root (`/a/b`).
struct Local {
    entry: Entry,
    mtime_ms: i64,
    /// The file on disk, for files.
    file: Option<PathBuf>,
}

/// The ignore rules of a local tree: the workspace's defaults, then its
/// root's `.gitignore` and `.steadignore`.
fn local_rules(root: &Path) -> IgnoreRules {
    let mut text = stead_sync::ignore::DEFAULT_RULES.to_string();
    for name in [".gitignore", ".steadignore"] {
        if let Ok(rules) = fs::read_to_string(root.join(name)) {
            text.push_str(&rules);
            text.push('\n');
        }
    }
    // A pull's staging is its own, and so is a file half-written by one
    // that was interrupted (the next pull writes it again).
    text.push_str(&format!("/{PULL_STAGING}/\n*.stead-part\n"));
    IgnoreRules::parse(&text)
}

/// Reads `root`'s tree (not following symlinks), hashing every file.
fn scan(root: &Path, rules: &IgnoreRules) -> Result<BTreeMap<String, Local>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| CliError::local(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| CliError::local(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let child = format!("{rel}/{name}");
            let meta = fs::symlink_metadata(&path).map_err(|e| CliError::local(&path, e))?;
            let kind = meta.file_type();
            if rules.is_ignored(&child, kind.is_dir()) {
                continue;
            }
            let mtime_ms = meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000;
            let mode = meta.permissions().mode() & 0o7777;
            let (entry, file) = if kind.is_dir() {
                stack.push((path.clone(), child.clone()));
                (Entry::Dir { mode }, None)
            } else if kind.is_symlink() {
                let target = fs::read_link(&path).map_err(|e| CliError::local(&path, e))?;
                let target = target.to_string_lossy().into_owned();
                (Entry::Symlink { target }, None)
            } else if kind.is_file() {
                let chunks = hash_file(&path)?;
                let size = meta.len();
                (Entry::File { mode, size, chunks }, Some(path.clone()))
            } else {
                // Sockets, fifos and devices have no place in a workspace.
                continue;
            };
            out.insert(
                child,
                Local {
                    entry,
                    mtime_ms,
                    file,
                },
            );
        }
    }
    Ok(out)
}

fn hash_file(path: &Path) -> Result<Vec<ChunkHash>> {
    let mut file = fs::File::open(path).map_err(|e| CliError::local(path, e))?;
    let mut hashes = Vec::new();
    let mut buffer = vec![0u8; CHUNK_SIZE];
    loop {
        let n = read_full(&mut file, &mut buffer).map_err(|e| CliError::local(path, e))?;
        if n == 0 {
            return Ok(hashes);
        }
        hashes.push(hash_chunk(&buffer[..n]));
        if n < CHUNK_SIZE {
            return Ok(hashes);
        }
    }
}

/// Reads until `buffer` is full or the file ends.
fn read_full(file: &mut fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The remote tree below `dir`, relative to it, and the revision it was
/// read at; an absent directory is an empty tree.
fn manifest(ctx: &Context, dir: &str) -> Result<(i64, BTreeMap<String, Change>)> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let path = format!("{}/transfer/manifest", agent_path(agent));
    let answer = match api.json("POST", &path, Some(&json!({ "path": dir }))) {
        Ok(answer) => answer,
        Err(error) if error.failure == Failure::NotFound && error.message.contains("ENOENT") => {
            let info = api.json("GET", &agent_path(agent), None)?;
            return Ok((
                info["usage"]["revision"].as_i64().unwrap_or(0),
                BTreeMap::new(),
            ));
        }
        Err(error) => return Err(error),
    };
    let entries: Vec<Change> = serde_json::from_value(answer["entries"].clone()).map_err(|e| {
        CliError::new(
            Failure::Server,
            format!("a manifest that does not decode: {e}"),
        )
    })?;
    let prefix = dir.trim_end_matches('/');
    let tree = entries
        .into_iter()
        .filter_map(|change| {
            let rel = change.path.strip_prefix(prefix)?.to_string();
            rel.starts_with('/').then_some((rel, change))
        })
        .collect();
    Ok((answer["revision"].as_i64().unwrap_or(0), tree))
}

fn join(dir: &str, rel: &str) -> String {
    format!("{}{rel}", dir.trim_end_matches('/'))
}

/// Whether `rel` lies below one of `roots` (`/a` holds `/a/b`).
fn below_any(rel: &str, roots: &[String]) -> bool {
    roots.iter().any(|root| {
        rel.strip_prefix(root.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = match output::is_terminal() || std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        true => ProgressBar::new(total),
        false => ProgressBar::hidden(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {prefix}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

pub fn push(ctx: &Context, local: &Path, remote: Option<&str>, options: &Options) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let meta = fs::metadata(local).map_err(|e| CliError::local(local, e))?;
    if !meta.is_dir() {
        return Err(CliError::new(
            Failure::Local,
            format!(
                "{} is not a directory: `stead put` sends one file",
                local.display()
            ),
        ));
    }
    let remote = workspace_path(remote.unwrap_or("/"));
    let rules = local_rules(local);
    let tree = scan(local, &rules)?;
    let (base, remote_tree) = manifest(ctx, &remote)?;

    // What differs: each local path whose entry is not the remote's.
    let mut changes = Vec::new();
    if remote != "/" && remote_tree.is_empty() {
        changes.push(Change {
            path: remote.clone(),
            entry: Some(Entry::Dir {
                mode: meta.permissions().mode() & 0o7777,
            }),
            mtime_ms: None,
        });
    }
    for (rel, local) in &tree {
        let same = remote_tree
            .get(rel)
            .is_some_and(|theirs| theirs.entry.as_ref() == Some(&local.entry));
        if !same {
            changes.push(Change {
                path: join(&remote, rel),
                entry: Some(local.entry.clone()),
                mtime_ms: matches!(local.entry, Entry::File { .. }).then_some(local.mtime_ms),
            });
        }
    }
    let mut deleted: Vec<String> = Vec::new();
    if options.delete {
        for (rel, theirs) in &remote_tree {
            let is_dir = matches!(theirs.entry, Some(Entry::Dir { .. }));
            if tree.contains_key(rel) || below_any(rel, &deleted) || rules.is_ignored(rel, is_dir) {
                continue;
            }
            deleted.push(rel.clone());
            changes.push(Change {
                path: join(&remote, rel),
                entry: None,
                mtime_ms: None,
            });
        }
    }

    // Where each chunk can be read from locally.
    let mut sources: HashMap<ChunkHash, (PathBuf, usize, usize)> = HashMap::new();
    for change in &changes {
        if let Some(Entry::File { chunks, size, .. }) = &change.entry {
            let rel = &change.path[remote.trim_end_matches('/').len()..];
            let file = tree[rel].file.clone().expect("a file has its path");
            for (idx, hash) in chunks.iter().enumerate() {
                let length = (*size as usize - idx * CHUNK_SIZE).min(CHUNK_SIZE);
                sources.entry(*hash).or_insert((file.clone(), idx, length));
            }
        }
    }
    let wanted: Vec<ChunkHash> = sources.keys().copied().collect();
    let mut missing = missing_of(ctx, &wanted)?;
    let bytes: u64 = missing.iter().map(|h| sources[h].2 as u64).sum();
    let largest = changes
        .iter()
        .filter_map(|c| match &c.entry {
            Some(Entry::File { size, .. }) => Some((*size, c.path.as_str())),
            _ => None,
        })
        .max();
    check_quota(ctx, bytes, largest)?;
    let summary = json!({
        "changes": changes.len(), "deleted": deleted.len(),
        "chunks_sent": missing.len(), "bytes_sent": bytes, "dry_run": options.dry_run,
    });
    if options.dry_run {
        if !ctx.json {
            for change in &changes {
                let mark = if change.entry.is_none() { '-' } else { '+' };
                output::line(&format!("{mark} {}", change.path));
            }
        }
        return output::done(
            ctx.json,
            &summary,
            &format!(
                "would change {} paths, sending {} in {} chunks",
                changes.len(),
                output::size(bytes),
                missing.len()
            ),
        );
    }
    let mut sent_bytes = 0;
    let mut sent_chunks = 0;
    for _ in 0..APPLY_ATTEMPTS {
        let bar = progress(missing.iter().map(|h| sources[h].2 as u64).sum(), "push");
        let staging = upload(ctx, &missing, &sources, &bar)?;
        bar.finish_and_clear();
        sent_chunks += missing.len();
        sent_bytes += missing.iter().map(|h| sources[h].2 as u64).sum::<u64>();
        let body = json!({ "base": base, "changes": changes, "staging": staging });
        match api.json(
            "POST",
            &format!("{}/transfer/apply", agent_path(agent)),
            Some(&body),
        ) {
            Ok(answer) => {
                let applied = &answer["applied"];
                warn_refusals(applied);
                let summary = json!({
                    "changes": changes.len(), "deleted": deleted.len(),
                    "chunks_sent": sent_chunks, "bytes_sent": sent_bytes,
                    "revision": applied["revision"], "conflicts": applied["conflicts"],
                    "rejected": applied["rejected"], "checkpoint": answer["checkpoint"],
                });
                let refused = applied["rejected"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty());
                output::done(
                    ctx.json,
                    &summary,
                    &format!(
                        "pushed {} → {}: {} paths changed, {} sent in {} chunks",
                        local.display(),
                        remote,
                        changes.len(),
                        output::size(sent_bytes),
                        sent_chunks
                    ),
                )?;
                return Ok(match refused {
                    true => Failure::Quota.exit_code(),
                    false => 0,
                });
            }
            // Staged content was dropped (the agent restarted): send again.
            Err(error) if error.message.contains("CONTENT_MISSING") => {
                missing = missing_of(ctx, &wanted)?;
            }
            Err(error) => return Err(error),
        }
    }
    Err(CliError::new(
        Failure::Network,
        "the workspace kept dropping the staged content; run the push again",
    ))
}

fn warn_refusals(applied: &Value) {
    for conflict in applied["conflicts"].as_array().into_iter().flatten() {
        eprintln!("stead: conflict: {conflict} (the workspace's version was kept)");
    }
    for rejected in applied["rejected"].as_array().into_iter().flatten() {
        eprintln!(
            "stead: refused {}: {}",
            rejected["path"].as_str().unwrap_or(""),
            rejected["reason"].as_str().unwrap_or("")
        );
    }
}

fn missing_of(ctx: &Context, wanted: &[ChunkHash]) -> Result<Vec<ChunkHash>> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut missing = Vec::new();
    for batch in wanted.chunks(MISSING_BATCH) {
        let answer = api.json(
            "POST",
            &format!("{}/transfer/missing", agent_path(agent)),
            Some(&json!({ "hashes": batch })),
        )?;
        let page: Vec<ChunkHash> = serde_json::from_value(answer["missing"].clone())
            .map_err(|e| CliError::new(Failure::Server, format!("missing: {e}")))?;
        missing.extend(page);
    }
    Ok(missing)
}

/// Stops a push that would break a quota before it sends anything: the
/// stored bytes (`bytes` of new content) or the largest file (`largest`).
fn check_quota(ctx: &Context, bytes: u64, largest: Option<(u64, &str)>) -> Result<()> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let settings = api.json("GET", &format!("{}/settings", agent_path(agent)), None)?;
    let quotas = match settings.get("settings") {
        Some(inner) => inner["quotas"].clone(),
        None => settings["quotas"].clone(),
    };
    let refuse = |message: String| {
        Err(CliError::new(
            Failure::Quota,
            format!("{message}: nothing was sent; free space or raise the quota in the settings"),
        ))
    };
    if let (Some(limit), Some((size, path))) = (quotas["max_file_bytes"].as_u64(), largest) {
        if size > limit {
            return refuse(format!(
                "{path} would be {} and the max_file_bytes quota is {}",
                output::size(size),
                output::size(limit)
            ));
        }
    }
    let info = api.json("GET", &agent_path(agent), None)?;
    let stored = info["usage"]["stored_bytes"].as_u64().unwrap_or(0);
    match quotas["max_stored_bytes"].as_u64() {
        Some(limit) if stored + bytes > limit => refuse(format!(
            "the push would store {} more, and the workspace holds {} of its max_stored_bytes quota of {}",
            output::size(bytes),
            output::size(stored),
            output::size(limit)
        )),
        _ => Ok(()),
    }
}

/// Sends the `missing` chunks in batches; the staging ids.
fn upload(
    ctx: &Context,
    missing: &[ChunkHash],
    sources: &HashMap<ChunkHash, (PathBuf, usize, usize)>,
    bar: &ProgressBar,
) -> Result<Vec<i64>> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut staging = Vec::new();
    let mut body = Vec::new();
    let mut buffer = vec![0u8; CHUNK_SIZE];
    let flush = |body: &mut Vec<u8>, staging: &mut Vec<i64>| -> Result<()> {
        if body.is_empty() {
            return Ok(());
        }
        // A declared length, not chunked: the body is whole in memory.
        let length = body.len().to_string();
        let response = api.send(
            "POST",
            &format!("{}/transfer/chunks", agent_path(agent)),
            &[
                ("content-type", "application/octet-stream"),
                ("content-length", length.as_str()),
            ],
            ureq::SendBody::from_reader(&mut body.as_slice()),
        )?;
        let status = response.status().as_u16();
        let bytes = read_body(response)?;
        if status != 200 {
            return Err(error_of(status, &bytes));
        }
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        staging.extend(answer["staging"].as_i64());
        body.clear();
        Ok(())
    };
    for hash in missing {
        let (path, idx, length) = &sources[hash];
        let mut file = fs::File::open(path).map_err(|e| CliError::local(path, e))?;
        file.seek(SeekFrom::Start((idx * CHUNK_SIZE) as u64))
            .map_err(|e| CliError::local(path, e))?;
        let n =
            read_full(&mut file, &mut buffer[..*length]).map_err(|e| CliError::local(path, e))?;
        if n != *length || hash_chunk(&buffer[..n]) != *hash {
            return Err(CliError::new(
                Failure::Local,
                format!(
                    "{} changed while it was pushed; run the push again",
                    path.display()
                ),
            ));
        }
        frame::encode(&mut body, &buffer[..n]);
        bar.inc(n as u64);
        if body.len() >= BATCH_BYTES {
            flush(&mut body, &mut staging)?;
        }
    }
    flush(&mut body, &mut staging)?;
    Ok(staging)
}

pub fn pull(ctx: &Context, remote: &str, local: Option<&Path>, options: &Options) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let remote = workspace_path(remote);
    let local = local
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let (_, remote_tree) = manifest(ctx, &remote)?;
    if !options.dry_run {
        fs::create_dir_all(&local).map_err(|e| CliError::local(&local, e))?;
    }
    let rules = local_rules(&local);
    let tree = match local.is_dir() {
        true => scan(&local, &rules)?,
        false => BTreeMap::new(),
    };
    let staging = local.join(PULL_STAGING);
    // Where each chunk is at hand already: in a local file, or fetched by
    // an earlier, interrupted pull.
    let mut at_hand: HashMap<ChunkHash, (PathBuf, usize)> = HashMap::new();
    for item in tree.values() {
        if let (Entry::File { chunks, .. }, Some(file)) = (&item.entry, &item.file) {
            for (idx, hash) in chunks.iter().enumerate() {
                at_hand.entry(*hash).or_insert((file.clone(), idx));
            }
        }
    }
    if let Ok(entries) = fs::read_dir(&staging) {
        for entry in entries.flatten() {
            if let Some(hash) = ChunkHash::from_hex(&entry.file_name().to_string_lossy()) {
                at_hand.insert(hash, (entry.path(), usize::MAX));
            }
        }
    }
    let mut writes: Vec<(&String, &Change)> = Vec::new();
    for (rel, theirs) in &remote_tree {
        let ours = tree.get(rel);
        if ours.map(|o| Some(&o.entry)) != Some(theirs.entry.as_ref()) {
            writes.push((rel, theirs));
        }
    }
    let mut needed: Vec<ChunkHash> = Vec::new();
    let mut seen = HashSet::new();
    for (_, change) in &writes {
        if let Some(Entry::File { chunks, .. }) = &change.entry {
            for hash in chunks {
                if !at_hand.contains_key(hash) && seen.insert(*hash) {
                    needed.push(*hash);
                }
            }
        }
    }
    let mut removed: Vec<String> = Vec::new();
    if options.delete {
        for (rel, item) in &tree {
            let is_dir = matches!(item.entry, Entry::Dir { .. });
            if !remote_tree.contains_key(rel)
                && !below_any(rel, &removed)
                && !rules.is_ignored(rel, is_dir)
            {
                removed.push(rel.clone());
            }
        }
    }
    if options.dry_run {
        if !ctx.json {
            for (rel, _) in &writes {
                output::line(&format!("+ {}", local.join(&rel[1..]).display()));
            }
            for rel in &removed {
                output::line(&format!("- {}", local.join(&rel[1..]).display()));
            }
        }
        let summary = json!({ "changes": writes.len(), "deleted": removed.len(), "chunks_fetched": needed.len(), "dry_run": true });
        return output::done(
            ctx.json,
            &summary,
            &format!(
                "would change {} paths, fetching {} chunks",
                writes.len() + removed.len(),
                needed.len()
            ),
        );
    }
    // Fetch what no local file holds into the staging folder.
    if !needed.is_empty() {
        fs::create_dir_all(&staging).map_err(|e| CliError::local(&staging, e))?;
    }
    let bar = progress(needed.len() as u64 * CHUNK_SIZE as u64, "pull");
    let mut fetched_bytes = 0u64;
    for batch in needed.chunks(FETCH_BATCH) {
        let answer = api.json(
            "POST",
            &format!("{}/transfer/fetch", agent_path(agent)),
            Some(&json!({ "hashes": batch })),
        )?;
        for chunk in answer["chunks"].as_array().into_iter().flatten() {
            use base64::Engine;
            let data = base64::engine::general_purpose::STANDARD
                .decode(chunk["data"].as_str().unwrap_or(""))
                .map_err(|e| {
                    CliError::new(
                        Failure::Server,
                        format!("a chunk that does not decode: {e}"),
                    )
                })?;
            let hash = hash_chunk(&data);
            let path = staging.join(hash.to_string());
            write_whole(&path, &data)?;
            fetched_bytes += data.len() as u64;
            bar.inc(data.len() as u64);
            at_hand.insert(hash, (path, usize::MAX));
        }
    }
    bar.finish_and_clear();
    // Directories first (the tree is in path order), then files and links.
    let mut dir_modes = Vec::new();
    for (rel, change) in &writes {
        let target = local.join(&rel[1..]);
        match &change.entry {
            Some(Entry::Dir { mode }) => {
                if target.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
                    fs::remove_file(&target).map_err(|e| CliError::local(&target, e))?;
                }
                fs::create_dir_all(&target).map_err(|e| CliError::local(&target, e))?;
                dir_modes.push((target, *mode));
            }
            Some(Entry::Symlink { target: link }) => {
                remove_any(&target)?;
                std::os::unix::fs::symlink(link, &target)
                    .map_err(|e| CliError::local(&target, e))?;
            }
            Some(Entry::File { mode, chunks, .. }) => {
                assemble(&target, chunks, &at_hand, *mode, change.mtime_ms)?;
            }
            None => {}
        }
    }
    // Files whose content is the same but whose time is not get the time.
    for (rel, theirs) in &remote_tree {
        if let (Some(ours), Some(mtime)) = (tree.get(rel), theirs.mtime_ms) {
            if ours.mtime_ms != mtime && theirs.entry.as_ref() == Some(&ours.entry) {
                set_mtime(&local.join(&rel[1..]), mtime)?;
            }
        }
    }
    for rel in &removed {
        remove_any(&local.join(&rel[1..]))?;
    }
    // Modes of directories last: a read-only one is written into first.
    for (dir, mode) in dir_modes.into_iter().rev() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode))
            .map_err(|e| CliError::local(&dir, e))?;
    }
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| CliError::local(&staging, e))?;
    }
    let summary = json!({ "changes": writes.len(), "deleted": removed.len(), "chunks_fetched": needed.len(), "bytes_fetched": fetched_bytes });
    output::done(
        ctx.json,
        &summary,
        &format!(
            "pulled {remote} → {}: {} paths changed, {} fetched",
            local.display(),
            writes.len() + removed.len(),
            output::size(fetched_bytes)
        ),
    )
}

fn remove_any(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).map_err(|e| CliError::local(path, e)),
        Ok(_) => fs::remove_file(path).map_err(|e| CliError::local(path, e)),
        Err(_) => Ok(()),
    }
}

fn write_whole(path: &Path, data: &[u8]) -> Result<()> {
    let part = path.with_extension("part");
    fs::write(&part, data).map_err(|e| CliError::local(&part, e))?;
    fs::rename(&part, path).map_err(|e| CliError::local(path, e))
}

fn set_mtime(path: &Path, mtime_ms: i64) -> Result<()> {
    let file = fs::File::options()
        .write(true)
        .open(path)
        .or_else(|_| fs::File::open(path))
        .map_err(|e| CliError::local(path, e))?;
    file.set_modified(UNIX_EPOCH + Duration::from_millis(mtime_ms.max(0) as u64))
        .map_err(|e| CliError::local(path, e))
}

/// Writes a file from its chunks beside `target`, then renames it over.
fn assemble(
    target: &Path,
    chunks: &[ChunkHash],
    at_hand: &HashMap<ChunkHash, (PathBuf, usize)>,
    mode: u32,
    mtime_ms: Option<i64>,
) -> Result<()> {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let part = target.with_file_name(format!(".{name}.stead-part"));
    let mut out = fs::File::create(&part).map_err(|e| CliError::local(&part, e))?;
    let mut buffer = vec![0u8; CHUNK_SIZE];
    for hash in chunks {
        let (source, idx) = at_hand.get(hash).ok_or_else(|| {
            CliError::new(
                Failure::Server,
                format!("chunk {hash} was neither here nor fetched; run the pull again"),
            )
        })?;
        let mut file = fs::File::open(source).map_err(|e| CliError::local(source, e))?;
        if *idx != usize::MAX {
            file.seek(SeekFrom::Start((idx * CHUNK_SIZE) as u64))
                .map_err(|e| CliError::local(source, e))?;
        }
        let n = read_full(&mut file, &mut buffer).map_err(|e| CliError::local(source, e))?;
        let data = &buffer[..n];
        if data.is_empty() || hash_chunk(data) != *hash {
            return Err(CliError::new(
                Failure::Local,
                format!("{} changed during the pull; run it again", source.display()),
            ));
        }
        out.write_all(data).map_err(|e| CliError::local(&part, e))?;
    }
    out.flush().map_err(|e| CliError::local(&part, e))?;
    fs::set_permissions(&part, fs::Permissions::from_mode(mode))
        .map_err(|e| CliError::local(&part, e))?;
    if let Some(mtime) = mtime_ms {
        out.set_modified(UNIX_EPOCH + Duration::from_millis(mtime.max(0) as u64))
            .map_err(|e| CliError::local(&part, e))?;
    }
    drop(out);
    if target.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(target).map_err(|e| CliError::local(target, e))?;
    }
    fs::rename(&part, target).map_err(|e| CliError::local(target, e))
}
