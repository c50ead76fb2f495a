// a-rag's page. Every corpus, model and run text is put in the page with textContent, never as HTML.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const headers = (extra = {}) => (token ? { ...extra, Authorization: `Bearer ${token}` } : extra);
const $ = (id) => document.getElementById(id);

function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  return node;
}

async function api(path, body) {
  const options = body === undefined
    ? { headers: headers() }
    : { method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body) };
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(typeof data.detail === "string" ? data.detail : `HTTP ${response.status}`);
  return data;
}

// ------------------------------------------------------------------ tabs
for (const button of document.querySelectorAll("button.tab")) {
  button.addEventListener("click", () => showTab(button.dataset.tab));
}
function showTab(name) {
  for (const button of document.querySelectorAll("button.tab")) button.classList.toggle("active", button.dataset.tab === name);
  for (const panel of document.querySelectorAll(".panel")) panel.hidden = panel.id !== `tab-${name}`;
  if (name === "runs") loadRuns();
}

// ------------------------------------------------------------------ chunk viewer (citations, hits, neighbours)
let currentChunk = null;
// highlight: {start, end} of a sentence within the chunk's text (a citation's supporting sentence)
async function openChunk(chunkId, highlight) {
  try {
    const chunk = await api(`/api/chunks/${encodeURIComponent(chunkId)}`);
    currentChunk = chunk;
    $("chunk-title").textContent = chunk.chunk_id;
    const label = chunk.source && chunk.source.label ? `${chunk.source.label} — ` : "";
    $("chunk-where").textContent = `${label}document ${chunk.doc_id}, chunk ${chunk.position} of ${chunk.of}`;
    const text = $("chunk-text");
    text.replaceChildren();
    if (highlight && highlight.start !== null && highlight.start !== undefined && highlight.end > highlight.start) {
      const mark = el("mark", chunk.text.slice(highlight.start, highlight.end), { id: "chunk-sentence" });
      text.append(chunk.text.slice(0, highlight.start), mark, chunk.text.slice(highlight.end));
      setTimeout(() => mark.scrollIntoView({ block: "center" }), 0);
    } else {
      text.textContent = chunk.text;
    }
    $("chunk-prev").disabled = !chunk.prev_id;
    $("chunk-next").disabled = !chunk.next_id;
    $("chunk-view").hidden = false;
  } catch (error) {
    $("chunk-title").textContent = chunkId;
    $("chunk-where").textContent = error.message;
    $("chunk-text").textContent = "";
    $("chunk-view").hidden = false;
  }
}
$("chunk-prev").addEventListener("click", () => currentChunk && currentChunk.prev_id && openChunk(currentChunk.prev_id));
$("chunk-next").addEventListener("click", () => currentChunk && currentChunk.next_id && openChunk(currentChunk.next_id));
$("chunk-close").addEventListener("click", () => { $("chunk-view").hidden = true; });

// ------------------------------------------------------------------ ask, streamed
function stepItem(step) {
  const details = el("details");
  const args = JSON.stringify(step.arguments);
  details.append(el("summary", `${step.tool} ${args} — ${step.retrieved_tokens} tokens, ${(step.latency_s * 1000).toFixed(0)} ms`));
  if (step.thought) details.append(el("p", step.thought, { class: "muted" }));
  details.append(el("pre", step.observation));
  return el("li", undefined, { class: "step" }).appendChild(details).parentNode;
}

function citationButtons(result) {
  // one button per cited chunk: where it comes from; opening it highlights the sentence that supports the answer
  const sources = result.sources && result.sources.length ? result.sources : (result.citations || []);
  return sources.map((source) => el("button", source.label ? `${source.chunk_id} — ${source.label}` : source.chunk_id, {
    type: "button",
    class: source.verified ? "citation" : "citation unverified",
    title: source.verified ? (source.sentence ? `“${source.sentence}”` : "retrieved in this run")
      : "not among the chunks this run retrieved",
    onclick: () => openChunk(source.chunk_id, { start: source.sentence_start, end: source.sentence_end }),
  }));
}

function showAnswer(result) {
  $("answer").hidden = false;
  $("answer-text").textContent = result.answer || "(no answer)";
  $("citations").replaceChildren(...citationButtons(result));
  const cost = result.cost === null || result.cost === undefined ? "–" : `$${result.cost.toFixed(5)}`;
  $("answer-meta").textContent = `${result.stop_reason} · ${result.steps} steps · ${result.retrieved_tokens} retrieved tokens · ` +
    `${result.usage.prompt_tokens + result.usage.completion_tokens} model tokens · cost ${cost} · ${result.latency_s.toFixed(1)} s` +
    (result.error ? ` · ${result.error}` : "");
  lastTurn = { question: lastQuestion, result };
}

// ------------------------------------------------------------------ the conversation: earlier turns above
let conversationId = null, lastQuestion = "", lastTurn = null;

function moveLastTurnToThread() {
  if (!lastTurn) return;
  const item = el("li", undefined, { class: "turn" });
  item.append(el("p", lastTurn.question, { class: "q" }), el("p", lastTurn.result.answer || "(no answer)", { class: "a" }));
  const sources = el("div", undefined, { class: "turn-sources" });
  sources.append(...citationButtons(lastTurn.result));
  item.append(sources);
  $("thread").append(item);
  lastTurn = null;
}

async function newConversation() {
  if (conversationId) await fetch(`/api/conversations/${encodeURIComponent(conversationId)}`, { method: "DELETE", headers: headers() }).catch(() => {});
  conversationId = null;
  lastTurn = null;
  $("thread").replaceChildren();
  $("steps").replaceChildren();
  $("answer").hidden = true;
  $("new-conversation").hidden = true;
  $("scope").disabled = false;
  $("question").disabled = false;
  $("ask-button").disabled = false;
  $("question").value = "";
  $("ask-status").textContent = "";
}
$("new-conversation").addEventListener("click", newConversation);

function parseEvents(buffer, onEvent) {
  let cut;
  while ((cut = buffer.indexOf("\n\n")) >= 0) {
    const block = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    let event = "message", data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    onEvent(event, data ? JSON.parse(data) : {});
  }
  return buffer;
}

async function askInConversation(question) {
  // the first question opens a conversation (its scope fixed); each later one follows up in it
  if (!conversationId) {
    const scope = $("scope").value.trim();
    const opened = await api("/api/conversations", scope ? { where: scope } : {});
    conversationId = opened.id;
    $("scope").disabled = true;
    $("new-conversation").hidden = false;
  }
  lastQuestion = question;
  $("steps").replaceChildren();
  $("answer").hidden = true;
  $("ask-status").textContent = "thinking…";
  const response = await fetch(`/api/conversations/${encodeURIComponent(conversationId)}/ask/stream`, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify({ question }),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new Error(typeof data.detail === "string" ? data.detail : `HTTP ${response.status}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), (event, data) => {
      if (event === "step") {
        $("steps").append(stepItem(data));
        $("ask-status").textContent = `step ${data.number}: ${data.tool}… thinking`;
      } else if (event === "answer") {
        showAnswer(data);
        $("ask-status").textContent = "";
      } else if (event === "error") {
        $("ask-status").textContent = `error: ${data.message}`;
      }
    });
  }
}

$("ask-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  $("ask-button").disabled = true;
  try {
    await askInConversation(question);
    $("question").disabled = true;  // the conversation goes on in the follow-up box
  } catch (error) {
    $("ask-status").textContent = `error: ${error.message}`;
    $("ask-button").disabled = false;
  }
});

$("followup-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const question = $("followup").value.trim();
  if (!question) return;
  $("followup-button").disabled = true;
  moveLastTurnToThread();
  $("followup").value = "";
  try {
    await askInConversation(question);
  } catch (error) {
    $("ask-status").textContent = `error: ${error.message}`;
  } finally {
    $("followup-button").disabled = false;
  }
});

// ------------------------------------------------------------------ corpus browser
function highlighted(text, terms) {
  // <mark> around each case-insensitive occurrence; the text itself stays text
  const node = el("span");
  const lower = text.toLowerCase();
  const wanted = terms.map((t) => t.toLowerCase()).filter(Boolean);
  let at = 0;
  while (at < text.length) {
    let best = -1, length = 0;
    for (const term of wanted) {
      const found = lower.indexOf(term, at);
      if (found >= 0 && (best < 0 || found < best)) { best = found; length = term.length; }
    }
    if (best < 0) { node.append(document.createTextNode(text.slice(at))); break; }
    node.append(document.createTextNode(text.slice(at, best)), el("mark", text.slice(best, best + length)));
    at = best + length;
  }
  return node;
}

function showHits(hits, terms) {
  const list = $("hits");
  list.replaceChildren();
  $("search-status").textContent = hits.length ? `${hits.length} chunks` : "no matching chunks";
  for (const hit of hits) {
    const item = el("li");
    item.append(el("button", hit.chunk_id, { type: "button", class: "hit-id", onclick: () => openChunk(hit.chunk_id) }),
      el("span", ` score ${Number(hit.score).toPrecision(4)}`, { class: "muted" }));
    const snippets = el("ul");
    for (const snippet of hit.snippets) snippets.append(el("li").appendChild(highlighted(snippet, terms)).parentNode);
    item.append(snippets);
    list.append(item);
  }
}

$("keyword-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const keywords = $("keywords").value.split(",").map((k) => k.trim()).filter(Boolean);
  try { showHits(await api("/api/search/keyword", { keywords, top_k: 10 }), keywords); }
  catch (error) { $("search-status").textContent = `error: ${error.message}`; }
});
$("semantic-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const query = $("query").value.trim();
  try { showHits(await api("/api/search/semantic", { query, top_k: 10 }), []); }
  catch (error) { $("search-status").textContent = `error: ${error.message}`; }
});

// ------------------------------------------------------------------ evaluation runs
const pct = (estimate) => estimate ? `${(100 * estimate.value).toFixed(1)} [${(100 * estimate.ci95_low).toFixed(1)}, ${(100 * estimate.ci95_high).toFixed(1)}]` : "–";

async function loadRuns() {
  let runs = [];
  try { runs = await api("/api/runs"); } catch (error) { $("run-view").textContent = error.message; return; }
  const body = $("runs-table").querySelector("tbody");
  body.replaceChildren();
  for (const select of [$("compare-a"), $("compare-b")]) select.replaceChildren();
  for (const run of runs) {
    const row = el("tr", undefined, { class: "clickable", onclick: () => openRun(run.name) });
    for (const cell of [run.name, run.method, run.dataset, run.questions, pct(run.contain_acc_ci95), pct(run.llm_acc_ci95),
      Math.round(run.retrieved_tokens || 0), (run.steps || 0).toFixed(2)]) row.append(el("td", cell));
    body.append(row);
    $("compare-a").append(el("option", run.name, { value: run.name }));
    $("compare-b").append(el("option", run.name, { value: run.name }));
  }
  if (runs.length > 1) $("compare-b").selectedIndex = 1;
  if (!runs.length) $("run-view").textContent = "No runs (start arag serve with --runs DIR).";
}

function mark(score) { return el("span", score >= 0.5 ? "✓" : "✗", { class: score >= 0.5 ? "ok" : "bad" }); }

async function openRun(name) {
  const view = $("run-view");
  view.replaceChildren(el("p", "loading…", { class: "muted" }));
  const run = await api(`/api/runs/${encodeURIComponent(name)}`);
  const s = run.summary;
  const table = el("table");
  table.append(el("tr", undefined).appendChild(el("th", "")).parentNode);
  table.firstChild.append(el("th", "Question"), el("th", "Gold"), el("th", "Prediction"), el("th", "Stop"), el("th", "Failure tag"));
  for (const q of run.questions) {
    const row = el("tr", undefined, { class: "clickable", onclick: () => openQuestion(name, q.id) });
    row.append(el("td").appendChild(mark(q.contain_acc)).parentNode, el("td", q.question), el("td", (q.gold || []).join(" / ")),
      el("td", q.prediction), el("td", q.stop_reason), el("td", q.tag));
    table.append(row);
  }
  view.replaceChildren(
    el("h3", `${name}: ${s.method} on ${s.dataset}`),
    el("p", `Contain-Acc ${pct(s.contain_acc_ci95)} (n=${s.questions}) · LLM-Acc ${pct(s.llm_acc_ci95)} · ` +
      `${Math.round(s.retrieved_tokens || 0)} retrieved tokens · ${(s.steps || 0).toFixed(2)} steps per question`),
    table,
  );
}

async function openQuestion(name, id) {
  const record = await api(`/api/runs/${encodeURIComponent(name)}/questions/${encodeURIComponent(id)}`);
  const view = $("run-view");
  const steps = el("ol");
  for (const step of record.trajectory || []) steps.append(stepItem(step));
  view.replaceChildren(
    el("button", `← back to ${name}`, { type: "button", onclick: () => openRun(name) }),
    el("h3", record.question),
    el("p", `gold: ${(record.gold || []).join(" / ")} · prediction: ${record.prediction}`),
    el("p", `${record.stop_reason} · ${record.steps} steps · Contain-Acc ${record.contain_acc}` +
      (record.error ? ` · error: ${record.error}` : ""), { class: "muted" }),
    steps,
  );
}

$("compare-button").addEventListener("click", async () => {
  const a = $("compare-a").value, b = $("compare-b").value;
  if (!a || !b) return;
  const data = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const table = el("table");
  const head = el("tr");
  head.append(el("th", "Question"), el("th", "Gold"), el("th", `${a}`), el("th", `${b}`));
  table.append(head);
  for (const row of data.questions) {
    const tr = el("tr");
    const left = el("td"), right = el("td");
    left.append(mark(row.a.contain_acc), document.createTextNode(` ${row.a.prediction}`));
    right.append(mark(row.b.contain_acc), document.createTextNode(` ${row.b.prediction}`));
    tr.append(el("td", row.question), el("td", (row.gold || []).join(" / ")), left, right);
    table.append(tr);
  }
  $("run-view").replaceChildren(el("h3", `${a} vs ${b}: questions where they differ first`), table);
});

// ------------------------------------------------------------------ start
api("/api/info").then((m) => {
  $("index-info").textContent = `${m.counts.documents} documents, ${m.counts.chunks} chunks · ${m.embedder.name} · built by a-rag ${m.arag_version}`;
}).catch((error) => { $("index-info").textContent = error.message; });
// who this token is and which documents it reads (a server without tokens: the local user, nothing to show)
api("/api/me").then((me) => {
  if (me.name === "-") return;
  const reads = me.groups === null ? "every document" : me.groups.length ? `the open documents and those of ${me.groups.join(", ")}` : "the open documents";
  $("who").textContent = `· ${me.name} reads ${reads}`;
}).catch(() => {});
