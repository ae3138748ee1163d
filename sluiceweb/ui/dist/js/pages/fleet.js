// Queues and clients: where jobs wait, and the processes that work them.
import { html, useEffect, useState } from "../vendor/htm-preact.js";
import { get, request } from "../api.js";
import { useResource } from "../live.js";
import { href } from "../router.js";
import { num } from "../format.js";
import { STATUSES, Rel, Problem, toast } from "../ui.js";
import { Keys, KeyLimitsEditor, useKeys, limitsOf, keyWords } from "./keys.js";

// limits describes a queue's stored limits, empty when it has none.
function limits(q) {
  const parts = [];
  if (q.max_running) parts.push(`at most ${num(q.max_running)} running`);
  if (q.rate_limit) parts.push(`${num(q.rate_limit)} per ${q.rate_period_seconds}s`);
  return parts.join(", ");
}

// PauseButton pauses or resumes a queue for every client on the database.
function PauseButton({ q, done }) {
  const act = q.paused ? "resume" : "pause";
  const click = async () => {
    try {
      await request("POST", "queues/" + encodeURIComponent(q.name) + "/" + act);
      toast(`Queue ${q.name} ${q.paused ? "resumed" : "paused"}`);
    } catch (e) {
      toast(`Cannot ${act} ${q.name}: ${e.message}`, true);
    }
    done();
  };
  return html`<button type="button" class="btn small" data-queue=${q.name} data-action=${act} onClick=${click}
    title=${q.paused ? "Clients start its jobs again" : "No client starts its jobs; running ones finish"}>${q.paused ? "Resume" : "Pause"}</button>`;
}

export function Queues() {
  const res = useResource(() => get("queues"), [], () => true, 1500);
  const items = (res.data && res.data.items) || [];
  const keys = useKeys(items.map((q) => q.name));
  const [edit, setEdit] = useState(null);
  return html`
    <div class="page-head"><div><h1>Queues</h1>
      <div class="sub">Each queue's jobs by status, the clients online that work it, its flow control, and the keys of its jobs.</div></div></div>
    <${Problem} error=${res.error} what="Listing queues" />
    <section class="panel" aria-label="Queues">
      ${res.data && !items.length ? html`<div class="empty">No queue has jobs or workers.</div>` : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Queue</th>${STATUSES.map((s) => html`<th scope="col" class=${"num" + (s === "completed" || s === "cancelled" ? " hide-sm" : "")}>${s}</th>`)}
          <th scope="col" class="num">Clients</th><th scope="col" class="num">Workers</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>${items.map((q) => html`<tr>
          <td><a href=${href("/jobs", { queues: q.name })}><strong>${q.name}</strong></a></td>
          ${STATUSES.map((s) => html`<td class=${"num" + (s === "completed" || s === "cancelled" ? " hide-sm" : "")}>${q.counts[s]
            ? html`<a class=${"s-" + s} style="color:var(--c)" href=${href("/jobs", { queues: q.name, statuses: s })}>${num(q.counts[s])}</a>`
            : html`<span class="faint">0</span>`}</td>`)}
          <td class="num">${q.clients ? num(q.clients) : html`<span class=${q.counts.pending ? "s-failed" : "faint"} style="color:var(--c)"
            title=${q.counts.pending ? "jobs wait and no client online works this queue" : ""}>0</span>`}</td>
          <td class="num">${num(q.workers)}</td>
          <td>${q.paused ? html`<span class="tag s-failed" style="color:var(--c)" data-paused=${q.name}>paused</span>` : html`<span class="faint">running</span>`}
            ${limits(q) && html` <span class="muted" style="font-size:12.5px">${limits(q)}</span>`}
            ${keyWords(limitsOf(keys, q.name)?.key_limits) && html`<div class="muted" style="font-size:12.5px">${keyWords(limitsOf(keys, q.name).key_limits)}</div>`}</td>
          <td class="nowrap" style="text-align:right"><${PauseButton} q=${q} done=${res.reload} />
            <button type="button" class="btn small" data-edit-keys=${q.name} onClick=${() => setEdit(q.name)}
              title="The limits of each key of its jobs, their sequence and fair sharing">Key limits</button></td>
        </tr>`)}</tbody></table></div>`}
    </section>
    ${res.data && html`<${Keys} res=${keys} />`}
    ${edit !== null && html`<${KeyLimitsEditor} queue=${edit} limits=${limitsOf(keys, edit)} close=${() => setEdit(null)}
      saved=${() => { setEdit(null); keys.reload(); }} />`}`;
}

export function Clients() {
  const res = useResource(() => get("clients"), [], () => false);
  // Clients record themselves on a timer, which no job event reports.
  useEffect(() => {
    const t = setInterval(res.reload, 10000);
    return () => clearInterval(t);
  }, []);
  const items = (res.data && res.data.items) || [];
  const online = items.filter((c) => c.online).length;
  return html`
    <div class="page-head"><div><h1>Clients</h1>
      <div class="sub">${res.data ? `${online} online of ${items.length} recorded` : "The processes working jobs, as they record themselves."}</div></div></div>
    <${Problem} error=${res.error} what="Listing clients" />
    <section class="panel" aria-label="Clients">
      ${res.data && !items.length ? html`<div class="empty">No client has recorded itself: none has been started.</div>` : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Client</th><th scope="col">Host</th><th scope="col" class="num hide-sm">PID</th>
          <th scope="col">Queues (workers)</th><th scope="col" class="hide-sm">Topics</th><th scope="col" class="hide-sm">Started</th><th scope="col">Seen</th></tr></thead>
        <tbody>${items.map((c) => html`<tr>
          <td><span class=${"badge " + (c.online ? "s-completed" : "s-cancelled")}>${c.online ? "online" : "gone"}</span>
            <div class="id faint" title=${c.id}>${c.id}</div></td>
          <td>${c.host}</td>
          <td class="num hide-sm">${c.pid}</td>
          <td>${c.queues.map((q) => html`<span class="tag">${q}${c.max_workers && c.max_workers[q] ? " · " + c.max_workers[q] : ""}</span>`)}</td>
          <td class="hide-sm">${c.topics.map((t) => html`<span class="tag">${t}</span>`)}</td>
          <td class="hide-sm nowrap"><${Rel} t=${c.started_at} /></td>
          <td class="nowrap"><${Rel} t=${c.seen_at} /></td>
        </tr>`)}</tbody></table></div>`}
    </section>`;
}
