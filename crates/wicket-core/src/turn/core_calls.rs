//! The core tools that are not the workspace's: `ask` (a question the
//! person answers), `finish` (the turn's result, after the Stop hooks) and
//! `use_skill` (a skill's SKILL.md).

use super::*;
use wicket_protocol::event::{QuestionEvent, ReplyEvent};
use wicket_protocol::tools::{PlanOutput, ProposePlanArgs};

impl Runner<'_> {
    pub(super) fn ask(
        &self,
        call: &ToolCallRequest,
        args: &AskArgs,
        person: &mut dyn Answerer,
    ) -> Option<Result<ToolOutput, WireError>> {
        self.log_call(call, Self::arguments(args));
        let id = QuestionId::from(wicket_os::ids::new_id("q"));
        self.session
            .recorded()
            .update_meta(|meta| meta.status = Status::Waiting);
        self.log(EventBody::Question(QuestionEvent {
            id: id.clone(),
            call_id: call.id.clone(),
            question: args.question.clone(),
        }));
        self.session.recorded().sync();
        let input = || {
            serde_json::json!({
                "message": args.question,
                "notification_type": "question",
                "question_id": id,
            })
        };
        self.caller()
            .notify(input, "ask", person, &Cancel::default());
        let reply = person.reply(&id, &args.question);
        self.session
            .recorded()
            .update_meta(|meta| meta.status = Status::Running);
        let reply = reply?;
        self.log(EventBody::Reply(ReplyEvent {
            question: id,
            reply: reply.clone(),
        }));
        let result = Ok(ToolOutput::Reply(ReplyOutput { reply }));
        self.log_result(call, &result);
        self.session.recorded().sync();
        Some(result)
    }

    /// `propose_plan`: the plan on a `plan` card through the gate; approved,
    /// the model reads that every tool is offered now.
    pub(super) fn propose_plan(
        &self,
        call: &ToolCallRequest,
        args: &ProposePlanArgs,
        person: &mut dyn Answerer,
    ) -> Result<ToolOutput, WireError> {
        self.log_call(call, Self::arguments(args));
        let mut person = crate::hooked::Notifying {
            caller: self.caller(),
            person,
            cancel: &Cancel::default(),
        };
        let result = self
            .gate()
            .propose_plan(&call.id, &args.plan, &mut person)
            .map(|()| {
                ToolOutput::Plan(PlanOutput {
                    plan: "approved".into(),
                    next: "The person approved the plan: every tool is offered now. Carry it out, \
                           then call finish."
                        .into(),
                })
            });
        self.log_result(call, &result);
        result
    }

    pub(super) fn finish(
        &self,
        call: &ToolCallRequest,
        args: &FinishArgs,
        person: &mut dyn Answerer,
        cancel: &Cancel,
    ) -> Result<ToolOutput, WireError> {
        self.log_call(call, Self::arguments(args));
        let result = match self.stop_hooks(Some(&call.id), &args.result, person, cancel) {
            Ok(()) => Ok(ToolOutput::Finish(FinishOutput {
                result: args.result.clone(),
            })),
            Err(feedback) => Err(WireError::new(
                ErrorKind::Blocked,
                format!(
                    "a Stop hook did not let the turn end yet; fix what it says, then call finish again:\n{feedback}"
                ),
            )),
        };
        self.log_result(call, &result);
        result
    }

    pub(super) fn use_skill(
        &self,
        call: &ToolCallRequest,
        args: &UseSkillArgs,
    ) -> Result<ToolOutput, WireError> {
        self.log_call(call, Self::arguments(args));
        let result = skills::body(self.tools.workspace(), &self.settings.skills, &args.name)
            .map(|body| {
                ToolOutput::Skill(SkillOutput {
                    name: args.name.clone(),
                    instructions: body,
                })
            })
            .map_err(|message| WireError::new(ErrorKind::NotFound, message));
        self.log_result(call, &result);
        result
    }
}
