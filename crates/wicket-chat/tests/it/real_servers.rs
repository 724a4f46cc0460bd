//! The bytes real servers sent (`tests/real-servers/`, recorded from
//! llama-cpp-python 0.3.36, llama.cpp's llama-server and a LiteLLM 1.108.7
//! proxy running a real model; its README says what each file shows),
//! replayed byte for byte from a plain TCP listener, so the clients meet
//! them as they came.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wicket_chat::{ChatErrorKind, Completion, StopReason};
use wicket_fake::Wire;

use crate::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/real-servers")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A streamed body (`.sse`) as the whole response a server sends.
fn sse(name: &str) -> Vec<u8> {
    let mut response =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_vec();
    response.extend(fixture(name));
    response
}

/// A listener that answers the requests with `responses` in turn (the
/// last one again once they run out), and keeps each request's body.
struct Replay {
    url: String,
    requests: Arc<AtomicUsize>,
    bodies: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Replay {
    fn start(response: Vec<u8>) -> Replay {
        Replay::sequence(vec![response])
    }

    fn sequence(responses: Vec<Vec<u8>>) -> Replay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/v1",
            listener.local_addr().unwrap().port()
        );
        let requests = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counted, kept) = (requests.clone(), bodies.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                kept.lock().unwrap().push(read_request(&mut stream));
                let n = counted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(&responses[n.min(responses.len() - 1)]);
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        });
        Replay {
            url,
            requests,
            bodies,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Each request's body, as JSON.
    fn json_bodies(&self) -> Vec<serde_json::Value> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .map(|body| serde_json::from_str(body).unwrap())
            .collect()
    }
}

/// Reads one request's head and its `Content-Length` body; the body.
fn read_request(stream: &mut std::net::TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let Ok(n) = stream.read(&mut buffer) else {
            return String::new();
        };
        if n == 0 {
            return String::new();
        }
        seen.extend_from_slice(&buffer[..n]);
        let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        if seen.len() >= end + 4 + length {
            return String::from_utf8_lossy(&seen[end + 4..]).into_owned();
        }
    }
}

async fn reply_of(
    response: Vec<u8>,
    wire: Wire,
) -> (Result<Completion, wicket_chat::ChatError>, usize) {
    let replay = Replay::start(response);
    let client = client_at(replay.url.clone(), wire, quick_config());
    let (result, _) = complete(client.as_ref(), &ask("read 1.txt")).await;
    (result, replay.requests())
}

#[tokio::test]
async fn llama_cpp_pythons_tool_call_stream_is_one_read_file_call() {
    let (reply, _) = reply_of(sse("lcp_forced_stream.sse"), Wire::OpenAi).await;
    let reply = reply.unwrap();
    assert_eq!(reply.tool_calls.len(), 1, "{reply:?}");
    let call = &reply.tool_calls[0];
    assert_eq!(call.name, "read_file");
    assert!(
        call.id.starts_with("call__0_read_file_cmpl-"),
        "{}",
        call.id
    );
    assert!(
        call.arguments.starts_with("{ \"path\""),
        "{}",
        call.arguments
    );
    assert_eq!(reply.text, "");
}

#[tokio::test]
async fn litellms_normalised_tool_call_stream_is_one_call_too() {
    let (reply, _) = reply_of(
        fixture("litellm_normalised_lcp_toolcall_stream.http"),
        Wire::OpenAi,
    )
    .await;
    let reply = reply.unwrap();
    assert_eq!(reply.tool_calls.len(), 1, "{reply:?}");
    // The name was in every chunk: one name, not the name again and again.
    assert_eq!(reply.tool_calls[0].name, "write_file");
}

#[tokio::test]
async fn llama_servers_context_error_is_prompt_too_long_and_not_retried() {
    let (reply, requests) = reply_of(
        fixture("llamaserver_context_exceeded_400.http"),
        Wire::OpenAi,
    )
    .await;
    let error = reply.unwrap_err();
    assert_eq!(error.kind, ChatErrorKind::Http { status: 400 });
    assert!(error.is_context_too_long(), "{}", error.message);
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn litellms_anthropic_usage_in_message_delta_is_counted() {
    let (reply, _) = reply_of(sse("litellm_anthropic_stream.sse"), Wire::Anthropic).await;
    let reply = reply.unwrap();
    assert!(
        reply.text.starts_with("Sounds wonderful."),
        "{}",
        reply.text
    );
    // message_start said 0 of everything; message_delta has the counts.
    let usage = reply.usage.unwrap();
    assert_eq!(usage.output_tokens, 27);
    assert_eq!(usage.cache_read_input_tokens, 5);
    assert_eq!(usage.input_tokens, 29 + 5);
}

#[tokio::test]
async fn an_empty_200_is_an_error_that_says_so_and_is_not_retried() {
    for response in [
        fixture("lcp_context_overflow_empty_body.http"),
        sse("lcp_auto_stream.sse"),
    ] {
        let (reply, requests) = reply_of(response, Wire::OpenAi).await;
        let error = reply.unwrap_err();
        assert_eq!(error.kind, ChatErrorKind::Protocol, "{}", error.message);
        assert!(error.message.contains("empty body"), "{}", error.message);
        assert_eq!(requests, 1);
    }
}

#[tokio::test]
async fn litellms_empty_stop_is_an_empty_reply() {
    let (reply, _) = reply_of(
        fixture("litellm_empty_stop_after_upstream_error.http"),
        Wire::OpenAi,
    )
    .await;
    let reply = reply.unwrap();
    assert_eq!((reply.text.as_str(), reply.tool_calls.len()), ("", 0));
    assert_eq!(reply.stop_reason, Some(StopReason::EndTurn));
}

#[tokio::test]
async fn plain_streams_from_each_server_read_whole() {
    for (response, usage) in [
        (sse("ls_stream_plain.sse"), Some((36, 8, 35))),
        (
            fixture("llamaserver_wicket_text_reply_with_usage.http"),
            Some((1695, 52, 1680)),
        ),
        (sse("lcp_stream_plain.sse"), None),
        (sse("lcp_notoolchoice_stream.sse"), None),
    ] {
        let (reply, _) = reply_of(response, Wire::OpenAi).await;
        let reply = reply.unwrap();
        assert!(!reply.text.is_empty());
        // A server that sent no usage chunk (llama-cpp-python) leaves it
        // unknown, never zero.
        assert_eq!(
            reply.usage.map(|usage| (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_input_tokens
            )),
            usage
        );
    }
    let (cut, _) = reply_of(fixture("lcp_length_cut.http"), Wire::OpenAi).await;
    assert_eq!(cut.unwrap().stop_reason, Some(StopReason::MaxTokens));
}

#[tokio::test]
async fn an_event_that_does_not_fit_names_the_field_shows_the_event_and_is_not_retried() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":5}}]}\n\n";
    let mut response =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_vec();
    response.extend_from_slice(body.as_bytes());
    let (reply, requests) = reply_of(response, Wire::OpenAi).await;
    let error = reply.unwrap_err();
    assert_eq!(error.kind, ChatErrorKind::Protocol);
    assert!(
        error.message.contains("choices[0].delta.tool_calls"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("\"tool_calls\":5"),
        "{}",
        error.message
    );
    assert_eq!(requests, 1, "a parse error that will repeat is not retried");
}

#[tokio::test]
async fn the_output_limit_is_always_sent_and_renamed_when_the_server_asks() {
    let refusal = br#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
    let mut first = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        refusal.len()
    )
    .into_bytes();
    first.extend_from_slice(refusal);
    let replay = Replay::sequence(vec![first, sse("ls_stream_plain.sse")]);
    let client = client_at(replay.url.clone(), Wire::OpenAi, quick_config());
    let (reply, _) = complete(client.as_ref(), &ask("hi")).await;
    assert!(!reply.unwrap().text.is_empty());
    let (reply, _) = complete(client.as_ref(), &ask("again")).await;
    assert!(reply.is_ok());
    let bodies = replay.json_bodies();
    assert_eq!(bodies.len(), 3, "one refusal, then two requests");
    assert_eq!(bodies[0]["max_tokens"], 1024);
    assert_eq!(bodies[1]["max_completion_tokens"], 1024);
    assert!(bodies[1].get("max_tokens").is_none());
    // The client remembers: the next request asks the right way at once.
    assert_eq!(bodies[2]["max_completion_tokens"], 1024);
}

/// llama-cpp-python streams tool calls only when told to call one: the
/// person's `[providers.openai] tool_choice` goes with the tools, and
/// nothing is sent without it.
#[tokio::test]
async fn tool_choice_goes_with_the_tools_only_when_configured() {
    let replay = Replay::start(sse("lcp_forced_stream.sse"));
    let plain = client_at(replay.url.clone(), Wire::OpenAi, quick_config());
    let told = client_at(
        replay.url.clone(),
        Wire::OpenAi,
        wicket_chat::ClientConfig {
            openai_tool_choice: Some(wicket_chat::ToolChoice::Required),
            ..quick_config()
        },
    );
    complete(plain.as_ref(), &ask("read 1.txt"))
        .await
        .0
        .unwrap();
    let reply = complete(told.as_ref(), &ask("read 1.txt")).await.0.unwrap();
    assert_eq!(reply.tool_calls[0].name, "read_file");
    let bodies = replay.json_bodies();
    assert!(bodies[0].get("tool_choice").is_none(), "{}", bodies[0]);
    assert_eq!(bodies[1]["tool_choice"], "required");
}
