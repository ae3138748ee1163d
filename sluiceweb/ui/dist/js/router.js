// Routes live in the URL's fragment (#/jobs/ID?statuses=failed): the page
// itself is always the mount root, so relative URLs hold wherever the
// handler is mounted, and every view and filter is a link that back and
// forward restore.
import { useState, useEffect } from "./vendor/htm-preact.js";

// parse returns the route of a fragment: its path segments and parameters,
// and the fragment itself.
export function parse(hash) {
  const raw = (hash || "").replace(/^#/, "");
  const [path, qs] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(qs || ""), hash: hash || "" };
}

// href returns the fragment of a path and parameters, dropping empty ones.
export function href(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === "" || v === false || (Array.isArray(v) && !v.length)) continue;
    q.set(k, Array.isArray(v) ? v.join(",") : String(v));
  }
  const s = q.toString();
  return "#" + path + (s ? "?" + s : "");
}

// go shows the route; replace changes the current history entry rather
// than adding one (for typing, which should not fill the history).
export function go(to, replace = false) {
  if (to === location.hash) return;
  if (replace) {
    history.replaceState(history.state, "", to);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else {
    location.hash = to;
  }
}

// useRoute returns the current route, updated as it changes.
export function useRoute() {
  const [route, set] = useState(() => parse(location.hash));
  useEffect(() => {
    const on = () => set((route) => (route.hash === location.hash ? route : parse(location.hash)));
    window.addEventListener("hashchange", on);
    window.addEventListener("popstate", on);
    // The fragment may have changed between the first render and now,
    // with nobody listening: a page embedding this one may set it as soon
    // as it sees the dashboard.
    on();
    return () => {
      window.removeEventListener("hashchange", on);
      window.removeEventListener("popstate", on);
    };
  }, []);
  return route;
}
