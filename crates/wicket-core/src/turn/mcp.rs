//! A turn's MCP tools: the session's servers started at its first turn,
//! and each `mcp__SERVER__TOOL` call through its hooks, the gate's `mcp`
//! card and the hub.

use super::*;

impl Runner<'_> {
    pub(super) fn mcp_session(&self) -> Option<crate::mcp::McpSession<'_>> {
        Some(crate::mcp::McpSession {
            tools: self.tools,
            session: self.session,
            confinement: &self.settings.confinement,
            rules: &self.settings.rules,
            hub: self.mcp?,
        })
    }

    /// Starts the session's MCP servers not tried yet (at its first turn).
    pub(super) fn start_servers(&self, person: &mut dyn Answerer) {
        if let Some(mcp) = self.mcp_session() {
            mcp.start(&self.settings.mcp_servers, person);
        }
    }

    /// One MCP tool: its PreToolUse hooks, the gate's `mcp` card, its
    /// server, its PostToolUse hooks (whose notes it returns).
    pub(super) fn mcp_call(
        &self,
        call: &ToolCallRequest,
        mcp: &wicket_protocol::McpCall,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> (Result<ToolOutput, WireError>, Vec<String>) {
        let Some(session) = self.mcp_session() else {
            let refused = self.refused(
                call,
                serde_json::Value::Object(mcp.arguments.clone()),
                WireError::invalid(format!(
                    "there is no MCP tool '{}' in this session",
                    mcp.name
                )),
            );
            return (refused, Vec::new());
        };
        if !self.caller().tool_hooked(&call.name) {
            let mut answerer = Notifying {
                caller: self.caller(),
                person,
                cancel,
            };
            let result = session.call(&call.id, mcp, Hooked::Nothing, &mut answerer, cancel);
            return (result, Vec::new());
        }
        let input = serde_json::Value::Object(mcp.arguments.clone());
        let hooked = self
            .caller()
            .pre_tool_use(call, input.clone(), false, person, cancel);
        let mut answerer = Notifying {
            caller: self.caller(),
            person: &mut *person,
            cancel,
        };
        let result = session.call(&call.id, mcp, hooked, &mut answerer, cancel);
        let notes = self
            .caller()
            .post_tool_use(call, input, &result, false, person, cancel);
        (result, notes)
    }
}
