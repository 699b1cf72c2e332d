// The /pending/ page: pods with an unschedulable attempt per time bucket, stacked by main reason (uPlot).
// Stacking is drawn as cumulative series, the tallest first, each filled down to the axis: a later
// (lower) series paints over the one before, so each reason shows as its own band.
const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]; // Okabe–Ito

const source = document.getElementById("reasons-data");
const target = document.getElementById("chart-reasons");
if (source && target) {
  const data = JSON.parse(source.textContent);
  const reasons = Object.keys(data.series);
  const cumulative = [];
  let running = data.times.map(() => 0);
  for (const reason of reasons) {
    running = running.map((v, i) => v + data.series[reason][i]);
    cumulative.push(running);
  }
  // Each bucket is a step from its start to the next one's: the last needs its end too.
  const times = [...data.times, data.times[data.times.length - 1] + data.bucket_seconds];
  cumulative.forEach((c) => c.push(c[c.length - 1]));
  const order = reasons.map((_, i) => i).reverse(); // the top of the stack first
  const width = () => Math.max(280, target.clientWidth - 4);
  const opts = {
    width: width(), height: 280,
    scales: {x: {time: true}, y: {range: (u, min, max) => [0, Math.max(1, max)]}},
    axes: [{}, {label: "pods", size: 50}],
    series: [{}, ...order.map((i) => ({label: reasons[i], stroke: COLOURS[i % COLOURS.length], width: 1,
      fill: COLOURS[i % COLOURS.length] + "cc", paths: uPlot.paths.stepped({align: 1}), points: {show: false},
      value: (u, v, s, idx) => idx == null ? "" : String(data.series[reasons[i]][Math.min(idx, times.length - 2)])}))],
  };
  const plot = new uPlot(opts, [times, ...order.map((i) => cumulative[i])], target);
  new ResizeObserver(() => plot.setSize({width: width(), height: 280})).observe(target);
  target.dataset.ready = "1";
}
