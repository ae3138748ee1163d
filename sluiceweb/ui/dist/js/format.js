// Formatting: times, durations, numbers and JSON.
import { html } from "./vendor/htm-preact.js";

const nf = new Intl.NumberFormat();
export const num = (n) => nf.format(n || 0);

// isZero reports whether an API time is absent.
export const isZero = (t) => !t || t.startsWith("0001-01-01");

// ago says how far t is from now in words: "3m ago", "in 2h", "just now".
export function ago(t, now = Date.now()) {
  if (isZero(t)) return "";
  const ms = new Date(t).getTime() - now;
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 5) return ms > 1000 ? "in a moment" : "just now"; // within a second: clocks differ that much
  const text = span(s);
  return ms > 0 ? "in " + text : text + " ago";
}

// span says a number of seconds briefly: 45s, 3m, 2h 5m, 3d.
function span(s) {
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m";
  const h = Math.floor(m / 60);
  if (h < 24) return h + "h" + (m % 60 && h < 10 ? " " + (m % 60) + "m" : "");
  return Math.floor(h / 24) + "d";
}

const dtf = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
});
const tf = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const hm = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });

// when formats t in the reader's zone; clock gives the time of day only.
export const when = (t) => (isZero(t) ? "" : dtf.format(new Date(t)));
export const clock = (t) => (isZero(t) ? "" : tf.format(new Date(t)));
export const minute = (t) => (isZero(t) ? "" : hm.format(new Date(t)));

// duration formats milliseconds: 850 ms, 12.4 s, 3m 5s.
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
  if (ms < 1) return ms.toFixed(2) + " ms";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  const s = Math.round(ms / 1000);
  return Math.floor(s / 60) + "m " + (s % 60) + "s";
}

// between is the milliseconds from a to b, or null if either is absent.
export const between = (a, b) => (isZero(a) || isZero(b) ? null : new Date(b) - new Date(a));

// pct formats a rate as a percentage; null (no rate: nothing to rate) is "—".
export const pct = (x) => (x === null || x === undefined ? "—" : (x * 100).toFixed(x >= 0.999 || x === 0 ? 0 : 1) + "%");

export const shortId = (id) => (id ? id.slice(0, 8) + "…" + id.slice(-4) : "");

// The tokens of pretty-printed JSON: strings (keys when a colon follows),
// literals and numbers.
const tokens = /("(?:\\u[a-fA-F0-9]{4}|\\[^u]|[^\\"])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

// jsonView returns value pretty-printed with its tokens coloured. Very
// large values are shown plain, to keep the page quick.
export function jsonView(value) {
  let text;
  try {
    text = JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = "";
  if (text.length > 200000) return text;
  const out = [];
  let last = 0;
  for (const m of text.matchAll(tokens)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1] !== undefined && m[2] !== undefined) {
      out.push(html`<span class="j-key">${m[1]}</span>`, html`<span class="j-p">${m[2]}</span>`);
    } else if (m[1] !== undefined) {
      out.push(html`<span class="j-str">${m[1]}</span>`);
    } else if (m[3] !== undefined) {
      out.push(html`<span class="j-lit">${m[3]}</span>`);
    } else {
      out.push(html`<span class="j-num">${m[4]}</span>`);
    }
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}

// UUID matches a job ID.
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// toLocalInput and fromLocalInput convert between RFC 3339 and the value of
// an <input type="datetime-local">, in the reader's zone.
export function toLocalInput(t) {
  if (!t) return "";
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return "";
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}
export function fromLocalInput(v) {
  if (!v) return "";
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}
