//! The machine's HTTP client (ureq) as git's transport needs it: no
//! redirects followed, every status returned as it is, the body read whole
//! up to a limit. Shared by the tests and benchmarks that talk to the
//! loopback `git http-backend`; each wraps the answer in its own types.
#![allow(dead_code)]

/// Sends a GET (`post` false) or a POST of `body`: the status, the
/// content type and the body.
pub fn send(
    post: bool,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    limit: u64,
) -> Result<(u16, String, Vec<u8>), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let answer = if post {
        let mut builder = agent.post(url);
        for (k, v) in headers {
            builder = builder.header(k, v);
        }
        builder.send(body)
    } else {
        let mut builder = agent.get(url);
        for (k, v) in headers {
            builder = builder.header(k, v);
        }
        builder.call()
    };
    let mut answer = answer.map_err(|e| e.to_string())?;
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let data = answer
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    Ok((answer.status().as_u16(), content_type, data))
}
