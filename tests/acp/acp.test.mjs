// wicket acp, driven by the Agent Client Protocol's own TypeScript client
// (@agentclientprotocol/sdk, pinned in package.json): a session opened,
// writes allowed, rejected and allowed for the session, a question answered
// by the next prompt, a long run cancelled, and the session loaded again in
// a fresh process. Run by the Rust test acp::the_sdk_client_drives_wicket_acp
// with WICKET_BIN, WICKET_HOME, WORKSPACE and MODEL set; exits 1 on the first
// failed check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";

const { methods } = acp;
const { WICKET_BIN, WORKSPACE, MODEL, MARKER } = process.env;

/** Starts `wicket acp`; every update and permission request is recorded. */
function start() {
  const child = spawn(WICKET_BIN, ["acp", "--model", MODEL], { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const seen = { updates: [], permissions: [], choose: "allow_once", onPermission: null };
  const app = acp.client({ name: "wicket-acp-test" })
    .onNotification(methods.client.session.update, ({ params }) => { seen.updates.push(params.update); })
    .onRequest(methods.client.session.requestPermission, async ({ params }) => {
      seen.permissions.push(params);
      if (seen.onPermission) await seen.onPermission(params);
      const option = params.options.find((o) => o.kind === seen.choose);
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
  return { child, stream, app, seen };
}

const text = (t) => [{ type: "text", text: t }];
const since = (seen, n) => seen.updates.slice(n);
const running = (marker) => fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).some((p) => {
  try { return fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes(marker); } catch { return false; }
});

let sessionId;
const first = start();
await first.app.connectWith(first.stream, async (agent) => {
  const init = await agent.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "wicket-acp-test", version: "1" },
  });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
  const opened = await agent.request(methods.agent.session.new, { cwd: WORKSPACE, mcpServers: [] });
  ({ sessionId } = opened);
  assert.ok(sessionId);
  // The mode picker: default and plan.
  assert.equal(opened.modes.currentModeId, "default");
  assert.deepEqual(opened.modes.availableModes.map((m) => m.id), ["default", "plan"]);
  const { seen } = first;

  // 1. A write, allowed once: the file is written, the update carries the diff.
  let mark = seen.updates.length;
  let r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write one") });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(fs.readFileSync(path.join(WORKSPACE, "a.txt"), "utf8"), "one\n");
  assert.equal(seen.permissions.length, 1);
  const asked = seen.permissions[0];
  assert.deepEqual(asked.options.map((o) => [o.optionId, o.kind]), [
    ["allow_once", "allow_once"],
    ["allow_session", "allow_always"],
    ["allow_always", "allow_always"],
    ["deny", "reject_once"],
  ]);
  assert.deepEqual(asked.options.map((o) => o.name),
    ["Allow once", "Allow for this session", "Always allow", "Deny"]);
  // The call shows the rule "Always allow" would save: this file, in this workspace.
  const said = JSON.stringify(asked.toolCall.content);
  assert.ok(said.includes('Always allow saves the rule: allow write path \\"a.txt\\" in '), said);
  assert.equal(asked.toolCall.content[0].type, "diff");
  assert.equal(asked.toolCall.content[0].newText, "one\n");
  const call = since(seen, mark).find((u) => u.sessionUpdate === "tool_call");
  assert.equal(call.kind, "edit");
  assert.equal(call.locations[0].path, path.join(WORKSPACE, "a.txt"));
  const progress = since(seen, mark).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId);
  assert.deepEqual(progress.map((u) => u.status), ["in_progress", "completed"]);
  const done = progress[1];
  assert.equal(done.status, "completed");
  assert.equal(done.content[0].type, "diff");
  assert.equal(done.content[0].path, path.join(WORKSPACE, "a.txt"));
  assert.equal(done.content[0].newText, "one\n");
  assert.ok(since(seen, mark).some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "wrote a.txt"));

  // 2. The same kind of write, rejected: the file is unchanged.
  seen.choose = "reject_once";
  mark = seen.updates.length;
  r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write two") });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(fs.readFileSync(path.join(WORKSPACE, "a.txt"), "utf8"), "one\n");
  assert.equal(seen.permissions.length, 2);
  assert.equal(seen.permissions[1].toolCall.content[0].oldText, "one\n");
  assert.ok(since(seen, mark).some((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed"));

  // 3. allow_always: the second identical write raises no request.
  seen.choose = "allow_always";
  r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("write b twice") });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(seen.permissions.length, 3, "the second write of b.txt asked again");
  assert.equal(fs.readFileSync(path.join(WORKSPACE, "b.txt"), "utf8"), "same\n");

  // 4. A question ends the prompt; the next prompt is the reply.
  mark = seen.updates.length;
  r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("ask me") });
  assert.equal(r.stopReason, "end_turn");
  assert.ok(since(seen, mark).some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "Which name?"));
  mark = seen.updates.length;
  r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("Bob") });
  assert.equal(r.stopReason, "end_turn");
  assert.ok(since(seen, mark).some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "named Bob"));

  // 4b. Plan mode from the picker: a write is refused before any permission request.
  await agent.request(methods.agent.session.setMode, { sessionId, modeId: "plan" });
  const asks = seen.permissions.length;
  mark = seen.updates.length;
  r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("plan c") });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(seen.permissions.length, asks, "plan mode asked nothing");
  assert.ok(!fs.existsSync(path.join(WORKSPACE, "c.txt")));
  assert.ok(since(seen, mark).some((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed"));
  await agent.request(methods.agent.session.setMode, { sessionId, modeId: "default" });
  await assert.rejects(
    agent.request(methods.agent.session.setMode, { sessionId, modeId: "yolo" }),
    (e) => e.code === -32602,
  );

  // 5. Cancel during a long run: cancelled, and nothing left running.
  seen.choose = "allow_once";
  let runStarted;
  const started = new Promise((resolve) => { runStarted = resolve; });
  seen.onPermission = () => { runStarted(); };
  const long = agent.request(methods.agent.session.prompt, { sessionId, prompt: text("run long") });
  await started;
  for (let i = 0; i < 300 && !running(MARKER); i++) await new Promise((ok) => setTimeout(ok, 20));
  assert.ok(running(MARKER), "the command never started");
  await agent.notify(methods.agent.session.cancel, { sessionId });
  r = await long;
  assert.equal(r.stopReason, "cancelled");
  for (let i = 0; i < 300 && running(MARKER); i++) await new Promise((ok) => setTimeout(ok, 20));
  assert.ok(!running(MARKER), "the command outlived the cancel");
  seen.onPermission = null;

  // 6. An unknown session is a JSON-RPC error, and the agent goes on.
  await assert.rejects(
    agent.request(methods.agent.session.prompt, { sessionId: "no-such-session", prompt: text("x") }),
    (e) => e.code === -32002,
  );
});
first.child.stdin.end();
await new Promise((resolve) => first.child.on("exit", resolve));

// 7. A fresh process loads the session: the history comes back first.
const second = start();
await second.app.connectWith(second.stream, async (agent) => {
  await agent.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  await agent.request(methods.agent.session.load, { sessionId, cwd: WORKSPACE, mcpServers: [] });
  const replay = second.seen.updates;
  const users = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
  assert.deepEqual(users, ["write one", "write two", "write b twice", "ask me", "Bob", "plan c", "run long"]);
  const calls = replay.filter((u) => u.sessionUpdate === "tool_call");
  assert.ok(calls.length >= 5, `${calls.length} tool calls replayed`);
  assert.ok(replay.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "named Bob"));
  assert.equal(second.seen.permissions.length, 0, "a replay asks nothing");
  const r = await agent.request(methods.agent.session.prompt, { sessionId, prompt: text("go on") });
  assert.equal(r.stopReason, "end_turn");
  assert.ok(second.seen.updates.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "resumed"));
});
second.child.stdin.end();
await new Promise((resolve) => second.child.on("exit", resolve));
console.log("ok: wicket acp passed every check");
