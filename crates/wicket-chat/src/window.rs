//! An unknown model's context window, asked of the server that runs it:
//! llama.cpp's `llama-server` (`GET /props`: `n_ctx`) and Ollama (`POST
//! /api/show`: the `num_ctx` parameter the model runs with, else its
//! `*.context_length`). Asked once per server and model in a process.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use wicket_protocol::limits::CONTEXT_WINDOW_MAX_TOKENS;

use serde_json::{Value, json};

use crate::{ClientConfig, OLLAMA_DEFAULT_HOST, ollama_url};

/// How long a server may take to say its window.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// A window a server told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Tokens.
    pub tokens: u64,
    /// Who said so, in words (`llama-server's /props at http://…`).
    pub source: String,
}

fn asked() -> &'static Mutex<HashMap<String, Option<Window>>> {
    static ASKED: OnceLock<Mutex<HashMap<String, Option<Window>>>> = OnceLock::new();
    ASKED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Asks the server behind `model` for its window; `None` when the provider
/// cannot say (OpenAI's and Anthropic's own APIs, a server that does not
/// answer, or answers something else).
pub async fn ask(model: &str, config: &ClientConfig) -> Option<Window> {
    let (provider, name) = model.split_once(':')?;
    let (url, body) = match provider {
        // Only a server the person pointed at: api.openai.com has no /props.
        "openai" => {
            let base = config.openai_base_url.as_deref()?.trim_end_matches('/');
            let root = base.strip_suffix("/v1").unwrap_or(base);
            (format!("{root}/props"), None)
        }
        "ollama" => {
            let host = config.ollama_host.as_deref().unwrap_or(OLLAMA_DEFAULT_HOST);
            let root = ollama_url(host);
            (
                format!("{}/api/show", root.trim_end_matches('/')),
                Some(json!({ "model": name })),
            )
        }
        _ => return None,
    };
    let key = format!("{url} {name}");
    if let Some(known) = lock().get(&key) {
        return known.clone();
    }
    let told = fetch(&url, body)
        .await
        .and_then(|value| window_of(&value, &url));
    lock().insert(key, told.clone());
    told
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<String, Option<Window>>> {
    asked()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn fetch(url: &str, body: Option<Value>) -> Option<Value> {
    crate::tls::install();
    let client = reqwest::Client::builder()
        .timeout(ASK_TIMEOUT)
        .build()
        .ok()?;
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// The window in a `/props` or `/api/show` answer; a window past any real
/// model's (`CONTEXT_WINDOW_MAX_TOKENS`) is not believed, so it is unknown.
pub fn window_of(value: &Value, url: &str) -> Option<Window> {
    told_window(value, url).filter(|window| window.tokens <= CONTEXT_WINDOW_MAX_TOKENS)
}

fn told_window(value: &Value, url: &str) -> Option<Window> {
    // llama-server: `default_generation_settings.n_ctx` (or `n_ctx` at the top).
    let props = value["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| value["n_ctx"].as_u64());
    if let Some(tokens) = props.filter(|&tokens| tokens > 0) {
        return Some(Window {
            tokens,
            source: format!("llama-server's /props at {url}"),
        });
    }
    // Ollama: the num_ctx it runs the model with, else what the model was made for.
    let num_ctx = value["parameters"].as_str().and_then(|parameters| {
        parameters.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u64>().ok())?
        })
    });
    if let Some(tokens) = num_ctx.filter(|&tokens| tokens > 0) {
        return Some(Window {
            tokens,
            source: format!("Ollama's num_ctx for the model, from {url}"),
        });
    }
    let trained = value["model_info"].as_object().and_then(|info| {
        info.iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, tokens)| tokens.as_u64())
    });
    trained.filter(|&tokens| tokens > 0).map(|tokens| Window {
        tokens,
        source: format!("the model's context_length in Ollama's /api/show at {url}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_from_each_server_shape() {
        let url = "http://h/props";
        let llama = json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1});
        assert_eq!(window_of(&llama, url).unwrap().tokens, 8192);
        assert_eq!(
            window_of(&json!({"n_ctx": 4096}), url).unwrap().tokens,
            4096
        );
        let ollama = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 16384",
            "model_info": {"llama.context_length": 131072}
        });
        assert_eq!(window_of(&ollama, url).unwrap().tokens, 16384);
        let trained = json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(window_of(&trained, url).unwrap().tokens, 32768);
        assert_eq!(window_of(&json!({"data": []}), url), None);
        assert_eq!(window_of(&json!({"n_ctx": 0}), url), None);
        assert_eq!(window_of(&json!({"n_ctx": 1u64 << 63}), url), None);
        assert_eq!(window_of(&json!({"n_ctx": u64::MAX}), url), None);
    }
}
