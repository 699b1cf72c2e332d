// The overview charts' markers, without the DOM (tested with Node.js): when a node changes state (NotReady,
// Unreachable, Ready, Deleted) or pods are taken away (taint eviction, PodGC, drain, preemption), a vertical
// line on the throughput and latency charts lines the burst of requeues and attempts up with its cause.

export const MAX_MARKS = 40; // markers kept at most, newest last

// Short names for the DisruptionTarget reasons the controllers write.
const REASONS = {
  DeletionByTaintManager: "evicted (taint)",
  DeletionByPodGC: "collected (PodGC)",
  EvictionByEvictionAPI: "evicted (drain)",
  TerminationByKubelet: "terminated (kubelet)",
  PreemptionByScheduler: "preempted",
};

export function reasonLabel(reason) {
  return REASONS[reason] || (reason ? `disrupted (${reason})` : "disrupted");
}

// marks: [{t, kind: "node"|"pods", key, label, count}] oldest first. A frame's node events give one mark each;
// its disruptions are grouped by second, reason and node into one mark that counts its pods (a node's
// evictions come together). Marks older than windowS before the frame's time (t) are dropped.
export function addMarks(marks, frame, windowS) {
  const out = marks.map((m) => ({...m}));
  const byKey = new Map(out.map((m) => [m.key, m]));
  for (const [node, state, t] of frame.node_events || []) {
    const key = `node|${node}|${state}|${Math.floor(t)}`;
    if (!byKey.has(key)) {
      const mark = {t, kind: "node", key, label: `${node} ${state}`, count: 1};
      byKey.set(key, mark);
      out.push(mark);
    }
  }
  // A pod counts once in all the marks: listed twice in a frame, or both recorded (a full frame's `recent`)
  // and live, it is one disruption.
  const seen = new Set(out.flatMap((m) => m.pods || []));
  for (const [ns, name, node, reason, t] of frame.disruptions || []) {
    const pod = `${ns}/${name}|${reason}`;
    if (seen.has(pod)) continue;
    seen.add(pod);
    const key = `pods|${reason}|${node}|${Math.floor(t)}`;
    const mark = byKey.get(key);
    if (mark) {
      mark.count += 1;
      mark.pods = [...(mark.pods || []), pod];
    } else {
      const fresh = {t, kind: "pods", key, node, reason, count: 1, pods: [pod]};
      byKey.set(key, fresh);
      out.push(fresh);
    }
  }
  for (const m of out) {
    if (m.kind === "pods") {
      m.label = `${m.count} pod${m.count === 1 ? "" : "s"} ${reasonLabel(m.reason)}${m.node ? ` from ${m.node}` : ""}`;
    }
  }
  out.sort((a, b) => a.t - b.t);
  const now = frame.t ?? (out.length ? out[out.length - 1].t : 0);
  return out.filter((m) => m.t >= now - windowS).slice(-MAX_MARKS);
}

// A full frame (connect, reconnect) starts the marks afresh from what the server recorded of the last minutes
// (frame.recent.marks: node events and disrupted pods), then adds the frame's own live events: the first view
// after a reload carries the recent marks, not only what happens while the page is open.
export function seedMarks(frame, windowS) {
  const recorded = (frame.recent && frame.recent.marks) || {};
  const seeded = addMarks([], {t: frame.t, node_events: recorded.node_events, disruptions: recorded.disruptions},
                          windowS);
  return addMarks(seeded, frame, windowS);
}
