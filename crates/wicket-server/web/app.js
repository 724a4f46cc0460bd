// The Wicket page: sessions, a live transcript over server-sent events, and
// cards answered with buttons or the keys o / s / a / d, and a panel of the
// rules and grants in force, each revocable with a click. No build step.
"use strict";

const $ = (id) => document.getElementById(id);

// The token arrives in the link's fragment (`/#token=…`), which no server
// ever receives; it stays in this tab (sessionStorage) and goes out only as
// the Authorization header. No cookie carries it.
function hashParams() {
  return new URLSearchParams(location.hash.slice(1));
}
const TOKEN = (() => {
  const given = hashParams().get("token");
  if (given) {
    sessionStorage.setItem("wicket-token", given);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("wicket-token") || "";
})();

// Control characters and bidi overrides made visible, as the terminal
// shows them: what a card says is what it shows.
// The same rule as text::visible: C0 (but tab and newline), DEL, C1, the
// line separators and every format character (Cf: zero-width, BOM, word
// joiner, tags, bidi controls) shown as a marker. A run of more than 8
// spaces shows as ␠×N, as on every card.
function visible(text) {
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/gu, (c) => {
    const code = c.codePointAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return "\u2421";
    return "<U+" + code.toString(16).toUpperCase().padStart(4, "0") + ">";
  }).replace(/ {9,}/g, (run) => `␠×${run.length}`);
}

const state = {
  sessions: [],
  current: null,     // session id
  source: null,      // the event stream's AbortController
  lastSeq: 0,
  blocks: [],        // BLOCK items each, drawn only near the viewport
  calls: new Map(),  // call_id -> item
  cards: new Map(),  // card id -> item
  questions: new Map(),
  open: new Set(),   // cards and questions not yet answered or withdrawn
  pending: [],       // events waiting for the next frame
  scheduled: false,
  stick: true,       // keep the newest row in view
  followedTo: 0,     // where following the newest row last scrolled to
  observer: null,
  running: false,
  walk: null,        // the row of the newest word on a checkpoint's walk
};

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(method, path, body) {
  const headers = { authorization: "Bearer " + TOKEN };
  if (body) headers["content-type"] = "application/json";
  const response = await fetch("/api" + path, {
    method,
    headers,
    body: body ? JSON.stringify(body) : undefined,
    credentials: "omit",
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = data.error ? data.error.message : response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return data;
}

// ---- the session list ----

async function refreshSessions() {
  try {
    state.sessions = await api("GET", "/sessions");
  } catch (error) {
    return;
  }
  const list = $("sessions");
  list.replaceChildren();
  for (const s of state.sessions) {
    const li = el("li");
    li.dataset.id = s.id;
    if (s.id === state.current) li.classList.add("selected");
    const top = el("div");
    top.append(el("span", "", (s.title || s.id) + " "), el("span", "badge " + s.status, s.status));
    if (s.queued > 0) top.append(el("span", "queued", s.queued + " queued"));
    li.append(top, el("div", "ws", s.workspace));
    li.onclick = () => select(s.id);
    list.append(li);
    if (s.id === state.current) setStatus(s.status);
  }
}

function setStatus(status) {
  const badge = $("status");
  badge.textContent = status;
  badge.className = "badge " + status;
  state.running = status === "running" || status === "waiting";
  $("cancel").hidden = !state.running;
}

$("new-session").onsubmit = async (event) => {
  event.preventDefault();
  $("new-error").textContent = "";
  // Until the new session is the one shown, a message typed now would go
  // to the one before it: the box waits.
  $("message").disabled = true;
  try {
    const body = { workspace: $("new-workspace").value.trim() };
    const model = $("new-model").value.trim();
    if (model) body.model = model;
    const { id } = await api("POST", "/sessions", body);
    await refreshSessions();
    select(id);
  } catch (error) {
    $("new-error").textContent = error.message;
  } finally {
    $("message").disabled = false;
  }
};

// ---- the transcript ----
//
// Events become items, one row each; a tool result, an answer or a reply
// attaches to the item it belongs to instead of making a row. Items are
// grouped in blocks of BLOCK. A block far from the viewport holds no rows,
// only its height, so a session of 10,000 events keeps a few hundred rows
// in the DOM however long it grows, and loading it renders only what is
// on screen.

const BLOCK = 50;
const ROW_GUESS = 26; // px per item of a block never drawn yet
const MARGIN = 1200;  // px above and below the viewport that stay drawn

function resetTranscript() {
  $("usage").textContent = "";
  if (state.observer) state.observer.disconnect();
  Object.assign(state, {
    lastSeq: 0, blocks: [], calls: new Map(), cards: new Map(), questions: new Map(), context: undefined, cost: undefined,
    open: new Set(), pending: [], stick: true, followedTo: 0, walk: null,
    observer: new IntersectionObserver(onVisibility, { root: $("transcript"), rootMargin: `${MARGIN}px 0px` }),
  });
  $("transcript").replaceChildren();
}

function select(id) {
  if (state.source) state.source.abort();
  state.current = id;
  resetTranscript();
  $("compose").hidden = false;
  const s = state.sessions.find((x) => x.id === id);
  $("title").textContent = s ? (s.title || s.id) : id;
  for (const li of document.querySelectorAll("#sessions li")) li.classList.toggle("selected", li.dataset.id === id);
  history.replaceState(null, "", "#session=" + encodeURIComponent(id));
  load(id);
}

// The log so far in one response, then the live stream from its last seq.
async function load(id) {
  try {
    const { events } = await api("GET", `/sessions/${encodeURIComponent(id)}/log?after=0`);
    if (state.current !== id) return;
    for (const event of events) take(event);
  } catch (error) {
    // The stream replays whatever the bulk load did not bring.
  }
  if (state.current === id) connect();
}

function take(event) {
  if (event.seq <= state.lastSeq) return;
  state.lastSeq = event.seq;
  state.pending.push(event);
  if (!state.scheduled) {
    state.scheduled = true;
    requestAnimationFrame(flush);
  }
}

// The event stream over fetch (EventSource cannot send the Authorization
// header): server-sent events parsed as they arrive; when the stream ends
// or breaks, it is opened again from the last seq seen.
function connect() {
  const id = state.current;
  const control = new AbortController();
  state.source = control;
  const again = () => setTimeout(() => { if (state.current === id && state.source === control) connect(); }, 1000);
  fetch(`/api/sessions/${encodeURIComponent(id)}/events?after=${state.lastSeq}`, {
    headers: { authorization: "Bearer " + TOKEN, accept: "text/event-stream" },
    credentials: "omit",
    signal: control.signal,
  }).then(async (response) => {
    if (!response.ok || !response.body) return again();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
        if (data && state.current === id) take(JSON.parse(data));
      }
    }
    again();
  }).catch(() => { if (!control.signal.aborted) again(); });
}

let settling = false;
$("transcript").addEventListener("scroll", () => {
  const box = $("transcript");
  // A scroll event comes a frame after the scroll: rows added in between
  // must not read as the person scrolling away. Only a move up from where
  // the page last followed to, or a stop short of the bottom, lets go.
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  state.stick = atBottom || (state.stick && box.scrollTop >= state.followedTo - 1);
  if (!settling) {
    settling = true;
    requestAnimationFrame(() => { settling = false; settle(); });
  }
}, { passive: true });

function followBottom() {
  const box = $("transcript");
  if (state.stick) {
    box.scrollTop = box.scrollHeight;
    state.followedTo = box.scrollTop;
  }
}

// Take in what arrived since the last frame. Rows are made only for the
// blocks that need them: the newest two (where the turn happens), any that
// hold an open card or question, and those the observer finds on screen.
function flush() {
  state.scheduled = false;
  const batch = state.pending.splice(0, 20000);
  let asks = false;
  for (const event of batch) {
    ingest(event);
    asks ||= event.type === "card" || event.type === "question";
  }
  if (asks) state.stick = true;
  const needed = new Set(state.blocks.slice(-2));
  for (const item of state.open) needed.add(item.block);
  for (const block of needed) if (!block.filled) { block.filled = true; block.dirty = true; }
  for (const block of state.blocks) if (block.dirty) paint(block);
  settle();
  if (state.pending.length > 0) {
    state.scheduled = true;
    requestAnimationFrame(flush);
  }
}

// One event into the transcript's data, and into its row when it has one.
// Context used and what the session cost so far, from the replies' usage.
function showUsage(usage) {
  if (!usage) {
    // The server reported none: unknown, not zero.
    $("usage").textContent = "usage not reported";
    return;
  }
  if (usage.context_used_percent !== undefined) state.context = usage.context_used_percent;
  if (usage.cost_usd !== undefined) state.cost = (state.cost || 0) + usage.cost_usd;
  const parts = [];
  if (state.context !== undefined) parts.push(`context ${state.context}%`);
  if (state.cost !== undefined) parts.push(`$${state.cost.toFixed(4)}`);
  $("usage").textContent = parts.join(" · ");
}

// How far the checkpoint an open card waits on got: the count on the card
// moves, and the transcript keeps one row of it, the newest (true: that
// row took it).
function walked(event) {
  for (const item of state.open) {
    if (item.event.type !== "card" || !item.event.checkpointing) continue;
    item.event.checkpointing = event.message;
    const line = item.node && item.node.querySelector(".checkpointing");
    if (line) line.textContent = visible(event.message);
  }
  const block = state.blocks[state.blocks.length - 1];
  const last = state.walk;
  if (!last || !block || block.items[block.items.length - 1] !== last) return false;
  last.event = event;
  const note = last.node && last.node.querySelector(".note");
  if (note) note.textContent = "notice: " + visible(event.message);
  return true;
}

function ingest(event) {
  switch (event.type) {
    case "user_message": setStatus("running"); break;
    // The one end of a turn: what ended it (result, error, cancel) is shown by its own event.
    case "turn_ended": setStatus("idle"); return;
    case "compacted": showUsage(event.usage); break;
    case "assistant_message": showUsage(event.usage); if (!event.text || !event.text.trim()) return; break;
    case "tool_result": {
      for (const item of [...state.open]) if (item.event.call_id === event.call_id) close(item, null);
      const call = state.calls.get(event.call_id);
      if (call) {
        call.result = event;
        if (call.node) showResult(call);
        return;
      }
      break;
    }
    case "answer": {
      const card = state.cards.get(event.card);
      if (card) close(card, event.answer + (event.stale ? " (stale: the file changed; asking again)" : "")
        + (event.reason ? ": " + visible(event.reason) : ""));
      return;
    }
    case "reply": {
      const q = state.questions.get(event.question);
      if (q) close(q, event.reply);
      return;
    }
    case "session_started": case "tool_call": case "card": case "question": case "result":
    case "cancelled": case "error":
    case "notice":
      if (event.key === "checkpoint_walk" && walked(event)) return;
      break;
    case "queued": case "retry": case "hook": case "interrupted": case "mcp": case "unreadable":
    case "checkpoint": case "rewound": case "net": case "task":
      break;
    default:
      return;
  }
  const item = { event, node: null, closed: false, answered: null, result: null, expanded: false };
  if (event.type === "tool_call") state.calls.set(event.call_id, item);
  if (event.type === "card") { state.cards.set(event.id, item); state.open.add(item); }
  if (event.type === "question") { state.questions.set(event.id, item); state.open.add(item); }
  if (event.type === "notice" && event.key === "checkpoint_walk") state.walk = item;
  let block = state.blocks[state.blocks.length - 1];
  if (!block || block.items.length === BLOCK) block = newBlock();
  item.block = block;
  block.items.push(item);
  block.dirty = true;
}

function newBlock() {
  const node = el("div", "block");
  const block = { node, items: [], filled: false, height: null, dirty: false };
  node.block = block;
  $("transcript").append(node);
  state.observer.observe(node);
  state.blocks.push(block);
  return block;
}

// Bring a block's DOM up to its items: rows when filled, a spacer of its
// height when not.
function paint(block) {
  block.dirty = false;
  if (!block.filled) {
    block.node.style.height = (block.height ?? block.items.length * ROW_GUESS) + "px";
    return;
  }
  block.node.style.height = "";
  const fragment = document.createDocumentFragment();
  for (const item of block.items) if (!item.node) fragment.append(row(item));
  block.node.append(fragment);
}

// Keeps only its height; its rows are made again when it comes back.
function empty(block) {
  block.height = block.node.offsetHeight;
  block.filled = false;
  for (const item of block.items) item.node = null;
  block.node.replaceChildren();
  paint(block);
}

function far(block) {
  const r = block.node.getBoundingClientRect();
  const view = $("transcript").getBoundingClientRect();
  return r.bottom < view.top - MARGIN || r.top > view.bottom + MARGIN;
}

function holdsOpen(block) {
  return block.items.some((item) => state.open.has(item));
}

// After new rows or a scroll: follow the bottom if we were there, and empty
// the drawn blocks that are far from view.
function settle() {
  followBottom();
  const last = state.blocks[state.blocks.length - 1];
  for (const block of state.blocks) {
    if (block.filled && block !== last && !holdsOpen(block) && far(block)) empty(block);
  }
}

function onVisibility(entries) {
  let filled = false;
  for (const entry of entries) {
    const block = entry.target.block;
    if (entry.isIntersecting && !block.filled) {
      block.filled = true;
      paint(block);
      filled = true;
    }
  }
  if (filled) settle();
}

function summary(name, args) {
  if (!args || typeof args !== "object") return String(args || "");
  if (name === "run") return (args.argv || []).join(" ");
  if (name === "grep") return JSON.stringify(args.pattern) + (args.path ? " " + args.path : "");
  if (name === "ask") return args.question || "";
  if (name === "use_skill") return args.name || "";
  if (name === "finish") return "";
  if (name === "task") return `${args.description || ""} (${args.tools || "read"})`;
  return args.path || ".";
}

function resultText(result) {
  return result.ok ? JSON.stringify(result.output, null, 2) : `${result.error.kind}: ${result.error.message}`;
}

function showResult(call) {
  if (!call.result.ok) call.node.classList.add("failed");
  call.node.querySelector("pre").textContent += "\n\nresult: " + resultText(call.result);
}

// The row of one item, as its data says now.
function row(item) {
  const event = item.event;
  const node = el("div", "row");
  switch (event.type) {
    case "session_started":
      node.append(el("span", "note", `session ${event.session} in ${event.workspace}`));
      break;
    case "user_message":
      node.append(el("div", "user", event.text), rewindControl(event.seq, "Rewind files to before this turn"));
      break;
    case "checkpoint":
      node.append(el("div", "note warn", "no checkpoint: " + visible(event.message)));
      break;
    case "net":
      node.append(el("div", event.refused ? "note warn" : "note", visible(netLine(event))));
      break;
    case "rewound":
      node.append(el("div", "note rewound", visible(rewoundLine(event))), rewindControl(null, "Undo this rewind"));
      break;
    case "assistant_message":
      node.append(el("div", "assistant", event.text));
      break;
    case "tool_call": {
      node.className = "row call";
      const line = el("div");
      line.append(el("span", "mark", "▸"), el("span", "name", event.name + " "), el("span", "", summary(event.name, event.arguments)));
      if (event.allowed_by) line.append(el("span", "allowed-by", " (" + visible(allowedBy(event.allowed_by)) + ")"));
      node.append(line, el("pre", "", "arguments: " + JSON.stringify(event.arguments, null, 2)));
      const toggle = (open) => {
        item.expanded = open;
        node.classList.toggle("open", open);
        line.firstChild.textContent = open ? "▾" : "▸";
      };
      node.onclick = (e) => { if (e.target.tagName !== "PRE") toggle(!item.expanded); };
      item.node = node;
      if (item.expanded) toggle(true);
      if (item.result) showResult(item);
      return node;
    }
    case "tool_result":
      node.append(el("div", "note", "result: " + resultText(event).slice(0, 200)));
      break;
    case "card":
      node.append(renderCard(item));
      break;
    case "question":
      node.append(renderQuestion(item));
      break;
    case "result":
      node.append(el("div", "result", "✔ " + event.text));
      break;
    case "notice":
      node.append(el("div", "note", "notice: " + visible(event.message)));
      break;
    case "error":
      node.append(el("div", "error", "error: " + visible(event.message)));
      break;
    case "cancelled":
      node.append(el("div", "error", "cancelled: the turn ended, and a running command was stopped (TERM, then KILL 2 s later)"));
      break;
    case "interrupted":
      node.append(el("div", "error", visible("interrupted: the process running this turn ended (a crash or a kill)"
        + (event.card ? `; card ${event.card} can no longer be answered`
          : event.question ? `; question ${event.question} can no longer be answered` : ""))));
      break;
    case "compacted":
      node.append(el("div", "note", `the conversation up to event ${event.to_seq} was summarised to fit the model: events ${event.from_seq}–${event.to_seq}, ~${event.tokens_before} → ~${event.tokens_after} tokens`));
      break;
    case "mcp":
      node.append(el("div", "note", visible(`MCP server ${event.server}: ${event.state}${event.message ? ": " + event.message : ""}`)));
      break;
    case "unreadable":
      node.append(el("div", "error", visible(`log line ${event.line} could not be read: ${event.error}`)));
      break;
    case "queued":
      node.append(el("div", "note", "queued: " + visible(event.text)));
      break;
    case "task":
      node.append(el("div", "note", `sub-task: ${visible(event.description)} (session ${visible(event.session)}, tools ${visible(event.tools)})`));
      break;
    case "retry":
      node.append(el("div", "note", visible(`retry ${event.attempt} in ${event.delay_ms} ms: ${event.reason}`)));
      break;
    case "hook":
      {
        // One line, as every front end shows a hook's run.
        const said = (event.stderr || "").split("\n").find((line) => line.trim()) || "";
        const took = event.duration_ms === undefined ? "" : ` (${event.duration_ms} ms)`;
        const name = event.name || event.command.join(" ");
        node.append(el("div", "note", visible(`${event.event || "Stop"} hook ${name}: ${event.outcome}${took}${said ? ": " + said.slice(0, 200) : ""}`)));
      }
      break;
  }
  item.node = node;
  return node;
}

// A card or question is answered (`answered` says how) or withdrawn (null).
function close(item, answered) {
  if (item.closed) return;
  item.closed = true;
  item.answered = answered;
  state.open.delete(item);
  const box = item.node && item.node.firstChild;
  if (!box) return;
  if (item.event.type === "card") closeCard(box, answered);
  else closeQuestion(box, answered);
}

// ---- cards ----

const KEYWORDS = /\b(fn|let|mut|pub|use|mod|struct|enum|impl|trait|match|if|else|for|while|loop|return|async|await|const|static|def|class|import|from|function|var|export|type|interface|package|func|go|true|false|null|None|Some|Ok|Err|self|Self)\b/g;

// A light syntax colouring for diff lines: comments, strings, numbers, keywords.
function colour(text) {
  const out = document.createDocumentFragment();
  const pattern = /(\/\/.*$|#.*$|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\b\d+(?:\.\d+)?\b|\b[A-Za-z_]\w*\b)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) out.append(text.slice(last, match.index));
    const token = match[0];
    let cls = "";
    if (token.startsWith("//") || token.startsWith("#")) cls = "tok-com";
    else if (token.startsWith('"') || token.startsWith("'")) cls = "tok-str";
    else if (/^\d/.test(token)) cls = "tok-num";
    else if (token.match(KEYWORDS)) cls = "tok-kw";
    out.append(cls ? el("span", cls, token) : token);
    last = match.index + token.length;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

function renderDiff(diff) {
  const box = el("div", "diff");
  for (const raw of diff.split("\n")) {
    if (raw === "") continue;
    const line = visible(raw);
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "file";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    const div = el("div", cls);
    if (cls === "add" || cls === "del" || cls === "") {
      div.append(line.slice(0, 1));
      div.append(colour(line.slice(1)));
    } else {
      div.textContent = line;
    }
    box.append(div);
  }
  return box;
}

function sandboxLine(sandbox) {
  const network = sandbox.network ? "with network" : "no network";
  const mode = {
    "workspace-write": `sandbox: writes only in the workspace and its own TMPDIR, ${network}`,
    "read-only": `sandbox: writes only in its own TMPDIR, ${network}`,
    "off": "sandbox OFF in your config: it runs unconfined",
    "unavailable": "sandbox UNAVAILABLE",
  }[sandbox.mode] || "sandbox: " + sandbox.mode;
  return sandbox.note ? `${mode} (${visible(sandbox.note)})` : mode;
}

function renderCard(item) {
  const event = item.event;
  const card = el("div", "card");
  card.dataset.id = event.id;
  card.dataset.call = event.call_id;
  card.dataset.kind = event.kind;
  const tool = visible(event.tool);
  if (event.task) {
    // A sub-task's card, shown in its parent's view and answered here.
    card.classList.add("subtask");
    card.append(el("div", "note subtask", `sub-task: ${visible(event.task.description)} (session ${visible(event.task.session)})`));
  }
  if (event.kind === "write") {
    card.append(el("h3", "", `${tool} wants to write${event.outside ? " outside the workspace" : ""}`), el("span", "path", visible(event.path)));
    if (event.git) card.append(el("div", "note warn", "git: may change .git: commits, branches, hooks, config that git runs later"));
    else if (event.runs_later) card.append(el("div", "note", visible(event.runs_later)));
    if (event.diff) card.append(renderDiff(event.diff));
    if (event.diff_truncated) card.append(el("div", "note", `The whole diff is ${event.diff_bytes} bytes; the card shows its first lines.`));
  } else if (event.kind === "outside_read") {
    const what = { read: "read a file", list: "list the names in a folder", grep: "search every file below a path" }[event.reach] || "read";
    card.append(el("h3", "", `${tool} wants to ${what} outside the workspace`), el("span", "path", visible(event.path)));
  } else if (event.kind === "net") {
    const who = event.server ? `the MCP server ${visible(event.server)}` : "a command";
    const host = event.host.includes(":") ? `[${event.host}]` : event.host;
    const target = event.shown ? `${visible(event.shown)}:${event.port} (${host})` : `${host}:${event.port}`;
    card.append(el("h3", "", `${who} wants to reach`), el("span", "path", visible(target)));
    if (event.local) card.append(el("div", "note warn", "it resolves to a local address (this machine or your network)"));
    if ((event.addresses || []).length) card.append(el("div", "note", "address: " + visible(event.addresses.join(", "))));
    if ((event.argv || []).length) card.append(el("div", "note", "command: " + visible(JSON.stringify(event.argv))));
    card.append(el("div", "note", "Allow once lets this host for the rest of the command; the connection waits."));
  } else if (event.kind === "plan") {
    card.append(el("h3", "", "the model proposes this plan: Allow once approves it, and every tool is offered"));
    card.append(el("pre", "args", visible(event.plan)));
  } else if (event.kind === "effects") {
    const end = event.exit_code === null || event.exit_code === undefined ? "a signal ended it" : `exit ${event.exit_code}`;
    card.append(el("h3", "", `the preview of ${visible(JSON.stringify(event.argv))} changed ${event.changes.length} path(s) (${end}); nothing is in the workspace yet`));
    for (const change of event.changes) {
      let head = `${change.change} ${visible(change.path)}`;
      if (change.change === "mode" && change.mode) head += ` (mode ${change.mode})`;
      if (change.entries !== undefined) head += ` (${change.entries} entries, ${bytes(change.bytes || 0)})`;
      if (change.ignored) head += " (ignored: no checkpoint holds it)";
      if (change.git) head += " (git: git runs what .git holds; no rewind takes it back)";
      card.append(el("div", "note effect", head));
      if (change.diff && change.change !== "link") card.append(renderDiff(change.diff));
      else if (change.diff) card.append(el("div", "note", visible(change.diff)));
    }
    if (event.stdout) card.append(el("pre", "args", "stdout:\n" + visible(event.stdout)));
    if (event.stderr) card.append(el("pre", "args", "stderr:\n" + visible(event.stderr)));
    if ((event.wanted_hosts || []).length) card.append(el("div", "note warn", "it wanted to reach (a preview has no network): " + visible(event.wanted_hosts.join(", "))));
    if (event.note) card.append(el("div", "note", visible(event.note)));
  } else if (event.kind === "mcp") {
    card.append(el("h3", "", `the MCP server ${visible(event.server)} wants to run its tool ${tool}`));
    card.append(el("pre", "args", visible(event.arguments_text)));
    if (event.arguments_truncated) card.append(el("div", "note", "The arguments are longer; the card shows their start."));
    if (event.annotations) card.append(el("div", "note", "The server says (a claim, not a permission): " + visible(JSON.stringify(event.annotations))));
  } else {
    const who = { hook: "a hook of the workspace's wants to run", mcp: "the workspace's MCP server wants to start" }[event.source] || "run wants to start a command";
    card.append(el("h3", "", who), el("span", "argv", visible(JSON.stringify(event.argv))));
    card.append(el("div", "note", "in " + visible(event.cwd || ".")));
    if (event.timeout_s) card.append(el("div", "note", `timeout ${event.timeout_s} s`));
    if (event.network === "direct") card.append(el("div", "note warn", "DIRECT network: any host, not through Wicket"));
    else if (event.network) card.append(el("div", "note warn", "network: through Wicket, host by host (each new host is a card)"));
    if (event.git) card.append(el("div", "note warn", "git: may change .git: commits, branches, hooks, config that git runs later"));
    if ((event.read || []).length) card.append(el("div", "note warn", "also reads: " + event.read.map(visible).join(", ")));
    if (event.sandbox) {
      const warn = event.sandbox.mode === "off" || event.sandbox.mode === "unavailable";
      const layers = (event.sandbox.layers || []).map((layer) => el("div", "note layer", "· " + visible(layer)));
      if (event.sandbox.complete) {
        // Every layer in force: one line, the layers behind a toggle.
        card.append(el("div", "note sandbox", visible(event.sandbox.summary)));
        const details = el("details", "layers");
        details.append(el("summary", "", "details"), ...layers);
        card.append(details);
      } else {
        card.append(el("div", warn ? "note warn sandbox" : "note sandbox", sandboxLine(event.sandbox)));
        card.append(...layers);
      }
    }
  }
  if (event.checkpointing) card.append(el("div", "note warn checkpointing", visible(event.checkpointing)));
  if (event.no_checkpoint) card.append(el("div", "note warn", "no checkpoint: " + visible(event.no_checkpoint)));
  if (event.always) card.append(renderAlways(item));
  if (event.kind === "run" && event.preview) card.append(el("div", "note warn", "the model asks to preview it: Preview runs it over a copy of the workspace first"));
  if (event.kind === "run" && event.no_preview) card.append(el("div", "note", visible(event.no_preview)));
  if (event.kind === "run" && event.managed) card.append(el("div", "note danger", visible(event.managed)));
  const buttons = el("div", "buttons");
  const answers = [];
  if (event.kind === "effects") {
    answers.push(["apply", "Apply (a)"], ["discard", "Discard (d)"]);
  } else {
    answers.push(["allow_once", "Allow once (o)"], ["allow_session", "Allow for session (s)"]);
    if (event.always) answers.push(["allow_always", "Always allow (a)"]);
    if (event.kind === "run" && !event.no_preview) answers.push(["preview", "Preview (p)"]);
    answers.push(["deny", "Deny (d)"]);
  }
  for (const [answer, label] of answers) {
    const button = el("button", "", label);
    button.dataset.answer = answer;
    button.onclick = () => answerCard(item, answer);
    buttons.append(button);
  }
  // A deny may say why: the model reads it. Enter in the field denies.
  if (event.kind === "effects") {
    card.append(buttons);
    if (item.closed) closeCard(card, item.answered);
    return card;
  }
  const reason = el("input", "reason");
  reason.placeholder = "why you deny it (optional; the model reads it)";
  reason.maxLength = 2000;
  reason.onkeydown = (e) => {
    if (e.key === "Enter") { e.preventDefault(); answerCard(item, "deny"); }
  };
  item.reason = reason;
  buttons.append(reason);
  card.append(buttons);
  if (item.closed) closeCard(card, item.answered);
  return card;
}

// Why a call went through without a card, in words (as every front end says it).
function allowedBy(by) {
  if (by.rule) return "allowed by rule " + by.rule;
  if (by.rules) return "allowed by rules " + by.rules.join(", ");
  if (by.grant) return "allowed for the session (" + by.grant + ")";
  if (by.hook) return "allowed by hook " + by.hook;
  if (by.card) return "allowed at card " + by.card;
  return "allowed";
}

// A byte count as a person reads it (as wicket_protocol::summary::bytes).
function bytes(count) {
  if (count < 1000) return `${count} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = count / 1000, unit = 0;
  while (value >= 1000 && unit + 1 < units.length) { value /= 1000; unit += 1; }
  return `${value.toFixed(1)} ${units[unit]}`;
}

// A connection through Wicket, as it closed (as NetEvent::line).
function netLine(event) {
  const from = event.server ? `MCP server ${event.server}: ` : "";
  if (event.refused) return `${from}${event.host}:${event.port} reached nothing: ${event.refused}`;
  const by = event.allowed_by ? allowedBy(event.allowed_by) : "allowed";
  return `${from}sent ${bytes(event.sent)} to ${event.host}:${event.port} (received ${bytes(event.received)}; ${by})`;
}

// The rule "Always allow" saves, as it will be written in rules.toml; a run
// card's command can be widened to fewer of its first words first.
function renderAlways(item) {
  const event = item.event;
  const box = el("div", "always");
  const rule = el("pre", "rule");
  const show = () => {
    const spec = Object.assign({}, event.always);
    const prefix = item.widened;
    if (prefix) { delete spec.argv; spec.argv_prefix = prefix; }
    rule.textContent = "[[rules]]\n" + Object.entries(spec)
      .map(([key, value]) => `${key} = ${JSON.stringify(value)}`).join("\n");
  };
  box.append(el("div", "note", "Always allow saves this rule, for every session until you revoke it:"));
  if (event.kind === "run" && Array.isArray(event.argv)) {
    const select = el("select", "widen");
    select.append(new Option("exactly this command", ""));
    for (let words = event.argv.length; words >= 1; words--) {
      const prefix = event.argv.slice(0, words);
      select.append(new Option(visible(prefix.join(" ")) + " …", String(words)));
    }
    select.onchange = () => {
      const words = Number(select.value);
      item.widened = words ? event.argv.slice(0, words) : null;
      show();
    };
    box.append(select);
  }
  show();
  box.append(rule);
  return box;
}

async function answerCard(item, answer) {
  if (item.closed) return;
  const body = { answer };
  if (answer === "allow_always" && item.widened) body.argv_prefix = item.widened;
  const reason = item.reason ? item.reason.value.trim() : "";
  if (answer === "deny" && reason) body.reason = reason;
  try {
    await api("POST", `/sessions/${encodeURIComponent(state.current)}/cards/${encodeURIComponent(item.event.id)}`, body);
  } catch (error) {
    if (item.node) item.node.firstChild.append(el("div", "error-text", error.message));
  }
}

function closeCard(card, answer) {
  if (card.classList.contains("closed")) return;
  card.classList.add("closed");
  for (const b of card.querySelectorAll("button, input.reason")) b.disabled = true;
  card.append(el("div", "answered", answer ? "answered: " + answer : "withdrawn"));
}

function openCard() {
  for (const item of state.open) if (item.event.type === "card") return item;
  return null;
}

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA"].includes(document.activeElement.tagName);
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const card = openCard();
  if (!card) return;
  const keys = card.event.kind === "effects"
    ? { a: "apply", d: "discard" }
    : { o: "allow_once", s: "allow_session", a: "allow_always", d: "deny", p: "preview" };
  const answer = keys[event.key];
  if (answer === "allow_always" && !card.event.always) return;
  if (answer === "preview" && (card.event.kind !== "run" || card.event.no_preview)) return;
  if (answer) {
    event.preventDefault();
    answerCard(card, answer);
  }
});

// ---- questions ----

function renderQuestion(item) {
  const event = item.event;
  const box = el("div", "question");
  box.dataset.id = event.id;
  box.dataset.call = event.call_id;
  box.append(el("div", "", "? " + event.question));
  const form = el("form");
  const input = el("input");
  input.placeholder = "Your reply";
  const button = el("button", "", "Reply");
  form.append(input, button);
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      await api("POST", `/sessions/${encodeURIComponent(state.current)}/questions/${encodeURIComponent(event.id)}`, { reply: input.value });
    } catch (error) {
      box.append(el("div", "error-text", error.message));
    }
  };
  box.append(form);
  if (item.closed) closeQuestion(box, item.answered);
  else setTimeout(() => input.focus(), 0);
  return box;
}

function closeQuestion(box, reply) {
  if (box.classList.contains("closed")) return;
  box.classList.add("closed");
  const form = box.querySelector("form");
  if (form) form.remove();
  box.append(el("div", "answered", reply === null ? "withdrawn" : "reply: " + reply));
}

// ---- compose and cancel ----

$("compose").onsubmit = async (event) => {
  event.preventDefault();
  const text = $("message").value;
  if (!text.trim() || !state.current) return;
  $("compose-error").textContent = "";
  try {
    await api("POST", `/sessions/${encodeURIComponent(state.current)}/messages`, { text });
    $("message").value = "";
    refreshSessions();
  } catch (error) {
    $("compose-error").textContent = error.message;
  }
};

$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("compose").requestSubmit();
  }
});

$("cancel").onclick = async () => {
  if (state.current) await api("POST", `/sessions/${encodeURIComponent(state.current)}/cancel`).catch(() => {});
};

// ---- start ----

(async () => {
  await refreshSessions();
  const wanted = hashParams().get("session");
  if (wanted) select(wanted);
  setInterval(refreshSessions, 2000);
})();

// ---- rules and grants ----

// The panel: the person's rules (home config and rules.toml) and this
// session's grants, each with where it came from; a click revokes one, and
// the next matching call asks again.
async function showGrants() {
  const panel = $("grants");
  panel.hidden = false;
  panel.replaceChildren(el("h3", "", "Rules and grants"));
  const add = (label, origin, revoke) => {
    const row = el("div", "grant");
    row.append(el("span", "", visible(label)));
    if (origin) row.append(el("span", "note", " " + visible(origin)));
    if (revoke) {
      const button = el("button", "", "Revoke");
      button.onclick = async () => {
        try { await revoke(); showGrants(); } catch (error) { row.append(el("span", "error-text", " " + error.message)); }
      };
      row.append(button);
    }
    panel.append(row);
  };
  try {
    const rules = await api("GET", "/rules");
    for (const rule of rules) {
      const origin = rule.origin ? `saved from card ${rule.origin.card} of session ${rule.origin.session}, ${rule.origin.ts}` : `in ${rule.source}`;
      const revoke = rule.source === "rules.toml"
        ? () => api("DELETE", `/rules/${encodeURIComponent(rule.id)}`) : null;
      add(`${rule.id}: ${rule.describe}`, origin, revoke);
    }
    if (state.current) {
      const grants = await api("GET", `/sessions/${encodeURIComponent(state.current)}/grants`);
      for (const grant of grants) {
        const origin = grant.origin ? `from card ${grant.origin.card}, ${grant.origin.ts}` : "";
        add(`${grant.id}: this session allows ${grant.kind} ${JSON.stringify(grant.key)}`, origin,
          () => api("DELETE", `/sessions/${encodeURIComponent(state.current)}/grants/${encodeURIComponent(grant.id)}`));
      }
    }
    if (panel.children.length === 1) panel.append(el("div", "note", "No rules and no grants yet: a card's Always allow saves a rule."));
  } catch (error) {
    panel.append(el("div", "error-text", error.message));
  }
  const close = el("button", "", "Close");
  close.onclick = () => { panel.hidden = true; };
  panel.append(close);
}
$("show-grants").onclick = () => showGrants();

// ---- rewind ----

// A rewind in one line, as every front end shows it.
function rewoundLine(event) {
  const parts = [["restored", event.restored], ["put back", event.created], ["removed", event.deleted], ["kept", event.not_restored]]
    .filter(([, paths]) => paths && paths.length)
    .map(([label, paths]) => `${label} ${paths.join(", ")}`);
  return `rewound to before event ${event.to}: ${parts.length ? parts.join("; ") : "nothing had changed"}${event.more ? ` (and ${event.more} more)` : ""}`;
}

// A control that rewinds the files to before event `seq` (null: undoes
// the last rewind): the first click shows what would change, the second does it.
function rewindControl(seq, label) {
  const box = el("div", "rewind");
  const button = el("button", "", label);
  const body = seq === null ? { undo: true } : { to: seq };
  const path = () => `/sessions/${encodeURIComponent(state.current)}/rewind`;
  button.onclick = async (e) => {
    e.stopPropagation();
    box.querySelectorAll(".plan, .error-text").forEach((node) => node.remove());
    try {
      const { to, plan } = await api("POST", path(), { ...body, dry_run: true });
      const shown = el("div", "plan");
      const lines = [];
      for (const [verb, paths] of [["restore", plan.restore], ["create", plan.create], ["delete", plan.delete]]) {
        for (const one of paths) lines.push(`${verb} ${one}`);
      }
      for (const [one, why] of plan.kept) lines.push(`keep ${one}: ${why}`);
      if (!lines.length) {
        shown.append(el("div", "note", `Nothing to rewind: the files are as they were before event ${to}.`));
      } else {
        shown.append(el("div", "note", `Rewind to before event ${to} would:`), el("pre", "", visible(lines.join("\n"))));
        const apply = el("button", "", "Rewind these files");
        apply.onclick = async (e) => {
          e.stopPropagation();
          try {
            await api("POST", path(), { to });
            shown.remove();
          } catch (error) {
            shown.append(el("span", "error-text", " " + error.message));
          }
        };
        shown.append(apply);
      }
      box.append(shown);
    } catch (error) {
      box.append(el("span", "error-text", " " + error.message));
    }
  };
  box.append(button);
  return box;
}
