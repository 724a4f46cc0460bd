// Drives `wicket serve`'s page in headless Chromium (Debian's, through
// playwright-core): create a session, send a message, see the write card
// and its diff, Allow once, see the file written; answer a question in the
// page; deny a command with a reason; rewind the turn's files and undo that; cancel a
// running one; a long session drawn only
// near the view. Screenshots go under
// target/browser/ for people to look at.
//
// WICKET_BIN names the binary (default target/debug/wicket); CHROMIUM the
// browser (default /usr/bin/chromium).

import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import assert from "node:assert/strict";

const root = resolve(import.meta.dirname, "../..");
const bin = process.env.WICKET_BIN ?? join(root, "target/debug/wicket");
const shots = join(root, "target/browser");
mkdirSync(shots, { recursive: true });

const base = mkdtempSync(join(tmpdir(), "wicket-browser-"));
const home = join(base, "home");
const ws = join(base, "ws");
mkdirSync(home);
mkdirSync(join(ws, "src"), { recursive: true });
writeFileSync(join(ws, "src/main.rs"), 'fn main() {\n    println!("hello");\n}\n');
const script = join(base, "script.json");
writeFileSync(script, JSON.stringify([
  { text: "I'll add a line.", tool_calls: [{ name: "search_replace", arguments: { path: "src/main.rs", old: '    println!("hello");\n', new: '    println!("hello");\n    println!("from the page");\n' } }] },
  { tool_calls: [{ name: "ask", arguments: { question: "Which colour should the banner be?" } }] },
  { tool_calls: [{ name: "run", arguments: { argv: ["rm", "-rf", "src"], timeout_s: 5 } }] },
  { text: "Done: the line is in, the colour noted, and nothing was removed." },
  { tool_calls: [{ name: "run", arguments: { argv: ["sh", "-c", "touch running; sleep 30"] } }] },
  { text: "unreachable" },
]));

// Always allow, widened on the page: the next echo needs no card.
const alwaysScript = join(base, "always.json");
writeFileSync(alwaysScript, JSON.stringify([
  { tool_calls: [{ name: "run", arguments: { argv: ["echo", "one", "two"] } }] },
  { tool_calls: [{ name: "run", arguments: { argv: ["echo", "three"] } }] },
  { text: "always done" },
]));

// A preview: the command runs over a copy, the effects card shows its change, Apply writes it.
const previewScript = join(base, "preview.json");
writeFileSync(previewScript, JSON.stringify([
  { tool_calls: [{ name: "run", arguments: { argv: ["sh", "-c", "echo previewed > preview.txt"], preview: true } }] },
  { text: "preview done" },
]));

// A long session: one reply with 1,000 reads makes 1,000 rows.
const longScript = join(base, "long.json");
// 1,000 reads in 20 replies of 50 (a reply may ask for at most 64 calls).
writeFileSync(longScript, JSON.stringify([
  ...Array.from({ length: 20 }, () => ({
    tool_calls: Array.from({ length: 50 }, () => ({ name: "read_file", arguments: { path: "src/main.rs" } })),
  })),
  { text: "long done" },
]));

// 1,000 read results pass the 32,000 tokens assumed of a model nobody
// named a window for, and a script cannot summarise (a compaction is taken
// only from text): this one is given a window that holds them.
writeFileSync(join(home, "config.toml"), `[models."script:${longScript}"]\ncontext_window = 2000000\n`);

const server = spawn(bin, ["serve", "--port", "0"], { env: { ...process.env, WICKET_HOME: home }, stdio: ["ignore", "pipe", "inherit"] });
const link = await new Promise((ok, fail) => {
  let out = "";
  server.stdout.on("data", (chunk) => {
    out += chunk;
    const match = out.match(/(http:\/\/\S+\/#token=\w+)/);
    if (match) ok(match[1]);
  });
  server.on("exit", (code) => fail(new Error(`wicket serve exited with ${code}`)));
});

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  const started = Date.now();
  await page.goto(link);
  console.log(`page loaded in ${Date.now() - started} ms`);

  // A new session from the form, then a message.
  await page.fill("#new-workspace", ws);
  await page.fill("#new-model", "script:" + script);
  await page.click("#new-session button");
  await page.waitForSelector("#compose:not([hidden])");
  await page.fill("#message", "Add a line to main.rs");
  await page.press("#message", "Enter");

  // The write card with its diff; Allow once.
  const card = page.locator(".card:not(.closed)");
  await card.waitFor();
  assert.equal(await card.getAttribute("data-kind"), "write");
  const diff = await card.locator(".diff").innerText();
  assert.match(diff, /\+\s*println!\("from the page"\);/);
  await page.screenshot({ path: join(shots, "write-card.png"), fullPage: true });
  // Allowed with the keyboard shortcut.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("o");
  await page.waitForSelector(".card.closed .answered");

  // The question, answered in the page.
  const question = page.locator(".question:not(.closed)");
  await question.waitFor();
  await question.locator("input").fill("blue");
  await question.locator("button").click();
  await page.waitForSelector(".question.closed");
  assert.match(await page.locator(".question.closed").last().innerText(), /reply: blue/);

  // The run card: denied with the keyboard shortcut.
  const run = page.locator('.card[data-kind="run"]:not(.closed)');
  await run.waitFor();
  assert.match(await run.innerText(), /"rm","-rf","src"/);
  assert.match(await run.innerText(), /timeout 5 s/);
  // A jail with every layer is one line, its layers behind "details"; a
  // machine that cannot give one lists them.
  assert.match(await run.innerText(), /jail: no network · writes only the workspace|sandbox/);
  const details = run.locator("details.layers");
  if (await details.count()) {
    assert.doesNotMatch(await run.innerText(), /PID namespace/);
    await details.locator("summary").click();
    assert.match(await run.innerText(), /PID namespace/);
  }
  await page.screenshot({ path: join(shots, "run-card.png"), fullPage: true });
  // The keys do not answer while the reason is typed; Enter in it denies, with the reason.
  await run.locator("input.reason").fill("do not remove src");
  await run.locator("input.reason").press("Enter");
  await page.waitForSelector('.card[data-kind="run"].closed .answered:has-text("deny: do not remove src")');
  await page.waitForSelector(".result");
  assert.match(await page.locator(".result").last().innerText(), /nothing was removed/);
  // A script reports no usage: unknown, said so, never "0 tokens".
  assert.match(await page.locator("#usage").innerText(), /usage not reported/);
  assert.ok(existsSync(join(ws, "src")), "the denied command never ran");
  assert.match(readFileSync(join(ws, "src/main.rs"), "utf8"), /from the page/);

  // Rewind the turn's files: the plan first, then the rewind; then undo it.
  const turn = page.locator(".row:has(.user:has-text('Add a line to main.rs'))");
  await turn.locator(".rewind button").click();
  const plan = turn.locator(".rewind .plan");
  await plan.waitFor();
  assert.match(await plan.innerText(), /restore src\/main\.rs/);
  await page.screenshot({ path: join(shots, "rewind-plan.png"), fullPage: true });
  await plan.getByText("Rewind these files").click();
  const rewound = page.locator(".note.rewound").last();
  await rewound.waitFor({ timeout: 10000 });
  assert.match(await rewound.innerText(), /restored src\/main\.rs/);
  assert.doesNotMatch(readFileSync(join(ws, "src/main.rs"), "utf8"), /from the page/);
  const undo = page.locator(".row:has(.note.rewound) .rewind").last();
  await undo.locator("button").click();
  await undo.locator(".plan").getByText("Rewind these files").click();
  await page.waitForFunction(() => document.querySelectorAll(".note.rewound").length === 2, null, { timeout: 10000 });
  assert.match(readFileSync(join(ws, "src/main.rs"), "utf8"), /from the page/);

  // A second turn: allow a long command, then cancel it.
  await page.fill("#message", "Wait a while");
  await page.press("#message", "Enter");
  const long = page.locator('.card[data-kind="run"]:not(.closed)');
  await long.waitFor();
  await long.getByText("Allow once").click();
  // Cancel only once the answer is shown and the command is running.
  await page.waitForSelector('.card[data-kind="run"].closed .answered:has-text("allow_once")', { timeout: 10000 });
  for (let waited = 0; !existsSync(join(ws, "running")); waited += 20) {
    assert.ok(waited < 20000, "the command never started");
    await new Promise((ok) => setTimeout(ok, 20));
  }
  await page.waitForSelector("#cancel:not([hidden])", { timeout: 10000 });
  await page.click("#cancel");
  await page.waitForSelector(".error:has-text('cancelled')", { timeout: 10000 });
  await page.screenshot({ path: join(shots, "session.png"), fullPage: true });

  // Always allow: the card shows the rule it saves; widened to `echo …`.
  await page.fill("#new-workspace", ws);
  await page.fill("#new-model", "script:" + alwaysScript);
  await page.click("#new-session button");
  await page.fill("#message", "Echo twice");
  await page.press("#message", "Enter");
  const echo = page.locator('.card[data-kind="run"]:not(.closed)');
  await echo.waitFor();
  assert.match(await echo.locator("pre.rule").innerText(), /argv = \["echo","one","two"\]/);
  await echo.locator("select.widen").selectOption("1");
  assert.match(await echo.locator("pre.rule").innerText(), /argv_prefix = \["echo"\]/);
  await page.screenshot({ path: join(shots, "always-card.png"), fullPage: true });
  await echo.locator("button[data-answer=allow_always]").click();
  await page.waitForSelector(".result:has-text('always done')", { timeout: 10000 });
  assert.equal(await page.locator(".card").count(), 1, "the second echo went through on the rule");
  assert.match(await page.locator(".allowed-by").first().innerText(), /allowed by rule r-/);
  // The panel lists the rule; a click revokes it.
  await page.click("#show-grants");
  const saved = page.locator("#grants .grant:has-text('argv_prefix')");
  await saved.waitFor();
  await page.screenshot({ path: join(shots, "grants.png"), fullPage: true });
  await saved.getByText("Revoke").click();
  await page.waitForFunction(() => !document.querySelector("#grants").textContent.includes("argv_prefix"));
  assert.ok(!readFileSync(join(home, "rules.toml"), "utf8").includes("argv_prefix"), "revoked from rules.toml");
  await page.click("#grants button:has-text('Close')");

  // Preview: the run card's Preview button, then the effects card's Apply.
  await page.fill("#new-workspace", ws);
  await page.fill("#new-model", "script:" + previewScript);
  await page.click("#new-session button");
  await page.fill("#message", "Preview a write");
  await page.press("#message", "Enter");
  const asked = page.locator('.card[data-kind="run"]:not(.closed)');
  await asked.waitFor();
  assert.match(await asked.innerText(), /asks to preview it/);
  await asked.locator("button[data-answer=preview]").click();
  const effects = page.locator('.card[data-kind="effects"]:not(.closed)');
  await effects.waitFor({ timeout: 10000 });
  assert.match(await effects.innerText(), /created preview\.txt/);
  assert.match(await effects.locator(".diff").first().innerText(), /\+\s*previewed/);
  assert.ok(!existsSync(join(ws, "preview.txt")), "nothing is in the workspace before Apply");
  await page.screenshot({ path: join(shots, "effects-card.png"), fullPage: true });
  await effects.locator("button[data-answer=apply]").click();
  await page.waitForSelector(".result:has-text('preview done')", { timeout: 10000 });
  assert.equal(readFileSync(join(ws, "preview.txt"), "utf8"), "previewed\n");

  // The long session keeps only the rows near the view in the DOM, and
  // draws the others again when they are scrolled to.
  await page.fill("#new-workspace", ws);
  await page.fill("#new-model", "script:" + longScript);
  await page.click("#new-session button");
  await page.fill("#message", "Read it all");
  await page.press("#message", "Enter");
  await page.waitForSelector(".result:has-text('long done')", { timeout: 30000 });
  const drawn = await page.locator("#transcript .row").count();
  assert.ok(drawn > 40 && drawn < 400, `${drawn} of 1,000+ rows drawn`);
  await page.locator("#transcript").evaluate((box) => { box.scrollTop = 0; });
  await page.locator(".user:has-text('Read it all')").waitFor();
  // Blocks of 50 rows; far from the view only the newest keeps its rows.
  const nearEnd = () => page.locator("#transcript .block:nth-last-child(2) .row").count();
  assert.equal(await nearEnd(), 0, "the rows far below the view are not drawn");
  assert.ok(await page.locator("#transcript .row").count() < 400);
  await page.locator("#transcript").evaluate((box) => { box.scrollTop = box.scrollHeight; });
  await page.waitForFunction(() => document.querySelectorAll("#transcript .block:nth-last-child(2) .row").length > 0);
  // …and the top, far above the view now, is let go.
  await page.waitForFunction(() => ![...document.querySelectorAll("#transcript .user")].some((u) => u.textContent === "Read it all"));
  // A checkpoint's walk still running under an open card: each word on
  // it moves the card's count and takes the place of the row before it.
  // (No server walks slowly on cue: the events are handed to the page as
  // its stream hands them.)
  const seq = await page.evaluate(() => state.lastSeq);
  const walk = (n, met) => page.evaluate(([at, count]) => take({ seq: at, ts: "", type: "notice",
    key: "checkpoint_walk", message: `walking the whole workspace: ${count} files and folders so far` }), [seq + n, met]);
  await page.evaluate((at) => take({ seq: at, ts: "", type: "card", id: "card-walk", call_id: "call-walk",
    tool: "write_file", kind: "write", path: "walked.txt",
    checkpointing: "still being taken (1024 files and folders walked so far)" }), seq + 1);
  const walking = page.locator('.card[data-id="card-walk"] .checkpointing');
  await walking.waitFor();
  await walk(2, 2048);
  await page.locator(".row > .note:has-text('2048 files')").waitFor();
  await walk(3, 4096);
  await page.waitForFunction(() => document.querySelector('.card[data-id="card-walk"] .checkpointing').textContent.includes("4096"));
  assert.equal(await page.locator(".note:has-text('files and folders so far')").count(), 2, "the card's line and one row");
  assert.doesNotMatch(await page.locator("#transcript").innerText(), /2048|1024 files/);
  assert.deepEqual(errors, [], "the page threw");
  // The token never became a cookie, and left the address bar.
  assert.deepEqual(await page.context().cookies(), [], "no cookie carries the token");
  assert.ok(!page.url().includes("token="), page.url());
  console.log(`ok: browser test passed; screenshots in ${shots}`);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await browser.close();
  server.kill("SIGTERM");
}
process.exit(failed ? 1 : 0);
