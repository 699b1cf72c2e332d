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

// Grouping by a topology key: the nodes in domains by the key's value (sorted; nodes lacking the key,
// which belong to no domain, last as value null), each keeping the order it was given.
export function groupNodes(nodes, key) {
  const groups = new Map();
  for (const n of nodes) {
    const v = Object.prototype.hasOwnProperty.call(n.labels || {}, key) ? String(n.labels[key]) : null;
    if (!groups.has(v)) groups.set(v, []);
    groups.get(v).push(n);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a === null) - (b === null) || (a < b ? -1 : a > b ? 1 : 0))
    .map(([value, members]) => ({value, nodes: members}));
}

// The grouped heat map's geometry: each domain a label line of `labelH` px, then its cells from a fresh
// row, `cols` a row of `cell` px. Returns the groups' {start (index into the concatenated nodes), count,
// labelY, top, rows} and the total height.
export function groupLayout(counts, cols, cell, labelH) {
  let y = 0;
  let start = 0;
  const groups = counts.map((count) => {
    const rows = Math.max(1, Math.ceil(count / cols));
    const g = {start, count, labelY: y, top: y + labelH, rows};
    y = g.top + rows * cell + Math.round(cell / 2);
    start += count;
    return g;
  });
  return {groups, height: Math.max(cell, y)};
}

// The node index under a point of the grouped heat map, or -1.
export function groupCellAt(layout, x, y, cols, cell) {
  const col = Math.floor(x / cell);
  if (col < 0 || col >= cols) return -1;
  for (const g of layout.groups) {
    if (y >= g.top && y < g.top + g.rows * cell) {
      const i = Math.floor((y - g.top) / cell) * cols + col;
      return i < g.count ? g.start + i : -1;
    }
  }
  return -1;
}
