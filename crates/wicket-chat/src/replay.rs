//! `script:PATH`: assistant replies replayed from a JSON file, for demos and
//! tests.
//!
//! The file is an array; entry N is the reply to a conversation that
//! already holds N assistant messages, so a resumed session picks up where
//! it stopped:
//! `[{"text": "…"}, {"tool_calls": [{"name": "read_file", "arguments": {…}}]}, …]`.
//! `arguments` may be an object or a JSON string (to replay arguments a
//! model got wrong). Call ids are `script-N-M`.
//!
//! Sub-tasks run at once, so their requests come in no fixed order: the
//! file may instead be an object, `{"replies": […], "tasks": {"TEXT": […]}}`,
//! where a conversation whose first message holds TEXT (a sub-task's
//! prompt) is answered from that array, any other from `replies`.

use std::path::Path;

use serde::Deserialize;

use crate::{
    ChatClient, ChatError, ChatErrorKind, ChatFuture, Completion, Message, Request, StreamEvent,
    ToolCallRequest,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<Call>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    name: String,
    #[serde(default = "empty_object")]
    arguments: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::json!({})
}

/// The most a script may hold: it is read whole, before any card.
pub(crate) const SCRIPT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// A script's text: a regular file (not a device like /dev/zero, not a
/// FIFO) of at most [`SCRIPT_MAX_BYTES`], read no further than that.
fn read_script(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|error| error.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file; give the path of a JSON file".into());
    }
    if meta.len() > SCRIPT_MAX_BYTES {
        return Err(format!(
            "it is {} bytes, over the {SCRIPT_MAX_BYTES} a script may be",
            meta.len()
        ));
    }
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    file.take(SCRIPT_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    if bytes.len() as u64 > SCRIPT_MAX_BYTES {
        return Err(format!(
            "it grew past the {SCRIPT_MAX_BYTES} bytes a script may be"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_string())
}

pub(crate) struct Replay {
    model: String,
    path: String,
    entries: Vec<Entry>,
    /// Conversations whose first message holds the text, and their replies.
    tasks: Vec<(String, Vec<Entry>)>,
}

/// A script file: the replies alone, or with each sub-task's.
enum Script {
    Replies(Vec<Entry>),
    WithTasks(WithTasks),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WithTasks {
    replies: Vec<Entry>,
    #[serde(default)]
    tasks: std::collections::BTreeMap<String, Vec<Entry>>,
}

impl Replay {
    pub(crate) fn load(model: &str, path: &Path) -> Result<Self, ChatError> {
        let config_error = |message: String| ChatError::new(ChatErrorKind::Config, message);
        let text = read_script(path).map_err(|why| {
            config_error(format!("cannot read the script {}: {why}", path.display()))
        })?;
        // Told apart by their first byte, so that a mistake in either is
        // named as serde finds it.
        let parsed = if text.trim_start().starts_with('{') {
            serde_json::from_str::<WithTasks>(&text).map(Script::WithTasks)
        } else {
            serde_json::from_str::<Vec<Entry>>(&text).map(Script::Replies)
        };
        let script = parsed.map_err(|error| {
            config_error(format!(
                "the script {} is not a JSON array of replies like \
                 [{{\"text\": \"…\"}}, {{\"tool_calls\": [{{\"name\": \"read_file\", \"arguments\": {{…}}}}]}}] \
                 (or an object {{\"replies\": […], \"tasks\": {{\"PROMPT\": […]}}}}): {error}",
                path.display()
            ))
        })?;
        let (entries, tasks) = match script {
            Script::Replies(entries) => (entries, Vec::new()),
            Script::WithTasks(with) => (with.replies, with.tasks.into_iter().collect()),
        };
        Ok(Replay {
            model: model.to_string(),
            path: path.display().to_string(),
            entries,
            tasks,
        })
    }

    /// The replies for `req`'s conversation: a sub-task's, by its first
    /// message, or the script's own.
    fn entries_for(&self, req: &Request) -> &[Entry] {
        let first = req.messages.iter().find_map(|message| match message {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        });
        first
            .and_then(|first| {
                self.tasks
                    .iter()
                    .find(|(key, _)| first.contains(key.as_str()))
            })
            .map_or(&self.entries, |(_, entries)| entries)
    }

    fn reply(&self, req: &Request) -> Result<Completion, ChatError> {
        let index = req
            .messages
            .iter()
            .filter(|message| matches!(message, Message::Assistant { .. }))
            .count();
        let entries = self.entries_for(req);
        let Some(entry) = entries.get(index) else {
            return Err(ChatError::new(
                ChatErrorKind::Script,
                format!(
                    "the script {} has {} replies and the conversation asks for reply {}; \
                     add entries to the script or start a new session",
                    self.path,
                    entries.len(),
                    index + 1
                ),
            ));
        };
        let tool_calls = entry
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, call)| ToolCallRequest {
                id: format!("script-{}-{}", index + 1, n + 1).into(),
                name: call.name.clone(),
                arguments: match &call.arguments {
                    serde_json::Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                },
            })
            .collect();
        Ok(Completion {
            text: entry.text.clone(),
            tool_calls,
            usage: None,
            stop_reason: None,
            attempts: 1,
        })
    }
}

impl ChatClient for Replay {
    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        req: &'a Request,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> ChatFuture<'a> {
        let reply = self.reply(req);
        if let Ok(reply) = &reply
            && !reply.text.is_empty()
        {
            on_event(StreamEvent::Text(reply.text.clone()));
        }
        Box::pin(async move { reply })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_a_regular_file_of_at_most_16_mib() {
        for (path, why) in [
            ("/dev/zero", "not a regular file"),
            ("/dev/null", "not a regular file"),
            ("/no/such/script.json", "No such file"),
        ] {
            let error = Replay::load("script:x", Path::new(path)).err().unwrap();
            assert!(error.message.contains(why), "{path}: {}", error.message);
        }
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(SCRIPT_MAX_BYTES + 1)
            .unwrap();
        let error = Replay::load("script:x", &big).err().unwrap();
        assert!(error.message.contains("over the"), "{}", error.message);
    }

    fn script(json: &str) -> Result<Replay, ChatError> {
        let dir = tempfile::tempdir()
            .map_err(|e| ChatError::new(ChatErrorKind::Config, e.to_string()))?;
        let path = dir.path().join("script.json");
        std::fs::write(&path, json)
            .map_err(|e| ChatError::new(ChatErrorKind::Config, e.to_string()))?;
        Replay::load("script:test", &path)
    }

    fn request(assistant_messages: usize) -> Request {
        let messages = (0..assistant_messages)
            .flat_map(|_| {
                [
                    Message::User { text: "x".into() },
                    Message::Assistant {
                        text: "y".into(),
                        tool_calls: Vec::new(),
                    },
                ]
            })
            .collect();
        Request {
            system: String::new(),
            messages,
            tools: Vec::new(),
            max_tokens: 1,
        }
    }

    #[test]
    fn replies_follow_the_assistant_messages_so_far() -> Result<(), ChatError> {
        let script = script(
            r#"[{"text": "first", "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}, {"name": "run", "arguments": "{bad"}]},
                {"text": "second"}]"#,
        )?;
        let first = script.reply(&request(0))?;
        assert_eq!(first.text, "first");
        assert_eq!(
            first.tool_calls,
            vec![
                ToolCallRequest {
                    id: "script-1-1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a"}"#.into()
                },
                ToolCallRequest {
                    id: "script-1-2".into(),
                    name: "run".into(),
                    arguments: "{bad".into()
                },
            ]
        );
        assert_eq!(script.reply(&request(1))?.text, "second");
        let out = script.reply(&request(2)).err().map(|e| (e.kind, e.message));
        let (kind, message) = out.unwrap_or((ChatErrorKind::Config, String::new()));
        assert_eq!(kind, ChatErrorKind::Script);
        assert!(
            message.contains("has 2 replies") && message.contains("reply 3"),
            "{message}"
        );
        Ok(())
    }

    #[test]
    fn a_bad_script_says_what_shape_it_must_have() {
        let error = script(r#"[{"txt": "typo"}]"#)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            error.contains("JSON array of replies") && error.contains("txt"),
            "{error}"
        );
    }
}
