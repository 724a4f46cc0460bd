//! What both wires share: the step queue, errors, broken streams, the log.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use wicket_fake::{FakeReply, FakeServer, Step, Wire};

use crate::client::{PATIENCE, host_port, post, read_events_then_silence, read_response, send};
use crate::{anthropic, openai};

/// The endpoint and a valid request body for `wire`.
fn endpoint(wire: Wire) -> (&'static str, serde_json::Value) {
    match wire {
        Wire::OpenAi => (openai::PATH, openai::request(false)),
        Wire::Anthropic => (anthropic::PATH, anthropic::request()),
    }
}

#[test]
fn base_urls_follow_each_providers_convention() {
    let openai = FakeServer::start(Wire::OpenAi);
    let anthropic = FakeServer::start(Wire::Anthropic);

    let openai_port = host_port(&openai.base_url());
    assert_eq!(openai.base_url(), format!("http://{openai_port}/v1"));
    assert!(openai_port.starts_with("127.0.0.1:"));
    let anthropic_port = host_port(&anthropic.base_url());
    assert_eq!(anthropic.base_url(), format!("http://{anthropic_port}"));
    assert_ne!(openai_port, anthropic_port);
}

#[test]
fn status_with_retry_after_sets_the_header_and_the_body() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::Status {
        status: 429,
        body: Wire::OpenAi.error_body(429, "Rate limit reached"),
        retry_after: Some("2".to_owned()),
    });
    let response = post(&server, openai::PATH, &openai::request(false));

    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("2"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json(),
        json!({"error": {"message": "Rate limit reached", "type": "requests",
                         "param": null, "code": "rate_limit_exceeded"}})
    );
}

#[test]
fn status_constructor_builds_each_providers_error_body() {
    let server = FakeServer::start(Wire::Anthropic);
    server.push(Step::status(Wire::Anthropic, 529, "Overloaded"));
    let response = post(&server, anthropic::PATH, &anthropic::request());

    assert_eq!(response.status, 529);
    assert_eq!(response.header("retry-after"), None);
    assert_eq!(
        response.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    let anthropic_types: Vec<_> = [400, 401, 403, 404, 413, 429, 500, 503]
        .map(|status| Wire::Anthropic.error_body(status, "m")["error"]["type"].clone())
        .into();
    #[rustfmt::skip]
    let expected = [
        "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
        "request_too_large", "rate_limit_error", "api_error", "api_error",
    ];
    assert_eq!(anthropic_types, expected);
    let openai = Wire::OpenAi.error_body(503, "down");
    assert_eq!(
        openai,
        json!({"error": {"message": "down", "type": "server_error", "param": null, "code": null}})
    );
    assert_eq!(
        Wire::OpenAi.error_body(400, "bad")["error"]["type"],
        "invalid_request_error"
    );
}

#[test]
fn cut_after_ends_without_the_terminating_chunk() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeServer::start(wire);
        server.push(Step::CutAfter {
            reply: FakeReply::text("Hello there, world"),
            events: 3,
        });
        let (path, request) = endpoint(wire);
        let response = post(&server, path, &request);

        assert_eq!(response.status, 200);
        assert!(
            !response.timed_out,
            "{wire:?}: the server closed the connection"
        );
        assert!(!response.complete, "{wire:?}");
        assert!(!response.raw_body.ends_with(b"0\r\n\r\n"), "{wire:?}");
        assert_eq!(response.events().len(), 3, "{wire:?}");
        assert!(!response.text().contains("[DONE]") && !response.text().contains("message_stop"));
    }
}

#[test]
fn stall_sends_nothing_more_and_drop_still_returns() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::Stall {
        reply: FakeReply::text("Hello there"),
        events: 2,
    });
    let mut stream = send(
        &server,
        "POST",
        openai::PATH,
        &[],
        &openai::request(false).to_string(),
    );
    let response = read_events_then_silence(
        &mut stream,
        2,
        Duration::from_secs(20),
        Duration::from_millis(200),
    );

    assert!(response.timed_out, "the connection stays open and silent");
    assert!(!response.complete);
    assert_eq!(response.events().len(), 2);
    drop(server);
    drop(stream);
}

#[test]
fn slow_sleeps_before_every_event() {
    let server = FakeServer::start(Wire::OpenAi);
    let delay = Duration::from_millis(25);
    server.push(Step::Slow {
        reply: FakeReply::text("hi"),
        delay,
    });
    let started = Instant::now();
    let response = post(&server, openai::PATH, &openai::request(false));

    let events = response.events().len();
    assert_eq!(events, 4, "role, text, finish, [DONE]");
    assert!(
        started.elapsed() >= delay * 4,
        "took {:?}",
        started.elapsed()
    );
    assert!(response.complete);
}

#[test]
fn requests_records_method_path_headers_and_body() {
    let server = FakeServer::start(Wire::Anthropic);
    server.push(Step::Reply(FakeReply::text("hi")));
    let request = anthropic::request();
    let headers = [
        ("X-Api-Key", "sk-test"),
        ("anthropic-version", "2023-06-01"),
    ];
    let mut stream = send(
        &server,
        "POST",
        "/v1/messages?beta=true",
        &headers,
        &request.to_string(),
    );
    read_response(&mut stream, PATIENCE);

    let recorded = server.requests();
    assert_eq!(server.request_count(), 1);
    assert_eq!(recorded.len(), 1);
    let first = &recorded[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.body, request);
    assert_eq!(first.header("x-api-key"), Some("sk-test"));
    assert_eq!(first.header("X-API-KEY"), Some("sk-test"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.header("missing"), None);
    assert!(
        first.headers.iter().any(|(name, _)| name == "x-api-key"),
        "names are lowercase"
    );
}

#[test]
fn a_body_that_is_not_json_is_recorded_as_text() {
    let server = FakeServer::start(Wire::OpenAi);
    let mut stream = send(&server, "POST", openai::PATH, &[], "not json");
    read_response(&mut stream, PATIENCE);

    assert_eq!(server.requests()[0].body, json!("not json"));
}

#[test]
fn empty_queue_answers_500_naming_the_request() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeServer::start(wire);
        server.push(Step::Reply(FakeReply::text("only one")));
        let (path, request) = endpoint(wire);
        post(&server, path, &request);
        let response = post(&server, path, &request);

        assert_eq!(response.status, 500, "{wire:?}");
        let message = "wicket-fake: no scripted response left for request 2";
        assert_eq!(response.json(), wire.error_body(500, message), "{wire:?}");
        assert_eq!(server.request_count(), 2, "{wire:?}: recorded all the same");
    }
}

#[test]
fn unknown_path_answers_404_records_it_and_keeps_the_step() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::Reply(FakeReply::text("still here")));
    let response = post(&server, "/v1/completions", &openai::request(false));
    let mut get = send(&server, "GET", openai::PATH, &[], "");
    let get = read_response(&mut get, PATIENCE);

    assert_eq!(response.status, 404);
    assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    assert!(
        response.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("POST /v1/completions")
    );
    assert_eq!(get.status, 404);
    let paths: Vec<String> = server
        .requests()
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(paths, ["POST /v1/completions", "GET /v1/chat/completions"]);

    let events = post(&server, openai::PATH, &openai::request(false)).events();
    assert_eq!(openai::assemble(&events).text, "still here");
}

#[test]
fn byte_pieces_split_utf8_and_still_reassemble() {
    let text = "héllo wörld — 日本語";
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeServer::start(wire);
        let reply = FakeReply {
            byte_pieces: Some(5),
            ..FakeReply::text(text).with_tool_call("call_1", "note", r#"{"text":"ünï — 語"}"#)
        };
        server.push(Step::Reply(reply.clone()));
        let (path, request) = endpoint(wire);
        let response = post(&server, path, &request);

        assert!(response.complete, "{wire:?}");
        assert!(
            response.chunks.iter().all(|chunk| chunk.len() <= 5),
            "{wire:?}"
        );
        let split_char = response
            .chunks
            .iter()
            .any(|chunk| std::str::from_utf8(chunk).is_err());
        assert!(split_char, "{wire:?}: some piece ends inside a character");
        let events = response.events();
        let assembled = match wire {
            Wire::OpenAi => openai::assemble(&events),
            Wire::Anthropic => anthropic::assemble(&events),
        };
        assert_eq!(assembled, openai::expected(&reply), "{wire:?}");
    }
}

#[test]
fn steps_are_played_in_fifo_order() {
    let server = FakeServer::start(Wire::OpenAi);
    server.push(Step::status(Wire::OpenAi, 503, "busy"));
    server.push(Step::Reply(FakeReply::text("second")));

    assert_eq!(
        post(&server, openai::PATH, &openai::request(false)).status,
        503
    );
    let events = post(&server, openai::PATH, &openai::request(false)).events();
    assert_eq!(openai::assemble(&events).text, "second");
}

#[test]
fn dropping_the_server_closes_its_port() {
    let server = FakeServer::start(Wire::OpenAi);
    let host = host_port(&server.base_url());
    assert!(TcpStream::connect(&host).is_ok());
    drop(server);

    assert!(TcpStream::connect(&host).is_err());
}

#[test]
fn starts_and_stops_inside_an_async_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = FakeServer::start(Wire::Anthropic);
        server.push(Step::Reply(FakeReply::text("async")));
        let (path, request) = endpoint(Wire::Anthropic);
        let events = tokio::task::spawn_blocking(move || {
            let events = post(&server, path, &request).events();
            (anthropic::assemble(&events).text, server)
        });
        let (text, server) = events.await.unwrap();
        assert_eq!(text, "async");
        drop(server);
    });
}
