// The Wicket page: sessions, a live transcript over server-sent events, and
// cards answered with buttons or the keys o / s / d. No build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  sessions: [],
  current: null,     // session id
  source: null,      // EventSource
  lastSeq: 0,
  calls: new Map(),  // call_id -> row element
  cards: new Map(),  // card id -> card element
  questions: new Map(),
  pending: [],       // events waiting for the next frame
  scheduled: false,
  running: false,
};

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(method, path, body) {
  const response = await fetch("/api" + path, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
    credentials: "same-origin",
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
  try {
    const body = { workspace: $("new-workspace").value.trim() };
    const model = $("new-model").value.trim();
    if (model) body.model = model;
    const { id } = await api("POST", "/sessions", body);
    await refreshSessions();
    select(id);
  } catch (error) {
    $("new-error").textContent = error.message;
  }
};

// ---- the transcript ----

function select(id) {
  if (state.source) state.source.close();
  Object.assign(state, { current: id, lastSeq: 0, calls: new Map(), cards: new Map(), questions: new Map(), pending: [] });
  $("transcript").replaceChildren();
  $("compose").hidden = false;
  const s = state.sessions.find((x) => x.id === id);
  $("title").textContent = s ? (s.title || s.id) : id;
  for (const li of document.querySelectorAll("#sessions li")) li.classList.toggle("selected", li.dataset.id === id);
  history.replaceState(null, "", "#" + encodeURIComponent(id));
  connect();
}

// EventSource reconnects by itself with Last-Event-ID; when the server is
// gone for good (restart), reconnect by hand from the last seq seen.
function connect() {
  const id = state.current;
  const source = new EventSource(`/api/sessions/${encodeURIComponent(id)}/events?after=${state.lastSeq}`);
  state.source = source;
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.seq <= state.lastSeq) return;
    state.lastSeq = event.seq;
    state.pending.push(event);
    if (!state.scheduled) {
      state.scheduled = true;
      requestAnimationFrame(flush);
    }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED && state.current === id) {
      setTimeout(() => { if (state.current === id && state.source === source) connect(); }, 1000);
    }
  };
}

// Render what arrived since the last frame in one fragment: a 10,000-event
// session loads in a few frames, and offscreen rows cost nothing to lay out
// (content-visibility: auto).
function flush() {
  state.scheduled = false;
  const box = $("transcript");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const fragment = document.createDocumentFragment();
  const batch = state.pending.splice(0, 2000);
  for (const event of batch) render(event, fragment);
  box.append(fragment);
  if (atBottom || batch.length > 0 && batch.some((e) => e.type === "card" || e.type === "question")) {
    box.scrollTop = box.scrollHeight;
  }
  if (state.pending.length > 0) {
    state.scheduled = true;
    requestAnimationFrame(flush);
  }
}

function summary(name, args) {
  if (!args || typeof args !== "object") return String(args || "");
  if (name === "run") return (args.argv || []).join(" ");
  if (name === "grep") return JSON.stringify(args.pattern) + (args.path ? " " + args.path : "");
  if (name === "ask") return args.question || "";
  if (name === "use_skill") return args.name || "";
  if (name === "finish") return "";
  return args.path || ".";
}

function render(event, into) {
  const row = el("div", "row");
  switch (event.type) {
    case "session_started":
      row.append(el("span", "note", `session ${event.session} in ${event.workspace}`));
      break;
    case "user_message":
      row.append(el("div", "user", event.text));
      setStatus("running");
      break;
    case "assistant_message":
      if (!event.text || !event.text.trim()) return;
      row.append(el("div", "assistant", event.text));
      break;
    case "tool_call": {
      row.className = "row call";
      const line = el("div");
      line.append(el("span", "mark", "▸"), el("span", "name", event.name + " "), el("span", "", summary(event.name, event.arguments)));
      const pre = el("pre", "", "arguments: " + JSON.stringify(event.arguments, null, 2));
      row.append(line, pre);
      row.onclick = (e) => { if (e.target.tagName !== "PRE") { row.classList.toggle("open"); line.firstChild.textContent = row.classList.contains("open") ? "▾" : "▸"; } };
      state.calls.set(event.call_id, row);
      break;
    }
    case "tool_result": {
      const call = state.calls.get(event.call_id);
      const text = event.ok ? JSON.stringify(event.output, null, 2) : `${event.error.kind}: ${event.error.message}`;
      for (const card of state.cards.values()) if (card.dataset.call === event.call_id) closeCard(card, null);
      for (const q of state.questions.values()) if (q.dataset.call === event.call_id) closeQuestion(q, null);
      if (call) {
        if (!event.ok) call.classList.add("failed");
        call.querySelector("pre").textContent += "\n\nresult: " + text;
        return;
      }
      row.append(el("div", "note", "result: " + text.slice(0, 200)));
      break;
    }
    case "card":
      row.append(renderCard(event));
      break;
    case "answer": {
      const card = state.cards.get(event.card);
      if (card) closeCard(card, event.answer + (event.stale ? " (stale: the file changed; asking again)" : ""));
      return;
    }
    case "question":
      row.append(renderQuestion(event));
      break;
    case "reply": {
      const q = state.questions.get(event.question);
      if (q) closeQuestion(q, event.reply);
      return;
    }
    case "result":
      row.append(el("div", "result", "✔ " + event.text));
      setStatus("idle");
      break;
    case "error":
      row.append(el("div", "error", "error: " + event.message));
      if (event.ends_turn) setStatus("idle");
      break;
    case "cancelled":
      row.append(el("div", "error", "cancelled"));
      setStatus("idle");
      break;
    case "queued":
      row.append(el("div", "note", "queued: " + event.text));
      break;
    case "retry":
      row.append(el("div", "note", `retry ${event.attempt} in ${event.delay_ms} ms: ${event.reason}`));
      break;
    case "hook":
      row.append(el("div", "note", `Stop hook ${event.command.join(" ")}: ${event.outcome}${event.stderr ? " — " + event.stderr : ""}`));
      break;
    default:
      return;
  }
  into.append(row);
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
  for (const line of diff.split("\n")) {
    if (line === "") continue;
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

function renderCard(event) {
  const card = el("div", "card");
  card.dataset.id = event.id;
  card.dataset.call = event.call_id;
  card.dataset.kind = event.kind;
  if (event.kind === "write") {
    card.append(el("h3", "", `${event.tool} wants to write`), el("span", "path", event.path));
    if (event.diff) card.append(renderDiff(event.diff));
    if (event.diff_truncated) card.append(el("div", "note", `The whole diff is ${event.diff_bytes} bytes; the card shows its first lines.`));
  } else if (event.kind === "outside_read") {
    card.append(el("h3", "", `${event.tool} wants to read outside the workspace`), el("span", "path", event.path));
  } else {
    card.append(el("h3", "", "run wants to start a command"), el("span", "argv", JSON.stringify(event.argv)));
    if (event.cwd) card.append(el("div", "note", "in " + event.cwd));
    if (event.timeout_s) card.append(el("div", "note", `timeout ${event.timeout_s} s`));
  }
  const buttons = el("div", "buttons");
  for (const [answer, label] of [["allow_once", "Allow once (o)"], ["allow_session", "Allow for session (s)"], ["deny", "Deny (d)"]]) {
    const button = el("button", "", label);
    button.dataset.answer = answer;
    button.onclick = () => answerCard(card, answer);
    buttons.append(button);
  }
  card.append(buttons);
  state.cards.set(event.id, card);
  return card;
}

async function answerCard(card, answer) {
  if (card.classList.contains("closed")) return;
  try {
    await api("POST", `/sessions/${encodeURIComponent(state.current)}/cards/${encodeURIComponent(card.dataset.id)}`, { answer });
  } catch (error) {
    card.append(el("div", "error-text", error.message));
  }
}

function closeCard(card, answer) {
  if (card.classList.contains("closed")) return;
  card.classList.add("closed");
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  card.append(el("div", "answered", answer ? "answered: " + answer : "withdrawn"));
}

function openCard() {
  for (const card of state.cards.values()) if (!card.classList.contains("closed")) return card;
  return null;
}

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA"].includes(document.activeElement.tagName);
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const card = openCard();
  if (!card) return;
  const answer = { o: "allow_once", s: "allow_session", d: "deny" }[event.key];
  if (answer) {
    event.preventDefault();
    answerCard(card, answer);
  }
});

// ---- questions ----

function renderQuestion(event) {
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
  state.questions.set(event.id, box);
  setTimeout(() => input.focus(), 0);
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
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted) select(wanted);
  setInterval(refreshSessions, 2000);
})();
