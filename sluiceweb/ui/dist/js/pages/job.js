// One job: why it is where it is, its progress, payload, result,
// attempts with their errors and stacks, its logs, and the actions on it.
import { html, useEffect } from "../vendor/htm-preact.js";
import { get, jobAction } from "../api.js";
import { useResource, useEvents } from "../live.js";
import { go } from "../router.js";
import { when, jsonView, duration, between, isZero, clock, shortId } from "../format.js";
import { Badge, Rel, Problem, ProgressBar, Copy, Icon, ask, toast } from "../ui.js";
import { ACTIONS } from "../actions.js";
import { lastList } from "./jobs.js";

// explainTone colours the explanation by its reason.
const explainTone = {
  finished: "", scheduled: "s-pending", backoff: "s-pending", no_worker: "s-failed", queue_busy: "s-pending",
  free_worker: "s-processing", running: "s-processing", holder_silent: "s-failed", waiting: "s-pending", paused: "s-pending",
  queue_limit: "s-pending", sequence: "s-pending", key_limit: "s-pending", key_rate: "s-pending", fair_share: "s-pending",
};

export function Job({ id }) {
  const res = useResource(async () => {
    const [job, explain] = await Promise.all([
      get("jobs/" + id),
      get("jobs/" + id + "/explain").catch((e) => ({ error: e })),
    ]);
    return { job, explain };
  }, [id], (name, d) => name === "job" && d.job && d.job.id === id, 250);

  // Records logged by a job this server runs arrive as "log" events: add
  // them at once rather than refetching the job.
  useEvents((name, d) => {
    if (name !== "log" || d.job_id !== id || !res.data || !d.record) return;
    const rec = { attempt: d.attempt, ...d.record };
    const logs = res.data.job.logs || [];
    if (logs.some((r) => r.time === rec.time && (r.msg || r.message) === (rec.msg || rec.message))) return;
    res.setData({ ...res.data, job: { ...res.data.job, logs: [...logs, rec] } });
  });
  // While the job runs or waits, it is also read every few seconds: a
  // worker in another process may log without changing anything the event
  // stream reports, and what holds a waiting job (Explain) changes with
  // other jobs.
  const running = res.data && (res.data.job.status === "processing" || res.data.job.status === "pending");
  useEffect(() => {
    if (!running) return;
    const t = setInterval(res.reload, 3000);
    return () => clearInterval(t);
  }, [running]);

  if (res.error && !res.data) {
    return html`<${Back} /><${Problem} error=${res.error} what=${res.error.status === 404 ? "No such job" : "Loading the job"} />`;
  }
  if (!res.data) return html`<${Back} /><div class="empty">Loading…</div>`;
  const { job, explain } = res.data;
  return html`
    <${Back} />
    <div class="page-head">
      <div>
        <div class="job-title"><${Badge} status=${job.status} /><h1>${job.topic}</h1></div>
        <div class="sub"><span class="id">${job.id}</span> <${Copy} text=${job.id} label="Copy ID" /></div>
      </div>
      <${Actions} job=${job} reload=${res.reload} />
    </div>
    <div class="stack">
      <${Problem} error=${res.error} what="Refreshing" />
      <${Explain} explain=${explain} />
      ${job.progress && html`<${Progress} job=${job} />`}
      <div class="grid-detail">
        <div class="stack">
          <${Payload} payload=${job.payload} />
          ${job.result && html`<${Panel} title="Result"><pre class="code">${jsonView(job.result)}</pre><//>`}
          <${Attempts} job=${job} />
          <${Logs} job=${job} />
        </div>
        <${Facts} job=${job} />
      </div>
    </div>`;
}

function Back() {
  return html`<div style="margin-bottom:10px"><a href=${lastList} class="muted">← Jobs</a> <kbd aria-hidden="true">Esc</kbd></div>`;
}

function Panel({ title, right, children }) {
  return html`<section class="panel" aria-label=${title}>
    <div class="panel-head"><h2>${title}</h2>${right}</div>
    <div class="panel-body">${children}</div>
  </section>`;
}

function Actions({ job, reload }) {
  const run = async (a) => {
    const ok = await ask({ title: `${a.label} this ${job.topic} job?`, body: a.why, confirm: a.label, danger: a.danger });
    if (!ok) return;
    try {
      await jobAction(job.id, a.name);
      toast(`The job was ${a.done}.`);
      if (a.name === "delete") go(lastList);
      else reload();
    } catch (e) {
      toast(e.message, true);
      reload();
    }
  };
  return html`<div class="actions" role="group" aria-label="Actions">
    ${ACTIONS.filter((a) => a.applies(job)).map((a) => html`<button type="button" data-action=${a.name} class=${a.danger ? "danger" : a.name === "requeue" ? "primary" : ""}
      onClick=${() => run(a)}>${a.label}</button>`)}
  </div>`;
}

function Explain({ explain }) {
  if (!explain || explain.error) return null;
  return html`<div class=${"explain " + (explainTone[explain.reason] || "")} role="status" aria-live="polite">
    <${Icon} name="info" />
    <div><strong data-testid="explain-reason">${explain.reason.replace("_", " ")}</strong> · <span data-testid="explain">${explain.text}</span>
      ${explain.ahead && html`<div class="explain-links">The job ahead in the sequence of key${" "}
        <a class="mono" href=${"#/jobs?keys=" + encodeURIComponent(explain.key)}>${explain.key}</a>:${" "}
        <a class="mono" data-testid="explain-ahead" href=${"#/jobs/" + encodeURIComponent(explain.ahead)}>${shortId(explain.ahead)}</a></div>`}</div>
  </div>`;
}

function Progress({ job }) {
  const p = job.progress;
  return html`<section class="panel" aria-label="Progress"><div class="panel-body">
    <div style="display:flex;justify-content:space-between;gap:12px;align-items:baseline;flex-wrap:wrap">
      <div>${job.status !== "processing" && html`<span class="muted">Last reported progress: </span>`}
        <strong style="font-size:18px" data-testid="progress-percent">${Math.round(p.percent)}%</strong>
        <span class="muted" data-testid="progress-message"> ${p.message}</span></div>
      <span class="faint" style="font-size:12.5px">attempt ${p.attempt} · reported <${Rel} t=${p.at} /></span>
    </div>
    <div class="progress-line"><${ProgressBar} progress=${p} status=${job.status} /></div>
  </div></section>`;
}

// Attempts is the job's attempts, newest first, each with its client,
// times, and error and stack when it failed.
function Attempts({ job }) {
  const hist = [...(job.history || [])].reverse();
  return html`<${Panel} title="Attempts" right=${html`<span class="muted">${job.attempt} of ${job.max_retries + 1}</span>`}>
    ${hist.length === 0 ? html`<div class="muted">Not run yet.</div>` : html`<ol class="timeline">
      ${hist.map((a, i) => {
        const open = isZero(a.ended_at);
        const tone = a.error ? "s-failed" : open && job.status === "processing" ? "s-processing"
          : i === 0 && job.status === "cancelled" ? "s-cancelled" : "s-completed";
        const outcome = a.error ? "failed" : open ? (job.status === "processing" ? "running" : "") : i === 0 ? job.status : "ended";
        return html`<li class=${tone}><span class="pin" style="border-color:var(--c)"></span>
          <div class="head"><strong>Attempt ${a.attempt}</strong><span style="color:var(--c)">${outcome}</span>
            <span class="muted" title=${when(a.started_at)}>${when(a.started_at)}</span>
            ${!open && html`<span class="faint">took ${duration(between(a.started_at, a.ended_at))}</span>`}
            ${a.client_id && html`<span class="faint mono">${a.client_id}</span>`}</div>
          ${a.error && html`<div class="errmsg">${a.error}</div>`}
          ${a.trace && html`<details class="trace"><summary>Stack trace</summary><pre>${a.trace}</pre></details>`}
        </li>`;
      })}
    </ol>`}
  <//>`;
}

const levelName = (l) => (typeof l === "number" ? (l >= 8 ? "ERROR" : l >= 4 ? "WARN" : l >= 0 ? "INFO" : "DEBUG") : String(l || "INFO").split(/[+-]/)[0]);

function Logs({ job }) {
  const logs = job.logs || [];
  const dropped = job.logs_dropped || 0;
  return html`<${Panel} title="Logs" right=${html`<span class="muted">${logs.length} record${logs.length === 1 ? "" : "s"}${dropped ? `, ${dropped} older dropped` : ""}</span>`}>
    ${logs.length === 0 ? html`<div class="muted">Nothing logged${job.status === "processing" ? " yet" : ""}.</div>` : html`<div class="logs table-wrap"><table>
      <thead><tr><th scope="col">Time</th><th scope="col">Level</th><th scope="col" class="hide-sm">Attempt</th><th scope="col">Message</th></tr></thead>
      <tbody data-testid="logs">${logs.map((r) => {
        const lvl = levelName(r.level);
        const attrs = r.attrs && typeof r.attrs === "object" ? Object.entries(r.attrs) : [];
        return html`<tr><td class="nowrap mono" title=${when(r.time)}>${clock(r.time)}</td>
          <td><span class=${"lvl lvl-" + lvl}>${lvl}</span></td><td class="hide-sm num">${r.attempt}</td>
          <td>${r.msg || r.message} ${attrs.map(([k, v]) => html`<span class="attr"><b>${k}=</b>${typeof v === "string" ? v : JSON.stringify(v)}</span>`)}</td></tr>`;
      })}</tbody></table></div>`}
  <//>`;
}

// SEQUENCE says what each sequence policy does.
const SEQUENCE = {
  hold: "its key's jobs run one at a time, in order, held behind one that fails",
  continue: "its key's jobs run one at a time, in order, going on past one that fails",
};

function Facts({ job }) {
  const rows = [
    ["Queue", html`<a href=${"#/jobs?queues=" + encodeURIComponent(job.queue)}>${job.queue}</a>`],
    ["Priority", job.priority],
    ["Attempt", `${job.attempt} of ${job.max_retries + 1}`],
    ["Created", html`${when(job.created_at)} <span class="faint">(<${Rel} t=${job.created_at} />)</span>`],
    ["Run at", html`${when(job.run_at)} <span class="faint">(<${Rel} t=${job.run_at} />)</span>`],
    !isZero(job.attempted_at) && ["Last started", html`${when(job.attempted_at)} <span class="faint">(<${Rel} t=${job.attempted_at} />)</span>`],
    job.attempted_by && job.attempted_by !== job.locked_by && ["Last run by", html`<span class="mono">${job.attempted_by}</span>`],
    !isZero(job.finalized_at) && ["Finished", html`${when(job.finalized_at)} <span class="faint">(<${Rel} t=${job.finalized_at} />)</span>`],
    !isZero(job.finalized_at) && !isZero(job.created_at) && ["Total time", duration(between(job.created_at, job.finalized_at))],
    job.locked_by && ["Held by", html`<span class="mono">${job.locked_by}</span>`],
    !isZero(job.locked_until) && ["Lease until", html`<${Rel} t=${job.locked_until} />`],
    job.key && ["Key", html`<a class="mono" data-testid="job-key" href=${"#/jobs?keys=" + encodeURIComponent(job.key)}>${job.key}</a>`],
    job.sequence && ["Sequence", html`<span data-testid="job-sequence">${job.sequence}</span>${" "}
      <span class="faint">${SEQUENCE[job.sequence] ? "· " + SEQUENCE[job.sequence] : ""}</span>`],
    job.unique_key && ["Unique key", html`<a class="mono" href=${"#/jobs?unique_key=" + encodeURIComponent(job.unique_key)}>${job.unique_key}</a>`],
    job.tags && job.tags.length && ["Tags", job.tags.map((t) => html`<a class="tag" href=${"#/jobs?tags=" + encodeURIComponent(t)}>${t}</a>`)],
    job.group_id && [job.task ? "Workflow" : "Batch", html`<a data-testid="job-group" href=${"#/" + (job.task ? "workflows/" : "batches/") + encodeURIComponent(job.group_id)}>${job.task
      ? html`task <strong>${job.task}</strong>` : html`<span class="mono">${shortId(job.group_id)}</span>`}</a>`],
    job.callback_of && ["Callback of", html`<a class="mono" data-testid="job-callback-of" href=${"#/groups/" + encodeURIComponent(job.callback_of)}>${shortId(job.callback_of)}</a>`],
    job.depends_on && job.depends_on.length && [job.waiting ? "Waits for" : "Depended on",
      html`<span data-testid="depends-on">${job.depends_on.map((id) => html`<a class="mono" href=${"#/jobs/" + encodeURIComponent(id)}>${id.slice(0, 8)}…${id.slice(-4)}</a> `)}</span>`],
  ].filter(Boolean);
  return html`<div class="stack">
    <${Panel} title="Details"><dl class="facts">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl><//>
    ${job.metadata && html`<${Panel} title="Metadata"><pre class="code">${jsonView(job.metadata)}</pre><//>`}
  </div>`;
}

// sealedKey returns the ID of the key that encrypted a payload stored
// sealed ({"sluice_sealed": "v1", "key": ..., "data": ...}), or "".
export function sealedKey(payload) {
  const p = payload;
  return p && typeof p === "object" && !Array.isArray(p) && p.sluice_sealed === "v1" && typeof p.key === "string" &&
    Object.keys(p).length === 3 ? p.key : "";
}

// Payload shows a job's payload, or that it is encrypted and with which
// key: the dashboard never has the key, and shows no ciphertext.
function Payload({ payload }) {
  const key = sealedKey(payload);
  if (!key) return html`<${Panel} title="Payload"><pre class="code">${jsonView(payload)}</pre><//>`;
  return html`<${Panel} title="Payload">
    <p class="sealed" data-sealed=${key}><${Icon} name="lock" /><span>Encrypted with key <code>${key}</code>. Only the
      workers that hold the key, and callers who send it, read it; the dashboard never does.</span></p>
  <//>`;
}
