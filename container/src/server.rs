//! The HTTP surface: routes, authentication, request bodies.
//!
//! Every route but `GET /health` requires the bearer secret; the check is a
//! constant-time comparison so response timing says nothing about it.
//! Bodies are read here with explicit size limits and parsed with the
//! protocol's own types (unknown fields are refused), so a malformed
//! request is always answered with an [`ErrorBody`](stead_sync::ErrorBody),
//! never a framework's plain-text rejection.

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::json;
use stead_sync::{
    frame, Ack, ChunkHash, ChunkRequest, ExecSpec, FrameDecoder, OutputQuery, Push, Status,
    CHUNK_SIZE, PROTOCOL,
};

use stead_sync::environment::{self, EnvChunkRequest, PackRequest, Restore};
use stead_sync::live::{self, LiveAck, LiveScan};
use stead_sync::process::{
    Poll, ProcessList, ProcessSpec, SignalRequest, StopRequest, DEFAULT_GRACE_MS, MAX_GRACE_MS,
};

use crate::beneath::Dir;
use crate::error::ApiError;
use crate::outlog::OutputLog;
use crate::state::{Container, ContainerState, Registry};
use crate::terminal::TerminalSpec;

/// Largest body accepted, and most chunk data in one `/v1/chunks` answer.
pub const BODY_LIMIT: usize = 64 * 1024 * 1024;

pub struct App {
    pub registry: Registry,
    /// `Bearer <secret>`, as the header must read.
    pub expected_auth: Vec<u8>,
    /// The program's build identity, for `Status::build`.
    pub build: String,
}

pub fn router(app: Arc<App>) -> Router {
    let protected = Router::new()
        .route("/v1/status", get(status))
        .route("/v1/sync/apply", post(apply))
        .route("/v1/sync/chunks", post(upload_chunks))
        .route("/v1/sync/ack", post(ack))
        .route("/v1/exec", post(exec))
        .route("/v1/exec/{id}/cancel", post(cancel))
        .route("/v1/exec/{id}/output", get(exec_output))
        .route("/v1/chunks", post(fetch_chunks))
        .route(live::SCAN_PATH, post(live_scan))
        .route(live::CHUNKS_PATH, post(live_chunks))
        .route(live::ACK_PATH, post(live_ack))
        .route(environment::PACK_PATH, post(environment_pack))
        .route(environment::CHUNKS_PATH, post(environment_chunks))
        .route(environment::RESTORE_PATH, post(environment_restore))
        .route("/v1/processes", post(process_start).get(process_list))
        .route("/v1/processes/poll", post(process_poll))
        .route("/v1/processes/{id}/signal", post(process_signal))
        .route("/v1/processes/{id}/stop", post(process_stop))
        .route("/v1/terminals", post(terminal_start))
        .route(
            "/v1/terminals/{id}",
            get(terminal_status).delete(terminal_close),
        )
        .route("/v1/terminals/{id}/attach", get(terminal_attach))
        .route_layer(middleware::from_fn_with_state(app.clone(), auth));
    Router::new()
        .route(
            "/health",
            get(|| async { json_response(&json!({"ok": true})) }),
        )
        .merge(protected)
        .fallback(|| async { ApiError::NoRoute })
        .with_state(app)
}

/// Byte-wise comparison whose time depends only on the lengths.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

async fn auth(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(stead_sync::AUTH_HEADER)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if !same_secret(given, &app.expected_auth) {
        return ApiError::Unauthorized.into_response();
    }
    next.run(request).await
}

/// The container a request is for (from `x-stead-container` when serving
/// per container).
struct Ctx(Arc<Container>);

impl FromRequestParts<Arc<App>> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        let name = match parts.headers.get(stead_sync::CONTAINER_HEADER) {
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| ApiError::InvalidRequest("bad container header".into()))?,
            ),
            None => None,
        };
        app.registry.get(name).map(Ctx)
    }
}

/// Reads a whole body, refusing more than `limit` bytes.
async fn read_limited(body: Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(piece) = stream.next().await {
        let piece =
            piece.map_err(|e| ApiError::InvalidRequest(format!("reading the body: {e}")))?;
        if out.len() + piece.len() > limit {
            return Err(ApiError::TooLarge { limit });
        }
        out.extend_from_slice(&piece);
    }
    Ok(out)
}

/// A JSON body parsed as a protocol type.
struct JsonBody<T>(T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = read_limited(request.into_body(), BODY_LIMIT).await?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::InvalidRequest(format!("bad JSON body: {e}")))
    }
}

/// A query string parsed as a protocol type: each `key=value` pair becomes
/// a JSON member (numbers when they parse as one), so the type's own rules
/// (unknown fields refused) apply.
fn parse_query<T: DeserializeOwned>(uri: &Uri) -> Result<T, ApiError> {
    let mut object = serde_json::Map::new();
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = match value.parse::<u64>() {
            Ok(number) => json!(number),
            Err(_) => json!(value),
        };
        object.insert(key.to_string(), value);
    }
    serde_json::from_value(serde_json::Value::Object(object))
        .map_err(|e| ApiError::InvalidRequest(format!("bad query: {e}")))
}

/// A JSON answer.
fn json_response(value: &impl serde::Serialize) -> Response {
    let body = serde_json::to_vec(value).expect("answers serialize");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Runs blocking filesystem work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::io("a worker task failed", std::io::Error::other(e.to_string())))?
}

async fn status(State(app): State<Arc<App>>, Ctx(container): Ctx) -> Result<Response, ApiError> {
    let build = app.build.clone();
    let status = blocking(move || {
        let state = container.lock();
        // A stopping program takes no new work, so it tells whoever plans
        // some (the next command's first request) at once.
        if container.is_stopping() {
            return Err(ApiError::ShuttingDown);
        }
        Ok(Status {
            protocol: PROTOCOL,
            instance: state.instance.clone(),
            running: state.running.as_ref().map(|r| r.id.clone()),
            build: Some(build),
            busy: container.processes.busy() || container.terminals.any_live(),
        })
    })
    .await?;
    Ok(json_response(&status))
}

async fn apply(Ctx(container): Ctx, JsonBody(push): JsonBody<Push>) -> Result<Response, ApiError> {
    let reply = blocking(move || {
        let mut state = container.lock();
        if container.is_stopping() {
            return Err(ApiError::ShuttingDown);
        }
        if let Some(running) = &state.running {
            return Err(ApiError::Busy(running.id.clone()));
        }
        crate::apply::apply(&container, &mut state, push)
    })
    .await?;
    Ok(json_response(&reply))
}

async fn upload_chunks(Ctx(container): Ctx, request: Request) -> Result<Response, ApiError> {
    if container.is_stopping() {
        return Err(ApiError::ShuttingDown);
    }
    let mut stream = request.into_body().into_data_stream();
    let mut decoder = FrameDecoder::default();
    let mut total = 0usize;
    let mut stored = 0u64;
    while let Some(piece) = stream.next().await {
        let piece =
            piece.map_err(|e| ApiError::InvalidRequest(format!("reading the body: {e}")))?;
        total += piece.len();
        if total > BODY_LIMIT {
            return Err(ApiError::TooLarge { limit: BODY_LIMIT });
        }
        decoder.push(&piece);
        while let Some((hash, data)) = decoder
            .next_chunk()
            .map_err(|e| ApiError::InvalidRequest(e.to_string()))?
        {
            let staged = container.staged.clone();
            blocking(move || {
                staged
                    .put(&hash, &data)
                    .map_err(|e| ApiError::io("storing a chunk", e))
            })
            .await?;
            stored += 1;
        }
    }
    decoder
        .finish()
        .map_err(|e| ApiError::InvalidRequest(e.to_string()))?;
    Ok(json_response(&json!({ "stored": stored })))
}

async fn ack(Ctx(container): Ctx, JsonBody(ack): JsonBody<Ack>) -> Result<Response, ApiError> {
    blocking(move || container.lock().ack(&ack.exec, &[])).await?;
    Ok(json_response(&json!({ "acked": true })))
}

/// Runs environment work on the container's state, locked, while no
/// command runs (see [`crate::environment`]), and answers its JSON.
async fn between_commands<T: serde::Serialize + Send + 'static>(
    container: Arc<Container>,
    work: impl FnOnce(&Container, &mut ContainerState) -> Result<T, ApiError> + Send + 'static,
) -> Result<Response, ApiError> {
    let reply = blocking(move || {
        let mut state = container.lock();
        if let Some(running) = &state.running {
            return Err(ApiError::Busy(running.id.clone()));
        }
        work(&container, &mut state)
    })
    .await?;
    Ok(json_response(&reply))
}

/// `POST /v1/environment/pack`.
async fn environment_pack(
    Ctx(container): Ctx,
    JsonBody(request): JsonBody<PackRequest>,
) -> Result<Response, ApiError> {
    between_commands(container, |container, state| {
        crate::environment::pack(container, state, request)
    })
    .await
}

/// `POST /v1/environment/chunks`: framed chunks of the last pack.
async fn environment_chunks(
    Ctx(container): Ctx,
    JsonBody(request): JsonBody<EnvChunkRequest>,
) -> Result<Response, ApiError> {
    let frames = blocking(move || {
        let state = container.lock();
        crate::environment::chunks(&container, &state, request, BODY_LIMIT)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], frames).into_response())
}

/// `POST /v1/environment/restore`: nothing new once the program stops.
async fn environment_restore(
    Ctx(container): Ctx,
    JsonBody(restore): JsonBody<Restore>,
) -> Result<Response, ApiError> {
    between_commands(container, |container, state| {
        if container.is_stopping() {
            return Err(ApiError::ShuttingDown);
        }
        crate::environment::restore(container, state, restore)
    })
    .await
}

async fn live_scan(
    Ctx(container): Ctx,
    JsonBody(request): JsonBody<LiveScan>,
) -> Result<Response, ApiError> {
    let report = blocking(move || crate::live::scan(&container, request)).await?;
    Ok(json_response(&report))
}

async fn live_ack(
    Ctx(container): Ctx,
    JsonBody(ack): JsonBody<LiveAck>,
) -> Result<Response, ApiError> {
    blocking(move || container.lock().ack(&ack.report, &ack.left_out)).await?;
    Ok(json_response(&json!({ "acked": true })))
}

/// The raw value of query parameter `name`, if given. Read by name rather
/// than as a typed query: values are compared as sent (an instance id of
/// digits stays text), and other parameters are left to whoever adds them.
fn query_param<'a>(uri: &'a Uri, name: &str) -> Option<&'a str> {
    let pairs = uri.query()?.split('&');
    let mut values = pairs.filter_map(|pair| pair.split_once('=').filter(|(key, _)| *key == name));
    values.next().map(|(_, value)| value)
}

/// `POST /v1/exec?instance=ID`: an exec planned for another instance of
/// this computer is refused before anything starts (its disk was never
/// pushed); one without the parameter (an older workspace) runs.
async fn exec(
    Ctx(container): Ctx,
    uri: Uri,
    JsonBody(spec): JsonBody<ExecSpec>,
) -> Result<Response, ApiError> {
    let planned_for = query_param(&uri, stead_sync::EXEC_INSTANCE_PARAM).map(str::to_string);
    let (started, detach) = blocking(move || {
        if let Some(instance) = planned_for {
            container.lock().check_instance(&instance)?;
        }
        let prepared = crate::exec::prepare(&container, spec)?;
        let detach = prepared.detach;
        Ok((crate::exec::start(container, prepared)?, detach))
    })
    .await?;
    // A client that goes away abandons a command that is not detached.
    let abandon = (!detach).then_some(started.stop);
    Ok(ndjson(follow(started.log, 0, abandon)))
}

/// `GET /v1/exec/{id}/output?from=N`: the exec's events from output offset
/// `N`, following the log until its last event.
async fn exec_output(
    Ctx(container): Ctx,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let query: OutputQuery = parse_query(&uri)?;
    let log = container
        .lock()
        .logs
        .get(&id)
        .cloned()
        .ok_or(ApiError::UnknownExec(id))?;
    let end = log.end();
    if query.from > end {
        return Err(ApiError::InvalidRequest(format!(
            "offset {} is beyond the end of the output ({end})",
            query.from
        )));
    }
    log.release_below(query.from)
        .map_err(|e| ApiError::io("releasing read output", e))?;
    Ok(ndjson(follow(log, query.from, None)))
}

/// An NDJSON answer streamed from `lines`.
fn ndjson(
    lines: impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send + 'static,
) -> Response {
    (
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response()
}

/// Most output bytes per piece of a followed stream.
const FOLLOW_PIECE: usize = 256 << 10;

/// Follows `log` from output offset `from` to its last event, as NDJSON
/// lines. If the stream is dropped before the end (the client went away)
/// and `abandon` is given, the command is stopped.
fn follow(
    log: Arc<OutputLog>,
    from: u64,
    abandon: Option<Arc<crate::exec::StopSignal>>,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send + 'static {
    struct Follower {
        grown: tokio::sync::watch::Receiver<u64>,
        next: u64,
        done: bool,
        guard: AbandonGuard,
    }
    /// Stops the command when dropped before the last event went out.
    struct AbandonGuard {
        log: Arc<OutputLog>,
        abandon: Option<Arc<crate::exec::StopSignal>>,
    }
    impl Drop for AbandonGuard {
        fn drop(&mut self) {
            if let Some(stop) = &self.abandon {
                if !self.log.is_finished() {
                    stop.abandon();
                }
            }
        }
    }
    let follower = Follower {
        grown: log.subscribe(),
        next: from,
        done: false,
        guard: AbandonGuard { log, abandon },
    };
    futures_util::stream::unfold(follower, |mut f| async move {
        loop {
            if f.done {
                return None;
            }
            let batch = match f.guard.log.read(f.next, FOLLOW_PIECE) {
                Ok(Ok(batch)) => batch,
                Ok(Err(beyond)) => return Some((Err(std::io::Error::other(beyond)), f)),
                Err(error) => return Some((Err(error), f)),
            };
            if batch.events.is_empty() {
                // Wait for more; the sender lives as long as the log.
                if f.grown.changed().await.is_err() {
                    return None;
                }
                continue;
            }
            f.next = batch.next;
            f.done = batch.finished;
            let mut lines = Vec::new();
            for event in &batch.events {
                serde_json::to_writer(&mut lines, event).expect("events serialize");
                lines.push(b'\n');
            }
            return Some((Ok(Bytes::from(lines)), f));
        }
    })
}

async fn cancel(Ctx(container): Ctx, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(move || {
        let state = container.lock();
        match &state.running {
            Some(running) if running.id == id => {
                running.stop.cancel();
                Ok(())
            }
            _ => Err(ApiError::UnknownExec(id)),
        }
    })
    .await?;
    Ok(json_response(&json!({ "cancelled": true })))
}

async fn process_start(
    Ctx(container): Ctx,
    JsonBody(spec): JsonBody<ProcessSpec>,
) -> Result<Response, ApiError> {
    let status = crate::procs::start(&container, spec)?;
    Ok((axum::http::StatusCode::CREATED, json_response(&status)).into_response())
}

async fn process_list(Ctx(container): Ctx) -> Result<Response, ApiError> {
    let processes = container
        .processes
        .all()
        .iter()
        .map(|p| p.status())
        .collect();
    Ok(json_response(&ProcessList { processes }))
}

async fn process_poll(
    Ctx(container): Ctx,
    JsonBody(poll): JsonBody<Poll>,
) -> Result<Response, ApiError> {
    let reply = blocking(move || {
        let instance = container.lock().instance.clone();
        crate::procs::poll(&container, instance, &poll.from)
    })
    .await?;
    Ok(json_response(&reply))
}

async fn process_signal(
    Ctx(container): Ctx,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<SignalRequest>,
) -> Result<Response, ApiError> {
    let status = container.processes.get(&id)?.signal(&request.signal)?;
    Ok(json_response(&status))
}

/// Stops a process and answers once it has ended.
async fn process_stop(
    Ctx(container): Ctx,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<StopRequest>,
) -> Result<Response, ApiError> {
    let grace = request.grace_ms.unwrap_or(DEFAULT_GRACE_MS);
    if grace > MAX_GRACE_MS {
        return Err(ApiError::InvalidRequest(format!(
            "grace_ms must be at most {MAX_GRACE_MS}"
        )));
    }
    let process = container.processes.get(&id)?;
    process.stop(std::time::Duration::from_millis(grace));
    Ok(json_response(&process.ended().await))
}

async fn terminal_start(
    Ctx(container): Ctx,
    JsonBody(spec): JsonBody<TerminalSpec>,
) -> Result<Response, ApiError> {
    let terminal = crate::terminal::start(&container, spec)?;
    Ok((
        axum::http::StatusCode::CREATED,
        json_response(&terminal.status()),
    )
        .into_response())
}

async fn terminal_status(
    Ctx(container): Ctx,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(json_response(&container.terminals.get(&id)?.status()))
}

async fn terminal_close(Ctx(container): Ctx, Path(id): Path<String>) -> Result<Response, ApiError> {
    let terminal = container.terminals.get(&id)?;
    terminal.close().await;
    container.terminals.remove(&id);
    Ok(json_response(&terminal.status()))
}

/// `?from=N` of an attach.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachQuery {
    #[serde(default)]
    from: u64,
}

/// `GET /v1/terminals/{id}/attach`: the session's stream (see
/// [`crate::terminal`]); everything is checked before the upgrade, so a
/// refusal is a plain structured error.
async fn terminal_attach(
    Ctx(container): Ctx,
    Path(id): Path<String>,
    uri: Uri,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let query: AttachQuery = parse_query(&uri)?;
    let terminal = container.terminals.get(&id)?;
    let from = terminal.start_at(query.from)?;
    let upgrade = upgrade.map_err(|e| ApiError::InvalidRequest(e.body_text()))?;
    Ok(upgrade.on_upgrade(move |socket| crate::terminal_ws::serve(terminal, from, socket)))
}

/// What to do with an asked chunk whose file moved since its report's
/// scan.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Moved {
    /// Refuse the request (`CHUNK_GONE`) or cut the answer: an exec's
    /// report is applied whole or not at all.
    Refuse,
    /// Leave the chunk out of the answer: a live report is applied without
    /// the files that moved (see `stead_sync::live`).
    LeaveOut,
}

/// `POST /v1/chunks`: chunks of an exec's report.
async fn fetch_chunks(
    Ctx(container): Ctx,
    JsonBody(request): JsonBody<ChunkRequest>,
) -> Result<Response, ApiError> {
    serve_chunks(container, request, Moved::Refuse).await
}

/// `POST /v1/live/chunks`: chunks of a live report.
async fn live_chunks(
    Ctx(container): Ctx,
    JsonBody(request): JsonBody<ChunkRequest>,
) -> Result<Response, ApiError> {
    serve_chunks(container, request, Moved::LeaveOut).await
}

/// Answers with the asked chunks of a report, framed, as a stream: each
/// chunk is read from the file the report found it in as the body is sent,
/// so memory holds one chunk whatever the answer's size. The sources are
/// checked before the answer starts, and each chunk again as it is read:
/// one whose file's stat data or content moved since the scan is handled
/// as `moved` says, never sent as content.
async fn serve_chunks(
    container: Arc<Container>,
    request: ChunkRequest,
    moved: Moved,
) -> Result<Response, ApiError> {
    let sources = blocking(move || {
        let state = container.lock();
        if !state.pending.contains_key(&request.exec) {
            return Err(ApiError::UnknownExec(request.exec));
        }
        let root = Arc::new(
            container
                .open_root()
                .map_err(|e| ApiError::io("opening the workspace", e))?,
        );
        let mut sources = Vec::new();
        let mut asked = HashSet::new();
        for hash in request.chunks {
            if !asked.insert(hash) {
                continue;
            }
            let (path, index) = state.chunk_source(&request.exec, &hash).ok_or_else(|| {
                ApiError::InvalidRequest(format!(
                    "chunk {hash} is not part of report {}",
                    request.exec
                ))
            })?;
            if !state.unchanged_since_report(&request.exec, &path, &root) {
                match moved {
                    Moved::Refuse => return Err(ApiError::ChunkGone(hash)),
                    Moved::LeaveOut => continue,
                }
            }
            sources.push(ChunkSource {
                hash,
                root: root.clone(),
                path,
                index,
            });
            // The caller batches: one answer carries at most BODY_LIMIT of
            // chunk data; it asks again for the rest.
            if sources.len() * CHUNK_SIZE >= BODY_LIMIT {
                break;
            }
        }
        Ok(sources)
    })
    .await?;
    let frames = futures_util::stream::iter(sources).then(move |source| async move {
        let framed = tokio::task::spawn_blocking(move || source.frame())
            .await
            .map_err(std::io::Error::other)?;
        match (framed, moved) {
            (Ok(Some(frame)), _) => Ok(frame),
            (Ok(None), Moved::LeaveOut) => Ok(Bytes::new()),
            (Ok(None), Moved::Refuse) => Err(std::io::Error::other("a chunk changed on disk")),
            (Err(error), _) => Err(error),
        }
    });
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        Body::from_stream(frames),
    )
        .into_response())
}

/// Where one asked chunk is on disk.
struct ChunkSource {
    hash: ChunkHash,
    /// The workspace's root, opened (see [`crate::beneath`]).
    root: Arc<Dir>,
    path: String,
    index: usize,
}

impl ChunkSource {
    /// Reads and frames the chunk; `None` if it is no longer there as
    /// reported.
    fn frame(self) -> std::io::Result<Option<Bytes>> {
        let Some(data) = crate::disk::read_chunk(&self.root, &self.path, self.index, &self.hash)?
        else {
            return Ok(None);
        };
        let mut framed = Vec::with_capacity(data.len() + 36);
        frame::encode(&mut framed, &data);
        Ok(Some(Bytes::from(framed)))
    }
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"Bearer abc", b"Bearer abc"));
        assert!(!same_secret(b"Bearer abd", b"Bearer abc"));
        assert!(!same_secret(b"Bearer ab", b"Bearer abc"));
        assert!(!same_secret(b"", b"Bearer abc"));
    }
}
