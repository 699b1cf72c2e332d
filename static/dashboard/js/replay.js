// A replay's page: the progress bar while its task runs (polled), then A vs B plots (uPlot):
// CPU utilisation per node, pending pods over virtual time, CPU imbalance (std-dev across nodes) over time.
const $ = (id) => document.getElementById(id);
const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7"]; // Okabe–Ito

const progress = $("replay-progress");
if (progress) {
  const poll = async () => {
    const reply = await fetch(progress.dataset.url, {headers: {Accept: "application/json"}});
    if (reply.ok) {
      const state = await reply.json();
      $("progress-bar").value = state.progress;
      if (state.status === "done" || state.status === "failed") { location.reload(); return; }
    }
    setTimeout(poll, 1000);
  };
  setTimeout(poll, 500);
}

function chart(target, title, xLabel, yLabel, runs, data, bars) {
  const width = () => Math.max(280, target.clientWidth - 4);
  const opts = {
    title, width: width(), height: 240,
    scales: {x: {time: false}, y: {auto: true, range: (u, min, max) => [0, Math.max(bars ? 1 : 0.01, max)]}},
    axes: [{label: xLabel}, {label: yLabel, size: 60}],
    series: [{}, ...runs.map((name, i) => ({label: name, stroke: COLOURS[i % COLOURS.length], width: 2,
      fill: bars ? COLOURS[i % COLOURS.length] + "55" : undefined, points: {show: bars},
      paths: bars ? uPlot.paths.stepped({align: 1}) : undefined, spanGaps: true}))],
  };
  const plot = new uPlot(opts, data, target);
  new ResizeObserver(() => plot.setSize({width: width(), height: 240})).observe(target);
  target.dataset.ready = "1";
  return plot;
}

// Each run's timeline on the union of sample times, carrying the last value forward.
function merged(plots, column) {
  const times = [...new Set(plots.flatMap((p) => p.timeline.map((s) => s[0])))].sort((a, b) => a - b);
  return [times, ...plots.map((p) => {
    let i = 0, last = null;
    return times.map((t) => {
      while (i < p.timeline.length && p.timeline[i][0] <= t) last = p.timeline[i++][column];
      return last;
    });
  })];
}

const data = $("replay-plots");
if (data) {
  const plots = JSON.parse(data.textContent);
  const names = plots.map((p) => p.config);
  // Utilisation distribution: each run's nodes sorted from fullest to emptiest (packing shows as a cliff).
  const sorted = plots.map((p) => p.nodes.cpu.slice().sort((a, b) => b - a));
  const ranks = sorted[0].map((_, i) => i + 1);
  chart($("chart-nodes-cpu"), "CPU utilisation per node (sorted)", "node rank", "requested / allocatable",
    names, [ranks, ...sorted], true);
  chart($("chart-pending"), "Pending pods over virtual time", "seconds", "pods", names, merged(plots, 1), false);
  chart($("chart-imbalance"), "CPU imbalance over virtual time (std-dev across nodes)", "seconds", "std-dev",
    names, merged(plots, 3), false);
}
