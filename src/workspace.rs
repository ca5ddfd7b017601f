//! The per-agent Durable Object: platform glue around the workspace.
//!
//! It owns the agent's SQLite database and turns requests into calls on
//! [`stead_vfs::Vfs`] and [`crate::api`]. The only logic of its own is what
//! needs the platform: streaming bodies in and out chunk by chunk, and the
//! agent's lifecycle (an agent exists once created; an unknown agent leaves no
//! storage behind).

use std::cell::Cell;

use futures::StreamExt;
use serde_json::{json, Value};
use stead_sql::{migrate, params, Sql, MIGRATIONS};
use stead_vfs::{VPath, Vfs, WriteOptions, CHUNK_SIZE};
use worker::{durable_object, DurableObject, Env, Headers, Request, Response, Result, State};

use crate::api::{self, Action, ApiError, Route, MAX_JSON_BODY};
use crate::body::BodyReader;
use crate::do_sql::DoSql;

#[durable_object]
pub struct Workspace {
    state: State,
    db: DoSql,
    /// Whether this instance has checked the schema (and migrated it).
    ready: Cell<bool>,
}

fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// The isolate's clock. Workers advance it only across I/O, so within one
/// synchronous exec the shell's CPU and count limits, not wall time, are
/// what stop a runaway script.
struct JsClock;

impl stead_shell::Clock for JsClock {
    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }
}

/// A JSON response with `status`.
pub fn json_response(status: u16, body: &Value) -> Result<Response> {
    Ok(Response::from_json(body)?.with_status(status))
}

/// The response for a failed request.
pub fn error_response(error: &ApiError) -> Result<Response> {
    json_response(error.status(), &error.body())
}

impl DurableObject for Workspace {
    fn new(state: State, _env: Env) -> Self {
        let db = DoSql::new(&state).expect("Durable Object storage has SQL");
        Workspace {
            state,
            db,
            ready: Cell::new(false),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let url = req.url()?;
        let outcome = match api::route(req.method().as_ref(), url.path()) {
            Ok(Route::Agent { id, action }) => self.handle(&id, action, req).await,
            Ok(Route::Health) => Err(ApiError::Internal(
                "health is answered by the Worker".into(),
            )),
            Err(error) => Err(error),
        };
        outcome.or_else(|error| error_response(&error))
    }
}

impl Workspace {
    async fn handle(
        &self,
        id: &str,
        action: Action,
        mut req: Request,
    ) -> Result<Response, ApiError> {
        let created = self.open(id, action.creates())?;
        let vfs = Vfs::new(&self.db, now_ms());
        let body = match action {
            Action::Create => {
                return Ok(json_response(
                    if created { 201 } else { 200 },
                    &json!({ "agent": id, "created": created, "revision": vfs.revision()? }),
                )?)
            }
            Action::Info => {
                let usage = vfs.usage()?;
                json!({ "agent": id, "usage": usage, "database_bytes": self.db.database_size() })
            }
            Action::Delete => {
                self.state.storage().delete_all().await?;
                self.ready.set(false);
                json!({ "agent": id, "deleted": true })
            }
            Action::Ping => json!({ "agent": id }),
            Action::Tool(tool) => {
                let body = read_body(&mut req, MAX_JSON_BODY).await?;
                api::tools::call(&vfs, tool, &body)?
            }
            Action::Exec => {
                let body = read_body(&mut req, MAX_JSON_BODY).await?;
                api::exec::exec(&vfs, &JsClock, &body)?
            }
            Action::Download(path) => return self.download(&VPath::parse(&path)?),
            Action::Upload(path) => {
                let options = upload_options(&req.url()?)?;
                self.upload(&VPath::parse(&path)?, options, &mut req)
                    .await?
            }
        };
        Ok(json_response(200, &body)?)
    }

    /// Makes sure the agent's schema is current. Returns whether this call
    /// created the agent; fails for an unknown agent unless `create`.
    fn open(&self, id: &str, create: bool) -> Result<bool, ApiError> {
        if self.ready.get() {
            return Ok(false);
        }
        let exists = self
            .db
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
                params![],
            )
            .map_err(|e| ApiError::Internal(e.to_string()))?
            .is_some();
        if !exists && !create {
            return Err(ApiError::AgentNotFound { id: id.to_string() });
        }
        migrate(&self.db, MIGRATIONS).map_err(|e| ApiError::Internal(e.to_string()))?;
        // No upload survives a restart of this object: drop what they staged.
        Vfs::new(&self.db, now_ms()).abort_stale_uploads()?;
        self.ready.set(true);
        Ok(!exists)
    }

    /// Streams a file out, one chunk at a time.
    fn download(&self, path: &VPath) -> Result<Response, ApiError> {
        let (node, chunks) = Vfs::new(&self.db, now_ms()).file_chunks(path)?;
        let db = self.db.clone();
        let path = path.clone();
        let body = futures::stream::iter(chunks).map(move |id| {
            Vfs::new(&db, 0)
                .chunk(id, &path)
                .map_err(|e| worker::Error::RustError(e.to_string()))
        });
        let headers = Headers::new();
        headers.set("content-type", "application/octet-stream")?;
        headers.set("x-file-size", &node.size.to_string())?;
        headers.set("x-file-mode", &format!("{:04o}", node.mode))?;
        headers.set("x-revision", &node.rev.to_string())?;
        Ok(Response::from_stream(body)?.with_headers(headers))
    }

    /// Streams a request body into the file at `path`: chunks are staged as
    /// they arrive and the file changes only when the last one is in.
    async fn upload(
        &self,
        path: &VPath,
        options: WriteOptions,
        req: &mut Request,
    ) -> Result<Value, ApiError> {
        let vfs = Vfs::new(&self.db, now_ms());
        let limit = vfs.limits().max_file_bytes;
        let upload = vfs.begin_upload(path, options)?;
        let staged = async {
            let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK_SIZE);
            let (mut idx, mut total) = (0i64, 0u64);
            if let Some(mut reader) = BodyReader::new(req)? {
                loop {
                    let room = CHUNK_SIZE - buffer.len();
                    let read = reader.read_into(&mut buffer, room).await?;
                    if read == 0 {
                        break;
                    }
                    total += read as u64;
                    if total > limit {
                        return Err(stead_vfs::VfsError::FileTooLarge {
                            path: path.to_string(),
                            size: total,
                            limit,
                        }
                        .into());
                    }
                    // A default reader's piece may overrun the chunk: split.
                    while buffer.len() >= CHUNK_SIZE {
                        let rest = buffer.split_off(CHUNK_SIZE);
                        vfs.stage_chunk(upload, idx, &buffer)?;
                        buffer = rest;
                        idx += 1;
                    }
                }
            }
            if !buffer.is_empty() {
                vfs.stage_chunk(upload, idx, &buffer)?;
            }
            Ok::<u64, ApiError>(total)
        }
        .await;
        let committed = staged.and_then(|total| {
            Ok(Vfs::new(&self.db, now_ms()).commit_upload(upload, path, total, options)?)
        });
        match committed {
            Ok(written) => {
                serde_json::to_value(written).map_err(|e| ApiError::Internal(e.to_string()))
            }
            Err(error) => {
                vfs.abort_upload(upload)?;
                Err(error)
            }
        }
    }
}

/// Upload options from the query string: `mode=755`, `parents=false`.
fn upload_options(url: &worker::Url) -> Result<WriteOptions, ApiError> {
    let mut options = WriteOptions::default();
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "mode" => {
                let bits = u32::from_str_radix(&value, 8)
                    .ok()
                    .filter(|bits| *bits <= 0o7777)
                    .ok_or_else(|| {
                        ApiError::InvalidRequest(format!("mode {value:?} is not octal"))
                    })?;
                options.mode = Some(bits);
            }
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

/// Reads a request body of at most `limit` bytes.
async fn read_body(req: &mut Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    let declared = req
        .headers()
        .get("content-length")?
        .and_then(|v| v.parse::<usize>().ok());
    match declared {
        Some(len) if len > limit => return Err(ApiError::BodyTooLarge { limit }),
        // A declared length within the limit: read it in one go, which
        // costs one await instead of one per piece.
        Some(_) => return Ok(req.bytes().await?),
        None => {}
    }
    let mut body = Vec::new();
    let Ok(mut stream) = req.stream() else {
        return Ok(body);
    };
    while let Some(piece) = stream.next().await {
        let piece = piece?;
        if body.len() + piece.len() > limit {
            return Err(ApiError::BodyTooLarge { limit });
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

impl From<wasm_bindgen::JsValue> for ApiError {
    fn from(error: wasm_bindgen::JsValue) -> Self {
        ApiError::Internal(format!("{error:?}"))
    }
}

impl From<worker::Error> for ApiError {
    fn from(error: worker::Error) -> Self {
        ApiError::Internal(error.to_string())
    }
}
