// The inspector page (docs/inspector.md). Plain DOM, no framework, no build step.
// Every value from the server is put on the page as text (textContent, createTextNode, SVG text
// nodes): request bodies are the client's, so nothing here ever parses them as HTML.
"use strict";

const API = "/_mockllm/ui/api/";
const ADMIN = "/_mockllm/";
const POLL_MS = 500;
const PAGE = 50;

const state = {
  token: "",
  scenario: null, // the scenario whose machine is drawn
  before: null, // null: the journal shows the newest rows (live); else rows below this id
  olderCursor: null,
  selected: null, // the journal entry shown in detail
  convOffset: 0,
  rows: [], // the journal rows on show
  newestListed: 0, // the newest entry id the live list has looked at
  selectedDone: false,
  listing: 0, // counts the listings: a poll's answer for an older one is dropped // the entry in detail has ended: it changes no more
  lastGraph: "",
  lastConversations: "",
  providers: new Set(),
  operations: new Set(),
  polling: false,
  libraryVersion: "",
  polls: 0,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
  }
  return node;
}

// "…/dir/file.mockllm:3:5" as "file.mockllm:3:5": the library pane is narrow (the full path is the tooltip)
function short(location) {
  const text = String(location);
  return text.startsWith("POST ") ? text : text.replace(/^.*[\\/]/, "");
}

function setStatus(text) {
  $("status").textContent = text;
}

// ---- talking to the server ---------------------------------------------------------------------

function readToken() {
  const match = /(?:^|[#&])token=([^&]*)/.exec(location.hash);
  if (match) {
    state.token = decodeURIComponent(match[1]);
    sessionStorage.setItem("mockllm-token", state.token);
    history.replaceState(null, "", location.pathname + location.search);
  } else {
    state.token = sessionStorage.getItem("mockllm-token") || "";
  }
}

class NeedToken extends Error {}

async function call(url, options) {
  const headers = Object.assign({}, (options && options.headers) || {});
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  const response = await fetch(url, Object.assign({}, options || {}, { headers, cache: "no-store" }));
  if (response.status === 401 || (response.status === 403 && state.token)) {
    $("token-form").hidden = false;
    const body = await response.json().catch(() => ({}));
    $("token-error").textContent = body.error || "";
    throw new NeedToken(body.error || "the admin token is needed");
  }
  return response;
}

async function api(path) {
  const response = await call(API + path);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
  return data;
}

// ---- the library --------------------------------------------------------------------------------

async function loadLibrary(whenChanged) {
  const library = await api("library" + (whenChanged ? "?known=" + encodeURIComponent(state.libraryVersion) : ""));
  if (library.same) return;
  state.libraryVersion = library.version;
  $("library-description").textContent = library.description + " (state " + library.state + ")";
  const list = $("library");
  list.replaceChildren();
  const byFile = new Map();
  for (const scenario of library.scenarios) {
    if (!byFile.has(scenario.file)) byFile.set(scenario.file, []);
    byFile.get(scenario.file).push(scenario);
  }
  for (const [file, scenarios] of byFile) {
    const items = el("ul");
    for (const scenario of scenarios) {
      const steps = el("ul");
      for (const step of scenario.steps) {
        steps.append(
          el(
            "li",
            {},
            el("button", { class: "link step-link", type: "button", onclick: () => showSource(scenario.name, step.index) }, step.name),
            el("span", { class: "loc", title: step.location }, short(step.location) + " · " + step.uses),
          ),
        );
      }
      items.append(
        el(
          "li",
          {},
          el("button", { class: "link scenario-link", type: "button", onclick: () => pickScenario(scenario.name) }, scenario.name),
          el("span", { class: "loc", title: scenario.location }, short(scenario.location)),
          steps,
        ),
      );
    }
    list.append(el("li", {}, el("strong", { title: file }, short(file) || "(code)"), items));
  }
  if (state.scenario === null && library.scenarios.length > 0) pickScenario(library.scenarios[0].name);
  if (state.scenario !== null && !library.scenarios.some((s) => s.name === state.scenario)) {
    state.scenario = null;
    $("machine").replaceChildren();
  }
}

async function showSource(scenario, index) {
  const source = await api("source?scenario=" + encodeURIComponent(scenario) + "&step=" + index);
  const pre = $("step-source");
  pre.hidden = false;
  const lines = source.lines.length
    ? source.lines.map((line, i) => String(source.first_line + i).padStart(4) + "  " + line)
    : ["(the file is not readable here)", ...source.conditions.map((c) => "  when " + c)];
  pre.textContent = source.location + " (" + source.uses + ")\n" + lines.join("\n");
  if (state.scenario !== scenario) pickScenario(scenario);
}

function pickScenario(name) {
  state.scenario = name;
  state.lastGraph = "";
  refreshGraph().catch(report);
}

// ---- the machine picture --------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

async function refreshGraph() {
  if (state.scenario === null) return;
  const graph = await api("graph?scenario=" + encodeURIComponent(state.scenario));
  const text = JSON.stringify(graph);
  if (text === state.lastGraph) return;
  state.lastGraph = text;
  $("machine-title").textContent = graph.title;
  $("machine-hint").textContent = "Green: where conversations stand now (the number says how many; hover for their keys).";
  $("machine").replaceChildren(drawMachine(graph));
}

// A layered drawing: `start` on top, each step one row below the step it waits for (with `order
// any`, every step one row below `start`); edges are straight, self-loops arcs on the right.
function drawMachine(graph) {
  const nodes = [{ id: "start", lines: graph.start }, ...graph.nodes];
  const depth = { start: 0 };
  for (const edge of graph.edges) {
    if (edge.source !== edge.target) depth[edge.target] = (depth[edge.source] || 0) + 1;
  }
  const rows = [];
  for (const node of nodes) {
    const d = depth[node.id] || 0;
    (rows[d] = rows[d] || []).push(node);
    node.width = Math.min(280, Math.max(110, 16 + 7 * Math.max(...node.lines.map((l) => l.length))));
    node.height = 12 + 16 * node.lines.length;
  }
  const gapX = 40;
  const gapY = 90;
  let width = 0;
  for (const row of rows.filter(Boolean)) width = Math.max(width, row.reduce((sum, n) => sum + n.width + gapX, 0));
  width += 120;
  let y = 16;
  for (const row of rows.filter(Boolean)) {
    const rowWidth = row.reduce((sum, n) => sum + n.width + gapX, 0) - gapX;
    let x = (width - rowWidth) / 2;
    const height = Math.max(...row.map((n) => n.height));
    for (const node of row) {
      node.x = x;
      node.y = y;
      x += node.width + gapX;
    }
    y += height + gapY;
  }
  const byId = Object.fromEntries(nodes.map((n) => [n.id, n]));
  let right = width;
  const picture = svg("svg", { role: "img", "aria-label": graph.title });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }));
  defs.append(marker);
  picture.append(defs);
  for (const edge of graph.edges) {
    const from = byId[edge.source];
    const to = byId[edge.target];
    if (!from || !to) continue;
    const group = svg("g", { class: "edge" + (edge.dashed ? " dashed" : "") });
    let labelX;
    let labelY;
    if (from === to) {
      const right = from.x + from.width;
      const top = from.y + 6;
      const bottom = from.y + from.height - 6;
      group.append(svg("path", { d: `M ${right} ${top} C ${right + 40} ${top - 10}, ${right + 40} ${bottom + 10}, ${right} ${bottom}`, "marker-end": "url(#arrow)" }));
      labelX = right + 34;
      labelY = (top + bottom) / 2;
    } else {
      const x1 = from.x + from.width / 2;
      const y1 = from.y + from.height;
      const x2 = to.x + to.width / 2;
      const y2 = to.y;
      group.append(svg("path", { d: `M ${x1} ${y1} L ${x2} ${y2}`, "marker-end": "url(#arrow)" }));
      labelX = (x1 + x2) / 2 + 4;
      labelY = (y1 + y2) / 2 - (edge.lines.length * 12) / 2 + 8;
    }
    edge.lines.forEach((line, i) => group.append(svg("text", { x: labelX, y: labelY + i * 12 }, line)));
    right = Math.max(right, labelX + 6 * Math.max(0, ...edge.lines.map((l) => l.length)));
    picture.append(group);
  }
  for (const node of nodes) {
    const place = graph.positions[node.id];
    const group = svg("g", { class: "node" + (place ? " current" : ""), "data-node": node.id, "data-step": node.lines[0] });
    group.append(svg("rect", { x: node.x, y: node.y, width: node.width, height: node.height, rx: node.id === "start" ? 16 : 5 }));
    node.lines.forEach((line, i) =>
      group.append(svg("text", { x: node.x + 8, y: node.y + 18 + i * 16, class: i === 0 ? "" : "sub" }, line)),
    );
    if (place) {
      const badge = svg("g", { class: "badge" });
      badge.append(svg("circle", { cx: node.x + node.width, cy: node.y, r: 10 }));
      badge.append(svg("text", { x: node.x + node.width, y: node.y + 4, "text-anchor": "middle" }, String(place.count)));
      group.append(badge);
      group.append(svg("title", {}, "conversations here: " + place.conversations.join(", ") + (place.count > place.conversations.length ? " …" : "")));
    }
    picture.append(group);
  }
  const height = y - gapY + 24;
  right = Math.ceil(right + 16);
  picture.setAttribute("viewBox", "0 0 " + right + " " + height);
  picture.setAttribute("width", String(right));
  picture.setAttribute("height", String(height));
  return picture;
}

// ---- conversations --------------------------------------------------------------------------------

async function refreshConversations() {
  const query = $("conversation-query").value;
  const data = await api("conversations?limit=" + PAGE + "&offset=" + state.convOffset + "&q=" + encodeURIComponent(query));
  const text = JSON.stringify(data);
  if (text === state.lastConversations) return;
  state.lastConversations = text;
  $("conversation-count").textContent = "(" + data.total + ")";
  const body = $("conversations").tBodies[0];
  body.replaceChildren();
  for (const conv of data.conversations) {
    const positions = conv.positions.map((p) => p.scenario + " @ " + p.position).join("; ");
    body.append(
      el(
        "tr",
        { "data-conversation": conv.key },
        el("td", {}, conv.conversation),
        el("td", {}, positions || "—"),
        el("td", {}, Math.round(conv.idle_seconds) + " s"),
        el("td", {}, el("button", { type: "button", class: "reset-conversation", onclick: () => reset(conv.key) }, "Reset")),
      ),
    );
  }
}

// ---- the journal ------------------------------------------------------------------------------------
// The rows on show are kept in state.rows. A listing (start, a filter, a page) reads them whole; then
// each poll asks the live feed for the rows new since the newest listed (when the newest are on show)
// and for the rows on show whose answer had not ended, as they are now: a row changes on the page
// (a stream that ends, a client that goes away) wherever it is, at the cost of the rows on show only.

function filterParts() {
  const parts = [];
  const conversation = $("filter-conversation").value;
  const provider = $("filter-provider").value;
  const operation = $("filter-operation").value;
  const matched = $("filter-matched").value;
  if (conversation) parts.push("conversation=" + encodeURIComponent(conversation));
  if (provider) parts.push("provider=" + encodeURIComponent(provider));
  if (operation) parts.push("operation=" + encodeURIComponent(operation));
  if (matched) parts.push("matched=" + matched);
  return parts;
}

async function listJournal() {
  state.listing += 1; // a poll on its way answers for the list before this one: it is dropped
  const parts = ["limit=" + PAGE, ...filterParts()];
  if (state.before !== null) parts.push("before=" + state.before);
  const data = await api("journal?" + parts.join("&"));
  state.rows = data.entries;
  if (state.before === null) state.newestListed = data.newest || 0;
  state.olderCursor = data.next_before;
  renderJournal();
}

async function pollJournal() {
  const ids = state.rows.map((r) => r.id);
  const open = state.rows.filter((r) => !r.done).map((r) => r.id);
  if (state.selected !== null && !ids.includes(state.selected)) {
    ids.push(state.selected);
    if (!state.selectedDone) open.push(state.selected);
  }
  const parts = ["limit=" + PAGE, ...filterParts(), "ids=" + ids.join(","), "open=" + open.join(",")];
  const live = state.before === null;
  if (live) parts.push("after=" + state.newestListed);
  const listing = state.listing;
  const data = await api("feed?" + parts.join("&"));
  if (listing !== state.listing) return;
  if (live && (data.newest || 0) < state.newestListed) {
    await listJournal(); // the newest entries went (a reset, a server started again): list afresh
    return;
  }
  let changed = false;
  if (data.missing.length) {
    const gone = new Set(data.missing);
    state.rows = state.rows.filter((r) => !gone.has(r.id));
    if (gone.has(state.selected)) {
      state.selected = null;
      $("detail").hidden = true;
    }
    changed = true;
  }
  for (const row of data.rows) {
    const at = state.rows.findIndex((r) => r.id === row.id);
    const differs = at < 0 || JSON.stringify(state.rows[at]) !== JSON.stringify(row);
    if (at >= 0 && differs) {
      state.rows[at] = row;
      changed = true;
    }
    if (row.id === state.selected && differs) showEntry(row.id, true).catch(report); // a late change shows in the detail too
  }
  const shown = new Set(state.rows.map((r) => r.id));
  const added = data.entries.filter((r) => !shown.has(r.id));
  if (live && added.length) {
    state.rows = added.concat(state.rows);
    if (state.rows.length > PAGE) {
      state.rows = state.rows.slice(0, PAGE);
      state.olderCursor = state.rows[state.rows.length - 1].id;
    }
    changed = true;
  }
  if (live && data.newest) state.newestListed = Math.max(state.newestListed, data.newest);
  if (changed) renderJournal();
}

function addOption(select, known, value) {
  if (value && !known.has(value)) {
    known.add(value);
    $(select).append(el("option", { value: value }, value));
  }
}

// 12.3 ms, 2.50 s: how long a request took from its arrival to its end
function duration(ms) {
  if (ms === null || ms === undefined) return null;
  return ms < 1000 ? ms.toFixed(1) + " ms" : (ms / 1000).toFixed(2) + " s";
}

function renderJournal() {
  $("journal-older").disabled = state.olderCursor === null;
  const body = $("journal").tBodies[0];
  body.replaceChildren();
  for (const entry of state.rows) {
    addOption("filter-provider", state.providers, entry.provider);
    addOption("filter-operation", state.operations, entry.operation);
    const who = entry.step
      ? entry.step
      : entry.unmatched
        ? "no step matched"
        : entry.fallback
          ? "the fallback"
          : entry.echo
            ? "echo"
            : entry.rejected
              ? "refused: " + entry.rejected
              : "—";
    const status = String(entry.status) + (entry.client_gone ? " (client gone)" : "") + (entry.stream ? " stream" : "");
    const took = entry.done ? duration(entry.duration_ms) || "—" : "going…";
    const row = el(
      "tr",
      { "data-id": entry.id, class: (entry.unmatched ? "unmatched" : "") + (entry.id === state.selected ? " selected" : "") },
      el("td", {}, entry.id),
      el("td", {}, entry.conversation),
      el("td", {}, entry.provider),
      el("td", { class: "operation" }, entry.operation || entry.endpoint || "—"),
      el("td", {}, entry.model || "—"),
      el("td", {}, who),
      el("td", { class: "status" }, status),
      el("td", { class: "duration" + (entry.done ? "" : " going") }, took),
    );
    row.addEventListener("click", () => showEntry(entry.id).catch(report));
    body.append(row);
  }
}

function pretty(value) {
  if (value === null || value === undefined) return "(not kept)";
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch (e) {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

// Arrived 12:00:01.250Z · first byte after 2.0 ms · ended after 2.50 s (or: still going)
function timing(entry) {
  const arrived = "Arrived " + new Date(entry.arrived * 1000).toISOString();
  if (entry.rejected) return arrived + " · refused before matching";
  const first = entry.first_byte_ms === null ? "no reply sent" : "first byte after " + duration(entry.first_byte_ms);
  if (entry.duration_ms === null) return arrived + " · " + (entry.first_byte_ms === null ? "" : first + " · ") + "still going";
  const end = entry.client_gone ? "the client went away after " : "ended after ";
  return arrived + " · " + first + " · " + end + duration(entry.duration_ms);
}

async function showEntry(id, quiet) {
  const entry = await api("entry?id=" + id);
  state.selected = id;
  state.selectedDone = entry.duration_ms !== null || entry.rejected !== null;
  for (const row of $("journal").tBodies[0].rows) row.classList.toggle("selected", Number(row.dataset.id) === id);
  const detail = $("detail");
  const parts = [
    el("h2", {}, "Request #" + entry.id),
    el("p", {}, el("strong", {}, "Answered by: "), entry.answered_by),
    el(
      "p",
      { class: "muted" },
      entry.provider + " " + entry.endpoint + " · model " + entry.model + " · " + (entry.stream ? "streamed" : "whole") +
        " · status " + entry.status + (entry.client_gone ? " · the client went away" : "") +
        (entry.note ? " · " + entry.note : ""),
    ),
    el("p", { class: "timing" }, timing(entry)),
    el("p", {}, "Conversation ", el("code", {}, entry.conversation), " ",
      el("button", { type: "button", class: "reset-conversation", onclick: () => reset(entry.conversation) }, "Reset this conversation")),
  ];
  if (entry.matched) {
    parts.push(el("p", {}, "Step ", el("button", { type: "button", class: "link", onclick: () => pickScenario(entry.matched.scenario) },
      entry.matched.scenario + " / " + entry.matched.step), el("span", { class: "loc" }, entry.matched.location || "")));
  }
  if (entry.expectation_failed) parts.push(el("p", { class: "failed" }, "expect failed: " + entry.expectation_failed));
  if (entry.rejected) parts.push(el("p", { class: "failed" }, "refused before matching: " + entry.rejected));
  if (entry.no_match) {
    const report = el("div", { class: "no-match" }, el("h2", {}, "No step matched"));
    const candidates = entry.no_match.candidates || [];
    if (candidates.length) {
      const nearest = candidates[0];
      report.append(el("p", { class: "nearest" }, "Nearest step: ", el("strong", {}, nearest.scenario + " / " + nearest.step),
        el("span", { class: "loc" }, nearest.location), nearest.reason ? " — " + nearest.reason : ""));
    }
    for (const candidate of candidates) {
      const list = el("ul", { class: "conditions" });
      for (const check of candidate.checked && candidate.checked.length ? candidate.checked : candidate.failed.map((f) => Object.assign({ holds: false }, f))) {
        list.append(el("li", { class: check.holds ? "passed" : "failed" }, (check.holds ? "✓ " : "✗ ") + check.condition + (check.seen !== null && check.seen !== undefined ? " — seen " + check.seen : "")));
      }
      report.append(el("div", { class: "candidate" }, el("p", {}, candidate.scenario + " / " + candidate.step + " (" + candidate.location + ")" + (candidate.progress ? ", " + candidate.progress : "")), list));
    }
    report.append(el("pre", { class: "report" }, entry.no_match.message));
    parts.push(report);
  }
  parts.push(el("h2", {}, "Request body" + (entry.body_truncated ? " (first " + (entry.body_bytes ? "part of " + entry.body_bytes + " bytes" : "part") + ")" : "")));
  parts.push(el("pre", { class: "request-body" }, pretty(entry.body)));
  parts.push(el("h2", {}, "Reply body"));
  const noReply = entry.duration_ms === null ? "(none yet: the answer is still going out)" : "(none kept: nothing was sent, or the journal's bounds dropped it)";
  parts.push(el("pre", { class: "reply-body" }, entry.reply === null ? noReply : pretty(entry.reply)));
  detail.replaceChildren(...parts);
  detail.hidden = false;
  if (!quiet) detail.scrollIntoView({ block: "nearest" });
}

// ---- actions ---------------------------------------------------------------------------------------

async function reset(conversation) {
  const url = ADMIN + "reset" + (conversation ? "?conversation=" + encodeURIComponent(conversation) : "");
  const response = await call(url, { method: "POST" });
  setStatus(response.ok ? "reset " + (conversation ? "conversation " + conversation : "all") : "reset failed: HTTP " + response.status);
  state.selected = null;
  $("detail").hidden = true;
  await poll();
}

async function verify() {
  const data = await api("verify");
  const box = $("verify");
  const parts = [el("h2", { class: data.ok ? "passed" : "failed" }, data.ok ? "verify: all requests matched" : "verify: problems")];
  const sections = [
    ["unmatched", "Unmatched requests", (e) => "#" + e.id + " " + e.conversation + " " + e.endpoint],
    ["expectation_failures", "Failed expectations", (e) => "#" + e.id + " " + (e.expectation_failed || "")],
    ["rejected", "Refused requests", (e) => "#" + e.id + " " + (e.rejected || "")],
    ["unused_steps", "Steps never used", (s) => s.scenario + " / " + s.step + " (" + s.location + ")"],
  ];
  for (const [key, title, line] of sections) {
    const items = data[key] || [];
    const count = data[key + "_count"] || 0;
    parts.push(el("h2", {}, title + " (" + count + ")"));
    const list = el("ul", { class: "verify-" + key });
    for (const item of items) list.append(el("li", {}, line(item)));
    if (count > items.length) list.append(el("li", { class: "muted" }, "… and " + (count - items.length) + " more"));
    parts.push(list);
  }
  box.replaceChildren(...parts);
  box.hidden = false;
}

async function loadText() {
  const text = $("load-text").value;
  const response = await call(ADMIN + "scenarios", { method: "POST", headers: { "Content-Type": "text/plain" }, body: text });
  const data = await response.json();
  const result = $("load-result");
  if (response.ok) {
    const warnings = data.warnings || [];
    result.replaceChildren(
      el("p", { class: "passed" }, "loaded: " + (data.loaded.join(", ") || "nothing") + (data.replaced.length ? " (replaced " + data.replaced.join(", ") + ")" : "")),
      diagnosticsAtLines(text, warnings),
    );
    state.lastGraph = "";
    await loadLibrary();
    return;
  }
  if (data.errors) result.replaceChildren(el("p", { class: "failed" }, data.errors.length + " error(s): nothing loaded"), diagnosticsAtLines(text, data.errors));
  else result.replaceChildren(el("p", { class: "failed" }, data.error || "HTTP " + response.status));
}

// The posted text with each diagnostic under the line it points at, a caret under its column.
function diagnosticsAtLines(text, diagnostics) {
  const box = el("pre", { class: "diagnostics" });
  if (!diagnostics.length) return box;
  const byLine = new Map();
  for (const d of diagnostics) {
    const line = d.span && d.span.line > 0 ? d.span.line : 1;
    if (!byLine.has(line)) byLine.set(line, []);
    byLine.get(line).push(d);
  }
  text.split("\n").forEach((line, i) => {
    const found = byLine.get(i + 1);
    const number = String(i + 1).padStart(4) + " | ";
    box.append(el("span", { class: found ? "line-error" : "" }, number + line), "\n");
    for (const d of found || []) {
      const column = Math.max(1, d.span.column || 1);
      box.append(el("span", { class: "diagnostic", "data-line": i + 1 }, " ".repeat(number.length + column - 1) + "^ " + d.severity + ": " + d.message + (d.hint ? " (" + d.hint + ")" : "")), "\n");
    }
  });
  return box;
}

function report(error) {
  if (error instanceof NeedToken) setStatus("needs the admin token");
  else setStatus(String(error && error.message ? error.message : error));
}

async function poll() {
  state.polls += 1;
  const library = state.polls % 8 === 0 ? loadLibrary(true) : null; // a text another client loaded
  await Promise.all([pollJournal(), refreshGraph(), refreshConversations(), library]);
}

async function loop() {
  if (!state.polling) {
    state.polling = true;
    try {
      await poll();
      setStatus("live");
    } catch (error) {
      report(error);
    } finally {
      state.polling = false;
    }
  }
  setTimeout(loop, POLL_MS);
}

function start() {
  readToken();
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token-input").value;
    sessionStorage.setItem("mockllm-token", state.token);
    $("token-form").hidden = true;
    loadLibrary().catch(report);
  });
  $("reset-all").addEventListener("click", () => reset(null).catch(report));
  $("verify-button").addEventListener("click", () => verify().catch(report));
  $("load-button").addEventListener("click", () => loadText().catch(report));
  $("journal-newest").addEventListener("click", () => {
    state.before = null;
    listJournal().catch(report);
  });
  $("journal-older").addEventListener("click", () => {
    if (state.olderCursor !== null) state.before = state.olderCursor;
    listJournal().catch(report);
  });
  $("conversations-prev").addEventListener("click", () => {
    state.convOffset = Math.max(0, state.convOffset - PAGE);
    refreshConversations().catch(report);
  });
  $("conversations-next").addEventListener("click", () => {
    state.convOffset += PAGE;
    refreshConversations().catch(report);
  });
  for (const id of ["filter-conversation", "filter-provider", "filter-operation", "filter-matched"]) {
    $(id).addEventListener("input", () => {
      state.before = null;
      listJournal().catch(report);
    });
  }
  $("conversation-query").addEventListener("input", () => refreshConversations().catch(report));
  Promise.all([loadLibrary(), listJournal()])
    .catch(report)
    .finally(loop);
}

document.addEventListener("DOMContentLoaded", start);
