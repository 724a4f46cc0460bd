// Sub-tasks over ACP, driven by the protocol's own TypeScript client: a
// parent starts three sub-tasks, and the card of the one that writes comes
// as the parent session's permission request, its title naming the
// sub-task. Run by the Rust test tasks::sub_tasks_over_acp_ask_as_the_parent
// with WICKET_BIN, WICKET_HOME, WORKSPACE and MODEL set; exits 1 on the
// first failed check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";

const { methods } = acp;
const { WICKET_BIN, WORKSPACE, MODEL } = process.env;

const child = spawn(WICKET_BIN, ["acp", "--model", MODEL], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const permissions = [];
const updates = [];
const app = acp.client({ name: "wicket-acp-tasks-test" })
  .onNotification(methods.client.session.update, ({ params }) => { updates.push(params); })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    permissions.push(params);
    return { outcome: { outcome: "selected", optionId: "allow_session" } };
  });

await app.connectWith(stream, async (agent) => {
  await agent.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd: WORKSPACE, mcpServers: [] });
  const r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "go" }] });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(permissions.length, 2, JSON.stringify(permissions));
  for (const asked of permissions) assert.equal(asked.sessionId, sessionId, "every request is the parent's");
  assert.ok(!permissions[0].toolCall.title.startsWith("sub-task"), permissions[0].toolCall.title);
  assert.ok(permissions[1].toolCall.title.startsWith("sub-task: clean up: "), permissions[1].toolCall.title);
  assert.ok(updates.every((u) => u.sessionId === sessionId), "no update names a child session");
  const said = updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk").map((u) => u.update.content.text);
  assert.ok(said.includes("all done"), JSON.stringify(said));
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
console.log("ok: sub-tasks over ACP passed every check");
