//! Log events into spans and metrics, with the times the log gives.
//!
//! The span tree of one turn (a trace of its own):
//!
//! ```text
//! wicket.turn                      user_message … turn_ended
//! ├── chat MODEL                   previous event … assistant_message (gen_ai.*)
//! ├── wicket.tool read_file        tool_call … tool_result (decision, answer)
//! ├── wicket.tool run              tool_call … tool_result
//! │   ├── wicket.hook NAME         its run (duration_ms before its event)
//! │   └── wicket.command           the command's run (exit code, layers, hosts)
//! └── wicket.tool task             … a sub-task's turn is a child of this call
//!     └── wicket.turn (child session)
//! ```

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue, metrics::Counter, metrics::Meter};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use wicket_protocol::event::{
    AnswerEvent, AssistantMessageEvent, CardEvent, HookRunEvent, TaskEvent, ToolCallEvent,
    ToolResultEvent, TurnEndedEvent, UserMessageEvent,
};
use wicket_protocol::rules::AllowedBy;
use wicket_protocol::{CORE_TOOL_NAMES, Event, EventBody, TOOL_NAMES, ToolOutput, Usage};

/// A call between its `tool_call` and its `tool_result`.
struct Call {
    cx: Context,
    name: String,
    /// How it was let through (or not): card, rule, grant, hook, free.
    decision: &'static str,
    answer: Option<String>,
    /// From card to answer.
    person: Option<Duration>,
    /// A hook denied it.
    denied_by_hook: bool,
    /// A command's sandbox layers, as its card showed them.
    layers: Option<Vec<String>>,
}

/// A session's open turn and calls.
#[derive(Default)]
struct Session {
    turn: Option<Context>,
    /// When the last event was: the start of the next model request.
    last: Option<SystemTime>,
    model: Option<String>,
    calls: HashMap<String, Call>,
    /// Open cards: their call, when they went up, their kind.
    cards: HashMap<String, (String, SystemTime, &'static str)>,
    /// A call's PreToolUse hooks run (and are logged) before the call is:
    /// they wait here for its span.
    hooks: HashMap<String, Vec<(HookRunEvent, SystemTime)>>,
}

/// The counters of the metrics.
struct Metrics {
    cards: Counter<u64>,
    tokens: Counter<u64>,
    cost: Counter<f64>,
    commands: Counter<u64>,
}

/// Turns each session's events into spans, in order.
pub(crate) struct Builder {
    tracer: SdkTracer,
    metrics: Metrics,
    log_content: bool,
    sessions: HashMap<String, Session>,
    /// A sub-task's session: the parent call's span, its turn's parent.
    parents: HashMap<String, Context>,
}

/// An event's time, or now when it has none readable.
fn time_of(event: &Event) -> SystemTime {
    time::OffsetDateTime::parse(&event.ts, &time::format_description::well_known::Rfc3339)
        .map_or_else(|_| SystemTime::now(), SystemTime::from)
}

/// The GenAI conventions' provider name for Wicket's `provider:name`.
fn system_of(model: &str) -> &str {
    model
        .split_once(':')
        .map_or(model, |(provider, _)| provider)
}

fn name_of(model: &str) -> &str {
    model.split_once(':').map_or(model, |(_, name)| name)
}

fn allowed_by(by: &AllowedBy) -> &'static str {
    match by {
        AllowedBy::Rule(_) | AllowedBy::Rules(_) => "rule",
        AllowedBy::Grant(_) => "grant",
        AllowedBy::Hook(_) => "hook",
        AllowedBy::Card(_) => "card",
    }
}

impl Builder {
    pub(crate) fn new(provider: SdkTracerProvider, meter: &Meter, log_content: bool) -> Builder {
        Builder {
            tracer: provider.tracer("wicket"),
            metrics: Metrics {
                cards: meter
                    .u64_counter("wicket.cards")
                    .with_description("Cards, by kind and answer")
                    .build(),
                tokens: meter
                    .u64_counter("wicket.tokens")
                    .with_description(
                        "Model tokens, by kind (input, output, cache_read, cache_write)",
                    )
                    .build(),
                cost: meter
                    .f64_counter("wicket.cost")
                    .with_unit("USD")
                    .with_description("What the model's replies cost, where prices are known")
                    .build(),
                commands: meter
                    .u64_counter("wicket.commands")
                    .with_description("Commands run, by exit status")
                    .build(),
            },
            log_content,
            sessions: HashMap::new(),
            parents: HashMap::new(),
        }
    }

    /// A span `name` under `parent` from `start`, with `attributes`; its
    /// context (end it through `.span()`).
    fn open(
        &self,
        name: String,
        start: SystemTime,
        attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> Context {
        let span = self
            .tracer
            .span_builder(name)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// The model the session's turn talks to (set at each turn's start).
    pub(crate) fn model(&mut self, session: &str, model: &str) {
        self.sessions.entry(session.to_string()).or_default().model = Some(model.to_string());
    }

    /// One event of `session`, in the log's order.
    pub(crate) fn observe(&mut self, session: &str, event: &Event) {
        let at = time_of(event);
        let mut state = self.sessions.remove(session).unwrap_or_default();
        self.event(session, &mut state, event, at);
        state.last = Some(at);
        self.sessions.insert(session.to_string(), state);
    }

    /// Ends every open span where it is (the process is stopping).
    pub(crate) fn close(&mut self) {
        let now = SystemTime::now();
        for (_, mut state) in self.sessions.drain() {
            for (_, call) in state.calls.drain() {
                call.cx.span().end_with_timestamp(now);
            }
            if let Some(turn) = state.turn.take() {
                turn.span().end_with_timestamp(now);
            }
        }
    }

    // One arm per event kind a span or metric is made of, the one table of them;
    // past 80 lines because the match is the list.
    fn event(&mut self, session: &str, state: &mut Session, event: &Event, at: SystemTime) {
        match &event.body {
            EventBody::UserMessage(UserMessageEvent { text, plan }) => {
                if let Some(old) = state.turn.take() {
                    old.span().end_with_timestamp(at);
                }
                let parent = self.parents.remove(session).unwrap_or_default();
                let mut attributes = vec![
                    KeyValue::new("wicket.session", session.to_string()),
                    KeyValue::new("wicket.plan", *plan),
                ];
                if self.log_content {
                    attributes.push(KeyValue::new("wicket.prompt", text.clone()));
                }
                state.turn = Some(self.open("wicket.turn".into(), at, attributes, &parent));
            }
            EventBody::AssistantMessage(reply) => self.reply(state, reply, at),
            EventBody::ToolCall(call) => self.call(state, call, at),
            EventBody::Card(CardEvent { call_id, card, .. }) => {
                let kind = card.kind.as_str();
                state
                    .cards
                    .insert(card.id.to_string(), (call_id.to_string(), at, kind));
                if let Some(call) = state.calls.get_mut(call_id.as_str()) {
                    call.decision = "card";
                    if let wicket_protocol::CardKind::Run(run) = &card.kind {
                        call.layers = Some(run.sandbox.layers.clone());
                    }
                }
            }
            EventBody::Answer(AnswerEvent { card, answer, .. }) => {
                if let Some((call_id, shown, kind)) = state.cards.remove(card.as_str()) {
                    let answer = answer.as_str().to_string();
                    self.metrics.cards.add(
                        1,
                        &[
                            KeyValue::new("kind", kind),
                            KeyValue::new("answer", answer.clone()),
                        ],
                    );
                    if let Some(call) = state.calls.get_mut(&call_id) {
                        call.answer = Some(answer);
                        call.person = at.duration_since(shown).ok();
                    }
                }
            }
            EventBody::Hook(hook) => self.hook(state, hook, at),
            EventBody::Task(TaskEvent {
                call_id, session, ..
            }) => {
                if let Some(call) = state.calls.get(call_id.as_str()) {
                    self.parents.insert(session.clone(), call.cx.clone());
                }
            }
            EventBody::ToolResult(result) => self.result(state, result, at),
            EventBody::TurnEnded(TurnEndedEvent { outcome }) => {
                // Hooks of a call never logged: under the turn.
                let orphans: Vec<_> = state.hooks.drain().flat_map(|(_, hooks)| hooks).collect();
                for (mut hook, when) in orphans {
                    hook.call_id = None;
                    self.hook(state, &hook, when);
                }
                for (_, call) in state.calls.drain() {
                    call.cx.span().end_with_timestamp(at);
                }
                state.cards.clear();
                if let Some(turn) = state.turn.take() {
                    let span = turn.span();
                    span.set_attribute(KeyValue::new("wicket.outcome", outcome.as_str()));
                    span.end_with_timestamp(at);
                }
            }
            _ => {}
        }
    }

    /// A model request: from the event before it to its reply.
    fn reply(&mut self, state: &mut Session, reply: &AssistantMessageEvent, at: SystemTime) {
        let Some(turn) = state.turn.clone() else {
            return;
        };
        let model = state.model.clone().unwrap_or_default();
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.system", system_of(&model).to_string()),
            KeyValue::new("gen_ai.provider.name", system_of(&model).to_string()),
            KeyValue::new("gen_ai.request.model", name_of(&model).to_string()),
        ];
        if let Some(stop) = &reply.stop_reason {
            let stop = opentelemetry::StringValue::from(stop.as_str().to_string());
            attributes.push(KeyValue::new(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(vec![stop].into()),
            ));
        }
        if let Some(usage) = &reply.usage {
            attributes.extend(usage_attributes(usage));
            self.count_usage(usage);
        }
        if self.log_content {
            attributes.push(KeyValue::new("gen_ai.completion", reply.text.clone()));
        }
        let start = state.last.unwrap_or(at).min(at);
        let name = format!("chat {}", name_of(&model));
        self.open(name, start, attributes, &turn)
            .span()
            .end_with_timestamp(at);
    }

    fn count_usage(&self, usage: &Usage) {
        for (kind, count) in [
            ("input", usage.uncached_input_tokens()),
            ("output", usage.output_tokens),
            ("cache_read", usage.cache_read_input_tokens),
            ("cache_write", usage.cache_creation_input_tokens),
        ] {
            if count > 0 {
                self.metrics
                    .tokens
                    .add(count, &[KeyValue::new("kind", kind)]);
            }
        }
        if let Some(cost) = usage.cost_usd {
            self.metrics.cost.add(cost, &[]);
        }
    }

    /// The tool's name as the collector sees it: the model writes it, and
    /// may spell content into it, so without `log_content` only Wicket's own
    /// names go out (any MCP tool is `mcp`, anything else `unknown`).
    fn tool_name(&self, written: &str) -> String {
        if self.log_content {
            return written.to_string();
        }
        let known = TOOL_NAMES
            .iter()
            .chain(CORE_TOOL_NAMES.iter())
            .find(|name| **name == written);
        match known {
            Some(name) => (*name).to_string(),
            None if written.starts_with("mcp__") => "mcp".to_string(),
            None => "unknown".to_string(),
        }
    }

    fn call(&mut self, state: &mut Session, call: &ToolCallEvent, at: SystemTime) {
        let Some(turn) = state.turn.clone() else {
            return;
        };
        let decision = call.allowed_by.as_ref().map_or("free", allowed_by);
        let name = self.tool_name(&call.name);
        let mut attributes = vec![
            KeyValue::new("wicket.tool", name.clone()),
            KeyValue::new("gen_ai.tool.name", name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.call_id.to_string()),
        ];
        if self.log_content {
            attributes.push(KeyValue::new(
                "wicket.arguments",
                call.arguments.to_string(),
            ));
        }
        let cx = self.open(format!("wicket.tool {name}"), at, attributes, &turn);
        state.calls.insert(
            call.call_id.to_string(),
            Call {
                cx,
                name,
                decision,
                answer: call.allowed_by.as_ref().map(|_| "allow".to_string()),
                person: None,
                denied_by_hook: false,
                layers: None,
            },
        );
        for (hook, when) in state
            .hooks
            .remove(call.call_id.as_str())
            .unwrap_or_default()
        {
            self.hook(state, &hook, when);
        }
    }

    fn hook(&mut self, state: &mut Session, hook: &HookRunEvent, at: SystemTime) {
        if let Some(id) = &hook.call_id
            && !state.calls.contains_key(id.as_str())
        {
            state
                .hooks
                .entry(id.to_string())
                .or_default()
                .push((hook.clone(), at));
            return;
        }
        let parent = hook
            .call_id
            .as_ref()
            .and_then(|id| state.calls.get(id.as_str()))
            .map(|call| call.cx.clone())
            .or_else(|| state.turn.clone());
        let Some(parent) = parent else {
            return;
        };
        if hook.outcome == wicket_protocol::event::HookOutcome::Block
            && let Some(call) = hook
                .call_id
                .as_ref()
                .and_then(|id| state.calls.get_mut(id.as_str()))
        {
            call.denied_by_hook = true;
        }
        let took = Duration::from_millis(hook.duration_ms.unwrap_or(0));
        let mut attributes = vec![
            KeyValue::new("wicket.hook.name", hook.name.clone()),
            KeyValue::new("wicket.hook.event", hook.event.as_str()),
            KeyValue::new("wicket.hook.outcome", hook.outcome.as_str()),
        ];
        if let Some(code) = hook.exit_code {
            attributes.push(KeyValue::new("wicket.hook.exit_code", i64::from(code)));
        }
        if self.log_content {
            attributes.push(KeyValue::new("wicket.hook.command", hook.command.join(" ")));
        }
        let start = at.checked_sub(took).unwrap_or(at);
        let name = format!("wicket.hook {}", hook.name);
        self.open(name, start, attributes, &parent)
            .span()
            .end_with_timestamp(at);
    }

    fn result(&mut self, state: &mut Session, result: &ToolResultEvent, at: SystemTime) {
        let Some(call) = state.calls.remove(result.call_id.as_str()) else {
            return;
        };
        let span = call.cx.span();
        let (decision, answer) = match &result.result {
            Err(error) if error.kind == wicket_protocol::ErrorKind::Denied => {
                let decision = if call.decision == "card" {
                    "card"
                } else if call.denied_by_hook {
                    "hook"
                } else {
                    "rule"
                };
                (
                    decision,
                    call.answer.clone().unwrap_or_else(|| "deny".into()),
                )
            }
            _ => (
                call.decision,
                call.answer.clone().unwrap_or_else(|| "allow".into()),
            ),
        };
        span.set_attribute(KeyValue::new("wicket.decision", decision));
        span.set_attribute(KeyValue::new("wicket.answer", answer));
        if let Some(person) = call.person {
            span.set_attribute(KeyValue::new("wicket.person_ms", person.as_millis() as i64));
        }
        span.set_attribute(KeyValue::new("wicket.ok", result.result.is_ok()));
        if let Ok(ToolOutput::Run(run)) = &result.result {
            self.command(&call, run, at);
        }
        span.end_with_timestamp(at);
    }

    fn command(&self, call: &Call, run: &wicket_protocol::tools::RunOutput, at: SystemTime) {
        let took = Duration::from_millis(run.duration_ms);
        let status = match (run.exit_code, run.signal, run.timed_out) {
            (_, _, true) => "timeout".to_string(),
            (Some(code), _, _) => code.to_string(),
            (None, Some(signal), _) => format!("signal {signal}"),
            (None, None, _) => "unknown".to_string(),
        };
        self.metrics
            .commands
            .add(1, &[KeyValue::new("exit_status", status.clone())]);
        let mut attributes = vec![
            KeyValue::new("wicket.command.exit_status", status),
            KeyValue::new("wicket.command.duration_ms", run.duration_ms as i64),
            KeyValue::new("wicket.tool", call.name.clone()),
        ];
        if let Some(code) = run.exit_code {
            attributes.push(KeyValue::new("process.exit.code", i64::from(code)));
        }
        if let Some(layers) = &call.layers {
            attributes.push(KeyValue::new("wicket.sandbox.layers", layers.join(",")));
        }
        // The hosts a command asked for are content: a command (or the
        // model that wrote it) can spell a file's bytes into a name.
        if self.log_content && !run.net.is_empty() {
            let hosts: Vec<opentelemetry::StringValue> = run
                .net
                .iter()
                .map(|net| opentelemetry::StringValue::from(net.host.clone()))
                .collect();
            attributes.push(KeyValue::new(
                "wicket.net.hosts",
                opentelemetry::Value::Array(hosts.into()),
            ));
        }
        let start = at.checked_sub(took).unwrap_or(at);
        self.open("wicket.command".into(), start, attributes, &call.cx)
            .span()
            .end_with_timestamp(at);
    }
}

/// The GenAI conventions' token attributes of one reply.
fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.usage.input_tokens", usage.input_tokens as i64),
        KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
        KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            usage.cache_read_input_tokens as i64,
        ),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_creation_input_tokens as i64,
        ),
    ];
    if let Some(cost) = usage.cost_usd {
        attributes.push(KeyValue::new("wicket.cost_usd", cost));
    }
    attributes
}
