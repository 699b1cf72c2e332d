// The nodes page's filter, with no DOM: a node matches when the query, lowercased, is in its name,
// a taint, or a label "key=value", all lowercased too ("unschedulable" also matches cordoned nodes).
export function searchText(n) {
  return [n.name, ...n.taints, ...Object.entries(n.labels).map(([k, v]) => `${k}=${v}`)].join("\n").toLowerCase();
}

export function matches(n, query) {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  if (q === "unschedulable" && n.unsched) return true;
  if (n.text === undefined) n.text = searchText(n);
  return n.text.includes(q);
}
