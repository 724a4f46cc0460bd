//! The types Wicket's parts exchange, with no I/O: the calls a model makes
//! ([`Call`], [`ToolCall`], [`CoreCall`]) and what they return
//! ([`ToolOutput`]), permission [`Card`]s and [`Answer`]s, the events of a
//! session's log ([`Event`]), the wire error ([`WireError`]), every limit
//! ([`limits`]), the tool descriptions a model reads ([`schema`]), and the
//! one filter text passes through before it reaches a terminal
//! ([`text::visible`]). Start from [`Call::parse`].

pub mod card;
pub mod error;
pub mod event;
pub mod guarded;
pub mod ids;
pub mod json;
pub mod limits;
pub mod reach;
pub mod rules;
pub mod schema;
pub mod summary;
pub mod text;
pub mod tools;

pub use card::{
    Answer, Card, CardKind, Effect, EffectKind, EffectsCard, GIT_WRITE_WARNING, McpCard, NetCard,
    OUTSIDE_WORKSPACE, OutsideReadCard, PlanCard, RunCard, RunSource, SandboxMode, SandboxSummary,
    TaskRef, WriteCard,
};
pub use error::{ErrorKind, WireError};
pub use event::{
    Event, EventBody, HookEvent, HookOutcome, McpState, StopReason, ToolCallRequest, TurnOutcome,
    Usage,
};
pub use ids::{CallId, CardId, GrantId, QuestionId, RuleId, SessionId};
pub use reach::Reach;
pub use rules::{AllowedBy, Rule, RuleAction, RuleSpec};
pub use schema::{ToolSpec, tool_specs};
pub use tools::{
    AskArgs, CORE_TOOL_NAMES, Call, CoreCall, FinishArgs, FinishOutput, GrepArgs, GrepOutput,
    ListDirArgs, ListDirOutput, MCP_PREFIX, McpCall, McpContent, McpOutput, NetUse, Network,
    ReadFileArgs, ReadFileOutput, ReplyOutput, RunArgs, RunOutput, SearchReplaceArgs, SkillOutput,
    TOOL_NAMES, TaskArgs, TaskDenial, TaskOutput, TaskTools, ToolCall, ToolOutput, UseSkillArgs,
    WriteFileArgs, WriteOutput, call_summary, result_line,
};
