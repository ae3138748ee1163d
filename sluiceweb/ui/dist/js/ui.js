// Pieces every view uses: status badges, relative times, problems,
// progress bars, confirmations and toasts.
import { html, useState, useEffect, useRef } from "./vendor/htm-preact.js";
import { ago, when, isZero } from "./format.js";
import { useNow } from "./live.js";

export const STATUSES = ["pending", "processing", "completed", "failed", "cancelled"];

export function Badge({ status }) {
  return html`<span class=${"badge s-" + status}>${status}</span>`;
}

// Rel shows a time relative to now, the exact time on hover.
export function Rel({ t, empty = "–" }) {
  useNow(); // renders again every few seconds
  if (isZero(t)) return html`<span class="faint">${empty}</span>`;
  return html`<time datetime=${t} title=${when(t)}>${ago(t)}</time>`;
}

// Problem shows an API error: what the server said, and its code.
export function Problem({ error, what }) {
  if (!error) return null;
  return html`<div class="problem" role="alert">
    <strong>${what ? what + ": " : ""}${error.title || "Error"}${error.status ? " (" + error.status + ")" : ""}</strong>
    <div>${error.message}</div>
    ${error.code && html`<div class="faint mono">${error.code}${error.field ? " · " + error.field : ""}</div>`}
  </div>`;
}

// Unavailable says that the server has no such endpoint (404).
export function Unavailable({ what }) {
  return html`<div class="notice" role="status">
    <strong>${what} are not available from this server.</strong>
    <div>Its API does not serve them (the endpoint answered 404 Not Found).</div>
  </div>`;
}

export function ProgressBar({ progress, status, mini }) {
  if (!progress) return null;
  const p = Math.max(0, Math.min(100, progress.percent || 0));
  const label = `${Math.round(p)}%${progress.message ? ": " + progress.message : ""}`;
  const cls = "bar" + (mini ? " mini" : "") + (status === "completed" ? " done" : "");
  return html`<span class=${cls} role="progressbar" aria-valuemin="0" aria-valuemax="100"
    aria-valuenow=${Math.round(p)} aria-label=${"progress " + label} title=${label}><span style=${"width:" + p + "%"}></span></span>`;
}

export function Copy({ text, label = "Copy" }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 1200);
    } catch { /* clipboard refused: nothing to do */ }
  };
  return html`<button class="ghost copy" type="button" onClick=${copy} aria-label=${label + " " + text}>${done ? "Copied" : label}</button>`;
}

const ICONS = {
  search: "M11 19a8 8 0 1 1 0-16 8 8 0 0 1 0 16Zm10 2-4.35-4.35",
  info: "M12 22a10 10 0 1 1 0-20 10 10 0 0 1 0 20Zm0-6v-4m0-4h.01",
  sun: "M12 17a5 5 0 1 0 0-10 5 5 0 0 0 0 10ZM12 1v2m0 18v2M4.22 4.22l1.42 1.42m12.72 12.72 1.42 1.42M1 12h2m18 0h2M4.22 19.78l1.42-1.42M18.36 5.64l1.42-1.42",
  moon: "M21 12.79A9 9 0 1 1 11.21 3 7 7 0 0 0 21 12.79Z",
  auto: "M12 22a10 10 0 1 1 0-20v20Z",
  logo: "M3 9c3 0 3 3 6 3s3-3 6-3 3 3 6 3M3 16c3 0 3 3 6 3s3-3 6-3 3 3 6 3",
  lock: "M5 11h14v10H5zM8 11V7a4 4 0 0 1 8 0v4",
};

export function Icon({ name, size = 16 }) {
  return html`<svg width=${size} height=${size} viewBox="0 0 24 24" fill="none" stroke="currentColor"
    stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d=${ICONS[name]} /></svg>`;
}

// Dialogs: ask() opens a modal confirmation and resolves to the choice;
// toast() shows a short message. The host components are mounted once.
let showAsk = null;
let showToast = null;

export function ask(opts) {
  return new Promise((resolve) => (showAsk ? showAsk({ ...opts, resolve }) : resolve(window.confirm(opts.title))));
}

export function toast(text, bad = false) {
  if (showToast) showToast(text, bad);
}

export function Modal({ open, onClose, title, children, footer, wide }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return html`<dialog ref=${ref} class=${wide ? "wide" : ""} aria-labelledby="dlg-title"
      onClose=${() => open && onClose()} onCancel=${(e) => { e.preventDefault(); onClose(); }}>
    ${open && html`<div class="d-body"><h2 id="dlg-title">${title}</h2>${children}</div>
    <div class="d-foot">${footer}</div>`}
  </dialog>`;
}

export function DialogHost() {
  const [q, setQ] = useState(null);
  const [toasts, setToasts] = useState([]);
  useEffect(() => {
    showAsk = setQ;
    showToast = (text, bad) => {
      const id = Math.random();
      setToasts((t) => [...t, { id, text, bad }]);
      setTimeout(() => setToasts((t) => t.filter((x) => x.id !== id)), bad ? 8000 : 4000);
    };
    return () => { showAsk = null; showToast = null; };
  }, []);
  const done = (v) => { q.resolve(v); setQ(null); };
  return html`
    <${Modal} open=${!!q} onClose=${() => done(false)} title=${q && q.title}
      footer=${q && html`<button type="button" onClick=${() => done(false)}>Keep</button>
        <button type="button" class=${q.danger ? "danger solid" : "primary"} autofocus onClick=${() => done(true)}>${q.confirm}</button>`}>
      ${q && q.body && html`<p style="margin:0">${q.body}</p>`}
    <//>
    <div class="toasts" role="status" aria-live="polite">
      ${toasts.map((t) => html`<div key=${t.id} class=${"toast" + (t.bad ? " bad" : "")} title="Click to dismiss"
        onClick=${() => setToasts((all) => all.filter((x) => x.id !== t.id))}>${t.text}</div>`)}
    </div>`;
}
