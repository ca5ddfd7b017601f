//! The tool definitions in each harness's own shape (`GET /tools?format=`).
//!
//! - `mcp`: MCP `Tool` objects (`name`, `title`, `description`,
//!   `inputSchema`, `annotations`), as `tools/list` answers;
//! - `anthropic`: the Messages API's `tools` (`name`, `description`,
//!   `input_schema`);
//! - `openai`: Responses API function tools (`type: "function"`, `name`,
//!   `description`, `parameters`, `strict: true`), the parameters made valid
//!   under strict mode (see `super::strict`); for Chat Completions, put the
//!   same fields less `type` under `function`;
//! - `ai-sdk`: an object keyed by tool name of `{description, inputSchema}`,
//!   for the AI SDK's `tool({ description, inputSchema: jsonSchema(s) })`.
//!
//! All but `openai` carry the canonical schema unchanged.

use serde_json::{json, Map, Value};

use super::schema::input_schema;
use super::strict::strict;
use super::ModelTool;
use crate::auth::Caller;
use crate::error::ApiError;

/// A harness's shape of tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Mcp,
    Anthropic,
    OpenAi,
    AiSdk,
}

impl Format {
    const ALL: [Format; 4] = [
        Format::Mcp,
        Format::Anthropic,
        Format::OpenAi,
        Format::AiSdk,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Mcp => "mcp",
            Format::Anthropic => "anthropic",
            Format::OpenAi => "openai",
            Format::AiSdk => "ai-sdk",
        }
    }

    /// The format a `/tools` query asks for (`mcp` when none).
    pub fn from_query(query: &[(String, String)]) -> Result<Format, ApiError> {
        let mut format = Format::Mcp;
        for (key, value) in query {
            if key != "format" {
                return Err(ApiError::InvalidRequest(format!(
                    "unknown query parameter {key:?}; use format"
                )));
            }
            format = Format::ALL
                .into_iter()
                .find(|f| f.name() == value)
                .ok_or_else(|| {
                    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                    ApiError::InvalidRequest(format!(
                        "unknown format {value:?}; use one of {}",
                        names.join(", ")
                    ))
                })?;
        }
        Ok(format)
    }
}

/// The MCP `Tool` object of `tool`.
pub fn mcp_tool(tool: ModelTool) -> Value {
    json!({
        "name": tool.name(),
        "title": tool.title(),
        "description": tool.description(),
        "inputSchema": input_schema(tool),
        "annotations": {
            "title": tool.title(),
            "readOnlyHint": tool.read_only(),
            "destructiveHint": !tool.read_only(),
            "idempotentHint": tool.read_only(),
            "openWorldHint": tool.open_world(),
        },
    })
}

/// The OpenAI function tool of `tool`, strict.
pub fn openai_tool(tool: ModelTool) -> Result<Value, ApiError> {
    let (parameters, _left_out) = strict(input_schema(tool))
        .map_err(|e| ApiError::Internal(format!("{}: {e}", tool.name())))?;
    Ok(json!({
        "type": "function",
        "name": tool.name(),
        "description": tool.description(),
        "parameters": parameters,
        "strict": true,
    }))
}

/// The definitions of the tools `caller` may call, in `format`:
/// `{"format": ..., "tools": [...]}` (an object keyed by name for `ai-sdk`).
pub fn render(format: Format, caller: &Caller) -> Result<Value, ApiError> {
    let tools = ModelTool::visible(caller);
    let rendered = match format {
        Format::Mcp => Value::Array(tools.map(mcp_tool).collect()),
        Format::Anthropic => Value::Array(
            tools
                .map(|tool| {
                    json!({
                        "name": tool.name(),
                        "description": tool.description(),
                        "input_schema": input_schema(tool),
                    })
                })
                .collect(),
        ),
        Format::OpenAi => Value::Array(tools.map(openai_tool).collect::<Result<_, _>>()?),
        Format::AiSdk => Value::Object(
            tools
                .map(|tool| {
                    let definition = json!({
                        "description": tool.description(),
                        "inputSchema": input_schema(tool),
                    });
                    (tool.name().to_string(), definition)
                })
                .collect::<Map<_, _>>(),
        ),
    };
    Ok(json!({ "format": format.name(), "tools": rendered }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Scope;

    #[test]
    fn every_tool_converts_to_strict_mode() {
        for tool in ModelTool::ALL {
            let openai = openai_tool(tool).unwrap();
            assert_eq!(
                openai["parameters"]["additionalProperties"], false,
                "{tool:?}"
            );
        }
    }

    #[test]
    fn a_callers_scopes_decide_the_tools_shown() {
        let reader = Caller::Token {
            id: "r".into(),
            scopes: vec![Scope::Read],
            expires: i64::MAX,
        };
        let names = |caller: &Caller| -> Vec<String> {
            let answer = render(Format::Anthropic, caller).unwrap();
            answer["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            names(&reader),
            [
                "read",
                "ls",
                "glob",
                "grep",
                "job_output",
                "schedule_list",
                "hook_list",
                "checkpoint_list",
                "diff",
                "process_list",
                "process_get",
                "process_output"
            ]
        );
        assert_eq!(names(&Caller::Admin).len(), ModelTool::ALL.len());
        let query = |v: &str| vec![("format".to_string(), v.to_string())];
        assert_eq!(Format::from_query(&query("ai-sdk")).unwrap(), Format::AiSdk);
        assert_eq!(Format::from_query(&[]).unwrap(), Format::Mcp);
        assert_eq!(
            Format::from_query(&query("langchain")).unwrap_err().code(),
            "INVALID_REQUEST"
        );
    }
}
