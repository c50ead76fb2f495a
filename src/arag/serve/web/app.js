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
async function openChunk(chunkId) {
  try {
    const chunk = await api(`/api/chunks/${encodeURIComponent(chunkId)}`);
    currentChunk = chunk;
    $("chunk-title").textContent = chunk.chunk_id;
    $("chunk-where").textContent = `document ${chunk.doc_id}, chunk ${chunk.position} of ${chunk.of}`;
    $("chunk-text").textContent = chunk.text;
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

function showAnswer(result) {
  $("answer").hidden = false;
  $("answer-text").textContent = result.answer || "(no answer)";
  const citations = $("citations");
  citations.replaceChildren();
  for (const citation of result.citations || []) {
    citations.append(el("button", citation.chunk_id, {
      type: "button",
      class: citation.verified ? "citation" : "citation unverified",
      title: citation.verified ? "retrieved in this run" : "not among the chunks this run retrieved",
      onclick: () => openChunk(citation.chunk_id),
    }));
  }
  const cost = result.cost === null || result.cost === undefined ? "–" : `$${result.cost.toFixed(5)}`;
  $("answer-meta").textContent = `${result.stop_reason} · ${result.steps} steps · ${result.retrieved_tokens} retrieved tokens · ` +
    `${result.usage.prompt_tokens + result.usage.completion_tokens} model tokens · cost ${cost} · ${result.latency_s.toFixed(1)} s` +
    (result.error ? ` · ${result.error}` : "");
}

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

$("ask-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  $("steps").replaceChildren();
  $("answer").hidden = true;
  $("ask-button").disabled = true;
  $("ask-status").textContent = "thinking…";
  try {
    const response = await fetch("/api/ask/stream", {
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
  } catch (error) {
    $("ask-status").textContent = `error: ${error.message}`;
  } finally {
    $("ask-button").disabled = false;
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
