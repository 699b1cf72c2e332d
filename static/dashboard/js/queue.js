// Queue: the three sub-queues and the gated pods (SchedulingGates), with each pod's priority, attempts, time queued, backoff countdown
// and last failure; every frame replaces the lists, and a one-second timer runs the clocks between frames.
import {connectLive, el, fmt, podLink} from "./live.js";

const QUEUES = ["active", "backoff", "unschedulable", "gated"];
let latest = null;
let skew = 0; // server clock minus ours, from the last frame

function render() {
  if (!latest) return;
  const now = Date.now() / 1000 + skew;
  for (const name of QUEUES) {
    const rows = latest.lists[name];
    document.getElementById(`n-${name}`).textContent = fmt.num(latest.lengths[name]);
    const shown = document.getElementById(`shown-${name}`);
    shown.textContent = latest.lengths[name] > rows.length ? `showing the first ${rows.length}` : "";
    document.getElementById(`q-${name}`).replaceChildren(...rows.map(
      ([key, priority, attempts, first, since, expiry, message]) => {
        const [ns, pod] = key.split("/", 2);
        const left = expiry == null ? null : expiry - now;
        return el("tr", {},
          el("td", {}, podLink(ns, pod)),
          el("td", {class: "num", text: fmt.num(priority)}),
          el("td", {class: "num", text: fmt.num(attempts)}),
          el("td", {class: "num", text: fmt.ago(now - first)}),
          el("td", {class: "countdown", text: left == null ? "–" : left > 0 ? `in ${left.toFixed(1)} s` : "expired"}),
          el("td", {class: "msg", text: message || "–"}));
      }));
    document.getElementById(`empty-${name}`).hidden = rows.length > 0;
  }
  document.getElementById("n-in_flight").textContent = fmt.num(latest.lengths.in_flight);
}

connectLive("queue", (frame) => {
  latest = frame;
  skew = frame.now - Date.now() / 1000;
  render();
});
setInterval(render, 1000);
