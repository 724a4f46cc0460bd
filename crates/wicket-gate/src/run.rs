//! Commands through the gate: the model's `run`, and every other command
//! (a workspace's hook or MCP server, a home one): the one key a command is
//! allowed by (argv, resolved folder, network, git, reads), the card that
//! shows its sandbox, and how it is confined.

use wicket_os::spawn::Confine;
use wicket_protocol::rules::{Argv, Matcher};
use wicket_protocol::{
    Answer, CallId, Card, CardKind, Network, RuleId, RunArgs, RunCard, RunSource, SandboxSummary,
    ToolOutput, WireError,
};
use wicket_session::{GrantKind, RunKey};
use wicket_tools::Cancel;
use wicket_tools::limits::RUN_DEFAULT_TIMEOUT_S;
use wicket_tools::tools::run::{RunDir, timeout_of, validate};

use crate::rules::{self, Subject};
use crate::sandbox::{Access, ReadPath};
use crate::{Allowed, Answerer, CommandRequest, Gate, Pass, net, withdrawn};

impl Gate<'_> {
    /// Refuses the machine's own network where the managed policy forbids it.
    fn network_allowed(&self, network: Network) -> Result<(), WireError> {
        let floor = &self.confinement.sandbox.floor;
        if network != Network::Direct || !floor.forbid_direct_network {
            return Ok(());
        }
        Err(WireError::new(
            wicket_protocol::ErrorKind::Denied,
            format!(
                "the managed policy ({}) forbids the machine's own network (\"network\": \"direct\"); \
                 nothing ran. Ask for \"network\": true instead: each host then goes through Wicket's \
                 proxy, and the person approves it",
                floor.named()
            ),
        ))
    }

    pub(crate) fn run(
        &self,
        call_id: &CallId,
        args: &RunArgs,
        answerer: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        // A call that would fail is refused before any card: the cwd must
        // be a folder inside the workspace.
        let dir = validate(self.tools.workspace(), args)?;
        let timeout = timeout_of(args)?;
        let allowed = self.allow_command(
            call_id,
            &CommandRequest {
                tool: "run",
                argv: &args.argv,
                dir: &dir,
                timeout_s: (timeout != RUN_DEFAULT_TIMEOUT_S).then_some(timeout),
                network: args.network,
                git: args.git,
                read: &args.read,
                source: RunSource::Tool,
                preview: args.preview,
            },
            answerer,
        )?;
        // Nothing runs before the checkpoint of the workspace is taken.
        self.settle()?;
        if cancel.is_cancelled() {
            return Err(withdrawn());
        }
        if allowed.preview {
            return self.run_previewed(call_id, args, &dir, answerer, cancel);
        }
        let proxied = allowed
            .confine
            .sandbox
            .as_ref()
            .is_some_and(|policy| policy.network == Network::Proxied);
        if proxied {
            let run = net::Proxied {
                call_id,
                args,
                dir: &dir,
                cancel,
            };
            return self
                .run_proxied(run, allowed.confine, answerer)
                .map(ToolOutput::Run);
        }
        Ok(ToolOutput::Run(self.tools.run(
            args,
            &dir,
            allowed.confine,
            None,
            cancel,
        )?))
    }

    /// Asks for a command unless its exact key (argv, resolved folder,
    /// network) was allowed for the session; returns how to start it.
    pub fn allow_command(
        &self,
        call_id: &CallId,
        request: &CommandRequest<'_>,
        answerer: &mut dyn Answerer,
    ) -> Result<Allowed, WireError> {
        self.audience.set(crate::Audience::of(answerer));
        self.network_allowed(request.network)?;
        let (access, read) = self.access(request.network, request.git, request.read)?;
        let key = Self::run_key(request.argv, request.dir, &access);
        let sandbox = self.sandbox_summary(&access);
        // Refused before any card when it could never start.
        let confine = self.confine(&sandbox, &access)?;
        let mut managed = None;
        match self.run_pass(request.argv, request.dir, &access)? {
            Pass::Held(rule) => managed = Some(self.held_note(&rule)?),
            Pass::Through(_) => {
                return Ok(Allowed {
                    confine,
                    preview: false,
                });
            }
            // Where no preview can be made, the card says why and asks.
            Pass::Preview(_) if self.no_preview(request.source).is_none() => {
                return Ok(Allowed {
                    confine,
                    preview: true,
                });
            }
            Pass::Preview(_) | Pass::Card | Pass::Asked => {}
        }
        let always = self.always(Matcher::Run {
            argv: Argv::Exact(request.argv.to_vec()),
            cwd: Some(rules::exact_glob(&request.dir.shown)),
            network: request.network.any().then_some(request.network),
            git: request.git.then_some(true),
            read: (!request.read.is_empty()).then(|| request.read.to_vec()),
        });
        let card = Card {
            // What the gate could not read is never saved as allowed.
            always: managed.is_none().then(|| Box::new(always)),
            ..Card::new(
                request.tool.to_string(),
                CardKind::Run(RunCard {
                    preview: request.preview,
                    no_preview: self.no_preview(request.source),
                    managed,
                    argv: request.argv.to_vec(),
                    cwd: request.dir.shown.clone(),
                    timeout_s: request.timeout_s,
                    network: request.network,
                    git: request.git,
                    read: read.iter().map(ReadPath::shown).collect(),
                    sandbox,
                    source: request.source,
                }),
            )
        };
        let answered = self.ask(call_id, card, answerer)?;
        let preview = answered.answer == Answer::Preview;
        match answered.answer {
            Answer::Deny | Answer::Apply | Answer::Discard => {
                Err(answered.denied("this command; it never started"))
            }
            Answer::AllowOnce | Answer::AllowAlways | Answer::Preview => {
                Ok(Allowed { confine, preview })
            }
            Answer::AllowSession => {
                self.grant(&answered.card, GrantKind::Run, &key, |allowed| {
                    allowed.run.insert(key.clone());
                })?;
                Ok(Allowed { confine, preview })
            }
        }
    }

    /// How a command of the person's own config (a home Stop hook, a home
    /// MCP server) starts: no card, the same sandbox, with the network when
    /// the config gives it.
    pub fn home_command(
        &self,
        network: Network,
        git: bool,
        read: &[String],
    ) -> Result<Confine, WireError> {
        let (access, _) = self.access(network, git, read)?;
        self.confine(&self.sandbox_summary(&access), &access)
    }

    pub(crate) fn confine(
        &self,
        summary: &SandboxSummary,
        access: &Access,
    ) -> Result<Confine, WireError> {
        self.confinement.sandbox.confine(
            self.tools.workspace().root(),
            &self.confinement.home,
            summary,
            access,
        )
    }

    /// What a command asks for beyond the defaults, its `read` paths checked.
    pub(crate) fn access(
        &self,
        network: Network,
        git: bool,
        read: &[String],
    ) -> Result<(Access, Vec<ReadPath>), WireError> {
        let read = self
            .confinement
            .sandbox
            .read_paths(read, &self.confinement.home)?;
        let access = Access {
            network,
            git,
            read: read.iter().map(|path| path.real.clone()).collect(),
        };
        Ok((access, read))
    }

    fn run_key(argv: &[String], dir: &RunDir, access: &Access) -> RunKey {
        RunKey {
            argv: argv.to_vec(),
            cwd: dir.absolute.display().to_string(),
            network: access.network,
            git: access.git,
            read: access
                .read
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
        }
    }

    /// What a card says of the sandbox a command with `access` runs in, here.
    pub(crate) fn sandbox_summary(&self, access: &Access) -> SandboxSummary {
        self.confinement
            .sandbox
            .summary(self.tools.workspace().root(), access)
    }

    /// What a held run card says: the managed rule, what it denies, and
    /// why the card is up.
    fn held_note(&self, rule: &RuleId) -> Result<String, WireError> {
        let words = self
            .rules_in_force()?
            .iter()
            .find(|(_, held)| held.id == *rule)
            .and_then(|(_, held)| match &held.matcher {
                Matcher::Run {
                    argv: Argv::Prefix(words) | Argv::Exact(words),
                    ..
                } => Some(words.join(" ")),
                Matcher::Run {
                    argv: Argv::Line(line),
                    ..
                } => Some(format!("{line}…")),
                _ => None,
            })
            .unwrap_or_default();
        Ok(format!(
            "a managed rule ({rule}) denies {words}: Wicket cannot read everything this command \
             runs, so it may be that; it is asked every time and cannot be always allowed"
        ))
    }

    pub(crate) fn run_pass(
        &self,
        argv: &[String],
        dir: &RunDir,
        access: &Access,
    ) -> Result<Pass, WireError> {
        let key = Self::run_key(argv, dir, access);
        let grant = self.held_grant(GrantKind::Run, &key, |allowed| allowed.run.contains(&key));
        let subject = Subject::Run {
            argv,
            cwd: &dir.shown,
            network: access.network,
            git: access.git,
            read: &access.read,
        };
        self.pass(&subject, grant)
    }
}
