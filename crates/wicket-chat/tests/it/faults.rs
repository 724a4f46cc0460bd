//! Every fault with the exact number of requests it took: what is retried,
//! what is not, and that a retried reply never carries a call twice.

use std::time::Duration;

use wicket_chat::{ChatErrorKind, ClientConfig, ToolCallRequest};
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::*;

#[tokio::test]
async fn rate_limits_overload_and_server_errors_are_retried() {
    for wire in WIRES {
        for status in [429, 500, 502, 503, 504, 529] {
            let server = FakeServer::start(wire);
            server.push(Step::status(wire, status, "busy, try later"));
            server.push(Step::Reply(FakeReply::text("made it")));
            let client = client(&server, wire);
            let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
            let reply = reply.unwrap();
            assert_eq!(reply.text, "made it", "{wire:?} {status}");
            assert_eq!(reply.attempts, 2, "{wire:?} {status}");
            assert_eq!(server.request_count(), 2, "{wire:?} {status}");
            let retries = retries(&events);
            assert_eq!(retries.len(), 1, "{wire:?} {status}: {events:?}");
            assert_eq!(retries[0].0, 2);
            assert!(
                retries[0].1.contains(&status.to_string()) && retries[0].1.contains("busy"),
                "{wire:?} {status}: {}",
                retries[0].1
            );
        }
    }
}

#[tokio::test]
async fn retry_after_sets_the_wait() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        server.push(Step::Status {
            status: 429,
            body: wire.error_body(429, "slow down"),
            retry_after: Some("0.25".into()),
        });
        server.push(Step::Reply(FakeReply::text("ok")));
        let client = client(&server, wire);
        let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
        assert_eq!(reply.unwrap().attempts, 2);
        let waits: Vec<u64> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::Retry { delay_ms, .. } => Some(*delay_ms),
                StreamEvent::Text(_) => None,
            })
            .collect();
        // The server's 250 ms, not the policy's 1–4 ms.
        assert_eq!(waits, [250], "{wire:?}");
    }
}

#[tokio::test]
async fn bad_request_auth_and_not_found_are_not_retried_and_say_why() {
    for wire in WIRES {
        for status in [400, 401, 404] {
            let server = FakeServer::start(wire);
            let message = format!("the model gpt-nope is not here ({status})");
            server.push(Step::status(wire, status, &message));
            server.push(Step::Reply(FakeReply::text("never sent")));
            let client = client(&server, wire);
            let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
            let error = reply.unwrap_err();
            assert_eq!(error.kind, ChatErrorKind::Http { status }, "{wire:?}");
            assert!(
                error.message.contains(&message),
                "{wire:?} {status}: {}",
                error.message
            );
            assert_eq!(server.request_count(), 1, "{wire:?} {status}");
            assert!(retries(&events).is_empty());
        }
    }
}

#[tokio::test]
async fn attempts_run_out_after_the_policy_says() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        for _ in 0..6 {
            server.push(Step::status(wire, 503, "down for maintenance"));
        }
        let client = client(&server, wire);
        let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
        let error = reply.unwrap_err();
        assert_eq!(error.kind, ChatErrorKind::Http { status: 503 });
        assert!(
            error.message.contains("down for maintenance")
                && error.message.contains("after 5 attempts"),
            "{wire:?}: {}",
            error.message
        );
        assert_eq!(server.request_count(), 5, "{wire:?}");
        let attempts: Vec<u32> = retries(&events).iter().map(|(n, _)| *n).collect();
        assert_eq!(attempts, [2, 3, 4, 5], "{wire:?}");
    }
}

/// How many SSE events of `reply` come before its first tool call's second
/// argument fragment, so a cut there leaves a call half received.
fn events_into_the_call(wire: Wire, reply: &FakeReply) -> usize {
    let text_pieces = reply.text.chars().count().div_ceil(4);
    match wire {
        // role, the text deltas, the call's start, one fragment.
        Wire::OpenAi => 1 + text_pieces + 2,
        // message_start, block start, ping, deltas, block stop, the call's
        // start, its empty first fragment, one fragment.
        Wire::Anthropic => 3 + text_pieces + 1 + 3,
    }
}

#[tokio::test]
async fn a_cut_stream_is_asked_again_whole_and_its_partial_call_is_dropped() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        let partial = FakeReply::text("Writing it now.").with_tool_call(
            "call_partial",
            "write_file",
            r#"{"path":"a.txt","content":"first try"}"#,
        );
        let events = events_into_the_call(wire, &partial);
        server.push(Step::CutAfter {
            reply: partial,
            events,
        });
        let whole = r#"{"path":"a.txt","content":"second try"}"#;
        server.push(Step::Reply(
            FakeReply::text("Writing it again.").with_tool_call("call_whole", "write_file", whole),
        ));
        let client = client(&server, wire);
        let (reply, events) = complete(client.as_ref(), &ask("write")).await;
        let reply = reply.unwrap();
        assert_eq!(
            reply.tool_calls,
            [ToolCallRequest {
                id: "call_whole".into(),
                name: "write_file".into(),
                arguments: whole.into(),
            }],
            "{wire:?}"
        );
        assert_eq!(reply.text, "Writing it again.", "{wire:?}");
        assert_eq!(reply.attempts, 2);
        assert_eq!(server.request_count(), 2, "{wire:?}");
        // The first try's text streamed, then the retry said to start over.
        let retried = retries(&events);
        assert_eq!(retried.len(), 1, "{wire:?}: {events:?}");
        assert!(retried[0].1.contains("stream"), "{}", retried[0].1);
        assert_eq!(streamed_text(&events), "Writing it again.");
        // The cut came after all of the first try's text, inside its call.
        let before: String = events
            .iter()
            .take_while(|event| !matches!(event, StreamEvent::Retry { .. }))
            .filter_map(|event| match event {
                StreamEvent::Text(text) => Some(text.as_str()),
                StreamEvent::Retry { .. } => None,
            })
            .collect();
        assert_eq!(before, "Writing it now.", "{wire:?}");
    }
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout_and_is_retried() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        server.push(Step::Stall {
            reply: FakeReply::text("I will stop talking"),
            events: 2,
        });
        server.push(Step::Reply(FakeReply::text("back")));
        let config = ClientConfig {
            idle_timeout: Duration::from_millis(300),
            ..quick_config()
        };
        let client = client_with(&server, wire, config);
        let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
        assert_eq!(reply.unwrap().text, "back", "{wire:?}");
        assert_eq!(server.request_count(), 2, "{wire:?}");
        let retried = retries(&events);
        assert!(
            retried.len() == 1 && retried[0].1.contains("sent nothing for 0.3 s"),
            "{wire:?}: {retried:?}"
        );
    }
}

#[tokio::test]
async fn a_slow_stream_that_keeps_talking_is_not_cut() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        // Each piece comes 100 ms after the last, the whole stream takes
        // well over a second, and the idle timeout is 300 ms: only a
        // per-read deadline lets it through, a whole-body one would cut it.
        let text = "slow but steady, and long enough to take more than a second";
        server.push(Step::Slow {
            reply: FakeReply::text(text),
            delay: Duration::from_millis(100),
        });
        let config = ClientConfig {
            idle_timeout: Duration::from_millis(300),
            ..quick_config()
        };
        let started = std::time::Instant::now();
        let client = client_with(&server, wire, config);
        let reply = complete(client.as_ref(), &ask("hi")).await.0.unwrap();
        assert_eq!(reply.text, text, "{wire:?}");
        assert_eq!(server.request_count(), 1);
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "the stream must outlast several idle timeouts to prove anything"
        );
    }
}

#[tokio::test]
async fn an_error_event_mid_stream_is_retried_when_it_is_overload() {
    for wire in WIRES {
        let server = FakeServer::start(wire);
        server.push(Step::StreamError {
            reply: FakeReply::text("partial words"),
            events: 3,
            error_type: "overloaded_error".into(),
            message: "Overloaded".into(),
        });
        server.push(Step::Reply(FakeReply::text("whole words")));
        let client = client(&server, wire);
        let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
        assert_eq!(reply.unwrap().text, "whole words", "{wire:?}");
        assert_eq!(server.request_count(), 2, "{wire:?}");
        assert!(retries(&events)[0].1.contains("Overloaded"), "{events:?}");
    }
}

#[tokio::test]
async fn an_anthropic_invalid_request_event_mid_stream_is_final() {
    let server = FakeServer::start(Wire::Anthropic);
    server.push(Step::StreamError {
        reply: FakeReply::text("partial"),
        events: 2,
        error_type: "invalid_request_error".into(),
        message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
    });
    server.push(Step::Reply(FakeReply::text("never sent")));
    let client = client(&server, Wire::Anthropic);
    let error = complete(client.as_ref(), &ask("hi")).await.0.unwrap_err();
    assert_eq!(error.kind, ChatErrorKind::Http { status: 400 });
    assert!(
        error.message.contains("prompt is too long"),
        "{}",
        error.message
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    // A port that was just free: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let client = client_at(url, Wire::OpenAi, attempts(3));
    let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
    let error = reply.unwrap_err();
    assert_eq!(error.kind, ChatErrorKind::Connection);
    assert!(
        error.message.contains(&format!("127.0.0.1:{port}")) && error.message.contains("after 3"),
        "{}",
        error.message
    );
    assert_eq!(retries(&events).len(), 2);
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_request_timeout() {
    // The kernel completes the connection into the backlog; nobody reads
    // the request or writes a response.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let config = ClientConfig {
        request_timeout: Duration::from_millis(300),
        ..attempts(2)
    };
    let client = client_at(format!("http://127.0.0.1:{port}"), Wire::Anthropic, config);
    let (reply, events) = complete(client.as_ref(), &ask("hi")).await;
    let error = reply.unwrap_err();
    assert_eq!(error.kind, ChatErrorKind::Timeout, "{}", error.message);
    assert!(
        error.message.contains("no response") && error.message.contains("within 0.3 s"),
        "{}",
        error.message
    );
    assert_eq!(retries(&events).len(), 1);
    drop(silent);
}
