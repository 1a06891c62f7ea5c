/* loremap dashboard: the pages over the read-only JSON API (/api/...).
 *
 * Every string from the API is data: it enters the page through textContent or a text node,
 * never parsed as markup. Requests go to this server only (relative URLs; the
 * Content-Security-Policy allows nothing else). With a token, the page is opened as
 * #token=...: the token is kept in sessionStorage, dropped from the address, and sent as a
 * bearer header with each API call.
 */
(function () {
  "use strict";

  // Colours by note type; code in greys. The same in the legend and the graph.
  const TYPES = {
    decision: "#3b6fb6", bug: "#d62f3c", gotcha: "#f28e2b", concept: "#7b4fa0",
    procedure: "#2e8b3e", error: "#8c1c13", episode: "#8a8a8a", preference: "#2a9d8f",
  };
  const MODULE = "#34495e";
  const FILE = "#aab7c1";
  const STATUSES = ["active", "superseded", "archived", "quarantined"];
  // Past this many nodes the canvas stops being fluid (bench/dashboard.py measures it): the
  // page keeps every module, then notes and files by rank up to it, and says so.
  const LIMIT = 1500;
  // Force-directed layout (cose, from the clusters) up to this many nodes; past it, the
  // clusters alone (linear time).
  const FORCE_LIMIT = 150;

  const state = { graph: null, cy: null, loaded: {}, token: "" };

  // --- DOM helpers ------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function $(id) { return document.getElementById(id); }

  function link(id, label) {
    return el("a", { class: "node", "data-id": id, onclick: (e) => { e.preventDefault(); openNode(id); } },
      label || id);
  }

  function showWarnings(list) {
    const box = $("warnings");
    const text = (list || []).filter(Boolean);
    box.hidden = !text.length;
    clear(box);
    for (const line of text) box.appendChild(el("div", {}, "⚠ " + line));
  }

  function showError(message) {
    const box = $("error");
    box.hidden = !message;
    box.textContent = message || "";
    drawnMoved();
  }

  // --- API --------------------------------------------------------------------------------

  function takeToken() {
    const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem("loremap-token", decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search + "#graph");
    }
    state.token = sessionStorage.getItem("loremap-token") || "";
  }

  async function api(name, params) {
    const url = new URL("api/" + name, document.baseURI);
    for (const [key, value] of Object.entries(params || {})) url.searchParams.set(key, value);
    const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
    const response = await fetch(url, { headers, cache: "no-store" });
    let body;
    try { body = await response.json(); } catch (e) { body = { error: response.statusText }; }
    if (!response.ok) throw new Error(body.error || ("HTTP " + response.status));
    showWarnings(body.warnings);
    return body;
  }

  // A write (`loremap dashboard --writes`): JSON in the body, the token as for a read.
  async function post(name, body) {
    const url = new URL("api/" + name, document.baseURI);
    const headers = { "Content-Type": "application/json" };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body),
      cache: "no-store" });
    let answer;
    try { answer = await response.json(); } catch (e) { answer = { error: response.statusText }; }
    if (!response.ok) throw new Error(answer.error || ("HTTP " + response.status));
    showWarnings(answer.warnings);
    return answer;
  }

  // --- graph ------------------------------------------------------------------------------

  function colour(node) {
    if (node.kind === "module") return MODULE;
    if (node.kind === "file") return FILE;
    return TYPES[node.type] || "#999";
  }

  // The nodes the canvas can keep fluid: every module, then notes (up to half of what is
  // left) and the most central files.
  function degrade(data, limit) {
    const nodes = data.nodes;
    if (nodes.length <= limit) return { nodes, edges: data.edges, dropped: 0 };
    const byRank = (a, b) => b.rank - a.rank || (a.id < b.id ? -1 : 1);
    const modules = nodes.filter((n) => n.kind === "module").sort(byRank).slice(0, limit);
    let room = limit - modules.length;
    const notes = nodes.filter((n) => n.kind === "note").slice(0, Math.ceil(room / 2));
    room -= notes.length;
    const files = nodes.filter((n) => n.kind === "file").sort(byRank).slice(0, room);
    const kept = [...modules, ...notes, ...files];
    const ids = new Set(kept.map((n) => n.id));
    const edges = data.edges.filter((e) => ids.has(e.src) && ids.has(e.dst));
    return { nodes: kept, edges, dropped: nodes.length - kept.length };
  }

  function elements(nodes, edges, at) {
    const top = Math.max(1e-9, ...nodes.filter((n) => n.kind !== "note").map((n) => n.rank));
    const degree = {};
    for (const e of edges) {
      degree[e.src] = (degree[e.src] || 0) + 1;
      degree[e.dst] = (degree[e.dst] || 0) + 1;
    }
    const out = nodes.map((n) => ({
      group: "nodes",
      data: {
        id: n.id, label: n.label, kind: n.kind, type: n.type, status: n.status,
        colour: colour(n),
        size: n.kind === "note" ? 14 + 3 * Math.min(degree[n.id] || 0, 8)
          : 10 + 40 * Math.sqrt(n.rank / top) + (n.kind === "module" ? 8 : 0),
        rank: n.rank,
      },
      position: at[n.id] || { x: 0, y: 0 },
    }));
    edges.forEach((e, i) => out.push({
      group: "edges", data: { id: "e" + i, source: e.src, target: e.dst, rel: e.rel },
    }));
    return out;
  }

  const STYLE = [
    { selector: "node", style: {
      "background-color": "data(colour)", width: "data(size)", height: "data(size)",
      label: "data(label)", "font-size": 9, color: "#333", "text-valign": "bottom",
      "text-margin-y": 2, "min-zoomed-font-size": 10 } },
    { selector: "node[kind = 'module']", style: { shape: "round-rectangle", "font-size": 12,
      "font-weight": "bold", "min-zoomed-font-size": 0, "text-valign": "top", "text-margin-y": -3 } },
    { selector: "node[kind = 'note']", style: { shape: "diamond" } },
    { selector: "node[status != 'active']", style: { opacity: 0.55, "border-width": 2,
      "border-style": "dashed", "border-color": "#555" } },
    { selector: "edge", style: { width: 1, "line-color": "#c5ccd3", "curve-style": "haystack",
      opacity: 0.35 } },
    { selector: "edge[rel = 'depends_on']", style: { opacity: 0.6, "line-color": "#7f8c99" } },
    { selector: "edge[rel != 'in'][rel != 'imports'][rel != 'part_of'][rel != 'depends_on']",
      style: { "line-color": "#e0a000", width: 1.5, opacity: 0.9 } },
    { selector: ".hidden", style: { display: "none" } },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#111" } },
  ];

  // Positions in linear time, for any size: modules on a sunflower spiral (the most central
  // in the middle), each module's files in a sunflower around it (its most central first),
  // each note at the middle of what it links to, notes linked to nothing in a sunflower of
  // their own beside the code. Clusters are the modules.
  const GOLDEN = Math.PI * (3 - Math.sqrt(5));

  function clusters(nodes, edges) {
    const at = {};
    const files = {};
    for (const n of nodes) {
      if (n.kind === "file") (files[n.modules[0]] = files[n.modules[0]] || []).push(n);
    }
    const modules = nodes.filter((n) => n.kind === "module").sort((a, b) => b.rank - a.rank);
    const radius = (m) => 30 + 15 * Math.sqrt((files[m.id] || []).length);
    // Each module on the golden spiral, pushed outwards until its circle clears the circles
    // already placed (modules are at most a few hundred: quadratic is cheap here).
    const placed = [];
    let r = 0;
    modules.forEach((m, i) => {
      const size = radius(m);
      const angle = i * GOLDEN;
      for (;;) {
        const x = r * Math.cos(angle);
        const y = r * Math.sin(angle);
        if (placed.every((p) => Math.hypot(p.x - x, p.y - y) >= p.size + size + 10)) {
          placed.push({ x, y, size });
          at[m.id] = { x, y };
          break;
        }
        r += 8;
      }
      r = Math.max(0, r - 3 * size);  // the next module may fit further in, on its own angle
    });
    const extent = placed.reduce((e, p) => Math.max(e, Math.hypot(p.x, p.y) + p.size), 100);
    const loose = [];
    for (const n of nodes) {
      if (n.kind !== "file") continue;
      const centre = at[n.modules[0]];
      if (!centre) { loose.push(n); continue; }
      const group = files[n.modules[0]];
      if (!group.sorted) { group.sort((a, b) => b.rank - a.rank); group.sorted = true; }
      const j = group.indexOf(n) + 1;
      const d = 22 + 14 * Math.sqrt(j);
      at[n.id] = { x: centre.x + d * Math.cos(j * GOLDEN), y: centre.y + d * Math.sin(j * GOLDEN) };
    }
    const linked = {};
    for (const e of edges) {
      (linked[e.src] = linked[e.src] || []).push(e.dst);
      (linked[e.dst] = linked[e.dst] || []).push(e.src);
    }
    let k = 0;
    for (const n of nodes) {
      if (n.kind !== "note") continue;
      const ends = (linked[n.id] || []).map((id) => at[id]).filter(Boolean);
      k += 1;
      if (ends.length) {
        const x = ends.reduce((s, p) => s + p.x, 0) / ends.length;
        const y = ends.reduce((s, p) => s + p.y, 0) / ends.length;
        at[n.id] = { x: x + 18 * Math.cos(k * GOLDEN), y: y + 18 * Math.sin(k * GOLDEN) };
      } else {
        loose.push(n);
      }
    }
    loose.forEach((n, i) => {
      const d = 16 * Math.sqrt(i + 1);
      at[n.id] = { x: -extent - 60 + d * Math.cos(i * GOLDEN), y: d * Math.sin(i * GOLDEN) };
    });
    return at;
  }

  function layoutFor(count, forceLimit) {
    if (count <= forceLimit) {
      return { name: "cose", animate: false, randomize: false, numIter: 250,
               nodeRepulsion: 9000, idealEdgeLength: 60, componentSpacing: 60 };
    }
    return { name: "preset", fit: true, padding: 20 };
  }

  // Draws `data` ({nodes, edges}); resolves with the milliseconds until the first frame.
  // `options.limit` and `options.forceLimit` replace LIMIT and FORCE_LIMIT (the bench).
  function renderGraph(data, options) {
    const opts = options || {};
    const started = performance.now();
    const shown = degrade(data, opts.limit || LIMIT);
    if (state.cy) state.cy.destroy();
    document.body.dataset.graph = "drawing";
    const at = clusters(shown.nodes, shown.edges);
    const cy = cytoscape({
      container: $("cy"), elements: elements(shown.nodes, shown.edges, at), style: STYLE,
      layout: layoutFor(shown.nodes.length,
        opts.forceLimit === undefined ? FORCE_LIMIT : opts.forceLimit),
      minZoom: 0.05, maxZoom: 4,
      textureOnViewport: shown.nodes.length > 1000, hideEdgesOnViewport: shown.nodes.length > 1000,
      pixelRatio: 1,
    });
    state.cy = cy;
    window.loremapDashboard.cy = cy;
    cy.on("tap", "node", (event) => openNode(event.target.id()));
    return new Promise((resolve) => {
      requestAnimationFrame(() => requestAnimationFrame(() => {
        const ms = performance.now() - started;
        document.body.dataset.graph = "ready";
        document.body.dataset.nodes = String(shown.nodes.length);
        document.body.dataset.drawMs = String(Math.round(ms));
        resolve({ ms, nodes: shown.nodes.length, edges: shown.edges.length,
                  dropped: shown.dropped });
      }));
    });
  }

  function filters() {
    const checked = (box) => new Set([...box.querySelectorAll("input:checked")].map((i) => i.value));
    return { kinds: checked($("kinds")), types: checked($("types")),
             statuses: checked($("statuses")), module: $("module").value };
  }

  function applyFilters() {
    const cy = state.cy;
    if (!cy || !state.graph) return;
    const f = filters();
    const modules = {};
    for (const n of state.graph.nodes) modules[n.id] = n.modules;
    cy.batch(() => {
      cy.nodes().forEach((node) => {
        const d = node.data();
        let visible = f.kinds.has(d.kind);
        if (d.kind === "note") visible = visible && f.types.has(d.type) && f.statuses.has(d.status);
        if (visible && f.module) {
          visible = (modules[d.id] || []).some((m) => m.startsWith(f.module));
        }
        node.toggleClass("hidden", !visible);
      });
    });
  }

  function checkbox(value, label, on, swatch) {
    return el("label", {},
      el("input", { type: "checkbox", value, checked: on }),
      swatch ? el("span", { class: "swatch", "data-colour": swatch }) : null, label);
  }

  function buildFilters(data) {
    const kinds = clear($("kinds"));
    for (const [kind, label] of [["module", "modules"], ["file", "files"], ["note", "notes"]]) {
      kinds.appendChild(checkbox(kind, label, true));
    }
    const present = new Set(data.nodes.filter((n) => n.kind === "note").map((n) => n.type));
    const types = clear($("types"));
    for (const type of Object.keys(TYPES)) {
      if (present.has(type)) types.appendChild(checkbox(type, type, true, TYPES[type]));
    }
    const statuses = clear($("statuses"));
    for (const status of STATUSES) statuses.appendChild(checkbox(status, status, status === "active"));
    const select = $("module");
    while (select.options.length > 1) select.remove(1);
    for (const n of data.nodes.filter((m) => m.kind === "module")) {
      select.appendChild(el("option", { value: n.id }, n.id));
    }
    // Swatch colours through the CSSOM (the policy allows no inline style attribute).
    for (const sw of document.querySelectorAll(".swatch")) sw.style.background = sw.dataset.colour;
  }

  async function loadGraph() {
    const data = await api("graph");
    state.graph = data;
    const c = data.counts;
    buildFilters(data);
    const empty = $("empty");
    empty.hidden = c.notes > 0;
    clear(empty);
    if (!c.notes) {
      empty.appendChild(el("b", {}, "No notes yet. "));
      empty.appendChild(el("span", {}, data.hint || "Write one with loremap remember."));
      empty.appendChild(el("pre", {}, 'loremap remember --type decision --title "Why we chose X" -m "Because ..." --file src/x.py'));
      empty.appendChild(el("span", { class: "muted" },
        "Agents record notes through the MCP remember tool; the code map comes from `loremap index`."));
    }
    const drawn = await renderGraph(data);
    const parts = [`${c.modules_shown} of ${c.modules} modules`,
      `the ${c.files_shown} most central of ${c.files} files (PageRank; at most ${data.files_cap})`,
      `${c.notes_shown} of ${c.notes} notes (the newest; at most ${data.notes_cap})`];
    let note = "Showing " + parts.join(", ") + ".";
    if (drawn.dropped) {
      note += ` Past ${LIMIT} nodes the browser stops being fluid: the ${drawn.dropped} least central are left out.`;
    }
    $("graph-note").textContent = note + " Click a node to open it.";
    $("status").textContent = `${c.notes} notes · ${c.files} files · ${c.modules} modules`;
    applyFilters();
    // The note above the graph just moved it: cytoscape's own resize observer is debounced, and
    // until it runs a click lands where the canvas was (a small node is missed).
    drawnMoved();
  }

  // The graph's box moved or changed size (text above it, the side panel): cytoscape keeps the
  // container's position cached, so tell it now rather than after its debounced observer.
  function drawnMoved() {
    if (state.cy) state.cy.resize();
  }

  // --- node panel -------------------------------------------------------------------------

  async function openNode(id) {
    const panel = $("panel");
    const body = clear($("panel-body"));
    panel.hidden = false;
    drawnMoved();
    body.appendChild(el("p", { class: "muted" }, "opening " + id + " …"));
    let page;
    try {
      page = await api("node", { id });
    } catch (error) {
      clear(body).appendChild(el("p", { class: "error" }, String(error.message)));
      return;
    }
    clear(body);
    body.dataset.id = page.id;
    body.appendChild(el("h2", {}, page.title));
    body.appendChild(el("p", { class: "muted" },
      [page.kind, page.type, page.status].filter(Boolean).join(" · "), " — ", page.path));
    if (page.links.length) {
      const list = el("ul", {});
      for (const l of page.links) {
        list.appendChild(el("li", {}, l.out ? l.rel + " → " : l.rel + " ← ", link(l.id)));
      }
      body.appendChild(list);
    }
    if (page.writes && page.kind === "note") body.appendChild(writeBox(page));
    body.appendChild(el("pre", { class: "page-text" }, page.text));
    if (state.cy) {
      state.cy.nodes(":selected").unselect();
      const node = state.cy.getElementById(id);
      if (node && node.length) node.select();
    }
  }

  // What the page may change of a note (only with --writes): forget it, count an outcome.
  function writeBox(page) {
    const said = el("p", { class: "muted", id: "write-said" });
    const act = async (name, body, done) => {
      said.textContent = "…";
      try {
        const answer = await post(name, body);
        await openNode(page.id);
        const again = $("write-said");
        if (again) again.textContent = done(answer);
      } catch (error) {
        said.textContent = "";
        said.appendChild(el("span", { class: "error" }, String(error.message)));
      }
    };
    const box = el("div", { class: "writes" });
    if (page.type === "procedure" && page.status === "active") {
      box.appendChild(el("div", {},
        el("button", { type: "button", id: "outcome-success", onclick: () => act("outcome",
          { id: page.id, result: "success" }, (a) => `counted: ${a.successes} worked, ${a.failures} failed`) },
          "It worked"), " ",
        el("button", { type: "button", id: "outcome-failure", onclick: () => act("outcome",
          { id: page.id, result: "failure" }, (a) => `counted: ${a.successes} worked, ${a.failures} failed`) },
          "It failed")));
    }
    if (page.status !== "archived") {
      const reason = el("input", { id: "forget-reason", type: "text", maxlength: "2000",
        placeholder: "why (optional)", size: "28" });
      box.appendChild(el("div", {}, reason, " ",
        el("button", { type: "button", id: "forget", onclick: () => act("forget",
          { id: page.id, reason: reason.value }, (a) => `${a.action} ${a.id}`) }, "Forget")));
    }
    box.appendChild(said);
    return box;
  }

  // --- search -----------------------------------------------------------------------------

  async function search(text, budget) {
    const out = clear($("results"));
    out.appendChild(el("p", { class: "muted" }, "recalling …"));
    const found = await api("search", { q: text, budget });
    clear(out);
    if (found.abstained || !found.items.length) {
      out.appendChild(el("p", { class: "item" }, found.closing));
      return;
    }
    for (const item of found.items) {
      const lists = item.lists.map((l) => el("span", { class: "chip" }, `${l.list} #${l.rank}`));
      out.appendChild(el("div", { class: "item", "data-id": item.id },
        el("h3", {}, `[${item.type || item.kind}] `, link(item.id, item.title)),
        el("div", { class: "muted" }, item.path, ` · ~${item.tokens} tokens · score ${item.score}`),
        item.stale.map((s) => el("div", { class: "stale" }, "⚠ " + s)),
        item.snippet ? el("div", {}, item.snippet) : null,
        el("ul", { class: "why" }, item.why.map((w) => el("li", {}, "why: " + w))),
        el("div", {}, el("span", { class: "muted" }, "lists: "), lists)));
    }
    out.appendChild(el("p", { class: "muted" }, found.closing));
  }

  // --- health -----------------------------------------------------------------------------

  function table(headers, rows) {
    return el("table", {}, el("tr", {}, headers.map((h) => el("th", {}, h))),
      rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c)))));
  }

  async function loadHealth() {
    const h = await api("health");
    const out = clear($("health"));
    const ix = h.index;
    out.appendChild(el("h2", {}, "Index"));
    out.appendChild(table(["", ""], [
      ["where", ix.location + (ix.shared ? " (shared database)" : ` (${(ix.bytes / 1e6).toFixed(1)} MB)`)],
      ["notes", Object.entries(ix.notes).map(([k, v]) => `${k} ${v}`).join(", ") || "none"],
      ["active by type", Object.entries(ix.types).map(([k, v]) => `${k} ${v}`).join(", ") || "none"],
      ["code files", String(ix.files)],
      ["code map at", ix.head ? ix.head.slice(0, 12) : "never indexed (run loremap index)"],
    ]));
    out.appendChild(el("h2", { id: "stale" }, `Stale notes (${h.stale_count})`));
    out.appendChild(h.stale.length ? el("ul", {}, h.stale.map((s) => el("li", { "data-id": s.id },
      `[${s.type}] `, link(s.id, s.title), el("span", { class: "stale" }, " ⚠ " + s.changes.join(" · ")))))
      : el("p", { class: "muted" }, "No note's files changed since it was written."));
    out.appendChild(el("h2", {}, `Quarantined notes (${h.quarantined_count})`));
    out.appendChild(h.quarantined.length ? el("ul", {}, h.quarantined.map((q) => el("li", {},
      `[${q.type}] `, link(q.id, q.title), " — ", q.path)))
      : el("p", { class: "muted" }, "None: no note holds a credential."));
    out.appendChild(el("h2", {}, `Broken links (${h.links.length})`));
    out.appendChild(h.links.length ? el("ul", {}, h.links.map((f) => el("li", {}, f.message)))
      : el("p", { class: "muted" }, "Every link resolves."));
    out.appendChild(el("h2", {}, "Doctor"));
    out.appendChild(table(["", "check", "finding"], h.findings.map((f) => [
      el("span", { class: "level-" + f.level }, f.level), f.check, f.message])));
  }

  // --- timeline ---------------------------------------------------------------------------

  const VERB = { recorded: "recorded", superseded: "superseded", forgotten: "forgotten",
    purged: "purged", erased: "erased", quarantined: "quarantined", outcome: "outcome of",
    merged: "merged" };

  async function loadTimeline() {
    const t = await api("timeline");
    const out = clear($("timeline"));
    out.appendChild(el("p", { class: "muted" }, `${t.total} events` +
      (t.shown < t.total ? `, the newest ${t.shown} shown` : "") + "."));
    if (!t.days.length) {
      out.appendChild(el("div", { class: "empty" }, "Nothing recorded yet: ",
        el("code", {}, "loremap remember --type decision --title \"...\" -m \"...\"")));
    }
    for (const day of t.days) {
      out.appendChild(el("div", { class: "day" }, el("h3", {}, day.day),
        el("ul", {}, day.events.map((e) => el("li", {}, VERB[e.what] + " ",
          e.type ? `[${e.type}] ` : "", link(e.id, e.title),
          e.by ? [" by ", link(e.by)] : null,
          e.actor ? el("span", { class: "muted" }, ` at ${e.at.slice(11, 19)} by ${e.actor}`) : null,
          e.approximate ? el("span", { class: "muted" }, " (≈ the day its file was last written)") : null)))));
    }
  }

  // --- tokens -----------------------------------------------------------------------------

  async function loadTokens() {
    const days = $("days").value;
    $("tokens-note").textContent = "reading this project's Claude Code transcripts …";
    const x = await api("tokens", { days });
    $("tokens-note").textContent = `${x.sessions} sessions in ${x.files} transcript files` +
      (x.sessions ? "" : ": nothing to show for this project yet");
    // The X-ray's own page, escaped by xray/html.py, in a sandbox that runs no script.
    $("tokens-frame").srcdoc = x.html;
  }

  // --- pages ------------------------------------------------------------------------------

  const LOADERS = { graph: loadGraph, health: loadHealth, timeline: loadTimeline, tokens: loadTokens };

  async function show(page) {
    if (!LOADERS[page] && page !== "search") page = "graph";
    for (const section of document.querySelectorAll(".page")) section.hidden = section.id !== "page-" + page;
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.page === page);
    showError("");
    document.body.dataset.page = page;
    try {
      // The graph and the X-ray are read once (the X-ray reads every transcript); health and
      // the timeline again each time they are shown.
      const once = page === "graph" || page === "tokens";
      if (LOADERS[page] && !(once && state.loaded[page])) {
        await LOADERS[page]();
        state.loaded[page] = true;
      } else if (page === "graph" && state.cy) {
        state.cy.resize();
      }
    } catch (error) {
      showError(String(error.message));
    }
    document.body.dataset.loaded = page;
  }

  function start() {
    takeToken();
    window.addEventListener("hashchange", () => show(location.hash.slice(1)));
    for (const box of ["kinds", "types", "statuses"]) $(box).addEventListener("change", applyFilters);
    $("module").addEventListener("change", applyFilters);
    $("days").addEventListener("change", () => loadTokens().catch((e) => showError(String(e.message))));
    $("panel-close").addEventListener("click", () => { $("panel").hidden = true; drawnMoved(); });
    $("search-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const text = $("q").value.trim();
      if (!text) return;
      showError("");
      search(text, $("budget").value).then(() => { document.body.dataset.searched = text; })
        .catch((error) => showError(String(error.message)));
    });
    show(location.hash.slice(1) || "graph");
  }

  window.loremapDashboard = { renderGraph, degrade, clusters, LIMIT, cy: null };
  start();
})();
