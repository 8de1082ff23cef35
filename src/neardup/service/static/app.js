// neardup web page: plain JavaScript, no build step, no external resources.
// Every piece of text from the server is inserted with textContent (never innerHTML).
"use strict";

const $ = (id) => document.getElementById(id);

async function api(path, options) {
  const response = await fetch(path, options);
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return body;
}

function post(path, payload) {
  const headers = { "content-type": "application/json" };
  const token = $("token").value.trim();
  if (token) headers.authorization = `Bearer ${token}`;
  return api(path, { method: "POST", headers, body: JSON.stringify(payload) });
}

function needToken(error) {
  if (error.status !== 401) return false;
  $("token-box").open = true;
  $("token").focus();
  showError(`${error.message}. Enter the service's API token below and try again.`);
  return true;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "onclick") node.addEventListener("click", value);
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showError(message) {
  const box = $("error");
  if (!message) { box.hidden = true; box.textContent = ""; return; }
  box.hidden = false;
  box.textContent = message;
}

function showNotice(message) {
  const box = $("notice");
  box.hidden = !message;
  box.textContent = message || "";
}

// Every date shown in UTC, one format: "2024-03-04 09:24 UTC" (the API may say Z or +00:00).
function day(iso) {
  if (!iso) return "undated";
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso;
  return `${when.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

function plural(n, word) { return `${n} ${word}${n === 1 ? "" : "s"}`; }

function articleLink(id, label) {
  return el("a", { href: `#doc=${encodeURIComponent(id)}`, "data-id": id }, label || id);
}

function fill(list, items, render, empty) {
  list.replaceChildren();
  if (!items.length) { list.append(el("li", { className: "empty" }, empty)); return; }
  items.forEach((item, i) => list.append(render(item, i)));
}

// --- sidebar -------------------------------------------------------------------------------
let recent = [];
let stored = 0;

function renderArticles() {
  const query = $("filter").value.trim().toLowerCase();
  const shown = recent.filter((a) => !query || a.id.toLowerCase().includes(query)
    || (a.title || "").toLowerCase().includes(query));
  fill($("articles"), shown, (a) => el("li", {},
    articleLink(a.id, a.title || a.id),
    el("small", {}, `${a.id} · ${day(a.date)} · `, el("span", { className: `badge ${a.status}` }, a.status))),
    stored ? "No article matches the filter." : "No articles stored yet: paste or import some.");
}

// The sidebar shows each event's readable title and article count as the service lists
// them: the same members the event view's report shows, so the two counts agree.
const EVENTS_LISTED = 30;

async function loadSidebar() {
  try {
    const health = await api("/healthz");
    stored = health.documents;
    recent = (await api("/v1/documents?limit=200")).documents;
    renderArticles();
    const all = (await api("/v1/events")).events;
    const events = all.slice(-EVENTS_LISTED).reverse();  // the latest first
    fill($("events"), events, (e) => el("li", {},
      el("a", { href: `#event=${encodeURIComponent(e.id)}`, "data-id": e.id }, e.title || `Event ${e.id}`),
      el("small", { className: "event-size" },
        `opened ${day(e.opened_at)} · ${plural(e.articles, "article")} · ${plural(e.sources, "source")}`)),
    "No breaking events yet.");
    if (all.length > events.length) $("events").append(el("li", { className: "empty" }, `the latest ${events.length} of ${all.length}`));
    $("health").textContent = `${plural(stored, "article")} stored · ${plural(all.length, "breaking event")}`;
    $("welcome").hidden = stored > 0 || !$("view").hidden || !$("event-view").hidden;
  } catch (error) {
    $("health").textContent = "service unreachable";
    showError(`Could not load the article list: ${error.message}`);
  }
}

// --- origin highlighting (seed 004's "browser that marks novel content") ------------------
function highlighted(text, report, ownId) {
  const container = $("view-text");
  container.replaceChildren();
  const segments = (report && report.segments ? report.segments : [])
    .filter((s) => s.origin && s.origin !== ownId)
    .sort((a, b) => a.start - b.start);
  let pos = 0;
  for (const s of segments) {
    const start = Math.max(s.start, pos);
    if (start >= s.end) continue;
    if (start > pos) container.append(document.createTextNode(text.slice(pos, start)));
    const origin = (report.origins || {})[s.origin] || {};
    const mark = el("mark", { className: "copied", title: `copied from ${s.origin}${origin.title ? ": " + origin.title : ""}` },
      articleLink(s.origin, text.slice(start, s.end)));
    container.append(mark);
    pos = s.end;
  }
  if (pos < text.length) container.append(document.createTextNode(text.slice(pos)));
  return segments;
}

function renderOrigins(report, ownId, text) {
  const counts = new Map();
  for (const s of report.segments || []) {
    if (!s.origin || s.origin === ownId) continue;
    counts.set(s.origin, (counts.get(s.origin) || 0) + (s.end - s.start));
  }
  const items = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  fill($("view-origins"), items, ([id, chars]) => {
    const info = (report.origins || {})[id] || {};
    const compare = ownId ? el("button", { className: "compare", type: "button", "data-source": id,
      onclick: () => compareWith(report, ownId, id, text) }, "compare") : null;
    return el("li", {}, articleLink(id, info.title || id),
      el("small", {}, `${chars} characters copied · ${day(info.date)}`), compare);
  }, "Nothing copied from stored articles.");
}

// Compare the article with one chosen source: the aligner's passages (verbatim or reworded),
// each ending where the copying ends, so new sentences between them stay unmarked.
async function compareWith(report, ownId, sourceId, text) {
  let aligned;
  try {
    aligned = await api("/v1/align", { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: ownId, source: sourceId }) });
  } catch (error) { showError(`Comparison failed: ${error.message}`); return; }
  const segments = aligned.passages.map((p) => ({ start: p.this_offset, end: p.this_offset + p.this_length, origin: sourceId }));
  highlighted(text, { segments, origins: aligned.origins }, ownId);
  const chars = segments.reduce((n, s) => n + s.end - s.start, 0);
  const share = text.length ? Math.round(100 * chars / text.length) : 0;
  const back = el("a", { href: "#", onclick: (event) => { event.preventDefault(); showOrigin(report, text, ownId); } }, "show all origins");
  $("view-summary").replaceChildren(`${segments.length} passage(s), ${share}% of the article, taken from ${sourceId} (verbatim or reworded) · `, back);
}

function summary(report, ownId) {
  if (!report) return "";
  const share = Math.round(100 * (report.copied_fraction || 0));
  const dominant = report.dominant_origin;
  const who = !dominant || dominant === ownId ? "mostly original" : `mostly copied from ${dominant}`;
  return `${share}% copied · ${who}`;
}

async function showOrigin(report, text, ownId) {
  highlighted(text, report, ownId);
  renderOrigins(report, ownId, text);
  $("view-summary").textContent = summary(report, ownId);
}

// --- views ---------------------------------------------------------------------------------
function hideAll() {
  $("view").hidden = true; $("event-view").hidden = true; $("welcome").hidden = true;
  showError(""); showNotice("");
}

async function showDocument(id) {
  hideAll();
  let doc;
  try { doc = await api(`/v1/documents/${encodeURIComponent(id)}`); }
  catch (error) { showError(`Article ${id}: ${error.message}`); return; }
  $("view").hidden = false;
  $("view-title").textContent = doc.title || doc.id;
  $("view-meta").replaceChildren(...[`${doc.id} · ${day(doc.date)}${doc.source ? " · " + doc.source : ""} · `,
    el("span", { className: `badge ${doc.status}` }, doc.status),
    doc.event ? el("span", {}, " · event ", el("a", { href: `#event=${encodeURIComponent(doc.event)}` }, doc.event)) : null]
    .filter((part) => part !== null));
  $("view-text").textContent = doc.text || "";
  $("view-summary").textContent = "";
  fill($("view-dups"), [], () => null, "Loading…");
  fill($("view-similar"), [], () => null, "Loading…");
  fill($("view-origins"), [], () => null, "Loading…");
  const [origin, similar] = await Promise.allSettled([
    api("/v1/origin", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: doc.id }) }),
    api(`/v1/documents/${encodeURIComponent(doc.id)}/similar?limit=20`),
  ]);
  if (origin.status === "fulfilled") await showOrigin(origin.value, doc.text || "", doc.id);
  else fill($("view-origins"), [], () => null, `Origins unavailable: ${origin.reason.message}`);
  if (similar.status === "fulfilled") showCoverage(doc, similar.value);
  else {
    fill($("view-dups"), [], () => null, `Unavailable: ${similar.reason.message}`);
    fill($("view-similar"), [], () => null, `Unavailable: ${similar.reason.message}`);
  }
}

// Copies (the article's duplicate group, and partial or duplicate copies outside it) apart
// from more coverage: the same story written independently by other outlets.
function showCoverage(doc, answer) {
  const described = (item) => [item.source, day(item.date)].filter(Boolean).join(" · ");
  const copies = (answer.duplicates || []).map((d) => ({ ...d,
    note: d.id === doc.original ? "original of this article" : "duplicate of this article" }));
  for (const item of answer.similar) {
    if (item.verdict !== "similar") copies.push({ ...item, note: `${item.verdict} copy` });
  }
  fill($("view-dups"), copies, (d) => el("li", { className: "copy" }, articleLink(d.id, d.title || d.id),
    el("small", {}, [d.note, described(d)].filter(Boolean).join(" · "))), "No copies.");
  const coverage = answer.similar.filter((item) => item.verdict === "similar");
  fill($("view-similar"), coverage, (s) => el("li", { className: "coverage" }, articleLink(s.id, s.title || s.id),
    el("small", {}, [described(s), `similarity ${Number(s.score).toFixed(2)}`].filter(Boolean).join(" · "))),
    "No other coverage of this story.");
}

async function tracePasted(event) {
  event.preventDefault();
  const text = $("text").value;
  hideAll();
  if (!text.trim()) { showError("Paste some text first."); return; }
  try {
    const report = await api("/v1/origin", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text }) });
    $("view").hidden = false;
    $("view-title").textContent = "Pasted text";
    $("view-meta").textContent = "Compared with every stored article; nothing was stored.";
    await showOrigin(report, text, null);
    fill($("view-dups"), [], () => null, "Press Store to add the article and see its duplicates.");
    fill($("view-similar"), [], () => null, "Press Store to add the article and see similar stories.");
  } catch (error) { showError(`Tracing failed: ${error.message}`); }
}

// --- adding articles -----------------------------------------------------------------------
function describeDecision(d) {
  if (d.replayed) return "already stored with this text";
  if (d.status === "duplicate") return `a duplicate of ${d.duplicate_of}`;
  if (d.status === "partial") return `new, with passages copied from ${d.similar.filter((s) => s.verdict === "partial").map((s) => s.id).join(", ")}`;
  if (d.status === "similar") return `new, similar to ${d.similar.map((s) => s.id).join(", ")}`;
  if (d.status === "partial") return `new, with passages copied from ${d.similar.filter((s) => s.verdict === "partial").map((s) => s.id).join(", ")}`;
  return "new";
}

async function storePasted() {
  const text = $("text").value;
  hideAll();
  if (!text.trim()) { showError("Paste some text first."); return; }
  const id = $("paste-id").value.trim() || `pasted-${new Date().toISOString().replace(/[-:.TZ]/g, "")}`;
  const article = { id, text, date: new Date().toISOString(), source: "pasted on the page" };
  const title = $("paste-title").value.trim();
  if (title) article.title = title;
  let decision;
  try { decision = await post("/v1/documents", article); }
  catch (error) { if (!needToken(error)) showError(`Storing failed: ${error.message}`); return; }
  $("text").value = ""; $("paste-title").value = ""; $("paste-id").value = "";
  await loadSidebar();
  location.hash = `doc=${encodeURIComponent(id)}`;
  await showDocument(id);
  showNotice(`Stored as ${id}: ${describeDecision(decision)}.`);
}

// Articles go in batches; a batch the service refuses (one bad article refuses it all) is
// sent again one by one, so every good line is stored and every bad one named.
const IMPORT_BATCH = 200;

async function fileText(file) {
  if (!file.name.endsWith(".gz")) return file.text();
  if (typeof DecompressionStream === "undefined") throw new Error("this browser cannot read .gz files: unpack it first");
  return new Response(file.stream().pipeThrough(new DecompressionStream("gzip"))).text();
}

function parseLines(text) {
  const items = []; const problems = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    let value;
    try { value = JSON.parse(line); }
    catch (error) { problems.push({ line: i + 1, message: `not valid JSON (${error.message})` }); return; }
    if (!value || typeof value !== "object" || Array.isArray(value)) problems.push({ line: i + 1, message: "not a JSON object" });
    else items.push({ line: i + 1, article: articleFields(value) });
  });
  return { items, problems };
}

// The fields an article has (as neardup ingest reads a file, other fields of a line are left
// out; the API itself refuses unknown fields).
const ARTICLE_FIELDS = ["id", "text", "title", "date", "source"];
function articleFields(value) {
  const article = {};
  for (const name of ARTICLE_FIELDS) if (name in value) article[name] = value[name];
  return article;
}

// A text with no letter or digit is counted as empty and not sent (as neardup ingest does);
// a missing or wrong text goes to the service, which says what is wrong with it.
function isEmptyText(article) { return typeof article.text === "string" && !/[\p{L}\p{N}]/u.test(article.text); }

async function importFile(event) {
  event.preventDefault();
  hideAll();
  const file = $("import-file").files[0];
  if (!file) { showError("Choose a JSON Lines file first."); return; }
  const status = $("import-status");
  const counts = { new: 0, duplicate: 0, partial: 0, similar: 0, replayed: 0, empty: 0 };
  let text;
  try { text = await fileText(file); }
  catch (error) { showError(`Cannot read ${file.name}: ${error.message}`); return; }
  const { items, problems } = parseLines(text);
  const record = (d) => { if (d.replayed) counts.replayed += 1; else counts[d.status] += 1; };
  const wanted = items.filter((item) => { if (!isEmptyText(item.article)) return true; counts.empty += 1; return false; });
  let done = 0;
  try {
    for (let start = 0; start < wanted.length; start += IMPORT_BATCH) {
      const batch = wanted.slice(start, start + IMPORT_BATCH);
      let answer = null;
      try { answer = await post("/v1/documents", batch.map((b) => b.article)); }
      catch (error) { if (error.status === 401 || !error.status || error.status >= 500) throw error; }
      if (answer) {
        answer.decisions.forEach((d, j) => (d.error ? problems.push({ line: batch[j].line, message: d.error.message }) : record(d)));
      } else {
        for (const item of batch) {
          try { record(await post("/v1/documents", item.article)); }
          catch (error) {
            if (error.status === 401 || !error.status || error.status >= 500) throw error;
            problems.push({ line: item.line, message: error.message });
          }
        }
      }
      done += batch.length;
      status.textContent = `Importing ${file.name}: ${done} of ${wanted.length} articles sent…`;
    }
  } catch (error) {
    if (!needToken(error)) showError(`Import stopped after ${done} articles: ${error.message}`);
  }
  problems.sort((a, b) => a.line - b.line);
  status.textContent = `${file.name}: ${counts.new} new, ${counts.duplicate} duplicate, ${counts.partial} partial, ${counts.similar} similar, `
    + `${counts.replayed} already stored; ${plural(counts.empty, "article")} with empty text skipped; `
    + `${plural(problems.length, "line")} not imported`;
  fill($("import-problems"), problems.slice(0, 50), (p) => el("li", {}, `line ${p.line}: ${p.message}`), "");
  if (!problems.length) $("import-problems").replaceChildren();
  await loadSidebar();
}

async function showEvent(id) {
  hideAll();
  let report;
  try { report = await api(`/v1/events/${encodeURIComponent(id)}`); }
  catch (error) { showError(`Event ${id}: ${error.message}`); return; }
  $("event-view").hidden = false;
  $("event-title").textContent = report.title || `Breaking event ${report.id}`;
  const split = report.copies === null ? "" : ` · ${plural(report.independent + 1, "independent report")}, ${report.copies} ${report.copies === 1 ? "copy" : "copies"}`;
  $("event-meta").textContent = `opened ${day(report.opened_at)} by ${report.opened_by} · ${plural(report.articles.length, "article")}${split} · first publisher ${report.first_publisher || "unknown"}`
    + (report.sources && report.sources.length ? ` · sources: ${report.sources.map((s) => `${s.source} (${s.count})`).join(", ")}` : "");
  const growth = $("event-growth");
  growth.replaceChildren();
  const points = report.growth || [];
  const top = points.length ? points[points.length - 1].count : 1;
  let previous = 0;
  for (const p of points) {
    growth.append(el("div", { style: `height:${Math.max(4, Math.round(80 * p.count / top))}px`, title: `${p.count} articles after ${p.hours} h (+${p.count - previous})` }));
    previous = p.count;
  }
  const kind = (a) => a.kind === "copy" ? el("span", { className: "kind copy" }, "copy of ", articleLink(a.copy_of))
    : el("span", { className: `kind ${a.kind}` }, a.kind === "first" ? "first report" : a.kind);
  fill($("event-articles"), report.articles, (a) => el("li", { className: a.kind },
    el("span", { className: "when" }, day(a.date)), " ", articleLink(a.id, a.title || a.id),
    a.source ? el("span", { className: "source" }, ` · ${a.source}`) : null, " ", kind(a)), "No articles.");
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash.startsWith("doc=")) showDocument(hash.slice(4));
  else if (hash.startsWith("event=")) showEvent(hash.slice(6));
}

document.addEventListener("DOMContentLoaded", () => {
  $("filter").addEventListener("input", renderArticles);
  $("paste").addEventListener("submit", tracePasted);
  $("store").addEventListener("click", storePasted);
  $("import").addEventListener("submit", importFile);
  window.addEventListener("hashchange", route);
  loadSidebar().then(route);
});
