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
    throw new Error(message);
  }
  return body;
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

function day(iso) { return iso ? iso.replace("T", " ").replace(/(:\d\d)(\.\d+)?Z$/, "$1 UTC") : "undated"; }

function articleLink(id, label) {
  return el("a", { href: `#doc=${encodeURIComponent(id)}`, "data-id": id }, label || id);
}

function fill(list, items, render, empty) {
  list.replaceChildren();
  if (!items.length) { list.append(el("li", { className: "empty" }, empty)); return; }
  for (const item of items) list.append(render(item));
}

// --- sidebar -------------------------------------------------------------------------------
let recent = [];

function renderArticles() {
  const query = $("filter").value.trim().toLowerCase();
  const shown = recent.filter((a) => !query || a.id.toLowerCase().includes(query)
    || (a.title || "").toLowerCase().includes(query));
  fill($("articles"), shown, (a) => el("li", {},
    articleLink(a.id, a.title || a.id),
    el("small", {}, `${a.id} · ${day(a.date)} · `, el("span", { className: `badge ${a.status}` }, a.status))),
    "No articles stored yet.");
}

async function loadSidebar() {
  try {
    const health = await api("/healthz");
    $("health").textContent = `${health.documents} articles stored`;
    recent = (await api("/v1/documents?limit=200")).documents;
    renderArticles();
    const events = (await api("/v1/events")).events;
    fill($("events"), events, (e) => el("li", {},
      el("a", { href: `#event=${encodeURIComponent(e.id)}` }, e.title || `Event ${e.id}`),
      el("small", {}, `opened ${day(e.opened_at)}${e.size ? ` · ${e.size} articles` : ""}`)),
      "No breaking events yet.");
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
function hideAll() { $("view").hidden = true; $("event-view").hidden = true; showError(""); }

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
  const dups = [];
  if (doc.original && doc.original !== doc.id) dups.push({ id: doc.original, note: "original of this article" });
  for (const member of doc.duplicates || []) if (member !== doc.id) dups.push({ id: member, note: "duplicate of this article" });
  fill($("view-dups"), dups, (d) => el("li", {}, articleLink(d.id), el("small", {}, d.note)), "No duplicates.");
  fill($("view-similar"), [], () => null, "Loading…");
  fill($("view-origins"), [], () => null, "Loading…");
  const [origin, similar] = await Promise.allSettled([
    api("/v1/origin", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: doc.id }) }),
    api(`/v1/documents/${encodeURIComponent(doc.id)}/similar?limit=10`),
  ]);
  if (origin.status === "fulfilled") await showOrigin(origin.value, doc.text || "", doc.id);
  else fill($("view-origins"), [], () => null, `Origins unavailable: ${origin.reason.message}`);
  if (similar.status === "fulfilled") {
    fill($("view-similar"), similar.value.similar, (s) => el("li", {}, articleLink(s.id),
      el("small", {}, `score ${Number(s.score).toFixed(2)}${s.distance !== undefined ? ` · distance ${s.distance}` : ""}`)),
      "No similar stories.");
  } else fill($("view-similar"), [], () => null, `Unavailable: ${similar.reason.message}`);
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
    fill($("view-dups"), [], () => null, "Store the article to see its duplicates.");
    fill($("view-similar"), [], () => null, "Store the article to see similar stories.");
  } catch (error) { showError(`Tracing failed: ${error.message}`); }
}

async function showEvent(id) {
  hideAll();
  let report;
  try { report = await api(`/v1/events/${encodeURIComponent(id)}`); }
  catch (error) { showError(`Event ${id}: ${error.message}`); return; }
  $("event-view").hidden = false;
  const first = report.articles && report.articles.length ? report.articles[0] : null;
  $("event-title").textContent = `Breaking event ${report.id}${first && first.title ? ": " + first.title : ""}`;
  $("event-meta").textContent = `opened ${day(report.opened_at)} by ${report.opened_by} · ${report.articles.length} articles · first publisher ${report.first_publisher || "unknown"}`
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
  fill($("event-articles"), report.articles, (a) => el("li", {}, `${day(a.date)} `, articleLink(a.id, a.title || a.id),
    a.source ? el("small", {}, a.source) : null), "No articles.");
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash.startsWith("doc=")) showDocument(hash.slice(4));
  else if (hash.startsWith("event=")) showEvent(hash.slice(6));
}

document.addEventListener("DOMContentLoaded", () => {
  $("filter").addEventListener("input", renderArticles);
  $("paste").addEventListener("submit", tracePasted);
  window.addEventListener("hashchange", route);
  loadSidebar().then(route);
});
