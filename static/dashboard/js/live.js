// The live socket every live page uses: connects to /ws/live/<view>/, shows its state in the
// header's #live-status, and reconnects with exponential backoff (0.5 s doubling to 30 s, jittered).
// The server's first frame after any (re)connect is a full snapshot, so nothing is replayed here.
// Closed with 4401 (logged out, session expired), the page goes to the login page and back.

export function connectLive(view, onFrame) {
  const status = document.getElementById("live-status");
  const set = (state, text) => {
    if (!status) return;
    status.dataset.state = state;
    status.textContent = text;
  };
  let delay = 500;
  let everLive = false;

  function open() {
    set(everLive ? "reconnecting" : "connecting", everLive ? "Reconnecting…" : "Connecting…");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/ws/live/${view}/`);
    ws.onmessage = (event) => {
      delay = 500; // a frame arrived: the connection is good, start backing off from scratch next time
      everLive = true;
      set("live", "Live");
      onFrame(JSON.parse(event.data));
    };
    ws.onclose = (event) => {
      if (event.code === 4401) { // not (or no longer) logged in: log in, then come back here
        const login = status?.dataset.loginUrl || "/accounts/login/";
        location.assign(`${login}?next=${encodeURIComponent(location.pathname + location.search)}`);
        return;
      }
      const wait = delay * (0.8 + 0.4 * Math.random());
      delay = Math.min(delay * 2, 30000);
      set(navigator.onLine === false ? "offline" : "reconnecting",
          `Disconnected · retrying in ${Math.max(1, Math.round(wait / 1000))} s`);
      setTimeout(open, wait);
    };
  }
  open();
}

// Small shared helpers for the live pages.
export const fmt = {
  num: (x, digits = 0) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en-US",
    {maximumFractionDigits: digits, minimumFractionDigits: digits})),
  ms: (x) => (x === null || x === undefined ? "–" : x < 10 ? `${x.toFixed(2)} ms` : x < 1000 ? `${x.toFixed(0)} ms`
    : `${(x / 1000).toFixed(1)} s`),
  ago: (seconds) => (seconds < 60 ? `${Math.max(0, seconds).toFixed(0)} s` : seconds < 3600
    ? `${Math.floor(seconds / 60)} min ${Math.floor(seconds % 60)} s` : `${(seconds / 3600).toFixed(1)} h`),
  clock: (t) => new Date(t * 1000).toLocaleTimeString("en-GB"),
  bytes: (b) => (b >= 1 << 30 ? `${(b / (1 << 30)).toFixed(1)} Gi` : `${(b / (1 << 20)).toFixed(0)} Mi`),
};

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

export function podLink(ns, name) {
  return el("a", {href: `/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/`, text: `${ns}/${name}`});
}
