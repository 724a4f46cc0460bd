//! `wicket serve` through the binary: the API over real HTTP with the
//! script provider, two sessions at once, 409 on an open card, queueing,
//! cancel, event-stream resume, and the security refusals.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wicket_test_support::http::Api;
use wicket_test_support::wait_until;

use crate::exec::script;
use crate::*;

/// A running `wicket serve` on a free port; killed on drop.
pub(crate) struct Served {
    pub child: Child,
    pub port: u16,
    pub api: Api,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(f: &Fixture) -> Served {
    serve_with(f, &[])
}

/// `wicket serve` with more environment (a fake provider's address).
pub(crate) fn serve_with(f: &Fixture, env: &[(&str, String)]) -> Served {
    let mut command = wicket();
    command
        .env("WICKET_HOME", &f.home)
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let file: Value =
        serde_json::from_slice(&std::fs::read(f.home.join("server.json")).unwrap()).unwrap();
    let port = file["port"].as_u64().unwrap() as u16;
    let token = file["token"].as_str().unwrap().to_string();
    let served = Served {
        child,
        port,
        api: Api::new(port, &token),
    };
    assert_eq!(
        line.trim(),
        format!("wicket serve: http://127.0.0.1:{port}/#token={token}"),
        "the link carries the token in its fragment, which no server ever receives"
    );
    served
}

/// One request; `headers` replace the defaults of the same name (an empty value drops one).
fn request(
    s: &Served,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let reply = s.api.request(method, path, body, headers);
    (reply.status, reply.body)
}

/// Polls the session until no turn holds it.
fn wait_until_idle(s: &Served, id: &str) {
    let idle = wait_until(Duration::from_secs(20), || {
        s.api.get(&format!("/api/sessions/{id}")).body["running"] == false
    });
    assert!(idle, "session {id} stayed running");
}

fn post(s: &Served, path: &str, body: Value) -> (u16, Value) {
    let reply = s.api.post(path, body);
    (reply.status, reply.body)
}

/// Reads the session's event stream from `after` (or `Last-Event-ID`)
/// until `until` says stop; returns what it read.
fn events(
    s: &Served,
    id: &str,
    after: u64,
    last_id: Option<u64>,
    until: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    for event in s.api.events(id, after, last_id) {
        let done = until(&event);
        seen.push(event);
        if done {
            break;
        }
    }
    seen
}

fn new_session(s: &Served, f: &Fixture, model: &str) -> String {
    let (status, body) = post(
        s,
        "/api/sessions",
        json!({"workspace": f.ws.display().to_string(), "model": model}),
    );
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_string()
}

fn is(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |event| event["type"] == kind
}

#[test]
fn the_api_refuses_what_it_must_with_the_right_status() {
    let f = Fixture::new();
    let s = serve(&f);
    let mode = std::fs::metadata(f.home.join("server.json")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let no_token = request(&s, "GET", "/api/sessions", None, &[("Authorization", "")]);
    assert_eq!(no_token.0, 401);
    assert_eq!(no_token.1["error"]["kind"], "unauthorized");
    let wrong = request(
        &s,
        "GET",
        "/api/sessions",
        None,
        &[("Authorization", "Bearer nope")],
    );
    assert_eq!(wrong.0, 401);
    let host = request(
        &s,
        "GET",
        "/api/sessions",
        None,
        &[("Host", "evil.example:80")],
    );
    assert_eq!(host.0, 403);
    assert_eq!(host.1["error"]["kind"], "forbidden_host");
    let body = Some(json!({"workspace": f.ws.display().to_string()}));
    let origin = request(
        &s,
        "POST",
        "/api/sessions",
        body.clone(),
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(origin.0, 403);
    assert_eq!(origin.1["error"]["kind"], "forbidden_origin");
    let ours = format!("http://localhost:{}", s.port);
    let own = request(&s, "POST", "/api/sessions", body, &[("Origin", &ours)]);
    assert_eq!(own.0, 201, "{}", own.1);
    // No cookie carries the token any more: cookies reach every port of 127.0.0.1.
    let page = s.api.request("GET", "/", None, &[("Authorization", "")]);
    assert_eq!(page.status, 200);
    assert!(page.headers.get("set-cookie").is_none());
    assert!(
        page.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    let cookie = format!("wicket_token={}", s.api.token);
    let by_cookie = request(
        &s,
        "GET",
        "/api/sessions",
        None,
        &[("Authorization", ""), ("Cookie", &cookie)],
    );
    assert_eq!(by_cookie.0, 401);
    // A second server on the same home says where the first one runs.
    let second = wicket()
        .env("WICKET_HOME", &f.home)
        .args(["serve", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains(&format!("http://127.0.0.1:{}", s.port))
            && said.contains(&format!("pid {}", s.child.id())),
        "{said}"
    );
}

#[test]
fn two_sessions_run_at_once_and_an_open_card_refuses_messages() {
    let f = Fixture::new();
    let writer = script(
        &f,
        "writer.json",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "made\n"}}]},
            {"text": "written"}
        ]),
    );
    let talker = script(&f, "talker.json", json!([{"text": "hello"}]));
    let s = serve(&f);
    let a = new_session(&s, &f, &writer);
    let b = new_session(&s, &f, &talker);
    assert_eq!(
        post(
            &s,
            &format!("/api/sessions/{a}/messages"),
            json!({"text": "write"})
        )
        .0,
        202
    );
    let seen = events(&s, &a, 0, None, is("card"));
    let card = seen.last().unwrap()["id"].as_str().unwrap().to_string();
    // B runs to its end while A waits on its card.
    let (status, body) = post(
        &s,
        &format!("/api/sessions/{b}/messages"),
        json!({"text": "hi"}),
    );
    assert_eq!((status, body["state"].as_str()), (202, Some("started")));
    let b_seen = events(&s, &b, 0, None, is("result"));
    assert_eq!(b_seen.last().unwrap()["text"], "hello");
    let (status, body) = post(
        &s,
        &format!("/api/sessions/{a}/messages"),
        json!({"text": "more"}),
    );
    assert_eq!(status, 409);
    assert_eq!(body["error"]["kind"], "blocked");
    assert!(body["error"]["message"].as_str().unwrap().contains(&card));
    let (status, sessions) = request(&s, "GET", "/api/sessions", None, &[]);
    assert_eq!(status, 200);
    let a_row = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == a.as_str())
        .unwrap()
        .clone();
    assert_eq!(a_row["status"], "waiting");
    let answered = post(
        &s,
        &format!("/api/sessions/{a}/cards/{card}"),
        json!({"answer": "allow_once"}),
    );
    assert_eq!(answered.0, 200, "{}", answered.1);
    let done = events(&s, &a, 0, None, is("result"));
    assert_eq!(done.last().unwrap()["text"], "written");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("new.txt")).unwrap(),
        "made\n"
    );
}

#[test]
fn a_message_during_a_turn_queues_and_cancel_stops_a_command() {
    let f = Fixture::new();
    let model = script(
        &f,
        "queue.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "trap '' TERM; touch ignoring; sleep 30"]}}]},
            {"text": "second turn ran"}
        ]),
    );
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "sleep"}),
    );
    let seen = events(&s, &id, 0, None, is("card"));
    let card = seen.last().unwrap()["id"].as_str().unwrap().to_string();
    post(
        &s,
        &format!("/api/sessions/{id}/cards/{card}"),
        json!({"answer": "allow_once"}),
    );
    assert!(
        wait_until(Duration::from_secs(20), || f.ws.join("ignoring").exists()),
        "the command started and ignores TERM"
    );
    let (status, body) = post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "then this"}),
    );
    assert_eq!((status, body["state"].as_str()), (202, Some("queued")));
    let started = Instant::now();
    let (status, _) = post(&s, &format!("/api/sessions/{id}/cancel"), json!({}));
    assert_eq!(status, 200);
    // The cancelled turn ends, then the queued message runs.
    let rest = events(&s, &id, 0, None, is("cancelled"));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "TERM ignored, KILL 2 s later: {took:?}"
    );
    let run = rest
        .iter()
        .find(|e| e["type"] == "tool_result" && e["ok"] == true)
        .expect("the run's result");
    assert_eq!(run["output"]["signal"], 9, "{run}");
    let rest = events(&s, &id, 0, None, is("result"));
    let types: Vec<&str> = rest.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let cancelled = types.iter().position(|t| *t == "cancelled").unwrap();
    let queued = types.iter().position(|t| *t == "queued").unwrap();
    assert!(queued < cancelled, "{types:?}");
    assert_eq!(rest.last().unwrap()["text"], "second turn ran");
}

/// A client that posts the moment it sees a card on the event stream gets
/// 409 blocked every time, never 202 queued.
#[test]
fn a_message_posted_the_moment_a_card_is_seen_is_always_refused() {
    const ROUNDS: usize = 200;
    let f = Fixture::new();
    let mut replies = Vec::new();
    for _ in 0..ROUNDS {
        replies.push(json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]}));
        replies.push(json!({"text": "ok"}));
    }
    let model = script(&f, "cards.json", Value::Array(replies));
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    let mut stream = s.api.events(&id, 0, None);
    let mut queued = 0;
    for round in 0..ROUNDS {
        let (status, _) = post(
            &s,
            &format!("/api/sessions/{id}/messages"),
            json!({"text": format!("round {round}")}),
        );
        assert_eq!(status, 202);
        let card = loop {
            let event = stream.next().expect("the stream goes on");
            if event["type"] == "card" {
                break event["id"].as_str().unwrap().to_string();
            }
        };
        let (status, body) = post(
            &s,
            &format!("/api/sessions/{id}/messages"),
            json!({"text": "too soon"}),
        );
        match status {
            409 => assert_eq!(body["error"]["kind"], "blocked"),
            202 => queued += 1,
            other => panic!("{other}: {body}"),
        }
        post(
            &s,
            &format!("/api/sessions/{id}/cards/{card}"),
            json!({"answer": "deny"}),
        );
        loop {
            let event = stream.next().expect("the stream goes on");
            if event["type"] == "result" {
                break;
            }
        }
        wait_until_idle(&s, &id);
    }
    assert_eq!(queued, 0);
}

#[test]
fn the_event_stream_resumes_after_a_disconnect() {
    let f = Fixture::new();
    let model = script(&f, "talk.json", json!([{"text": "one"}, {"text": "two"}]));
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "first"}),
    );
    let first = events(&s, &id, 0, None, is("turn_ended"));
    let last_seq = first.last().unwrap()["seq"].as_u64().unwrap();
    let seqs: Vec<u64> = first.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=last_seq).collect::<Vec<_>>());
    // `result` is logged a moment before the turn lets go of the session;
    // a message sent in between would be queued, which is right but not
    // what this test is about.
    wait_until_idle(&s, &id);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "second"}),
    );
    let resumed = events(&s, &id, 0, Some(last_seq), is("turn_ended"));
    assert_eq!(resumed[0]["seq"].as_u64(), Some(last_seq + 1));
    assert_eq!(resumed[0]["type"], "user_message");
    assert_eq!(ending(&resumed)["text"], "two");
    let after = events(&s, &id, last_seq + 1, None, |_| true);
    assert_eq!(after[0]["seq"].as_u64(), Some(last_seq + 2));
    // The same log in one JSON response, from any seq; only with the token.
    let (status, body) = request(
        &s,
        "GET",
        &format!("/api/sessions/{id}/log?after=0"),
        None,
        &[],
    );
    assert_eq!(status, 200);
    let logged = body["events"].as_array().unwrap();
    assert_eq!(
        logged.len() as u64,
        resumed.last().unwrap()["seq"].as_u64().unwrap()
    );
    assert_eq!(logged[..first.len()], first[..]);
    let path = format!("/api/sessions/{id}/log?after={last_seq}");
    let (_, body) = request(&s, "GET", &path, None, &[]);
    assert_eq!(body["events"][0], resumed[0]);
    let (status, _) = request(&s, "GET", &path, None, &[("Authorization", "")]);
    assert_eq!(status, 401);
}

/// Hostile ignore files (a FIFO, a link to /dev/zero) in one session's
/// workspace neither hang nor crash the server: the grep returns, and
/// another session on the same server still works.
#[test]
fn a_hostile_workspace_cannot_take_the_server_down() {
    let f = Fixture::new();
    f.write("sub/a.txt", "needle\n");
    f.link("sub/.gitignore", "/dev/zero");
    let fifo = f.ws.join(".ignore");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let model = script(
        &f,
        "grep.json",
        json!([
            {"tool_calls": [{"name": "grep", "arguments": {"pattern": "needle"}}]},
            {"text": "searched"}
        ]),
    );
    let talker = script(&f, "talker.json", json!([{"text": "still here"}]));
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "find it"}),
    );
    let seen = events(&s, &id, 0, None, is("result"));
    let matches =
        seen.iter().find(|e| e["type"] == "tool_result").unwrap()["output"]["matches"].clone();
    assert_eq!(matches, json!(["sub/a.txt:1:needle"]));
    let other = new_session(&s, &f, &talker);
    post(
        &s,
        &format!("/api/sessions/{other}/messages"),
        json!({"text": "hi"}),
    );
    let seen = events(&s, &other, 0, None, is("result"));
    assert_eq!(seen.last().unwrap()["text"], "still here");
}

#[test]
fn allow_always_widened_over_http_saves_a_prefix_rule_and_grants_are_listed_and_revoked() {
    let f = Fixture::new();
    let model = script(
        &f,
        "always.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "one", "two"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["echo", "three"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    let seen = events(&s, &id, 0, None, is("card"));
    let card = seen.last().unwrap();
    assert_eq!(card["always"]["argv"], json!(["echo", "one", "two"]));
    let card = card["id"].as_str().unwrap().to_string();
    // A prefix that is not the card's own argv is refused, and the card stays open.
    let (status, body) = post(
        &s,
        &format!("/api/sessions/{id}/cards/{card}"),
        json!({"answer": "allow_always", "argv_prefix": ["rm"]}),
    );
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (400, Some("invalid_args"))
    );
    let (status, body) = post(
        &s,
        &format!("/api/sessions/{id}/cards/{card}"),
        json!({"answer": "allow_always", "argv_prefix": ["echo"]}),
    );
    assert_eq!(status, 200, "{body}");
    // `echo three` goes through on the saved rule; `true` asks, and is allowed for the session.
    let seen = events(&s, &id, 0, None, |event| {
        event["type"] == "card" && event["argv"] == json!(["true"])
    });
    let through = seen
        .iter()
        .find(|event| {
            event["type"] == "tool_call" && event["arguments"]["argv"] == json!(["echo", "three"])
        })
        .unwrap();
    let rule = through["allowed_by"]["rule"].as_str().unwrap().to_string();
    let card = seen.last().unwrap()["id"].as_str().unwrap().to_string();
    post(
        &s,
        &format!("/api/sessions/{id}/cards/{card}"),
        json!({"answer": "allow_session"}),
    );
    let done = events(&s, &id, 0, None, is("turn_ended"));
    let second_true = done
        .iter()
        .filter(|event| {
            event["type"] == "tool_call" && event["arguments"]["argv"] == json!(["true"])
        })
        .nth(1)
        .unwrap();
    let grant = second_true["allowed_by"]["grant"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, rules) = request(&s, "GET", "/api/rules", None, &[]);
    assert_eq!(status, 200);
    let saved = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == rule.as_str())
        .unwrap();
    assert_eq!(saved["argv_prefix"], json!(["echo"]));
    assert_eq!(saved["origin"]["session"], id.as_str());
    let (status, grants) = request(&s, "GET", &format!("/api/sessions/{id}/grants"), None, &[]);
    assert_eq!(status, 200);
    assert_eq!(grants[0]["id"], grant.as_str(), "{grants}");
    assert_eq!(grants[0]["origin"]["card"], card.as_str());
    let (status, _) = request(
        &s,
        "DELETE",
        &format!("/api/sessions/{id}/grants/{grant}"),
        None,
        &[],
    );
    assert_eq!(status, 200);
    let (_, grants) = request(&s, "GET", &format!("/api/sessions/{id}/grants"), None, &[]);
    assert_eq!(grants, json!([]));
    let (status, _) = request(&s, "DELETE", &format!("/api/rules/{rule}"), None, &[]);
    assert_eq!(status, 200);
    let (status, body) = request(&s, "DELETE", &format!("/api/rules/{rule}"), None, &[]);
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (404, Some("not_found"))
    );
    let (status, body) = post(
        &s,
        "/api/rules",
        json!({"action": "deny", "tool": "run", "argv_prefix": ["git", "push"]}),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(&s, "/api/rules", json!({"action": "allow", "tool": "run"}));
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (400, Some("invalid_args"))
    );
}

#[test]
fn rewind_over_http_shows_its_plan_is_refused_mid_turn_and_can_be_undone() {
    let f = Fixture::new();
    let model = script(
        &f,
        "rewind.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["sh", "-c", "echo new > n.txt"]}}]},
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["true"]}}]},
            {"text": "done"}
        ]),
    );
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    let card = events(&s, &id, 0, None, is("card")).last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    post(
        &s,
        &format!("/api/sessions/{id}/cards/{card}"),
        json!({"answer": "allow_once"}),
    );
    let seen = events(&s, &id, 0, None, |event| {
        event["type"] == "card" && event["argv"] == json!(["true"])
    });
    // A card is open: the turn runs, and a rewind is refused.
    let rewind = format!("/api/sessions/{id}/rewind");
    let (status, body) = post(&s, &rewind, json!({"dry_run": true}));
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (409, Some("busy")),
        "{body}"
    );
    let card = seen.last().unwrap()["id"].as_str().unwrap().to_string();
    post(
        &s,
        &format!("/api/sessions/{id}/cards/{card}"),
        json!({"answer": "deny"}),
    );
    wait_until_idle(&s, &id);
    let first_call = seen
        .iter()
        .find(|event| event["type"] == "tool_call")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    let (status, body) = post(&s, &rewind, json!({"to": first_call, "dry_run": true}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["plan"]["delete"], json!(["n.txt"]), "{body}");
    assert!(f.ws.join("n.txt").exists(), "a dry run changes nothing");
    let (status, body) = post(&s, &rewind, json!({"to": first_call}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["rewound"]["type"], "rewound");
    assert_eq!(body["rewound"]["deleted"], json!(["n.txt"]));
    assert!(!f.ws.join("n.txt").exists());
    let (status, body) = post(&s, &rewind, json!({"undo": true}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(f.read("n.txt"), "new\n");
    let (status, body) = post(&s, &rewind, json!({"to": 100_000}));
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (404, Some("not_found")),
        "{body}"
    );
    let listed = s.api.get(&format!("/api/sessions/{id}/checkpoints")).body;
    assert_eq!(
        listed["checkpoints"].as_array().unwrap().len(),
        4,
        "{listed}"
    );
}

#[test]
fn a_deny_over_the_api_carries_the_persons_reason_to_the_log_and_the_model() {
    let f = Fixture::new();
    let model = script(
        &f,
        "why.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made"]}}]},
            {"text": "done"}
        ]),
    );
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "go"}),
    );
    let card = events(&s, &id, 0, None, is("card")).last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let answer = format!("/api/sessions/{id}/cards/{card}");
    let (status, body) = post(
        &s,
        &answer,
        json!({"answer": "allow_once", "reason": "a reason is for a deny"}),
    );
    assert_eq!(
        (status, body["error"]["kind"].as_str()),
        (400, Some("invalid_args")),
        "{body}"
    );
    let (status, body) = post(
        &s,
        &answer,
        json!({"answer": "deny", "reason": "  not in this folder\n"}),
    );
    assert_eq!(status, 200, "{body}");
    let seen = events(&s, &id, 0, None, is("tool_result"));
    let result = seen.last().unwrap();
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(r#"Their reason: "not in this folder"."#),
        "{result}"
    );
    let answered = seen.iter().find(|event| event["type"] == "answer").unwrap();
    assert_eq!(answered["reason"], "not in this folder");
    assert!(!f.ws.join("made").exists());
}

#[test]
fn a_message_in_plan_mode_starts_a_turn_that_offers_only_reads_and_a_plan() {
    let f = Fixture::new();
    let model = script(
        &f,
        "planned.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {"argv": ["touch", "made"]}}]},
            {"text": "done"}
        ]),
    );
    let s = serve(&f);
    let id = new_session(&s, &f, &model);
    let (status, body) = post(
        &s,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "plan it", "mode": "plan"}),
    );
    assert_eq!(status, 202, "{body}");
    let seen = events(&s, &id, 0, None, is("turn_ended"));
    let user = seen
        .iter()
        .find(|event| event["type"] == "user_message")
        .unwrap();
    assert_eq!(user["plan"], true);
    let result = seen
        .iter()
        .find(|event| event["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["error"]["kind"], "denied", "{result}");
    assert!(
        !seen.iter().any(|event| event["type"] == "card"),
        "no card: refused before the gate"
    );
    assert!(!f.ws.join("made").exists());
}
