//! The per-request breakdown local development answers with
//! (`Server-Timing`): where a request's time and SQL statements went, stage
//! by stage, as means over a phase's requests. Means, not medians: the
//! local runtime's clock ticks in whole milliseconds, so one request's
//! stage reads 0 or 1 ms, while the mean of a thousand estimates the time.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use stead_harness::Reply;

use crate::report::{Report, Row, Unit};

/// The stages in the order a request passes them (the Worker's front and
/// the hop to the object, then the agent's, then the object's glue).
const STAGES: [&str; 9] = [
    "front",
    "hop",
    "admission",
    "operation",
    "audit",
    "notify",
    "live",
    "glue",
    "agent",
];

/// One `Server-Timing` entry: `name;dur=1.234;desc="3 sql"`.
fn entry(text: &str) -> Option<(String, f64, Option<u64>)> {
    let mut parts = text.trim().split(';');
    let name = parts.next()?.trim().to_string();
    let (mut dur, mut sql) = (None, None);
    for part in parts {
        if let Some(ms) = part.trim().strip_prefix("dur=") {
            dur = ms.parse().ok();
        } else if let Some(desc) = part.trim().strip_prefix("desc=") {
            sql = desc.trim_matches('"').strip_suffix(" sql")?.parse().ok();
        }
    }
    Some((name, dur?, sql))
}

/// The mean of `values` (not empty).
fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Adds the breakdown of `replies` (one request kind, `what`) to `report`:
/// a row per stage, its mean time against the mean of the whole request
/// as the Worker saw it (front + hop + agent), with its mean statements in
/// the measure's name; `false` if no reply carried one.
pub fn add(report: &mut Report, section: &str, what: &str, replies: &[&Reply]) -> bool {
    let mut stages: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut totals = Vec::new();
    for reply in replies {
        // The object's entries and the Worker's come as two headers.
        let timing: Vec<&str> = reply
            .headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("server-timing"))
            .map(|(_, value)| value.as_str())
            .collect();
        if timing.is_empty() {
            continue;
        }
        let mut total = 0.0;
        for (name, ms, sql) in timing.iter().flat_map(|t| t.split(',')).filter_map(entry) {
            if matches!(name.as_str(), "front" | "hop" | "agent") {
                total += ms;
            }
            let stage = stages.entry(name).or_default();
            stage.0.push(ms);
            stage.1.push(sql.unwrap_or(0) as f64);
        }
        totals.push(total);
    }
    if totals.is_empty() {
        return false;
    }
    let total = mean(&totals);
    let mut details = serde_json::Map::new();
    for name in STAGES {
        let Some((times, statements)) = stages.get_mut(name) else {
            continue;
        };
        let (ms, sql) = (mean(times), mean(statements));
        let measure = match name {
            "front" | "hop" | "glue" | "agent" => format!("{what} {name}"),
            _ => format!("{what} {name} ({sql:.1} sql)"),
        };
        report.rows.push(Row {
            section: section.to_string(),
            measure,
            figure: Ok(ms),
            unit: Unit::Millis,
            baseline: Ok(total),
            baseline_label: "request mean".into(),
            aim: None,
        });
        details.insert(
            name.into(),
            json!({ "ms_mean": ms, "statements_mean": sql }),
        );
    }
    if report.details.is_null() {
        report.details = json!({});
    }
    if let Some(all) = report.details.as_object_mut() {
        if let Value::Object(breakdown) = all.entry("breakdown").or_insert_with(|| json!({})) {
            breakdown.insert(what.into(), Value::Object(details));
        }
    }
    true
}
