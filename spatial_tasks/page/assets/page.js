// spatial-tasks report page. Written for this page; no library. Every value from the data is put
// into the page as a text node or an attribute, never parsed as HTML.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("page-data").textContent);
  const S = D.strings;
  const PAGE_SIZE = 50;
  const $ = (id) => document.getElementById(id);

  // el("td", {class: "x"}, "text", childNode ...): an element with attributes and children (text as text nodes)
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined && v !== false) node.setAttribute(k, String(v));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const DASH = "—";
  // a number as the report writes it ("n/a" when undefined; never "-0.000")
  const num = (x, digits = 3) => (typeof x === "number" && isFinite(x) ? (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits) : "n/a");
  const text = (x) => (x === null || x === undefined || x === "" ? DASH : String(x));

  // ---- header
  for (const line of D.intro) $("intro").append(el("p", { class: "note" }, line));
  $("intro").append(el("p", { class: "note" }, D.source));

  // ---- scorecard
  const card = D.scorecard;
  const sortState = { column: null, descending: false };
  function cellValue(row, key) {
    if (key === null) return row.model + "(" + row.model_args + ")";
    const figures = row.cells[key];
    return figures && figures.length && typeof figures[0].value === "number" ? figures[0].value : null;
  }
  function drawScorecard() {
    const table = $("scorecard-table");
    table.replaceChildren();
    const head = el("tr");
    const heads = [{ key: null, title: "model" }, ...card.columns];
    for (const column of heads) {
      const sorted = sortState.column === column.key && sortState.active;
      const th = el("th", { "data-column": column.key === null ? "model" : column.key, scope: "col",
        "aria-sort": sorted ? (sortState.descending ? "descending" : "ascending") : "none" }, column.title);
      th.addEventListener("click", () => {
        if (sortState.active && sortState.column === column.key) sortState.descending = !sortState.descending;
        else { sortState.column = column.key; sortState.descending = column.key !== null; sortState.active = true; }
        drawScorecard();
      });
      head.append(th);
    }
    table.append(el("thead", {}, head));
    const rows = card.rows.slice();
    if (sortState.active) {
      const key = sortState.column;
      rows.sort((a, b) => {
        const x = cellValue(a, key), y = cellValue(b, key);
        if (x === null && y === null) return 0;
        if (x === null) return 1; // undefined figures last, either way
        if (y === null) return -1;
        const order = x < y ? -1 : x > y ? 1 : 0;
        return sortState.descending ? -order : order;
      });
    }
    const body = el("tbody");
    for (const row of rows) {
      const tr = el("tr", { "data-model": row.model, "data-model-args": row.model_args });
      tr.append(el("th", { scope: "row" }, row.model, row.model_args ? el("div", { class: "meta" }, row.model_args) : null));
      for (const column of card.columns) {
        const td = el("td", { "data-column": column.key });
        for (const f of row.cells[column.key] || []) {
          const extra = Object.entries(f.settings).map(([k, v]) => k + " " + v).join(", ");
          td.append(el("div", { class: "fig", "data-record": f.record, "data-value": f.value, "data-low": f.low,
              "data-high": f.high, "data-n": f.n, "data-protocol": f.protocol },
            el("span", { class: "value" }, num(f.value)), " ",
            el("span", { class: "ci" }, f.low === null || f.high === null ? "" : "[" + num(f.low) + ", " + num(f.high) + "]"),
            el("div", { class: "meta" }, "n = " + f.n + " · " + f.protocol + (extra ? " · " + extra : "")),
            el("div", { class: "meta", title: "run " + f.run_id }, f.task)));
        }
        if (!td.childNodes.length) td.append(DASH);
        tr.append(td);
      }
      body.append(tr);
    }
    table.append(body);
  }
  if (card.rows.length) drawScorecard();
  else $("scorecard-table").replaceWith(el("p", { class: "note" }, "No headline figure in this report."));

  // ---- plain tables
  function table(columns, rows, cell) {
    const t = el("table");
    t.append(el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", { scope: "col" }, c[1])))));
    const body = el("tbody");
    for (const row of rows) body.append(el("tr", {}, ...columns.map((c) => cell(row, c[0]))));
    t.append(body);
    return t;
  }
  if (D.papers.length) {
    const columns = [["model", "model"], ["paper_model", "paper row"], ["table", "table"], ["column", "cell"],
      ["scope", "from"], ["ours", "ours"], ["paper", "paper"], ["delta", "|Δ| pts"], ["grade", "verify"]];
    $("papers-body").append(el("p", { class: "note" }, "Our figure beside the paper's printed cell for the same " +
      "model; |Δ| in points, graded as `spatial-tasks verify` grades it."), table(columns, D.papers, (row, key) => {
      const v = row[key];
      if (key === "grade") return el("td", { class: "grade-" + v }, text(v));
      if (key === "ours" || key === "paper") return el("td", {}, num(v));
      if (key === "delta") return el("td", {}, typeof v === "number" ? v.toFixed(1) : DASH);
      if (key === "table") return el("td", {}, row.benchmark + " " + v);
      return el("td", {}, text(v));
    }));
  } else {
    $("papers-body").append(el("p", { class: "note" }, "No run's model has a row in the papers' tables " +
      "(tasks/<benchmark>/paper_results.yaml lists each paper's models)."));
  }
  const versionKeys = ["python", "torch", "transformers", "lmms_eval", "datasets", "vllm", "spatial_tasks", "spatial_tasks_commit", "lock"];
  $("versions-body").append(table([["run", "run"], ...versionKeys.map((k) => [k, k.replace(/_/g, " ")])], D.versions,
    (row, key) => el("td", {}, key === "spatial_tasks_commit" || key === "lock" ? text(row[key]).slice(0, 12) : text(row[key]))));
  if (D.settings.length) {
    $("settings-body").append(table([["run", "run"], ["benchmark", "benchmark"], ["settings", "settings"]], D.settings,
      (row, key) => el("td", {}, key === "settings" ? Object.entries(row.settings).map(([k, v]) => k + " = " + v).join("; ") : row[key])));
  } else $("settings-body").append(el("p", { class: "note" }, "No run recorded a setting its figures depend on."));

  // ---- figures, in the report's order
  for (const section of D.sections) {
    const box = el("div", { class: "section-figures" });
    for (const f of section.figures) {
      box.append(el("figure", {}, el("img", { src: encodeURI(f.src), alt: f.caption, loading: "lazy" }),
        el("figcaption", {}, f.caption)));
    }
    $("figures-body").append(el("h3", {}, section.title), box);
  }
  if (!D.sections.length) $("figures-body").append(el("p", { class: "note" }, "No figure."));

  // ---- sample browser
  const samples = D.samples;
  const byRun = D.runs.map(() => []);
  samples.forEach((s, i) => byRun[s.r].push(i));
  const state = { a: 0, b: -1, bench: "", task: "", fields: {}, wrong: false, search: "", page: 0 };
  let current = []; // the filtered list: [index of A] or [[index of A, index of B, disagree]]

  const answerKey = (s) => (s.a.text || "").trim().toLowerCase();
  const haystacks = new Map();
  function haystack(i) {
    let h = haystacks.get(i);
    if (h === undefined) {
      const s = samples[i];
      h = [S[s.p], s.a.text, S[s.g], S[s.k], S[s.t], String(s.d), ...Object.values(s.f).map((j) => S[j])].join("\n").toLowerCase();
      haystacks.set(i, h);
    }
    return h;
  }
  function passes(i) {
    const s = samples[i];
    if (state.bench !== "" && s.b !== Number(state.bench)) return false;
    if (state.task !== "" && S[s.t] !== state.task) return false;
    for (const [name, value] of Object.entries(state.fields)) {
      if (value !== "" && (s.f[name] === undefined || S[s.f[name]] !== value)) return false;
    }
    return true;
  }
  // Pairs a sample of run A with run B's answer to the same question: the same benchmark and key, in the
  // same task where B ran it, else B's only sample of that question.
  function pairIndex(run) {
    const exact = new Map(), loose = new Map();
    for (const i of byRun[run]) {
      const s = samples[i];
      exact.set(s.b + "\u0000" + S[s.k] + "\u0000" + S[s.t], i);
      const key = s.b + "\u0000" + S[s.k];
      loose.set(key, loose.has(key) ? -1 : i);
    }
    return (s) => {
      const hit = exact.get(s.b + "\u0000" + S[s.k] + "\u0000" + S[s.t]);
      if (hit !== undefined) return hit;
      const other = loose.get(s.b + "\u0000" + S[s.k]);
      return other === undefined || other === -1 ? null : other;
    };
  }
  function compute() {
    const search = state.search.trim().toLowerCase();
    if (state.b < 0) {
      current = byRun[state.a].filter((i) => passes(i) && (!state.wrong || samples[i].c === 0) &&
        (!search || haystack(i).includes(search)));
      return;
    }
    const partner = pairIndex(state.b);
    const agree = [], disagree = [];
    for (const i of byRun[state.a]) {
      if (!passes(i)) continue;
      const j = partner(samples[i]);
      if (j === null) continue;
      const a = samples[i], b = samples[j];
      if (state.wrong && a.c !== 0 && b.c !== 0) continue;
      if (search && !haystack(i).includes(search) && !haystack(j).includes(search)) continue;
      const differs = a.c !== b.c || answerKey(a) !== answerKey(b);
      (differs ? disagree : agree).push([i, j, differs]);
    }
    current = disagree.concat(agree);
    const first = D.view && D.view.first.length ? D.view.first : null;
    if (first) { // the view's questions first (e.g. SpatialTunnel's counter pairs), each part disagreements first
      const hit = (entry) => S[samples[entry[0]].f[first[0]]] === first[1];
      current = current.filter(hit).concat(current.filter((entry) => !hit(entry)));
    }
  }

  function imagesOf(s) {
    const box = el("div", { class: "images" });
    if (s.x !== undefined) box.append(el("div", { class: "noimage", title: s.x }, "image could not be read"));
    else if (!s.i.length) box.append(el("div", { class: "textonly" }, "no image: the model was shown text only"));
    for (const name of s.i) box.append(el("img", { src: D.thumbs + "/" + encodeURIComponent(name), alt: "image", loading: "lazy" }));
    return box;
  }
  function badge(c) {
    if (c === 1) return el("span", { class: "badge right" }, "right");
    if (c === 0) return el("span", { class: "badge wrong" }, "wrong");
    return el("span", { class: "badge unscored", title: "not right or wrong on its own (scored over the set)" }, "not scored alone");
  }
  function answerOf(s, title) {
    const a = s.a;
    const box = el("div", { class: "answer" }, el("div", { class: "head" }, title, " ", badge(s.c)));
    if (a.p_yes !== undefined) {
      box.append(el("div", { class: "meta" }, "p(Yes) = " + num(a.p_yes) + " · ℓYes − ℓNo = " + num(a.margin, 2) +
        (a.mass !== undefined ? " · label mass = " + num(a.mass) : "")));
    }
    box.append(el("pre", { class: "answer-text" }, a.text === "" ? DASH : a.text));
    return box;
  }
  function sampleNode(i, j, differs) {
    const s = samples[i];
    const bench = D.benchmarks[s.b];
    const fields = el("dl", { class: "fields" });
    for (const name of bench.fields) fields.append(el("dt", {}, name), el("dd", {}, s.f[name] === undefined ? DASH : S[s.f[name]]));
    const answers = el("div", { class: "answers" }, answerOf(s, j === undefined ? "answer" : D.runs[s.r].label));
    if (j !== undefined) answers.append(answerOf(samples[j], D.runs[samples[j].r].label));
    return el("article", { class: "sample" + (differs ? " disagree" : ""), "data-run": s.r, "data-task": S[s.t],
        "data-doc": s.d, "data-key": S[s.k], "data-pair": j === undefined ? null : j },
      imagesOf(s),
      el("div", { class: "body" },
        el("div", { class: "head" }, bench.title + " · " + S[s.t] + " · doc " + s.d + " · " + S[s.k] + (differs ? " · they disagree" : "")),
        el("pre", { class: "prompt" }, S[s.p] || DASH), answers,
        el("div", { class: "gold" }, el("span", { class: "meta" }, "gold: "), S[s.g] || DASH), fields));
  }
  function render() {
    const total = current.length;
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * PAGE_SIZE;
    const list = $("sample-list");
    list.replaceChildren(...current.slice(start, start + PAGE_SIZE).map((entry) =>
      Array.isArray(entry) ? sampleNode(entry[0], entry[1], entry[2]) : sampleNode(entry)));
    const what = state.b < 0 ? "samples" : "questions both runs answered";
    const none = state.b < 0 ? "no sample matches" : "no question that both runs answered matches";
    $("sample-count").textContent = total ? `${start + 1}–${Math.min(total, start + PAGE_SIZE)} of ${total} ${what}` +
      ` (page ${state.page + 1} of ${pages})` : none;
    $("sample-count").dataset.count = String(total);
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
  }
  function update() { compute(); render(); }

  function options(select, values, keep) {
    select.replaceChildren(...keep, ...values.map(([value, label]) => el("option", { value: value }, label)));
  }
  function refreshTasks() {
    const tasks = new Set();
    for (const i of byRun[state.a]) if (state.bench === "" || samples[i].b === Number(state.bench)) tasks.add(S[samples[i].t]);
    options($("filter-task"), [...tasks].sort().map((t) => [t, t]), [el("option", { value: "" }, "all")]);
    state.task = "";
  }
  function refreshFields() {
    const box = $("field-filters");
    box.replaceChildren();
    state.fields = {};
    if (state.bench === "") return;
    const bench = D.benchmarks[Number(state.bench)];
    for (const name of bench.fields) {
      const values = new Set();
      for (const i of byRun[state.a]) if (samples[i].b === Number(state.bench) && samples[i].f[name] !== undefined) values.add(S[samples[i].f[name]]);
      const select = el("select", { "data-field": name });
      options(select, [...values].sort().map((v) => [v, v]), [el("option", { value: "" }, "all")]);
      select.addEventListener("change", () => { state.fields[name] = select.value; state.page = 0; update(); });
      box.append(el("label", {}, name + " ", select));
    }
  }
  options($("run-a"), D.runs.map((r, i) => [i, r.label + " (" + byRun[i].length + ")"]), []);
  D.runs.forEach((r, i) => { $("run-a").options[i].title = $("run-b").title = r.folder + " · " + r.stamp; });
  options($("run-b"), D.runs.map((r, i) => [i, r.label]), [el("option", { value: "-1" }, "(none)")]);
  function refreshBenchmarks() { // the benchmarks run A answered, with how many of its samples each
    const counts = D.benchmarks.map(() => 0);
    for (const i of byRun[state.a]) counts[samples[i].b] += 1;
    options($("filter-benchmark"), D.benchmarks.map((b, i) => [i, b.title + " (" + counts[i] + ")"]).filter((_, i) => counts[i] > 0),
      [el("option", { value: "" }, "all")]);
    if (state.bench !== "" && counts[Number(state.bench)] > 0) $("filter-benchmark").value = state.bench;
    else state.bench = "";
  }
  $("run-a").addEventListener("change", (e) => {
    state.a = Number(e.target.value); state.page = 0; refreshBenchmarks(); refreshTasks(); refreshFields(); update();
  });
  $("run-b").addEventListener("change", (e) => { state.b = Number(e.target.value); state.page = 0; update(); });
  $("filter-benchmark").addEventListener("change", (e) => { state.bench = e.target.value; state.page = 0; refreshTasks(); refreshFields(); update(); });
  $("filter-task").addEventListener("change", (e) => { state.task = e.target.value; state.page = 0; update(); });
  $("wrong-only").addEventListener("change", (e) => { state.wrong = e.target.checked; state.page = 0; update(); });
  let typing = null;
  $("search").addEventListener("input", (e) => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.search = e.target.value; state.page = 0; update(); }, 120);
  });
  $("prev").addEventListener("click", () => { state.page -= 1; render(); });
  $("next").addEventListener("click", () => { state.page += 1; render(); });
  const problems = Object.entries(D.image_problems);
  if (problems.length) {
    const p = $("image-problems");
    p.hidden = false;
    p.textContent = "Images could not be read for " + problems.length + " task(s): " +
      problems.map(([task, why]) => task + ": " + why).join("; ");
  }
  if (D.view) { // the report's chosen comparison: two runs side by side on one benchmark
    state.a = D.view.a; state.b = D.view.b; state.bench = String(D.view.bench);
    $("run-a").value = String(state.a); $("run-b").value = String(state.b);
  }
  if (D.runs.length) { refreshBenchmarks(); refreshTasks(); refreshFields(); update(); } else $("sample-list").append(el("p", { class: "note" }, "No logged sample."));

  // Read-only view of the filtered list, for tests and the console: [run, task, doc id, key (, run B's task, doc id)].
  window.reportPage = {
    runs: () => D.runs.map((r) => Object.assign({}, r)),
    filtered: () => current.map((entry) => {
      const [i, j] = Array.isArray(entry) ? entry : [entry];
      const s = samples[i];
      const row = [D.runs[s.r].label, S[s.t], s.d, S[s.k]];
      return j === undefined ? row : row.concat([S[samples[j].t], samples[j].d, samples[j].c === s.c ? null : "differs"]);
    }),
  };
  document.body.dataset.ready = "1";
})();
