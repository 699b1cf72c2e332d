// The nodes page's logic with no DOM. The filter: a node matches when the query, lowercased, is in its name,
// a taint, a label "key=value" or its status (NotReady, Unreachable, Lost; not Ready, which every healthy
// node is), all lowercased too ("unschedulable" also matches cordoned nodes).
export function searchText(n) {
  const status = n.status && n.status !== "Ready" ? [n.status] : [];
  return [n.name, ...status, ...n.taints, ...Object.entries(n.labels).map(([k, v]) => `${k}=${v}`)].join("\n").toLowerCase();
}

export function matches(n, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  if (q === "unschedulable" && n.unsched) return true;
  if (n.text === undefined) n.text = searchText(n);
  return n.text.includes(q);
}

// The heat map's keyboard cursor: the cell index a key moves it to over `count` cells in rows of
// `cols` (arrows, Home/End, PageUp/PageDown by ten rows); null for any other key.
export function step(index, key, cols, count) {
  if (count <= 0) return null;
  const i = Math.min(Math.max(index, 0), count - 1);
  const moves = {ArrowLeft: i - 1, ArrowRight: i + 1, ArrowUp: i - cols, ArrowDown: i + cols,
    Home: 0, End: count - 1, PageUp: i - 10 * cols, PageDown: i + 10 * cols};
  if (!(key in moves)) return null;
  const to = moves[key];
  if (to >= 0 && to < count) return to;
  // Past an edge: sideways keys stop at the first or last cell, vertical ones stay in their column.
  if (key === "ArrowLeft" || key === "ArrowRight") return to < 0 ? 0 : count - 1;
  if (to < 0) return i % cols;
  return i + Math.floor((count - 1 - i) / cols) * cols;
}
