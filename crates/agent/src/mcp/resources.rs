//! Workspace files as MCP resources: `file:///<path>` URIs, listing in
//! pages, reading as text or base64 blob with a MIME type.
//!
//! A URI is `file://` followed by the workspace path, percent-encoded
//! (RFC 3986: everything but unreserved characters and `/`), so
//! `/notes/my file.md` is `file:///notes/my%20file.md`. Reading a directory
//! answers its listing (`inode/directory`, one name a line, `/` after
//! directories), as the spec allows for `file://` resources. Content is
//! text when it is UTF-8 without a NUL byte, a base64 blob otherwise; a
//! file over [`MAX_READ_BYTES`] is refused with a pointer to the `read`
//! tool, which pages through any size.

use base64::Engine;
use serde_json::{json, Value};
use stead_sql::Sql;
use stead_vfs::glob::GlobRequest;
use stead_vfs::{Kind, VPath, Vfs, VfsError};

use crate::error::ApiError;
use crate::route::percent_decode;

/// Largest file `resources/read` returns whole.
pub const MAX_READ_BYTES: u64 = 8 << 20;
/// Paths looked at for one page of `resources/list`.
const LIST_PAGE: usize = 500;
/// Entries of a directory listing read.
const DIRECTORY_ENTRIES: usize = 10_000;

/// The URI of workspace path `path`.
pub fn uri_of(path: &str) -> String {
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// The workspace path a URI names.
pub fn path_of(uri: &str) -> Result<VPath, ApiError> {
    let rest = uri.strip_prefix("file://").ok_or_else(|| {
        ApiError::InvalidRequest(format!(
            "{uri:?} is not a workspace resource: use file:///<path>"
        ))
    })?;
    if !rest.starts_with('/') {
        return Err(ApiError::InvalidRequest(format!(
            "{uri:?} names a host; use file:///<path>"
        )));
    }
    if rest.contains(['?', '#']) {
        return Err(ApiError::InvalidRequest(format!(
            "{uri:?}: a resource URI has no query or fragment"
        )));
    }
    Ok(VPath::parse(&percent_decode(rest)?)?)
}

/// A MIME type from a file name's extension (`None` when unknown).
fn mime_of(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match extension.as_str() {
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "go" => "text/x-go",
        "c" | "h" => "text/x-c",
        "cpp" | "cc" | "hpp" => "text/x-c++",
        "java" => "text/x-java",
        "sh" | "bash" => "text/x-shellscript",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "wasm" => "application/wasm",
        _ => return None,
    })
}

/// RFC 3339 UTC time of `ms` since the epoch, to the second.
fn iso_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One page of the workspace's files as `Resource` objects, after the
/// opaque `cursor` of the previous page; the next page's cursor.
pub fn list<S: Sql>(
    vfs: &Vfs<'_, S>,
    cursor: Option<&str>,
) -> Result<(Vec<Value>, Option<String>), ApiError> {
    let after = cursor
        .map(|cursor| {
            VPath::parse(cursor).map_err(|_| ApiError::InvalidRequest("invalid cursor".into()))
        })
        .transpose()?;
    let page = vfs.glob(&GlobRequest {
        pattern: "**".into(),
        base: VPath::root(),
        exclude: Vec::new(),
        after,
        limit: LIST_PAGE,
    })?;
    let resources = page
        .matches
        .iter()
        .filter(|m| m.kind == Kind::File)
        .map(|m| {
            let name = m.path.rsplit('/').next().unwrap_or(&m.path);
            let mut resource = json!({
                "uri": uri_of(&m.path),
                "name": name,
                "title": m.path,
                "size": m.size,
                "annotations": { "lastModified": iso_time(m.mtime) },
            });
            if let Some(mime) = mime_of(&m.path) {
                resource["mimeType"] = json!(mime);
            }
            resource
        })
        .collect();
    Ok((resources, page.next_cursor))
}

/// The template every workspace file fits.
pub fn templates() -> Value {
    json!([{
        "uriTemplate": "file:///{+path}",
        "name": "workspace-file",
        "title": "Workspace file",
        "description": "A file or directory of the workspace by its absolute path (without the \
                        leading /); a directory reads as its listing.",
    }])
}

/// The contents of the resource at `path`: `[{uri, mimeType, text|blob}]`.
pub fn read<S: Sql>(vfs: &Vfs<'_, S>, path: &VPath) -> Result<Vec<Value>, ApiError> {
    let uri = uri_of(path.as_str());
    let (_, node) = vfs.stat(path, true)?;
    if node.is_dir() {
        let entries = vfs.list(path, None, DIRECTORY_ENTRIES)?;
        let text: String = entries
            .iter()
            .map(|entry| match entry.node.kind {
                Kind::Dir => format!("{}/\n", entry.name),
                Kind::File | Kind::Symlink => format!("{}\n", entry.name),
            })
            .collect();
        return Ok(vec![
            json!({ "uri": uri, "mimeType": "inode/directory", "text": text }),
        ]);
    }
    if node.size > MAX_READ_BYTES {
        return Err(VfsError::FileTooLarge {
            path: path.to_string(),
            size: node.size,
            limit: MAX_READ_BYTES,
        }
        .into());
    }
    let (_, bytes) = vfs.read_range(path, 0, node.size)?;
    let text = std::str::from_utf8(&bytes)
        .ok()
        .filter(|text| !text.contains('\0'));
    Ok(vec![match text {
        Some(text) => json!({
            "uri": uri,
            "mimeType": mime_of(path.as_str()).unwrap_or("text/plain"),
            "text": text,
        }),
        None => json!({
            "uri": uri,
            "mimeType": mime_of(path.as_str()).unwrap_or("application/octet-stream"),
            "blob": base64::engine::general_purpose::STANDARD.encode(&bytes),
        }),
    }])
}

/// Whether a change at `changed` concerns the subscription to `watched`;
/// the URI to report if so. Changes below a watched directory report
/// themselves (a sub-resource of the one subscribed); a created or
/// deleted directory above a watched path reports the watched path, which
/// came or went with it.
pub fn concerns(watched: &str, changed: &str) -> Option<String> {
    let below = |ancestor: &str, path: &str| {
        ancestor == "/"
            || path
                .strip_prefix(ancestor)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    if changed == watched || below(watched, changed) {
        Some(uri_of(changed))
    } else if below(changed, watched) {
        Some(uri_of(watched))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_paths_round_trip() {
        for path in ["/", "/notes/my file.md", "/a/ü/€.txt", "/x%y#z?"] {
            let uri = uri_of(path);
            assert!(uri.starts_with("file:///"), "{uri}");
            assert!(!uri.contains([' ', '#', '?']), "{uri}");
            assert_eq!(path_of(&uri).unwrap().as_str(), path, "{uri}");
        }
        assert_eq!(uri_of("/notes/my file.md"), "file:///notes/my%20file.md");
        for bad in [
            "https://x/a",
            "file://host/a",
            "file:///a?b",
            "file:///%zz",
            "file:///../x",
        ] {
            assert!(path_of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_time(1_700_000_000_123), "2023-11-14T22:13:20Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn subscriptions_cover_subtrees_both_ways() {
        assert_eq!(
            concerns("/a/b.txt", "/a/b.txt"),
            Some("file:///a/b.txt".into())
        );
        assert_eq!(concerns("/a", "/a/b.txt"), Some("file:///a/b.txt".into()));
        assert_eq!(concerns("/", "/a/b.txt"), Some("file:///a/b.txt".into()));
        assert_eq!(concerns("/a/b.txt", "/a"), Some("file:///a/b.txt".into()));
        assert_eq!(concerns("/a/b.txt", "/a/bc.txt"), None);
        assert_eq!(concerns("/ab", "/a"), None);
    }
}
