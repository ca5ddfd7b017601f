//! Each tool's input schema, derived from the Rust type its HTTP route
//! decodes.
//!
//! Schemas are JSON Schema 2020-12 (MCP's default dialect) with every
//! subschema inlined, so each is self-contained: no `$ref` for a client to
//! resolve, and the same text is valid draft-07 for harnesses that read that
//! dialect (the AI SDK). Descriptions are the fields' doc comments, with
//! their line breaks unwrapped. The `format` annotations schemars adds for
//! Rust integer widths (`uint64`, ...) are not JSON Schema formats and are
//! left out; the `minimum` that comes with them stays, since the decoder
//! enforces it.
//!
//! Where a route takes a field the type holds as free JSON (`exec` of a
//! schedule or hook is stored as given, then checked as an exec request),
//! the schema of the type that checks it is put in its place, so the
//! published schema says what is actually accepted.

use std::sync::OnceLock;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};

use super::{
    CheckpointListArgs, HookNameArgs, JobArgs, JobOutputArgs, ModelTool, NoArgs, PortArgs,
    ProcessIdArgs, ProcessOutputArgs, ProcessStopArgs, ScheduleIdArgs,
};
use crate::checkpoints::{CreateReq, DiffReq, RestoreReq};
use crate::exec::ExecReq;
use crate::processes::serve::{ProcessRequest, SignalBody};
use crate::scheduling::HookReq;
use crate::shares::ShareRequest;
use crate::tools::{ApplyPatchReq, EditReq, GlobReq, GrepReq, LsReq, ReadReq, WriteReq};

/// The schema of `T`, as every tool's schema is made.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .for_deserialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        // The Rust type's name and docs are for Rust readers; the tool's
        // description speaks to the model.
        root.remove("title");
        root.remove("description");
    }
    tidy(&mut schema);
    schema
}

/// Unwraps descriptions and removes Rust integer formats, everywhere.
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            let rust_width = object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| format.starts_with("int") || format.starts_with("uint"));
            if rust_width {
                object.remove("format");
            }
            if let Some(Value::String(text)) = object.get_mut("description") {
                *text = unwrap_lines(text);
            }
            object.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// A doc comment's text with its line breaks inside paragraphs taken out.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| paragraph.split('\n').collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The input schema of `tool` (computed once per instance).
pub fn input_schema(tool: ModelTool) -> &'static Value {
    static SCHEMAS: OnceLock<Vec<Value>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| ModelTool::ALL.into_iter().map(build).collect());
    let at = ModelTool::ALL
        .iter()
        .position(|t| *t == tool)
        .expect("every tool is in ALL");
    &schemas[at]
}

fn build(tool: ModelTool) -> Value {
    match tool {
        ModelTool::Read => schema_of::<ReadReq>(),
        ModelTool::Write => schema_of::<WriteReq>(),
        ModelTool::Edit => schema_of::<EditReq>(),
        ModelTool::ApplyPatch => schema_of::<ApplyPatchReq>(),
        ModelTool::Ls => schema_of::<LsReq>(),
        ModelTool::Glob => schema_of::<GlobReq>(),
        ModelTool::Grep => schema_of::<GrepReq>(),
        ModelTool::Bash => bash(),
        ModelTool::JobOutput => schema_of::<JobOutputArgs>(),
        ModelTool::JobCancel => schema_of::<JobArgs>(),
        ModelTool::ScheduleList
        | ModelTool::HookList
        | ModelTool::Undo
        | ModelTool::ProcessList => schema_of::<NoArgs>(),
        ModelTool::SchedulePut => {
            let mut schema = schema_of::<stead_scheduler::ScheduleRequest>();
            // Stored requests are checked as exec requests; null means none.
            replace_property(
                &mut schema,
                "exec",
                |_| json!({ "anyOf": [schema_of::<ExecReq>(), { "type": "null" }] }),
            );
            schema
        }
        ModelTool::ScheduleDelete => schema_of::<ScheduleIdArgs>(),
        ModelTool::HookPut => {
            let mut schema = schema_of::<HookReq>();
            replace_property(&mut schema, "exec", |_| schema_of::<ExecReq>());
            with_path::<HookNameArgs>(schema, "name")
        }
        ModelTool::HookDelete => schema_of::<HookNameArgs>(),
        ModelTool::Checkpoint => schema_of::<CreateReq>(),
        ModelTool::CheckpointList => schema_of::<CheckpointListArgs>(),
        ModelTool::Diff => schema_of::<DiffReq>(),
        ModelTool::Restore => schema_of::<RestoreReq>(),
        ModelTool::ProcessStart => schema_of::<ProcessRequest>(),
        ModelTool::ProcessGet => schema_of::<ProcessIdArgs>(),
        ModelTool::ProcessOutput => schema_of::<ProcessOutputArgs>(),
        ModelTool::ProcessSignal => with_path::<ProcessIdArgs>(schema_of::<SignalBody>(), "id"),
        ModelTool::ProcessStop => schema_of::<ProcessStopArgs>(),
        ModelTool::PortShare => with_path::<PortArgs>(schema_of::<ShareRequest>(), "port"),
    }
}

/// A route's body schema with its path parameter `name` (from `P`, the
/// type the tool decodes it with) added first, as the tool takes both.
fn with_path<P: JsonSchema>(mut body: Value, name: &str) -> Value {
    let parameter = schema_of::<P>()["properties"][name].clone();
    add_property(&mut body, name, parameter, true);
    body
}

/// The exec request plus `detach`, which the exec route takes off before
/// decoding the rest (`crate::scheduling::split_detach`: a boolean or
/// null).
fn bash() -> Value {
    let mut schema = schema_of::<ExecReq>();
    let mut detach = schema_of::<Option<bool>>();
    detach["description"] = json!(
        "Run as a background job and answer with the job at once (read its output with \
         job_output)."
    );
    add_property(&mut schema, "detach", detach, false);
    schema
}

/// Replaces the schema of property `name`, keeping its description.
fn replace_property(schema: &mut Value, name: &str, with: impl FnOnce(&Value) -> Value) {
    let property = &mut schema["properties"][name];
    let description = property.get("description").cloned();
    let mut replaced = with(property);
    if let Some(description) = description {
        replaced["description"] = description;
    }
    *property = replaced;
}

/// Adds property `name` to an object schema.
fn add_property(schema: &mut Value, name: &str, property: Value, required: bool) {
    schema["properties"][name] = property;
    if required {
        let mut names = schema["required"].as_array().cloned().unwrap_or_default();
        names.insert(0, json!(name));
        schema["required"] = Value::Array(names);
    }
}

/// Removes the `null` members whose property schema does not take `null`:
/// how strict-mode clients (OpenAI's, which must send every property) say
/// "not given". Nested objects and array items are walked with their own
/// schemas; members the schema does not know are kept, for the decoder to
/// name.
pub fn drop_nulls(schema: &Value, value: &mut Value) {
    let schema = object_variant(schema);
    match value {
        Value::Object(object) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let Some(properties) = properties else {
                return;
            };
            object.retain(|name, member| {
                !member.is_null() || properties.get(name).is_none_or(accepts_null)
            });
            for (name, member) in object.iter_mut() {
                if let Some(property) = properties.get(name) {
                    drop_nulls(property, member);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                items.iter_mut().for_each(|value| drop_nulls(item, value));
            }
        }
        _ => {}
    }
}

/// The variant of an `anyOf` that describes objects or arrays, else the
/// schema itself.
fn object_variant(schema: &Value) -> &Value {
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|variants| {
            variants
                .iter()
                .find(|v| v.get("properties").is_some() || v.get("items").is_some())
        })
        .unwrap_or(schema)
}

/// Whether `schema` takes `null`.
fn accepts_null(schema: &Value) -> bool {
    match schema {
        Value::Bool(accepts) => *accepts,
        Value::Object(object) => {
            let typed = |kind: &Value| match kind {
                Value::String(kind) => kind == "null",
                Value::Array(kinds) => kinds.iter().any(|kind| kind == "null"),
                _ => false,
            };
            let constrained = ["type", "anyOf", "oneOf", "enum", "const"]
                .iter()
                .any(|key| object.contains_key(*key));
            !constrained
                || object.get("type").is_some_and(typed)
                || object
                    .get("enum")
                    .and_then(Value::as_array)
                    .is_some_and(|values| values.contains(&Value::Null))
                || ["anyOf", "oneOf"].iter().any(|key| {
                    object
                        .get(*key)
                        .and_then(Value::as_array)
                        .is_some_and(|variants| variants.iter().any(accepts_null))
                })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_come_from_the_decoded_types() {
        let read = input_schema(ModelTool::Read);
        assert_eq!(read["type"], "object");
        assert_eq!(read["additionalProperties"], false);
        assert_eq!(read["required"], json!(["path"]));
        assert!(read["properties"]["byte_length"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("256 KiB")));
        assert!(read.get("title").is_none() && read.get("$schema").is_none());
        let text = read.to_string();
        assert!(!text.contains("$ref") && !text.contains("uint64"), "{text}");
        assert!(!text.contains("\\n"), "descriptions are unwrapped: {text}");
        let bash = input_schema(ModelTool::Bash);
        assert_eq!(bash["required"], json!(["command"]));
        assert_eq!(
            bash["properties"]["detach"]["type"],
            json!(["boolean", "null"])
        );
        let hook = input_schema(ModelTool::HookPut);
        assert_eq!(hook["required"], json!(["name", "exec"]));
        assert_eq!(hook["properties"]["exec"]["required"], json!(["command"]));
        let signal = input_schema(ModelTool::ProcessSignal);
        assert_eq!(signal["required"], json!(["id", "signal"]));
        let start = input_schema(ModelTool::ProcessStart);
        let restarts: Vec<&Value> = start["properties"]["restart"]["oneOf"]
            .as_array()
            .expect("restart's variants")
            .iter()
            .map(|variant| &variant["const"])
            .collect();
        assert_eq!(
            restarts,
            [&json!("never"), &json!("on-failure"), &json!("always")]
        );
    }

    #[test]
    fn nulls_a_field_does_not_take_are_dropped() {
        let schema = input_schema(ModelTool::Edit);
        let mut args = json!({
            "path": "/a", "dry_run": null,
            "edits": [{ "old": "x", "new": "y", "replace_all": null }],
        });
        drop_nulls(schema, &mut args);
        assert_eq!(
            args,
            json!({ "path": "/a", "edits": [{ "old": "x", "new": "y" }] })
        );
        // `offset` takes null (an Option), so it stays; so does an unknown field.
        let mut args = json!({ "path": "/a", "offset": null, "colour": null });
        drop_nulls(input_schema(ModelTool::Read), &mut args);
        assert_eq!(
            args,
            json!({ "path": "/a", "offset": null, "colour": null })
        );
        let mut args = json!({ "cron": "@daily", "exec": { "command": "true", "stdin": null } });
        drop_nulls(input_schema(ModelTool::SchedulePut), &mut args);
        assert_eq!(
            args,
            json!({ "cron": "@daily", "exec": { "command": "true" } })
        );
    }
}
