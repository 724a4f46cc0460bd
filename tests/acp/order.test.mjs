// A 30-read turn over ACP, driven by the protocol's own TypeScript client:
// every update follows the log's order (a reply's text, its call, the
// call's end, the next reply's text) and each reply's text comes exactly
// once; the model is picked through the session's config options. Run by the Rust test acp::thirty_reads_arrive_in_the_logs_order
// with WICKET_BIN, WICKET_HOME, WORKSPACE and MODEL set; exits 1 on the
// first failed check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";

const { methods } = acp;
const { WICKET_BIN, WORKSPACE, MODEL } = process.env;
const READS = 30;

const child = spawn(WICKET_BIN, ["acp", "--model", MODEL], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const app = acp.client({ name: "wicket-acp-order-test" })
  .onNotification(methods.client.session.update, ({ params }) => { updates.push(params.update); })
  .onRequest(methods.client.session.requestPermission, async () => {
    throw new Error("no read needs a card");
  });

await app.connectWith(stream, async (agent) => {
  await agent.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const opened = await agent.request(methods.agent.session.new, { cwd: WORKSPACE, mcpServers: [] });
  const { sessionId } = opened;
  // The model picker a harness (Harbor's -m) uses: one select of category model.
  const model = opened.configOptions.find((option) => option.category === "model");
  assert.ok(model, JSON.stringify(opened.configOptions));
  // Values are a harness's provider/name; the built-in models are listed too.
  assert.equal(model.currentValue, MODEL.replace(":", "/"));
  assert.ok(model.options.some((o) => o.value === "openai/gpt-5"), JSON.stringify(model.options));
  // Wicket's own provider:name is taken as well.
  const picked = await agent.request(methods.agent.session.setConfigOption, {
    sessionId,
    configId: model.id,
    value: MODEL,
  });
  assert.equal(picked.configOptions[0].currentValue, MODEL.replace(":", "/"));
  await assert.rejects(agent.request(methods.agent.session.setConfigOption, {
    sessionId,
    configId: model.id,
    value: "nosuch:model",
  }));
  const r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "read" }] });
  assert.equal(r.stopReason, "end_turn");
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));

// The updates as a sequence of steps: text N, call N, call N's end.
const steps = [];
for (const u of updates) {
  if (u.sessionUpdate === "agent_message_chunk") steps.push(`text:${u.content.text}`);
  else if (u.sessionUpdate === "tool_call") steps.push(`call:${u.toolCallId}`);
  else if (u.sessionUpdate === "tool_call_update" && u.status === "completed") steps.push(`done:${u.toolCallId}`);
}
const texts = steps.filter((s) => s.startsWith("text:"));
assert.equal(texts.length, READS + 1, `each reply's text once: ${JSON.stringify(texts)}`);
const expected = [];
for (let n = 1; n <= READS; n++) {
  expected.push(`text:step ${n}`, `call:script-${n}-1`, `done:script-${n}-1`);
}
expected.push("text:all read");
assert.deepEqual(steps, expected);
console.log("ok: 30 reads came in the log's order, each text once");
