// Nodes: the node cache at any size. A canvas heat map (one cell per node, coloured by its fullest
// resource on the colour-blind-safe viridis ramp) and a virtualized table: only the rows in view
// exist in the DOM, so 5,000 nodes cost the same per frame as 30. Filter and sort apply to both.
import {connectLive, el, fmt} from "./live.js";
import {groupCellAt, groupLayout, groupNodes, matches, step} from "./nodelogic.js";

const ROW_H = 33; // px, as .vtable .vrow's 2.2rem at 15px
const $ = (id) => document.getElementById(id);
let nodes = []; // {name, cpu, mem, pods, unsched, taints, labels, status, u: [cpu, mem, pods, assumed]}
let byName = new Map();
let view = []; // the filtered, sorted nodes
let selected = null;
let cursor = 0; // the heat map's keyboard cursor, an index into view
let dirty = false;
let groups = null; // grouped by a topology key: [{value, nodes}], the view being their concatenation
let layout = null; // the grouped heat map's geometry (nodelogic.groupLayout)
const LABEL_H = 16; // px: a domain's label line above its cells
// Past this many domains (hostname: one per node) the heat map keeps the domains' order without a label
// line each (thousands of lines would outgrow a canvas), and the list names the first MAX_LISTED.
const MAX_LABELLED = 100;
const MAX_LISTED = 200;

const VIRIDIS = ["#fde725", "#b5de2b", "#6ece58", "#35b779", "#1f9e89", "#26828e", "#31688e", "#3e4989", "#482878", "#440154"];
const share = (used, total) => (total > 0 ? used / total : 0);
const fullest = (n) => Math.max(share(n.u[0], n.cpu), share(n.u[1], n.mem), share(n.u[2], n.pods));

const SORTS = {
  name: (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  cpu: (a, b) => share(b.u[0], b.cpu) - share(a.u[0], a.cpu),
  mem: (a, b) => share(b.u[1], b.mem) - share(a.u[1], a.mem),
  pods: (a, b) => share(b.u[2], b.pods) - share(a.u[2], a.pods),
  assumed: (a, b) => b.u[3] - a.u[3],
  fullest: (a, b) => fullest(b) - fullest(a),
};

function recompute() {
  const q = $("node-filter").value;
  view = nodes.filter((n) => matches(n, q)).sort(SORTS[$("node-sort").value] || SORTS.name);
  const key = $("node-group").value;
  groups = key ? groupNodes(view, key) : null;
  if (groups) view = groups.flatMap((g) => g.nodes);
  $("node-count").textContent = `${fmt.num(view.length)} of ${fmt.num(nodes.length)} nodes`
    + (groups ? ` in ${fmt.num(groups.filter((g) => g.value !== null).length)} domains` : "");
  drawGroups(key);
  $("vbody").style.height = `${view.length * ROW_H}px`;
}

// The domains list under the heat map: each domain linked to its page, with its nodes, pods and CPU.
function drawGroups(key) {
  const list = $("node-groups");
  list.hidden = !groups;
  if (!groups) { list.replaceChildren(); return; }
  const more = groups.length - MAX_LISTED;
  list.replaceChildren(...groups.slice(0, MAX_LISTED).map((g) => {
    const pods = g.nodes.reduce((s, n) => s + n.u[2], 0);
    const cpu = g.nodes.reduce((s, n) => s + n.u[0], 0);
    const alloc = g.nodes.reduce((s, n) => s + n.cpu, 0);
    const what = `${fmt.num(g.nodes.length)} node${g.nodes.length === 1 ? "" : "s"}, ${fmt.num(pods)} pod${pods === 1 ? "" : "s"}, `
      + `CPU ${(100 * share(cpu, alloc)).toFixed(0)} %`;
    const name = g.value === null
      ? el("span", {class: "muted", text: `no ${key} (in no domain)`})
      : el("a", {href: `/nodes/domain/?${new URLSearchParams({key, value: g.value})}`, text: `${key}=${g.value}`});
    return el("li", {"data-domain": g.value ?? ""}, name, el("span", {class: "muted", text: ` ${what}`}));
  }), ...(more > 0 ? [el("li", {class: "muted", text: `${fmt.num(more)} more domains (filter to narrow)`})] : []));
}

function drawHeatmap() {
  const canvas = $("heatmap");
  const width = canvas.clientWidth || 600;
  const cell = view.length > 2000 ? 6 : view.length > 500 ? 9 : 14;
  const cols = Math.max(1, Math.floor(width / cell));
  const rows = Math.ceil(view.length / cols);
  layout = groups && groups.length <= MAX_LABELLED ? groupLayout(groups.map((g) => g.nodes.length), cols, cell, LABEL_H) : null;
  const height = layout ? layout.height : Math.max(cell, rows * cell);
  const ratio = window.devicePixelRatio || 1;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  // Where node i goes: row-major from the top, or, grouped, within its domain's block under its label.
  let place = (i) => [(i % cols) * cell, Math.floor(i / cols) * cell];
  if (layout) {
    const owner = new Int32Array(view.length);
    layout.groups.forEach((g, gi) => owner.fill(gi, g.start, g.start + g.count));
    place = (i) => {
      const g = layout.groups[owner[i]];
      const j = i - g.start;
      return [(j % cols) * cell, g.top + Math.floor(j / cols) * cell];
    };
    ctx.fillStyle = "#222";
    ctx.font = "12px sans-serif";
    ctx.textBaseline = "top";
    layout.groups.forEach((g, gi) => {
      const v = groups[gi].value;
      ctx.fillText(`${v === null ? "(no label)" : v} · ${g.count}`, 0, g.labelY + 2);
    });
  }
  view.forEach((n, i) => {
    const [x, y] = place(i);
    ctx.fillStyle = VIRIDIS[Math.min(9, Math.floor(fullest(n) * 10))];
    ctx.fillRect(x, y, cell - 1, cell - 1);
    if (n.unsched) { // cordoned: a cross, not only a colour
      ctx.strokeStyle = "#000";
      ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x + cell - 1, y + cell - 1); ctx.stroke();
    }
    if (n.status !== "Ready") { // NotReady, unreachable or lost: the other diagonal too, in vermillion
      ctx.strokeStyle = "#D55E00"; ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(x + cell - 1, y); ctx.lineTo(x, y + cell - 1); ctx.stroke();
      ctx.lineWidth = 1;
    }
    if (i === cursor && document.activeElement === canvas) { // the keyboard cursor: a dashed outline
      ctx.strokeStyle = "#000"; ctx.setLineDash([2, 2]); ctx.strokeRect(x + 0.5, y + 0.5, cell - 2, cell - 2); ctx.setLineDash([]);
    }
    if (n.name === selected) { ctx.strokeStyle = "#D55E00"; ctx.lineWidth = 2; ctx.strokeRect(x + 1, y + 1, cell - 3, cell - 3); ctx.lineWidth = 1; }
  });
  canvas.dataset.cell = cell;
  canvas.dataset.cols = cols;
  canvas.dataset.groups = groups ? groups.length : 0;
}

function usageCell(used, total, show) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  const bar = el("span", {class: `bar${pct >= 90 ? " high" : ""}`, role: "img", "aria-label": `${pct.toFixed(0)} %`});
  bar.append(el("span", {style: `width:${pct.toFixed(1)}%`}));
  return el("div", {class: "cell usage", role: "cell"}, bar, el("span", {class: "num", text: `${show(used)} / ${show(total)}`}));
}

// A lost, NotReady or unreachable node and a cordoned one carry a mark before the name (words, not only
// colour); the taints column shows the taints the node controller put on them.
function statusMarks(n) {
  const marks = [];
  if (n.status !== "Ready") marks.push(el("span", {class: `mark status-${n.status.toLowerCase()}`, text: n.status}));
  if (n.unsched) marks.push(el("span", {class: "mark cordoned", text: "Cordoned"}));
  return marks;
}

function drawRows() {
  const box = $("vtable");
  const first = Math.max(0, Math.floor(box.scrollTop / ROW_H) - 5);
  const count = Math.ceil(box.clientHeight / ROW_H) + 10;
  const cpu = (m) => (m / 1000).toFixed(m % 1000 ? 1 : 0);
  const rows = view.slice(first, first + count).map((n, i) => {
    const row = el("div", {class: `vrow${n.name === selected ? " sel" : ""}`, role: "row",
      style: `position:absolute;left:0;right:0;top:${(first + i) * ROW_H}px`},
      el("div", {class: "cell", role: "cell", title: n.name}, ...statusMarks(n), n.name),
      usageCell(n.u[0], n.cpu, cpu), usageCell(n.u[1], n.mem, fmt.bytes), usageCell(n.u[2], n.pods, String),
      el("div", {class: "cell num", role: "cell", text: String(n.u[3])}),
      el("div", {class: "cell", role: "cell", text: (n.unsched ? "unschedulable " : "") + n.taints.join(", ") || "–"}),
      el("div", {class: "cell", role: "cell", text: Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(", ") || "–"}));
    row.title = row.textContent;
    return row;
  });
  $("vbody").replaceChildren(...rows);
}

function redraw() {
  dirty = false;
  recompute();
  drawHeatmap();
  drawRows();
}
const schedule = () => { if (!dirty) { dirty = true; requestAnimationFrame(redraw); } };

// A frame with `start: N` begins a new node set whose N rows come in `nodes` over this and the next
// frames; once all arrived, nodes not in it are dropped. `changed` rows update usage only.
let incoming = null;
connectLive("nodes", (frame) => {
  if (frame.start !== undefined) incoming = {total: frame.start, names: new Set()};
  for (const [name, cpu, mem, pods, unsched, taints, labels, status, u] of frame.nodes || []) {
    const n = {name, cpu, mem, pods, unsched, taints, labels, status, u, text: undefined}; // text: the filter's, made on use
    const old = byName.get(name);
    if (old) Object.assign(old, n);
    else { nodes.push(n); byName.set(name, n); }
    if (incoming) incoming.names.add(name);
  }
  if (incoming && incoming.names.size >= incoming.total) {
    const keep = incoming.names;
    nodes = nodes.filter((n) => keep.has(n.name));
    byName = new Map(nodes.map((n) => [n.name, n]));
    incoming = null;
  }
  for (const [name, ...u] of frame.changed || []) {
    const n = byName.get(name);
    if (n) n.u = u;
  }
  schedule();
});

$("node-filter").addEventListener("input", schedule);
$("node-sort").addEventListener("change", schedule);
// The grouping is kept in the address (?group=KEY), so a grouped view can be linked and reloaded.
$("node-group").addEventListener("change", () => {
  const url = new URL(window.location.href);
  if ($("node-group").value) url.searchParams.set("group", $("node-group").value);
  else url.searchParams.delete("group");
  window.history.replaceState(null, "", url);
  schedule();
});
$("vtable").addEventListener("scroll", () => requestAnimationFrame(drawRows));
new ResizeObserver(schedule).observe($("heatmap").parentElement);
function select(i) {
  if (!view[i]) return;
  cursor = i;
  selected = view[i].name;
  $("vtable").scrollTop = i * ROW_H;
  $("selected").textContent = `Selected ${selected}`;
  schedule();
}
$("heatmap").addEventListener("click", (e) => {
  const c = e.currentTarget;
  const cell = Number(c.dataset.cell);
  const cols = Number(c.dataset.cols);
  select(layout ? groupCellAt(layout, e.offsetX, e.offsetY, cols, cell)
    : Math.floor(e.offsetY / cell) * cols + Math.floor(e.offsetX / cell));
});
// Keyboard: arrows (Home/End, PageUp/PageDown) move a cursor over the cells, naming the node and how
// full it is; Enter or Space selects it as a click does.
$("heatmap").addEventListener("keydown", (e) => {
  if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(cursor); return; }
  const to = step(cursor, e.key, Number(e.currentTarget.dataset.cols) || 1, view.length);
  if (to === null) return;
  e.preventDefault();
  cursor = to;
  const n = view[cursor];
  $("selected").textContent = `${n.name}: ${(100 * fullest(n)).toFixed(0)} % full${n.unsched ? ", unschedulable" : ""}`
    + (n.status !== "Ready" ? `, ${n.status}` : "")
    + " (Enter shows its row)";
  schedule();
});
$("heatmap").addEventListener("focus", schedule);
$("heatmap").addEventListener("blur", schedule);
