// Overview: counters, streaming throughput and latency charts (uPlot), the last bindings and failures.
import {addMarks, seedMarks} from "./chartmarks.js";
import {connectLive, el, fmt, podLink} from "./live.js";

const WINDOW_S = 120; // seconds of history the charts keep
const KEEP = 15; // rows per table

const $ = (id) => document.getElementById(id);
const series = {t: [], scheduled: [], attempts: [], failures: [], preemptions: [], victims: [],
  alg50: [], alg99: [], bind50: [], bind99: [], e2e50: [], e2e99: [],
  active: [], backoff: [], unschedulable: [], binding: []};
let bindings = [];
let failed = [];
let marks = []; // node state changes and evictions, drawn on both charts (chartmarks.js)

// Okabe–Ito: a node's state in vermillion, pods taken away in bluish green; dashed, labelled at the top.
const MARK_COLOUR = {node: "#D55E00", pods: "#009E73"};

function marksPlugin() {
  return {hooks: {draw: [(u) => {
    const {ctx, bbox} = u;
    ctx.save();
    ctx.font = `${Math.round(10 * devicePixelRatio)}px sans-serif`;
    ctx.textBaseline = "alphabetic"; // uPlot leaves its axes' alignment on the context
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.lineWidth = devicePixelRatio;
    let row = 0;
    for (const m of marks) {
      const x = u.valToPos(m.t, "x", true);
      if (x < bbox.left || x > bbox.left + bbox.width) continue;
      ctx.strokeStyle = ctx.fillStyle = MARK_COLOUR[m.kind];
      ctx.beginPath();
      ctx.moveTo(x, bbox.top);
      ctx.lineTo(x, bbox.top + bbox.height);
      ctx.stroke();
      // Labels step down in three rows, so that marks close together stay readable; right of the line, or
      // left of it where the plot would cut the label off.
      const gap = 3 * devicePixelRatio;
      const right = x + gap + ctx.measureText(m.label).width <= bbox.left + bbox.width;
      ctx.textAlign = right ? "left" : "right";
      ctx.fillText(m.label, right ? x + gap : x - gap, bbox.top + (12 + 12 * (row++ % 3)) * devicePixelRatio);
    }
    ctx.restore();
  }]}};
}

// Okabe–Ito colours; p99 lines are dashed so the pair reads without colour.
function chart(target, title, lines, yLabel, log) {
  const width = () => Math.max(280, target.clientWidth - 4);
  const opts = {
    title, width: width(), height: 220,
    scales: {x: {time: true}, y: log ? {distr: 3} : {auto: true, range: (u, min, max) => [0, Math.max(1, max)]}},
    axes: [{}, {label: yLabel, size: 60}],
    plugins: [marksPlugin()],
    series: [{}, ...lines.map(([label, stroke, dash]) => ({label, stroke, width: 2, dash: dash ? [6, 4] : undefined,
      spanGaps: true, points: {show: false}, value: (u, v) => (v == null ? "–" : v.toFixed(log ? 2 : 1))}))],
  };
  const plot = new uPlot(opts, [[], ...lines.map(() => [])], target);
  new ResizeObserver(() => plot.setSize({width: width(), height: 220})).observe(target);
  return plot;
}

const throughput = chart($("chart-throughput"), `Throughput (pods/s, mean over ${$("chart-throughput").dataset.rateWindow} s)`, [
  ["scheduled/s", "#0072B2"], ["attempts/s", "#E69F00"], ["failures/s", "#D55E00", true]], "per second", false);
const latency = chart($("chart-latency"), "Latency (ms, log scale)", [
  ["algorithm p50", "#56B4E9"], ["algorithm p99", "#56B4E9", true],
  ["binding p50", "#009E73"], ["binding p99", "#009E73", true],
  ["e2e p50", "#CC79A7"], ["e2e p99", "#CC79A7", true]], "ms", true);
// The queue over time: a node's evictions show as a burst of active pods (and of backoff/unschedulable
// when the rest of the cluster has no room for them).
const pending = chart($("chart-pending"), "Pending pods", [
  ["active", "#0072B2"], ["backoff", "#E69F00"], ["unschedulable", "#D55E00", true], ["binding", "#009E73"]], "pods", false);

// Preemption, as /metrics counts it: attempts (PostFilter runs) and the victims they chose.
const preemption = chart($("chart-preemption"), `Preemption (per second, mean over ${$("chart-preemption").dataset.rateWindow} s)`, [
  ["attempts/s", "#CC79A7"], ["victims/s", "#009E73", true]], "per second", false);

function push(frame) {
  const s = series;
  s.t.push(frame.t);
  s.scheduled.push(frame.rates.scheduled);
  s.attempts.push(frame.rates.attempts);
  s.failures.push(frame.rates.failures);
  s.preemptions.push(frame.rates.preemption_attempts ?? 0);
  s.victims.push(frame.rates.preemption_victims ?? 0);
  const [a, b, e] = [frame.lat.algorithm, frame.lat.binding, frame.lat.e2e];
  const g = frame.gauges;
  s.active.push(g.active); s.backoff.push(g.backoff); s.unschedulable.push(g.unschedulable); s.binding.push(g.binding);
  s.alg50.push(a[0]); s.alg99.push(a[1]); s.bind50.push(b[0]); s.bind99.push(b[1]); s.e2e50.push(e[0]); s.e2e99.push(e[1]);
  while (s.t.length && s.t[0] < frame.t - WINDOW_S) for (const k in s) s[k].shift();
  throughput.setData([s.t, s.scheduled, s.attempts, s.failures]);
  latency.setData([s.t, s.alg50, s.alg99, s.bind50, s.bind99, s.e2e50, s.e2e99]);
  pending.setData([s.t, s.active, s.backoff, s.unschedulable, s.binding]);
  preemption.setData([s.t, s.preemptions, s.victims]);
}

function renderTables() {
  $("bindings").replaceChildren(...bindings.slice().reverse().map(([ns, name, node, e2e, t]) =>
    el("tr", {}, el("td", {text: fmt.clock(t)}), el("td", {}, podLink(ns, name)), el("td", {text: node}),
      el("td", {class: "num", text: fmt.ms(e2e)}))));
  $("failed").replaceChildren(...failed.slice().reverse().map(([ns, name, result, message, t]) =>
    el("tr", {}, el("td", {text: fmt.clock(t)}), el("td", {}, podLink(ns, name)),
      el("td", {class: "msg", text: message}))));
  // The marks in words too (the charts are canvases), newest first.
  $("chart-marks").replaceChildren(...marks.slice().reverse().map((m) =>
    el("li", {class: `mark-${m.kind}`, text: `${fmt.clock(m.t)} ${m.label}`})));
  $("chart-marks").hidden = marks.length === 0;
  $("bindings-empty").hidden = bindings.length > 0;
  $("failed-empty").hidden = failed.length > 0;
}

connectLive("overview", (frame) => {
  const g = frame.gauges;
  $("c-active").textContent = fmt.num(g.active);
  $("c-backoff").textContent = fmt.num(g.backoff);
  $("c-unschedulable").textContent = fmt.num(g.unschedulable);
  $("c-binding").textContent = fmt.num(g.binding);
  $("c-scheduled").textContent = fmt.num(frame.rates.scheduled, 1);
  $("c-attempts").textContent = fmt.num(frame.rates.attempts, 1);
  $("c-failures").textContent = fmt.num(frame.rates.failures, 1);
  $("c-preemption-attempts").textContent = fmt.num(frame.rates.preemption_attempts ?? 0, 1);
  $("c-preemption-victims").textContent = fmt.num(frame.rates.preemption_victims ?? 0, 1);
  if (frame.full) { // the server merged this interval's events into `recent` already
    bindings = frame.recent.bindings;
    failed = frame.recent.failed;
  } else {
    bindings = bindings.concat(frame.bindings).slice(-KEEP);
    failed = failed.concat(frame.failed).slice(-KEEP);
  }
  marks = frame.full ? seedMarks(frame, WINDOW_S) : addMarks(marks, frame, WINDOW_S);
  renderTables();
  push(frame);
});
