// Workflows and batches: the lists, newest first, filtered by status and
// name (in the URL), each with its jobs' progress.
import { html, useState, useEffect } from "../vendor/htm-preact.js";
import { get, query } from "../api.js";
import { useResource } from "../live.js";
import { href, go } from "../router.js";
import { num, duration, between, isZero } from "../format.js";
import { Rel, Problem, Unavailable, Icon } from "../ui.js";
import { GroupBadge, StackBar, GROUP_TONE } from "./group.js";

const LIMIT = 50;

export function Groups({ kind, route }) {
  const p = route.params;
  const statuses = (p.get("statuses") || "").split(",").filter(Boolean);
  const name = p.get("name") || "";
  const cursor = p.get("cursor") || "";
  const set = (changes) => go(href("/" + kind, { statuses, name, ...changes, cursor: changes.cursor || "" }), true);
  const res = useResource(() => get(kind + query({ statuses, name, cursor, limit: LIMIT })), [route.hash],
    (n) => n === "job", 1500);
  const items = (res.data && res.data.items) || [];
  const choices = kind === "batches" ? ["open", "running", "completed", "failed"] : ["running", "completed", "failed"];
  const toggle = (s) => set({ statuses: statuses.includes(s) ? statuses.filter((x) => x !== s) : [...statuses, s] });
  const head = html`<div class="page-head">
    <div><h1>${kind === "workflows" ? "Workflows" : "Batches"}</h1>
      <div class="sub">${kind === "workflows" ? "Graphs of jobs: each task runs once the tasks it comes after have completed."
        : "Jobs watched as one, with callbacks enqueued when they are all done."}</div></div>
    <div class="seg" role="group" aria-label="Kind">
      <button type="button" aria-pressed=${kind === "workflows"} onClick=${() => go("#/workflows")}>Workflows</button>
      <button type="button" aria-pressed=${kind === "batches"} onClick=${() => go("#/batches")}>Batches</button>
    </div>
  </div>`;
  if (res.error && res.error.status === 404 && !res.data) return html`${head}<${Unavailable} what=${kind === "workflows" ? "Workflows" : "Batches"} />`;
  return html`${head}
    <section class="panel" aria-label=${kind}>
      <div class="filters"><div class="filter-row">
        <${NameSearch} name=${name} set=${set} />
        <div class="filter-row" role="group" aria-label="Statuses">
          ${choices.map((s) => html`<button type="button" class=${"chip " + GROUP_TONE[s]} aria-pressed=${statuses.includes(s)}
            onClick=${() => toggle(s)}>${s}</button>`)}
        </div>
      </div></div>
      <${Problem} error=${res.error} what=${"Listing " + kind} />
      ${res.data && !items.length ? html`<div class="empty">${statuses.length || name || cursor ? "None match." : kind === "workflows"
        ? "No workflows yet: enqueue one with Client.EnqueueWorkflow or POST api/workflows." : "No batches yet: enqueue one with Client.EnqueueBatch or POST api/batches."}</div>`
        : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Progress</th>
          <th scope="col" class="hide-sm">Created</th><th scope="col" class="hide-sm">Took</th><th scope="col">Outcome</th></tr></thead>
        <tbody data-testid="groups">${items.map((g) => html`<${Row} key=${g.id} kind=${kind} g=${g} />`)}</tbody></table></div>`}
      <div class="pager"><span class="muted">${res.data ? num(items.length) + " shown" : "Loading…"}</span>
        <div class="btns">
          ${cursor && html`<button type="button" class="small" onClick=${() => set({ cursor: "" })}>First page</button>`}
          <button type="button" class="small" disabled=${!(res.data && res.data.next_cursor)}
            onClick=${() => set({ cursor: res.data.next_cursor })}>Next page</button>
        </div></div>
    </section>`;
}

function Row({ kind, g }) {
  const total = Object.values(g.counts).reduce((s, n) => s + n, 0);
  const done = (g.counts.completed || 0) + (g.counts.failed || 0) + (g.counts.cancelled || 0);
  const to = "#/" + kind + "/" + g.id;
  return html`<tr class="row" tabindex="0" data-group=${g.id} onClick=${(e) => !e.target.closest("a") && go(to)}
      onKeyDown=${(e) => e.key === "Enter" && go(to)}>
    <td><a href=${to}><strong>${g.name || html`<span class="faint">unnamed</span>`}</strong></a></td>
    <td><${GroupBadge} status=${g.status} /></td>
    <td class="nowrap"><${StackBar} counts=${g.counts} total=${total} /> <span class="muted">${num(done)}/${num(total)}</span></td>
    <td class="hide-sm nowrap"><${Rel} t=${g.created_at} /></td>
    <td class="hide-sm nowrap">${isZero(g.finished_at) ? html`<span class="faint">–</span>` : duration(between(g.started_at || g.created_at, g.finished_at))}</td>
    <td>${g.outcome ? html`<span class=${"badge " + (g.outcome === "success" ? "s-completed" : "s-failed")}>${g.outcome}</span>` : html`<span class="faint">–</span>`}</td>
  </tr>`;
}

// NameSearch filters by name as the reader types, after a pause.
function NameSearch({ name, set }) {
  const [v, setV] = useState(name);
  useEffect(() => setV(name), [name]);
  useEffect(() => {
    if (v === name) return;
    const t = setTimeout(() => set({ name: v }), 300);
    return () => clearTimeout(t);
  }, [v]);
  return html`<label class="search"><${Icon} name="search" /><span class="sr-only">Name</span>
    <input type="search" placeholder="Name" value=${v} onInput=${(e) => setV(e.target.value)} /></label>`;
}
