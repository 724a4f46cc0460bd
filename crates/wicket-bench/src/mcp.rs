//! MCP: how long a session waits for three stdio servers (started
//! together, against one after another), and what the gate and the client
//! add to a call of `echo` on server-everything, allowed for the session.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wicket_core::mcp::McpSession;
use wicket_gate::sandbox::SandboxSettings;
use wicket_gate::{Confinement, Policy};
use wicket_mcp::{Hub, ServerSpec, Transport};
use wicket_protocol::{Answer, McpCall};
use wicket_session::Session;
use wicket_tools::{Cancel, Tools};

use crate::{Row, ms};

fn everything() -> Result<PathBuf> {
    let index = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    anyhow::ensure!(
        index.exists(),
        "server-everything is not installed: run `npm ci` in tests/mcp"
    );
    Ok(index.canonicalize()?)
}

fn spec(name: &str, index: &std::path::Path) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        transport: Transport::Stdio {
            read: Default::default(),
            argv: vec!["node".into(), index.display().to_string(), "stdio".into()],
            env: Vec::new(),
            cwd: None,
            network: wicket_protocol::Network::Off,
            write_git: false,
        },
        enabled: true,
        enabled_tools: None,
        disabled_tools: BTreeSet::new(),
        auto_allow: BTreeSet::new(),
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(30),
        from_workspace: false,
        fails: None,
    }
}

struct World {
    tools: Tools,
    session: Session,
    confinement: Confinement,
    rules: wicket_gate::rules::Rules,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl World {
    fn new() -> Result<World> {
        let dir = tempfile::tempdir()?;
        let tools = Tools::open(dir.path()).map_err(|e| anyhow::anyhow!(e.message))?;
        let session = Session::in_memory(tools.workspace().root());
        Ok(World {
            tools,
            session,
            confinement: Confinement {
                sandbox: SandboxSettings::default(),
                home: std::env::temp_dir().join("wicket-bench-home"),
            },
            rules: wicket_gate::rules::Rules::default(),
            runtime: tokio::runtime::Runtime::new()?,
            _dir: dir,
        })
    }

    fn mcp<'a>(&'a self, hub: &'a Hub) -> McpSession<'a> {
        McpSession {
            tools: &self.tools,
            session: &self.session,
            confinement: &self.confinement,
            rules: &self.rules,
            hub,
        }
    }

    /// Starts `specs` on a new hub; the time until all have listed their tools.
    fn start(&self, specs: &[ServerSpec]) -> Result<(Hub, Duration)> {
        let hub = Hub::new(self.runtime.handle().clone());
        let started = Instant::now();
        self.mcp(&hub).start(specs, &mut Policy(Answer::AllowOnce));
        let took = started.elapsed();
        anyhow::ensure!(
            hub.running().len() == specs.len(),
            "not every server started: {:?}",
            hub.standings()
        );
        Ok((hub, took))
    }
}

fn median_of(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

pub(crate) fn mcp_rows(rows: &mut Vec<Row>) -> Result<()> {
    wicket_os::launch::install_launcher(crate::wicket_binary()?);
    let index = everything()?;
    let world = World::new()?;
    let three: Vec<ServerSpec> = ["a", "b", "c"]
        .iter()
        .map(|name| spec(name, &index))
        .collect();
    let (mut alone, mut together) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let mut sum = Duration::ZERO;
        for one in &three {
            let (hub, took) = world.start(std::slice::from_ref(one))?;
            hub.stop();
            sum += took;
        }
        alone.push(sum);
        let (hub, took) = world.start(&three)?;
        hub.stop();
        together.push(took);
    }
    let (alone, together) = (median_of(alone), median_of(together));
    rows.push(Row {
        name: "mcp: session start, 3 stdio servers (server-everything, sandboxed)".into(),
        wicket: format!("together {}", ms(together)),
        reference: format!("one after another {}", ms(alone)),
        ratio: Some(together.as_secs_f64() / alone.as_secs_f64()),
    });

    let (hub, _) = world.start(&three[..1])?;
    let mcp = world.mcp(&hub);
    let arguments = serde_json::json!({"message": "hi"})
        .as_object()
        .cloned()
        .context("an object")?;
    let call = McpCall {
        name: "mcp__a__echo".into(),
        server: "a".into(),
        tool: "echo".into(),
        arguments: arguments.clone(),
    };
    let cancel = Cancel::default();
    let mut answers = Policy(Answer::AllowSession);
    let mut gated = Vec::with_capacity(1000);
    let mut direct = Vec::with_capacity(1000);
    for i in 0..1001 {
        let started = Instant::now();
        mcp.call(
            &format!("call-{i}").into(),
            &call,
            wicket_gate::Hooked::Nothing,
            &mut answers,
            &cancel,
        )
        .map_err(|e| anyhow::anyhow!(e.message))?;
        if i > 0 {
            gated.push(started.elapsed());
        }
        let started = Instant::now();
        let (result, _) = hub.call("a", "echo", arguments.clone(), &cancel);
        result.map_err(|e| anyhow::anyhow!(e.message))?;
        direct.push(started.elapsed());
    }
    hub.stop();
    let (gated_median, direct_median) = (median_of(gated.clone()), median_of(direct.clone()));
    rows.push(Row {
        name: "mcp: echo x1000 through the gate (allow_session) and the client".into(),
        wicket: format!(
            "median {} p99 {}",
            ms(gated_median),
            ms(percentile(&gated, 0.99))
        ),
        reference: format!(
            "client alone {} p99 {}",
            ms(direct_median),
            ms(percentile(&direct, 0.99))
        ),
        ratio: Some(gated_median.as_secs_f64() / direct_median.as_secs_f64()),
    });
    Ok(())
}
