//! The tools as a model is told about them: each JSON Schema comes from the
//! very type that parses the tool's arguments, and each description is
//! written from the limits in [`crate::limits`].

use schemars::JsonSchema;

use crate::limits::{
    DEFAULT_MAX_TASKS, GREP_MAX_MATCHES, LIST_DIR_MAX_ENTRIES, READ_FILE_MAX_BYTES,
    RUN_DEFAULT_TIMEOUT_S, RUN_MAX_TIMEOUT_S, RUN_STREAM_MAX_BYTES, WRITE_MAX_BYTES,
};
use crate::tools::{
    AskArgs, FinishArgs, GrepArgs, ListDirArgs, ProposePlanArgs, ReadFileArgs, RunArgs,
    SearchReplaceArgs, TaskArgs, UseSkillArgs, WriteFileArgs,
};

/// A tool the model may call: its name, what it is for, and the JSON Schema
/// of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

fn schema_of<T: JsonSchema>() -> serde_json::Value {
    let mut value = crate::json::value(&schemars::schema_for!(T));
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
    }
    plain(&mut value);
    value
}

/// A schema in the subset every provider's function declarations take
/// (OpenAI's, Anthropic's, Gemini's): no `format`, no `default: null`, one
/// type for an optional field (`["integer", "null"]` is `integer`: leaving
/// it out is how a model says none), and descriptions on one line.
fn plain(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("format");
            if map.get("default").is_some_and(serde_json::Value::is_null) {
                map.remove("default");
            }
            if let Some(serde_json::Value::Array(types)) = map.get("type") {
                let named: Vec<serde_json::Value> = types
                    .iter()
                    .filter(|kind| *kind != "null")
                    .cloned()
                    .collect();
                if let [only] = named.as_slice() {
                    let only = only.clone();
                    map.insert("type".into(), only);
                }
            }
            if let Some(serde_json::Value::String(text)) = map.get_mut("description") {
                *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            map.values_mut().for_each(plain);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(plain),
        _ => {}
    }
}

fn kib(bytes: usize) -> String {
    format!("{} KiB", bytes / 1024)
}

fn spec<T: JsonSchema>(name: &str, description: String) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description,
        parameters: schema_of::<T>(),
    }
}

/// The nine tools of a turn, in the spec's order. The same bytes every
/// time, so a provider's prompt cache holds.
pub fn tool_specs() -> Vec<ToolSpec> {
    let mut run = spec::<RunArgs>(
        "run",
        format!(
            "Run a command (an argv, no shell) in the workspace after the person approves it; the system \
             prompt says what the sandbox lets it reach, and network, git and read ask for more (the person \
             sees all of it on the card). Returns exit_code, stdout and stderr ({} of each, head and tail). \
             timeout_s defaults to {RUN_DEFAULT_TIMEOUT_S} and may be at most {RUN_MAX_TIMEOUT_S}.",
            kib(RUN_STREAM_MAX_BYTES)
        ),
    );
    if let Some(timeout) = run
        .parameters
        .pointer_mut("/properties/timeout_s/description")
    {
        *timeout = serde_json::Value::String(format!(
            "Seconds before the command is killed: {RUN_DEFAULT_TIMEOUT_S} by default, {RUN_MAX_TIMEOUT_S} at most."
        ));
    }
    vec![
        spec::<ReadFileArgs>(
            "read_file",
            format!(
                "Read a file: up to {} from a byte offset or a 1-based line (limit: at most that many \
                 lines), ending at a line's end. The result gives first_line and total_lines, and when \
                 there is more, next_line (or next_offset) to continue from.",
                kib(READ_FILE_MAX_BYTES)
            ),
        ),
        spec::<GrepArgs>(
            "grep",
            format!(
                "Search file contents with a regular expression (Rust syntax: escape ( [ . * + ? {{ | \\ \
                 with \\ to match them literally); returns up to {GREP_MAX_MATCHES} matches as \
                 path:line:text, in path order. Files that .gitignore or .ignore name are skipped unless \
                 you give one as path."
            ),
        ),
        spec::<ListDirArgs>(
            "list_dir",
            format!(
                "List one folder level (up to {LIST_DIR_MAX_ENTRIES} names); folders end in '/', links are named as links."
            ),
        ),
        spec::<SearchReplaceArgs>(
            "search_replace",
            format!(
                "Replace an exact string in a file (at most {}). The person sees the diff and approves it before \
                 anything is written.",
                kib(WRITE_MAX_BYTES)
            ),
        ),
        spec::<WriteFileArgs>(
            "write_file",
            format!(
                "Create or replace a whole file (at most {}). The person sees the diff and approves it before \
                 anything is written.",
                kib(WRITE_MAX_BYTES)
            ),
        ),
        run,
    ]
    .into_iter()
    .chain(core_specs())
    .collect()
}

/// The core tools' specs: ask, finish, use_skill, propose_plan, task.
fn core_specs() -> Vec<ToolSpec> {
    vec![
        spec::<AskArgs>(
            "ask",
            "Ask the person a question and wait for the reply. Use it when you need a decision only they can make."
                .into(),
        ),
        spec::<FinishArgs>(
            "finish",
            "End the turn with a summary of what was done. Checks configured by the person may run first and can \
             send you back to work."
                .into(),
        ),
        spec::<UseSkillArgs>(
            "use_skill",
            "Load the instructions of one of the skills the system prompt lists.".into(),
        ),
        spec::<ProposePlanArgs>(
            "propose_plan",
            "Plan mode: propose your plan to the person. Once they approve it, every tool is offered and \
             you carry it out; if they deny it, you read why and propose another."
                .into(),
        ),
        spec::<TaskArgs>(
            "task",
            format!(
                "Start a sub-task: a helper session that works on its prompt alone and returns what its finish \
                 says. It sees nothing of this conversation, so the prompt must say everything. Several task calls \
                 in one reply run at once (at most {DEFAULT_MAX_TASKS} by default, the rest wait). \"read\" offers \
                 read_file, grep and list_dir; \"all\" adds writes and commands, which raise cards as yours do."
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_keep_to_what_every_providers_declarations_take() {
        fn walk(value: &serde_json::Value, path: &str) {
            match value {
                serde_json::Value::Object(map) => {
                    assert!(!map.contains_key("format"), "{path}: format");
                    assert!(
                        !map.get("default").is_some_and(serde_json::Value::is_null),
                        "{path}: default null"
                    );
                    assert!(
                        !map.get("type").is_some_and(|kind| kind.is_array()),
                        "{path}: a type list"
                    );
                    if let Some(text) = map.get("description").and_then(|text| text.as_str()) {
                        assert!(!text.contains('\n'), "{path}: a line break in {text:?}");
                    }
                    for (key, inner) in map {
                        walk(inner, &format!("{path}.{key}"));
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, path)),
                _ => {}
            }
        }
        for spec in tool_specs() {
            assert!(!spec.description.contains('\n'), "{}", spec.name);
            walk(&spec.parameters, &spec.name);
        }
    }
    use crate::tools::{CORE_TOOL_NAMES, TOOL_NAMES};

    #[test]
    fn every_tool_has_an_object_schema_from_its_args_type() {
        let specs = tool_specs();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        let mut expected: Vec<&str> = TOOL_NAMES.to_vec();
        expected.extend(CORE_TOOL_NAMES);
        assert_eq!(names, expected);
        for spec in &specs {
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        }
        let run = &specs[5].parameters;
        assert_eq!(run["required"], serde_json::json!(["argv"]));
        assert_eq!(run["properties"]["argv"]["type"], "array");
        assert_eq!(specs[0].parameters["additionalProperties"], false);
    }

    #[test]
    fn descriptions_state_the_limits_from_the_constants() {
        let specs = tool_specs();
        let text = |name: &str| {
            specs
                .iter()
                .find(|spec| spec.name == name)
                .map(|spec| spec.description.clone())
                .unwrap_or_default()
        };
        assert!(text("read_file").contains(&kib(READ_FILE_MAX_BYTES)));
        assert!(text("grep").contains(&GREP_MAX_MATCHES.to_string()));
        assert!(text("list_dir").contains(&LIST_DIR_MAX_ENTRIES.to_string()));
        assert!(text("write_file").contains(&kib(WRITE_MAX_BYTES)));
        assert!(text("run").contains(&RUN_MAX_TIMEOUT_S.to_string()));
        let timeout = &specs[5].parameters["properties"]["timeout_s"]["description"];
        assert!(
            timeout
                .as_str()
                .is_some_and(|d| d.contains(&RUN_MAX_TIMEOUT_S.to_string())),
            "{timeout}"
        );
        assert_eq!(tool_specs(), specs, "the same bytes every time");
    }
}
