//! Files: the file tools, a file streamed out or in, and the steps of a
//! push or pull by content hash.

use serde_json::json;
use stead_vfs::{Before, Operation, Scope, VPath, VfsError, WriteOptions, CHUNK_SIZE};

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::checkpoints;
use crate::dispatch;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::{read_body, resource, Body, Reply};
use crate::route::Tool;
use crate::tools;
use crate::transfer::{self, Step};

/// `POST /{tool}`: a tool that writes runs between its automatic
/// checkpoint and the settling of it.
pub(super) async fn tool<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
    tool: Tool,
) -> Result<Handled, ApiError> {
    let body = call.json()?;
    let actor = call.caller.actor();
    let paths = checkpoints::tool_paths(&body);
    // A tool that meets content in the object store runs again once it
    // is fetched (each run is undone by its failure).
    let answered = agent
        .fetched(|| {
            let vfs = agent.vfs();
            match tools::writes(tool, &body) {
                true => {
                    let before = Before {
                        actor: &actor,
                        operation: &Operation::Tool(tool.name().to_string()),
                        note: None,
                        scope: Scope::Paths(&paths),
                    };
                    checkpoints::around(agent, &vfs, before, |_| tools::call(&vfs, tool, &body))
                }
                false => tools::call(&vfs, tool, &body),
            }
        })
        .await?;
    answer(answered)
}

/// `GET /files/{path}`: the file's chunks that hold the bytes asked for
/// (all of them, or a `Range`'s: `crate::range`), which the glue streams
/// out.
pub(super) fn download<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    path: &str,
) -> Result<Handled, ApiError> {
    let path = VPath::parse(path)?;
    let (node, chunks) = agent
        .vfs()
        .file_chunks(&path)
        .map_err(|error| match error {
            // A directory has no bytes: say where its listing is.
            VfsError::IsADirectory { path } => ApiError::DownloadOfDirectory { path },
            other => other.into(),
        })?;
    let sent = call.range.select(node.size, &dispatch::etag(&node))?;
    Ok(Reply::File {
        path,
        status: sent.status(),
        headers: dispatch::file_headers(&node, sent),
        length: sent.len(node.size),
        slices: sent.slices(&chunks),
    }
    .into())
}

/// `PUT /files/{path}?mode=&parents=`: `201` for a new file, `200` for
/// one replaced.
pub(super) async fn upload<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    path: &str,
    body: &mut impl Body,
) -> Result<Handled, ApiError> {
    let options = upload_options(call.query)?;
    let path = VPath::parse(path)?;
    let written = stream_in(agent, &path, options, body).await?;
    let segments: Vec<&str> = std::iter::once("files")
        .chain(path.as_str().split('/').filter(|s| !s.is_empty()))
        .collect();
    let created = written.created;
    let written = serde_json::to_value(written).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Reply::made(created, written, resource(call.agent, &segments)).into())
}

/// Streams a request body into the file at `path`: chunks are staged as
/// they arrive and the file changes only when the last one is in.
async fn stream_in<H: Host>(
    agent: &Agent<H>,
    path: &VPath,
    options: WriteOptions,
    body: &mut impl Body,
) -> Result<stead_vfs::Written, ApiError> {
    let vfs = agent.vfs();
    let limit = vfs.limits().max_file_bytes;
    let upload = vfs.begin_upload(path, options)?;
    let staged = async {
        let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK_SIZE);
        let (mut idx, mut total) = (0i64, 0u64);
        loop {
            let room = CHUNK_SIZE - buffer.len();
            let read = body.read_into(&mut buffer, room).await?;
            if read == 0 {
                break;
            }
            total += read as u64;
            if total > limit {
                return Err(VfsError::FileTooLarge {
                    path: path.to_string(),
                    size: total,
                    limit,
                }
                .into());
            }
            // A piece may overrun the chunk: split.
            while buffer.len() >= CHUNK_SIZE {
                let rest = buffer.split_off(CHUNK_SIZE);
                agent.vfs().stage_chunk(upload, idx, &buffer)?;
                buffer = rest;
                idx += 1;
            }
        }
        if !buffer.is_empty() {
            agent.vfs().stage_chunk(upload, idx, &buffer)?;
        }
        Ok::<u64, ApiError>(total)
    }
    .await;
    let committed =
        staged.and_then(|total| Ok(agent.vfs().commit_upload(upload, path, total, options)?));
    match committed {
        Ok(written) => Ok(written),
        Err(error) => {
            agent.vfs().abort_upload(upload)?;
            Err(error)
        }
    }
}

/// Upload options from the query string: `mode=755`, `parents=false`.
fn upload_options(query: &[(String, String)]) -> Result<WriteOptions, ApiError> {
    let mut options = WriteOptions::default();
    for (key, value) in query {
        match key.as_str() {
            "mode" => options.mode = Some(tools::parse_octal_mode(value)?),
            "parents" => {
                options.create_parents = value.parse().map_err(|_| {
                    ApiError::InvalidRequest(format!("parents={value:?}: use true or false"))
                })?
            }
            other => {
                return Err(ApiError::InvalidRequest(format!(
                    "unknown query parameter {other:?}"
                )))
            }
        }
    }
    Ok(options)
}

/// `POST /transfer/{step}`: a push or pull by content hash. An apply can
/// be undone like any write.
pub(super) async fn transfer<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
    step: Step,
    body: &mut impl Body,
) -> Result<Handled, ApiError> {
    let vfs = agent.vfs();
    let answered = match step {
        Step::Manifest => transfer::manifest(&vfs, &call.json()?)?,
        Step::Missing => transfer::missing(&vfs, &call.json()?)?,
        Step::Fetch => {
            let asked = call.json()?;
            // Chunks in the object store come back inline to be sent.
            agent.fetched(|| transfer::fetch(&vfs, &asked)).await?
        }
        Step::Chunks => {
            let chunks = read_body(body, transfer::MAX_CHUNKS_BODY).await?;
            transfer::stage(agent.db(), &vfs, &chunks)?
        }
        Step::Apply => {
            let apply = transfer::Apply::decode(&call.json()?)?;
            apply.check_content(&vfs)?;
            let paths = apply.paths()?;
            let before = Before {
                actor: &call.caller.actor(),
                operation: &Operation::Tool("push".into()),
                note: None,
                scope: Scope::Paths(&paths),
            };
            let (applied, before) = checkpoints::around(agent, &vfs, before, |id| {
                Ok::<_, ApiError>((apply.run(&vfs)?, id))
            })?;
            json!({ "applied": applied, "checkpoint": before })
        }
    };
    answer(answered)
}
