// One workflow or batch: its counts, times and outcome, its tasks drawn as
// a graph (a workflow) or its jobs listed (a batch), its callbacks, and
// cancel, retry and close. Live: a change of one of its jobs recolours the
// job at once, and the group is read again for its counts.
import { html, useMemo, useRef, useEffect, useState } from "../vendor/htm-preact.js";
import { get, request } from "../api.js";
import { useResource, useEvents } from "../live.js";
import { go } from "../router.js";
import { num, when, duration, between, isZero, shortId } from "../format.js";
import { STATUSES, Badge, Rel, Problem, Copy, ask, toast } from "../ui.js";
import { layout, Graph, statusOf } from "../graph.js";

// GROUP_TONE colours a group's status as the job status it is like.
export const GROUP_TONE = { open: "s-pending", running: "s-processing", completed: "s-completed", failed: "s-failed" };

export function GroupBadge({ status }) {
  return html`<span class=${"badge " + (GROUP_TONE[status] || "")} data-testid="group-status">${status}</span>`;
}

// MAX_DRAWN is the most tasks drawn, and MAX_LISTED the most jobs listed:
// beyond, the page stays quick and says how many it leaves out.
const MAX_DRAWN = 1500;
const MAX_LISTED = 500;

// SHOWN are the statuses a group's jobs are shown with: waiting apart
// from pending.
const SHOWN = ["waiting", ...STATUSES];

const WORDS = {
  workflows: { one: "workflow", title: "Workflow", jobs: "tasks" },
  batches: { one: "batch", title: "Batch", jobs: "jobs" },
};

export function Group({ kind, id }) {
  const words = WORDS[kind];
  // ids are the IDs of the group's jobs and its callbacks' jobs: the
  // events that concern the page.
  const ids = useRef(new Set());
  // where maps a job's ID to its place in the group's jobs.
  const where = useRef(new Map());
  // A group is read again at most every 300 ms, plus 1 ms per job: the
  // events recolour its jobs at once, and a large group's answer is
  // large.
  const res = useResource(() => get(kind + "/" + encodeURIComponent(id)), [kind, id],
    (name, d) => name === "job" && d.job && ids.current.has(d.job.id), 300 + where.current.size);
  // The jobs of a group change only when jobs are added to a batch; its
  // callbacks' IDs when it is retried. Its statuses change all the time.
  const read = res.data;
  const shape = read ? read.jobs.length + ":" + (read.jobs[0] || {}).id : "";
  const callbackIDs = read ? read.callbacks.map((c) => c.job_id).join() : "";
  useEffect(() => {
    if (!read) return;
    ids.current = new Set([...read.jobs.map((j) => j.id), ...read.callbacks.map((c) => c.job_id)]);
    where.current = new Map(read.jobs.map((j, i) => [j.id, i]));
  }, [shape, callbackIDs]);
  // A job's change recolours it at once, until the read the event also
  // asks for brings it with the counts: seen holds the changes since the
  // last read.
  const seen = useRef(new Map());
  const seenOf = useRef(null);
  if (seenOf.current !== read) {
    seenOf.current = read;
    seen.current = new Map();
  }
  const [, redraw] = useState(0);
  useEvents((name, d) => {
    if (name !== "job" || !d.job || !read || !where.current.has(d.job.id)) return;
    seen.current.set(d.job.id, { status: d.job.status, attempt: d.job.attempt });
    redraw((n) => n + 1);
  });
  const g = read && seen.current.size ? { ...read, jobs: read.jobs.map((j) => {
    const c = seen.current.get(j.id);
    return c ? { ...j, ...c, waiting: c.status === "pending" && j.waiting } : j;
  }) } : read;
  const drawn = useMemo(() => (g && kind === "workflows" && g.jobs.length <= MAX_DRAWN ? layout(g.jobs) : null), [shape]);

  if (res.error && !g) {
    return html`<${Back} kind=${kind} /><${Problem} error=${res.error} what=${res.error.status === 404 ? "No such " + words.one : "Loading the " + words.one} />`;
  }
  if (!g) return html`<${Back} kind=${kind} /><div class="empty">Loading…</div>`;
  return html`
    <${Back} kind=${kind} />
    <div class="page-head">
      <div>
        <div class="job-title"><${GroupBadge} status=${g.status} /><h1>${g.name || html`<span class="faint">unnamed ${words.one}</span>`}</h1></div>
        <div class="sub">${words.title} <span class="id">${g.id}</span> <${Copy} text=${g.id} label="Copy ID" /></div>
      </div>
      <${Actions} kind=${kind} g=${g} reload=${res.reload} />
    </div>
    <div class="stack">
      <${Problem} error=${res.error} what="Refreshing" />
      <${Summary} g=${g} words=${words} />
      ${kind === "workflows" ? html`<section class="panel" aria-label="Graph">
        <div class="panel-head"><h2>Tasks</h2><${Legend} /></div>
        ${drawn ? html`<div class="graph-wrap"><${Graph} g=${drawn} jobs=${g.jobs} /></div>`
          : html`<div class="empty">${num(g.jobs.length)} tasks are more than the ${num(MAX_DRAWN)} the page draws; they are listed below.</div>`}
      </section>` : null}
      ${(kind === "batches" || !drawn) && html`<${JobTable} jobs=${g.jobs} words=${words} />`}
      <${Callbacks} g=${g} />
    </div>`;
}

function Back({ kind }) {
  return html`<div style="margin-bottom:10px"><a href=${"#/" + kind} class="muted">← ${WORDS[kind].title === "Batch" ? "Batches" : "Workflows"}</a></div>`;
}

function Legend() {
  return html`<div class="legend" aria-label="Colours">
    ${SHOWN.map((s) => html`<span class=${"s-" + s}><i style="background:var(--b);border:1.5px solid var(--c)"></i>${s}</span>`)}
  </div>`;
}

// Summary is the group's jobs by status (counted from its jobs, as their
// events change them, waiting apart), its times and its outcome.
function Summary({ g, words }) {
  const counts = {};
  for (const j of g.jobs) counts[statusOf(j)] = (counts[statusOf(j)] || 0) + 1;
  const total = g.jobs.length;
  const done = (counts.completed || 0) + (counts.failed || 0) + (counts.cancelled || 0);
  return html`<section class="panel" aria-label="Summary"><div class="panel-body group-summary">
    <div>
      <div class="muted">${num(done)} of ${num(total)} ${words.jobs} done</div>
      <${StackBar} counts=${counts} total=${total} wide=${true} />
      <div class="counts" data-testid="group-counts">${SHOWN.filter((s) => counts[s]).map((s) =>
        html`<span class=${"count s-" + s}><b>${num(counts[s])}</b> ${s} </span>`)}</div>
    </div>
    <dl class="facts">
      <dt>Created</dt><dd>${when(g.created_at)} <span class="faint">(<${Rel} t=${g.created_at} />)</span></dd>
      <dt>Started</dt><dd>${isZero(g.started_at) ? html`<span class="faint">not yet</span>` : html`<${Rel} t=${g.started_at} />`}</dd>
      <dt>Finished</dt><dd>${isZero(g.finished_at) ? html`<span class="faint">${g.status === "open" ? "open" : "not yet"}</span>`
        : html`<${Rel} t=${g.finished_at} /> <span class="faint">· took ${duration(between(g.started_at || g.created_at, g.finished_at))}</span>`}</dd>
      <dt>Outcome</dt><dd data-testid="group-outcome">${g.outcome ? html`<span class=${"badge " + (g.outcome === "success" ? "s-completed" : "s-failed")}>${g.outcome}</span>
        <span class="faint"> callbacks enqueued <${Rel} t=${g.settled_at} /></span>` : html`<span class="faint">${g.status === "open" ? "when closed and done" : "when done"}</span>`}</dd>
    </dl>
  </div></section>`;
}

// StackBar shows counts by status as one bar.
export function StackBar({ counts, total, wide }) {
  const order = ["completed", "failed", "cancelled", "processing", "pending", "waiting"];
  const n = total || order.reduce((s, k) => s + (counts[k] || 0), 0);
  return html`<span class=${"stackbar" + (wide ? " wide" : "")} role="img"
      aria-label=${order.filter((s) => counts[s]).map((s) => `${counts[s]} ${s}`).join(", ") || "no jobs"}>
    ${n > 0 && order.map((s) => counts[s] ? html`<span class=${"s-" + s} style=${`width:${(100 * counts[s]) / n}%`}></span>` : null)}
  </span>`;
}

function Actions({ kind, g, reload }) {
  const one = WORDS[kind].one;
  const path = kind + "/" + encodeURIComponent(g.id) + "/";
  const live = (g.counts.pending || 0) + (g.counts.processing || 0);
  const run = async (op, label, why, danger) => {
    if (!(await ask({ title: `${label} this ${one}?`, body: why, confirm: label, danger }))) return;
    try {
      const out = await request("POST", path + op);
      toast(op === "close" ? `The ${one} was closed.` : `${num(out.count)} job${out.count === 1 ? "" : "s"} ${op === "cancel" ? "cancelled" : "retried"}.`);
    } catch (e) {
      toast(e.message, true);
    }
    reload();
  };
  return html`<div class="actions" role="group" aria-label="Actions">
    ${g.status === "open" && html`<button type="button" data-action="close" onClick=${() => run("close", "Close",
      "It takes no more jobs, and is done, with its callbacks enqueued, once none of its jobs waits or runs.")}>Close</button>`}
    ${(g.counts.failed || g.counts.cancelled) > 0 && html`<button type="button" class="primary" data-action="retry" onClick=${() => run("retry", "Retry",
      `Its failed and cancelled ${WORDS[kind].jobs} run again with fresh retries${kind === "workflows" ? ", and the graph goes on from there" : ""}; its callbacks are enqueued again once it is done.`)}>Retry</button>`}
    ${live > 0 && html`<button type="button" class="danger" data-action="cancel" onClick=${() => run("cancel", "Cancel",
      `Its pending and waiting ${WORDS[kind].jobs} will not run; running ones are told to stop. Its callbacks on failure and on completion are enqueued.`, true)}>Cancel</button>`}
  </div>`;
}

// JobTable lists a batch's jobs, or the tasks of a workflow too large to
// draw.
function JobTable({ jobs, words }) {
  const shown = jobs.slice(0, MAX_LISTED);
  return html`<section class="panel" aria-label=${words.jobs}>
    <div class="panel-head"><h2>${words.jobs[0].toUpperCase() + words.jobs.slice(1)}</h2>
      <span class="muted">${jobs.length > shown.length ? `the first ${num(shown.length)} of ${num(jobs.length)}` : num(jobs.length)}</span></div>
    ${jobs.length === 0 ? html`<div class="empty">No ${words.jobs} yet.</div>` : html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">Status</th>${words.jobs === "tasks" && html`<th scope="col">Task</th>`}<th scope="col">Job</th>
        <th scope="col">Topic</th><th scope="col" class="num">Attempt</th><th scope="col" class="hide-sm">Finished</th></tr></thead>
      <tbody data-testid="group-jobs">${shown.map((j) => html`<tr data-job=${j.id}>
        <td><${Badge} status=${statusOf(j)} /></td>
        ${words.jobs === "tasks" && html`<td>${j.task}</td>`}
        <td><a class="mono" href=${"#/jobs/" + j.id}>${shortId(j.id)}</a></td>
        <td>${j.topic}</td><td class="num">${j.attempt}</td>
        <td class="hide-sm nowrap"><${Rel} t=${j.finalized_at} /></td>
      </tr>`)}</tbody></table></div>`}
  </section>`;
}

const ON = { success: "On success", failure: "On failure", complete: "On completion" };

// Callbacks lists the group's callbacks: each one's job once enqueued,
// else whether it waits for the outcome or the outcome passed it by.
function Callbacks({ g }) {
  if (!g.callbacks.length) return null;
  const passed = (cb) => g.outcome && cb.on !== "complete" && cb.on !== g.outcome;
  return html`<section class="panel" aria-label="Callbacks">
    <div class="panel-head"><h2>Callbacks</h2></div>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">When</th><th scope="col">Topic</th><th scope="col">Job</th></tr></thead>
      <tbody data-testid="callbacks">${g.callbacks.map((cb) => html`<tr data-on=${cb.on}>
        <td>${ON[cb.on]}</td><td>${cb.topic}</td>
        <td>${cb.job ? html`<${Badge} status=${cb.job.status} /> <a class="mono" href=${"#/jobs/" + cb.job.id}>${shortId(cb.job.id)}</a>`
          : html`<span class="faint">${passed(cb) ? `not enqueued: the outcome was ${g.outcome}` : "enqueued when it is done"}</span>`}</td>
      </tr>`)}</tbody></table></div>
  </section>`;
}

// GroupOf opens the workflow or batch of an ID, whichever it is (a
// callback's job knows the ID of its group, not its kind).
export function GroupOf({ id }) {
  const res = useResource(async () => {
    try {
      await get("workflows/" + encodeURIComponent(id));
      return "workflows";
    } catch (e) {
      if (e.status !== 404) throw e;
      await get("batches/" + encodeURIComponent(id));
      return "batches";
    }
  }, [id]);
  useEffect(() => {
    if (res.data) go("#/" + res.data + "/" + id, true);
  }, [res.data]);
  return res.error ? html`<${Problem} error=${res.error} what="No such workflow or batch" />` : html`<div class="empty">Loading…</div>`;
}
