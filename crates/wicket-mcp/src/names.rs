//! The names the model sees: `mcp__SERVER__TOOL`, within the providers'
//! tool-name rules (`^[A-Za-z0-9_-]{1,64}$` for OpenAI, Anthropic and
//! Ollama alike). A server's own tool name may hold anything, so it is
//! sanitised; two tools of one server that sanitise to the same name are
//! refused, naming both, rather than one silently shadowing the other.

use sha2::{Digest, Sha256};
use wicket_protocol::MCP_PREFIX;

/// The longest tool name every provider takes.
pub const TOOL_NAME_MAX: usize = 64;

/// Whether `name` may name a server in a config: letters, digits, `-` and
/// single `_`s, so `mcp__SERVER__TOOL` splits one way only.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.contains("__")
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// The name the model calls the tool `tool` of `server` by.
pub fn model_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{MCP_PREFIX}{server}__{clean}");
    if name.len() <= TOOL_NAME_MAX {
        return name;
    }
    // Too long: keep the start and make the end unique to the full name.
    let digest: String = Sha256::digest(tool.as_bytes())
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("{}_{digest}", &name[..TOOL_NAME_MAX - 9])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_providers_rules() {
        assert_eq!(
            model_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(model_name("fs", "read file/v2"), "mcp__fs__read_file_v2");
        assert_eq!(model_name("fs", "ünï"), "mcp__fs___n_");
        let long = model_name("server", &"x".repeat(200));
        assert_eq!(long.len(), TOOL_NAME_MAX);
        assert_ne!(long, model_name("server", &"x".repeat(201)));
        for name in [long, model_name("a", "b.c")] {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
        }
    }

    #[test]
    fn server_names_split_one_way() {
        assert!(valid_server_name("github"));
        assert!(valid_server_name("my-server_2"));
        for bad in ["", "a__b", "a.b", "a b", "ü", &"x".repeat(33)] {
            assert!(!valid_server_name(bad), "{bad}");
        }
    }
}
