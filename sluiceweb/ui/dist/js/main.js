// The dashboard's shell: navigation, the live indicator, the theme,
// keyboard shortcuts, and the page of the route.
import { html, render, useState, useEffect, useRef } from "./vendor/htm-preact.js";
import { useRoute, go } from "./router.js";
import { useStreamState } from "./live.js";
import { DialogHost, Icon, Modal } from "./ui.js";
import { Overview } from "./pages/overview.js";
import { Jobs, lastList } from "./pages/jobs.js";
import { Job } from "./pages/job.js";
import { Queues, Clients } from "./pages/fleet.js";
import { Schedules } from "./pages/schedules.js";
import { Metrics } from "./pages/metrics.js";
import { Groups } from "./pages/groups.js";
import { Group, GroupOf } from "./pages/group.js";

const PAGES = [
  { path: "", label: "Overview", key: "o" },
  { path: "jobs", label: "Jobs", key: "j" },
  { path: "workflows", label: "Workflows", key: "w" },
  { path: "metrics", label: "Metrics", key: "m" },
  { path: "queues", label: "Queues", key: "q" },
  { path: "clients", label: "Clients", key: "c" },
  { path: "schedules", label: "Schedules", key: "s" },
];

const SHORTCUTS = [
  ["/", "Search jobs by ID or unique key"],
  ["g then o, j, w, m, q, c, s", "Go to Overview, Jobs, Workflows, Metrics, Queues, Clients, Schedules"],
  ["↑ ↓ or k j", "Move between jobs in the list"],
  ["Enter", "Open the job"],
  ["Space or x", "Select the job"],
  ["Esc", "Close the job, or a dialog"],
  ["t", "Switch light, dark or system theme"],
  ["?", "Show these shortcuts"],
];

const THEMES = ["system", "light", "dark"];

function useTheme() {
  const [theme, set] = useState(() => {
    // index.html applies the stored choice before the first paint; read it
    // here too, for a page whose policy refuses inline scripts.
    let stored = null;
    try { stored = localStorage.getItem("sluice.theme"); } catch { /* storage refused */ }
    return THEMES.includes(stored) ? stored : "system";
  });
  useEffect(() => {
    if (theme === "system") delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    try {
      theme === "system" ? localStorage.removeItem("sluice.theme") : localStorage.setItem("sluice.theme", theme);
    } catch { /* storage refused: the choice lasts for this page */ }
  }, [theme]);
  return [theme, () => set((t) => THEMES[(THEMES.indexOf(t) + 1) % THEMES.length])];
}

// useShortcuts wires the keyboard shortcuts; typing in a field is left alone.
function useShortcuts(route, cycleTheme, showHelp) {
  const pending = useRef(false);
  const state = useRef();
  state.current = { route, cycleTheme, showHelp };
  useEffect(() => {
    const on = (e) => {
      const t = e.target;
      if (e.ctrlKey || e.metaKey || e.altKey || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) return;
      if (document.querySelector("dialog[open]")) return;
      const { route, cycleTheme, showHelp } = state.current;
      if (pending.current) {
        pending.current = false;
        const p = PAGES.find((x) => x.key === e.key);
        if (p) { e.preventDefault(); go("#/" + p.path); }
        return;
      }
      if (e.key === "g") { pending.current = true; setTimeout(() => (pending.current = false), 1500); }
      else if (e.key === "/") { e.preventDefault(); focusSearch(route); }
      else if (e.key === "?") { e.preventDefault(); showHelp(); }
      else if (e.key === "t") cycleTheme();
      else if (e.key === "Escape" && route.parts[0] === "jobs" && route.parts[1]) go(lastList);
    };
    document.addEventListener("keydown", on);
    return () => document.removeEventListener("keydown", on);
  }, []);
}

function focusSearch(route) {
  if (route.parts[0] !== "jobs" || route.parts[1]) go(lastList);
  requestAnimationFrame(() => {
    const el = document.getElementById("job-search");
    if (el) { el.focus(); el.select(); }
  });
}

function Page({ route }) {
  const [a, b] = route.parts;
  if (!a) return html`<${Overview} route=${route} />`;
  if (a === "jobs" && b) return html`<${Job} id=${b} key=${b} />`;
  if (a === "jobs") return html`<${Jobs} route=${route} />`;
  if ((a === "workflows" || a === "batches") && b) return html`<${Group} kind=${a} id=${b} key=${a + b} />`;
  if (a === "workflows" || a === "batches") return html`<${Groups} kind=${a} route=${route} />`;
  if (a === "groups" && b) return html`<${GroupOf} id=${b} key=${b} />`;
  if (a === "queues") return html`<${Queues} />`;
  if (a === "clients") return html`<${Clients} />`;
  if (a === "schedules") return html`<${Schedules} />`;
  if (a === "metrics") return html`<${Metrics} route=${route} />`;
  return html`<div class="notice">No such page. <a href="#/">Go to the overview</a>.</div>`;
}

function App() {
  const route = useRoute();
  const stream = useStreamState();
  const [theme, cycleTheme] = useTheme();
  const [help, setHelp] = useState(false);
  useShortcuts(route, cycleTheme, () => setHelp(true));
  const page = route.parts[0] === "batches" ? "workflows" : route.parts[0] || "";
  const main = useRef(null);
  const where = route.parts.slice(0, 2).join("/");
  useEffect(() => {
    const label = (PAGES.find((p) => p.path === page) || PAGES[0]).label;
    const one = { jobs: "Job", workflows: "Workflow", batches: "Batch" }[route.parts[0]];
    document.title = (route.parts[1] && one ? one + " " + route.parts[1].slice(0, 8) : route.parts[0] === "batches" ? "Batches" : label) + " · sluice";
    if (main.current && document.activeElement && document.activeElement.closest && document.activeElement.closest("nav")) main.current.focus();
  }, [where]);
  const streamText = { open: "Live", connecting: "Reconnecting…", closed: "Offline" }[stream];
  return html`
    <a class="skip" href="#" onClick=${(e) => { e.preventDefault(); main.current.focus(); }}>Skip to content</a>
    <div class="shell">
      <header class="side">
        <a class="brand" href="#/"><${Icon} name="logo" size="22" /><span class="word">sluice</span></a>
        <nav class="nav" aria-label="Pages">
          ${PAGES.map((p) => html`<a href=${"#/" + p.path} aria-current=${p.path === page ? "page" : undefined}>${p.label}</a>`)}
        </nav>
        <div class="side-foot">
          <span class="live" data-state=${stream} role="status" title=${"Event stream: " + streamText}>
            <span class="dot" aria-hidden="true"></span><span class="live-text">${streamText}</span>
            <span class="sr-only">${streamText}</span></span>
          <button type="button" class="ghost small" onClick=${cycleTheme} aria-label=${"Theme: " + theme + " (press t)"} title=${"Theme: " + theme}>
            <${Icon} name=${theme === "light" ? "sun" : theme === "dark" ? "moon" : "auto"} /><span class="live-text">${theme}</span></button>
          <a class="api-link" href="api/openapi.json">API: <code>api/openapi.json</code></a>
          <a class="keys-link" href="#" onClick=${(e) => { e.preventDefault(); setHelp(true); }}>Keyboard shortcuts <kbd>?</kbd></a>
        </div>
      </header>
      <main class="main" ref=${main} tabindex="-1"><${Page} route=${route} /></main>
    </div>
    <${Modal} open=${help} onClose=${() => setHelp(false)} title="Keyboard shortcuts"
        footer=${html`<button type="button" onClick=${() => setHelp(false)}>Close</button>`}>
      <div class="help-keys">${SHORTCUTS.map(([k, v]) => html`<kbd>${k}</kbd><span>${v}</span>`)}</div>
    <//>
    <${DialogHost} />`;
}

render(html`<${App} />`, document.getElementById("app"));
