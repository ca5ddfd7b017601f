//! OpenAI's strict mode, from a canonical schema.
//!
//! With `strict: true` OpenAI's models are held to the schema as they
//! generate, but only a subset of JSON Schema is accepted: every object
//! closed (`additionalProperties: false`) and listing every property in
//! `required`, an optional field expressed as one that may be `null`, and
//! no keyword outside the supported set (`default` and `format` among the
//! refused). The transform here follows the rules of OpenAI's own SDK
//! (`openai-python`'s `to_strict_json_schema`), adding what a schema of ours
//! needs:
//!
//! - an optional property becomes nullable; the API treats `null` as "not
//!   given" for exactly those fields (`Option` in the Rust type);
//! - a property strict mode cannot express (a free-form object such as
//!   `env`, or any JSON such as a webhook's `body`) is left out when it is
//!   optional; such a tool still works, without that field. A required one
//!   makes the tool unusable in strict mode, which is an error here (tests
//!   check no tool is in that case).

use serde_json::{json, Map, Value};

/// Keywords strict mode accepts (others are dropped).
const KEPT: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "minItems",
    "maxItems",
];

/// Why a schema cannot be made strict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: strict mode cannot express {what}")]
pub(crate) struct NotStrict {
    pub(crate) path: String,
    pub(crate) what: &'static str,
}

/// The strict form of `schema`, and the optional properties left out
/// (`a.b` paths).
pub(crate) fn strict(schema: &Value) -> Result<(Value, Vec<String>), NotStrict> {
    let mut dropped = Vec::new();
    let out = node(schema, "", &mut dropped)?;
    Ok((out, dropped))
}

fn node(schema: &Value, path: &str, dropped: &mut Vec<String>) -> Result<Value, NotStrict> {
    let not_strict = |what| NotStrict {
        path: if path.is_empty() {
            "(root)".into()
        } else {
            path.to_string()
        },
        what,
    };
    let Value::Object(object) = schema else {
        return Err(not_strict("a schema that accepts any value"));
    };
    if !["type", "anyOf", "oneOf", "enum", "const"]
        .iter()
        .any(|key| object.contains_key(*key))
    {
        return Err(not_strict("a schema that accepts any value"));
    }
    let mut out = Map::new();
    for (key, value) in object {
        if KEPT.contains(&key.as_str()) {
            out.insert(key.clone(), value.clone());
        }
    }
    // A choice of constants (an enum with documented variants) is the same
    // under `anyOf`, which strict mode takes, as under `oneOf`.
    let variants = object.get("anyOf").or_else(|| object.get("oneOf"));
    if let Some(variants) = variants.and_then(Value::as_array) {
        let variants = variants
            .iter()
            .map(|variant| node(variant, path, dropped))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("anyOf".into(), Value::Array(variants));
    }
    if let Some(items) = object.get("items") {
        out.insert("items".into(), node(items, &format!("{path}[]"), dropped)?);
    }
    if is_object_type(object) {
        if object
            .get("additionalProperties")
            .is_some_and(|extra| extra != &Value::Bool(false))
        {
            return Err(not_strict("an object with free-form keys"));
        }
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut properties = Map::new();
        let empty = Map::new();
        let given = object
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for (name, property) in given {
            let child = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            let is_required = required.contains(&name.as_str());
            match node(property, &child, dropped) {
                Ok(converted) if is_required => {
                    properties.insert(name.clone(), converted);
                }
                Ok(converted) => {
                    properties.insert(name.clone(), nullable(converted));
                }
                Err(error) if is_required => return Err(error),
                Err(_) => dropped.push(child),
            }
        }
        let names: Vec<Value> = properties.keys().map(|name| json!(name)).collect();
        out.insert("properties".into(), Value::Object(properties));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Ok(Value::Object(out))
}

fn is_object_type(object: &Map<String, Value>) -> bool {
    match object.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        _ => false,
    }
}

/// `schema`, also accepting `null`.
fn nullable(mut schema: Value) -> Value {
    let accepts_null = |schema: &Value| match &schema["type"] {
        Value::String(kind) => kind == "null",
        Value::Array(kinds) => kinds.iter().any(|kind| kind == "null"),
        _ => false,
    };
    if accepts_null(&schema) {
        return schema;
    }
    if let Some(variants) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        if !variants.iter().any(accepts_null) {
            variants.push(json!({ "type": "null" }));
        }
        return schema;
    }
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    match schema.get("type").cloned() {
        Some(Value::String(kind)) => schema["type"] = json!([kind, "null"]),
        Some(Value::Array(mut kinds)) => {
            kinds.push(json!("null"));
            schema["type"] = Value::Array(kinds);
        }
        _ => {
            // `const` or `enum` without a type: enum already takes null.
            if let Some(constant) = schema.get("const").cloned() {
                let object = schema.as_object_mut().expect("a schema object");
                object.remove("const");
                object.insert("enum".into(), json!([constant, null]));
            }
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_become_nullable_and_every_object_is_closed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "where" },
                "limit": { "type": ["integer", "null"], "minimum": 0, "format": "uint" },
                "mode": { "type": "string", "enum": ["a", "b"], "default": "a" },
                "kind": { "oneOf": [{ "const": "x", "type": "string" }, { "const": "y", "type": "string" }] },
                "edits": { "type": "array", "items": {
                    "type": "object",
                    "properties": { "old": { "type": "string" }, "all": { "type": "boolean", "default": false } },
                    "required": ["old"],
                } },
                "env": { "type": "object", "additionalProperties": { "type": "string" } },
                "body": true,
            },
            "required": ["path"],
        });
        let (out, dropped) = strict(&schema).unwrap();
        assert_eq!(dropped, vec!["body".to_string(), "env".to_string()]);
        assert_eq!(
            out["required"],
            json!(["edits", "kind", "limit", "mode", "path"])
        );
        assert_eq!(
            out["properties"]["kind"]["anyOf"],
            json!([{ "const": "x", "type": "string" }, { "const": "y", "type": "string" }, { "type": "null" }])
        );
        assert_eq!(out["additionalProperties"], false);
        assert_eq!(
            out["properties"]["path"],
            json!({ "type": "string", "description": "where" })
        );
        assert_eq!(
            out["properties"]["limit"],
            json!({ "type": ["integer", "null"], "minimum": 0 })
        );
        assert_eq!(
            out["properties"]["mode"],
            json!({ "type": ["string", "null"], "enum": ["a", "b", null] })
        );
        let item = &out["properties"]["edits"]["items"];
        assert_eq!(item["required"], json!(["all", "old"]));
        assert_eq!(item["additionalProperties"], false);
        assert_eq!(
            item["properties"]["all"]["type"],
            json!(["boolean", "null"])
        );
        assert_eq!(out["properties"]["edits"]["type"], json!(["array", "null"]));
    }

    #[test]
    fn a_required_field_strict_mode_cannot_express_is_an_error() {
        let schema = json!({
            "type": "object",
            "properties": { "exec": true },
            "required": ["exec"],
        });
        assert_eq!(
            strict(&schema).unwrap_err(),
            NotStrict {
                path: "exec".into(),
                what: "a schema that accepts any value"
            }
        );
    }
}
