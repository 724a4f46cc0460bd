//! Plan mode: until the person approves a plan, the model may only read,
//! ask, finish and propose one; any other call is refused before the gate.

use super::*;

/// What the model may call in plan mode.
pub(super) const PLAN_TOOLS: [&str; 6] = [
    "read_file",
    "grep",
    "list_dir",
    "ask",
    "finish",
    "propose_plan",
];

impl Runner<'_> {
    /// Plan mode's part of a call: a call it does not offer is refused
    /// before the gate (and `propose_plan` outside it); `propose_plan` puts
    /// the plan on a card, and an approved one offers every tool from then
    /// on. Anything else comes back to be made.
    pub(super) fn planned(
        &self,
        turn: &mut Turn,
        call: &ToolCallRequest,
        parsed: Call,
        person: &mut dyn Answerer,
    ) -> ControlFlow<Result<ToolOutput, WireError>, Call> {
        let proposal = matches!(parsed, Call::Core(CoreCall::ProposePlan(_)));
        if (turn.plan && !plan_call(&parsed)) || (!turn.plan && proposal) {
            let arguments = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
            return ControlFlow::Break(self.refused(
                call,
                arguments,
                plan_refusal(&call.name, turn.plan),
            ));
        }
        let Call::Core(CoreCall::ProposePlan(args)) = parsed else {
            return ControlFlow::Continue(parsed);
        };
        let result = self.propose_plan(call, &args, person);
        if result.is_ok() {
            turn.plan = false;
            turn.request.tools = self.tool_specs(false);
        }
        ControlFlow::Break(result)
    }
}

/// Whether `call` is one plan mode offers (and, for `propose_plan`, only plan mode).
fn plan_call(call: &Call) -> bool {
    match call {
        Call::Tool(
            wicket_protocol::ToolCall::ReadFile(_)
            | wicket_protocol::ToolCall::Grep(_)
            | wicket_protocol::ToolCall::ListDir(_),
        )
        | Call::Core(CoreCall::Ask(_) | CoreCall::Finish(_) | CoreCall::ProposePlan(_)) => true,
        Call::Tool(_) | Call::Core(CoreCall::UseSkill(_) | CoreCall::Task(_)) | Call::Mcp(_) => {
            false
        }
    }
}

/// Why a call was refused before the gate: a tool plan mode does not offer,
/// or `propose_plan` outside plan mode.
pub(super) fn plan_refusal(name: &str, plan: bool) -> WireError {
    if plan {
        WireError::new(
            ErrorKind::Denied,
            format!(
                "plan mode: {name} is not offered until the person approves a plan; nothing ran. Read \
                 what you need, then call propose_plan with your plan"
            ),
        )
    } else {
        WireError::invalid("propose_plan is for plan mode; this turn may use every tool")
    }
}
