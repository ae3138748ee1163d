// Jobs: the list, its filters (in the URL), paging, selection and actions
// on a selection or on everything the filter selects.
import { html, useState, useRef, useEffect } from "../vendor/htm-preact.js";
import { get, query, request, actOnIds } from "../api.js";
import { useResource } from "../live.js";
import { href, go } from "../router.js";
import { num, UUID, isZero, shortId, toLocalInput, fromLocalInput } from "../format.js";
import { STATUSES, Badge, Rel, Problem, ProgressBar, Icon, ask, toast } from "../ui.js";
import { ACTIONS } from "../actions.js";
import { EnqueueForm } from "./enqueue.js";

// FILTERS are the URL parameters that select jobs, as the API names them.
const LISTS = ["statuses", "topics", "queues", "tags", "keys"];
const SINGLES = ["unique_key", "created_from", "created_before", "run_at_from", "run_at_before"];

// lastList is the jobs list last shown, for the way back from a job.
export let lastList = "#/jobs";

// PAYLOAD starts the parameters that filter by payload values, as the API
// names them: payload.<path>=<value>.
const PAYLOAD = "payload.";

// filterOf reads the filter of the route's parameters; f.payload maps
// paths to values, as text.
function filterOf(params) {
  const f = { payload: {} };
  for (const k of LISTS) f[k] = (params.get(k) || "").split(",").filter(Boolean);
  for (const k of SINGLES) f[k] = params.get(k) || "";
  for (const [k, v] of params) if (k.startsWith(PAYLOAD)) f.payload[k.slice(PAYLOAD.length)] = v;
  return f;
}

const hasFilter = (f) => LISTS.some((k) => f[k].length) || SINGLES.some((k) => f[k]) || Object.keys(f.payload).length > 0;

// params returns f as the list's query parameters.
function params(f) {
  const q = {};
  for (const k of [...LISTS, ...SINGLES]) q[k] = f[k];
  for (const [path, v] of Object.entries(f.payload)) q[PAYLOAD + path] = v;
  return q;
}

// payloadValue is the JSON value of a payload condition's text, as the
// API reads a query's (sluice.PayloadValue): a JSON string, number, true,
// false or null as itself, anything else as a string.
function payloadValue(text) {
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== "object") return text.trim() === text ? v : text;
  } catch (e) { /* text */ }
  return text;
}

// payloadText shows f's payload conditions as the field takes them:
// path = value, comma-separated.
const payloadText = (payload) => Object.entries(payload).map(([k, v]) => `${k} = ${v}`).join(", ");

// parsePayload reads the field's conditions, or throws saying what is
// malformed (the API says more of a path or value it refuses).
function parsePayload(text) {
  const out = {};
  for (const part of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const i = part.indexOf("=");
    if (i <= 0) throw new Error(`payload: "${part}" is not path = value`);
    out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

export function Jobs({ route }) {
  const p = route.params;
  const f = filterOf(p);
  const order = p.get("order") === "oldest" ? "oldest" : "newest";
  const limit = Number(p.get("limit")) || 50;
  const offset = Number(p.get("offset")) || 0;
  const cursor = p.get("cursor") || "";
  const at = cursor ? Number(p.get("at")) || 0 : offset;
  lastList = location.hash || "#/jobs";
  const key = location.hash;
  const set = (changes, replace = false) => {
    const next = { ...Object.fromEntries(p), ...changes };
    if (changes.payload) {
      for (const k of Object.keys(next)) if (k.startsWith(PAYLOAD)) delete next[k];
      for (const [path, v] of Object.entries(changes.payload)) next[PAYLOAD + path] = v;
      delete next.payload;
    }
    if (!("offset" in changes) && !("cursor" in changes)) { delete next.offset; delete next.cursor; delete next.at; }
    go(href("/jobs", next), replace);
  };

  const list = useResource(() => get("jobs" + query({ ...params(f), order, limit, ...(cursor ? { cursor } : { offset }) })),
    [key], () => true, 800);
  const facets = useResource(() => get("jobs/stats?window=1m&bucket=1m"), [], () => true, 2000);
  const settings = useResource(() => get("settings"), [], () => false);
  const [enqueuing, setEnqueuing] = useState(false);
  const [sel, setSel] = useState(() => new Set());
  const [all, setAll] = useState(false);
  useEffect(() => { setSel(new Set()); setAll(false); }, [key]);

  const items = (list.data && list.data.items) || [];
  const total = list.data ? list.data.total : 0;
  const st = facets.data;
  return html`
    <div class="page-head">
      <div><h1>Jobs</h1><div class="sub">${list.data ? num(total) + " matching" : "Loading…"}</div></div>
      <div class="head-actions">
        <div class="seg" role="group" aria-label="Order">
          <button type="button" aria-pressed=${order === "newest"} onClick=${() => set({ order: "" })}>Newest first</button>
          <button type="button" aria-pressed=${order === "oldest"} onClick=${() => set({ order: "oldest" })}>Oldest first</button>
        </div>
        ${settings.data && (settings.data.read_only
          ? html`<span class="muted" data-testid="read-only" title="This dashboard enqueues nothing and changes no job">Read-only</span>`
          : html`<button type="button" class="primary" data-testid="new-job" onClick=${() => setEnqueuing(true)}>New job</button>`)}
      </div>
    </div>
    ${enqueuing && html`<${EnqueueForm} settings=${settings.data} close=${() => setEnqueuing(false)}
      topics=${[...new Set([...settings.data.topics, ...Object.keys((st && st.by_topic) || {})])].sort()}
      queues=${Object.keys((st && st.by_queue) || {}).sort()} />`}
    <section class="panel" aria-label="Jobs">
      <${Filters} f=${f} st=${st} set=${set} />
      <${BulkBar} sel=${sel} all=${all} setAll=${setAll} items=${items} total=${total} f=${f}
        clear=${() => { setSel(new Set()); setAll(false); }} reload=${list.reload} />
      <${Problem} error=${list.error} what="Listing jobs" />
      <${Table} items=${items} sel=${sel} setSel=${setSel} setAll=${setAll} loading=${list.loading && !list.data} />
      <${Pager} at=${at} limit=${limit} total=${total} count=${items.length} next=${list.data && list.data.next_cursor} set=${set} />
    </section>`;
}

function Filters({ f, st, set }) {
  const toggle = (k, v) => set({ [k]: f[k].includes(v) ? f[k].filter((x) => x !== v) : [...f[k], v] });
  const names = (by, chosen) => [...new Set([...Object.keys(by || {}), ...chosen])].sort();
  const more = SINGLES.slice(1).some((k) => f[k]) || f.tags.length || f.keys.length || f.topics.length || f.queues.length ||
    Object.keys(f.payload).length > 0;
  const [payloadErr, setPayloadErr] = useState("");
  const shown = payloadText(f.payload);
  useEffect(() => setPayloadErr(""), [shown]); // the URL's filter replaced what was typed
  const setPayload = (text) => {
    try {
      set({ payload: parsePayload(text) });
      setPayloadErr("");
    } catch (e) {
      setPayloadErr(e.message);
    }
  };
  return html`<div class="filters">
    <div class="filter-row">
      <${Search} f=${f} set=${set} />
      <div class="filter-row" role="group" aria-label="Statuses">
        ${STATUSES.map((s) => html`<button type="button" class=${"chip s-" + s} aria-pressed=${f.statuses.includes(s)}
          onClick=${() => toggle("statuses", s)}>${s}${st && html`<span class="n"> ${num(st.by_status[s])}</span>`}</button>`)}
      </div>
      ${hasFilter(f) && html`<a href="#/jobs" class="muted" style="font-size:12.5px">Clear filters</a>`}
    </div>
    <details class="more" open=${more}>
      <summary>Topics, queues, tags, keys, payload and times</summary>
      <div class="stack" style="gap:10px">
        <${ChipRow} label="Topics" values=${names(st && st.by_topic, f.topics)} chosen=${f.topics} on=${(v) => toggle("topics", v)} />
        <${ChipRow} label="Queues" values=${names(st && st.by_queue, f.queues)} chosen=${f.queues} on=${(v) => toggle("queues", v)} />
        <div class="more-filters">
          <${TextFilter} label="Tags (all of, comma-separated)" value=${f.tags.join(",")} on=${(v) => set({ tags: v.split(",").map((s) => s.trim()).filter(Boolean) })} />
          <${TextFilter} label="Keys (any of, comma-separated)" name="keys" value=${f.keys.join(",")} on=${(v) => set({ keys: v.split(",").map((s) => s.trim()).filter(Boolean) })} />
          <${TextFilter} label="Payload (path = value)" name="payload" placeholder="customer_id = 42, plan.tier = pro" value=${payloadText(f.payload)}
            on=${setPayload} error=${payloadErr} />
          ${[["created_from", "Created from"], ["created_before", "Created before"], ["run_at_from", "Runs from"], ["run_at_before", "Runs before"]].map(([k, label]) => html`
            <label class="field">${label}<input type="datetime-local" value=${toLocalInput(f[k])}
              onChange=${(e) => set({ [k]: fromLocalInput(e.target.value) })} /></label>`)}
        </div>
      </div>
    </details>
  </div>`;
}

function ChipRow({ label, values, chosen, on }) {
  if (!values.length) return null;
  return html`<div class="filter-row" role="group" aria-label=${label}>
    <span class="muted" style="font-size:12.5px;min-width:52px">${label}</span>
    ${values.map((v) => html`<button type="button" class="chip" aria-pressed=${chosen.includes(v)} onClick=${() => on(v)}>${v}</button>`)}
  </div>`;
}

// What is typed is the field's own state until it is applied, so that a
// live update re-rendering the page never takes it back.
function TextFilter({ label, value, on, name, error, placeholder }) {
  const [v, setV] = useState(value);
  useEffect(() => setV(value), [value]);
  return html`<label class="field">${label}<input type="text" name=${name} value=${v} placeholder=${placeholder} aria-invalid=${error ? "true" : undefined}
    onInput=${(e) => setV(e.target.value)}
    onKeyDown=${(e) => e.key === "Enter" && on(e.target.value)} onBlur=${(e) => e.target.value !== value && on(e.target.value)} />
    ${error && html`<span class="field-error" role="alert">${error}</span>`}</label>`;
}

// Search opens a job by ID, or filters by unique key.
function Search({ f, set }) {
  const [v, setV] = useState(f.unique_key);
  useEffect(() => setV(f.unique_key), [f.unique_key]);
  const submit = (e) => {
    e.preventDefault();
    const s = v.trim();
    if (UUID.test(s)) go("#/jobs/" + s.toLowerCase());
    else set({ unique_key: s });
  };
  return html`<form class="search" role="search" onSubmit=${submit}>
    <label for="job-search" class="sr-only">Job ID or unique key</label>
    <${Icon} name="search" size="15" />
    <input id="job-search" type="search" placeholder="Job ID or unique key" value=${v} onInput=${(e) => setV(e.target.value)} autocomplete="off" />
    ${!v && html`<kbd aria-hidden="true">/</kbd>`}
  </form>`;
}

// BulkBar acts on the selected jobs, one request each, or on every job the
// filter selects, in one request.
function BulkBar({ sel, all, setAll, items, total, f, clear, reload }) {
  if (!sel.size) return null;
  const chosen = items.filter((j) => sel.has(j.id));
  const count = all ? total : sel.size;
  const run = async (a) => {
    let n = chosen.filter(a.applies).length;
    let body = a.why;
    try {
      if (all) {
        n = await touched(f, a);
        body = `Of the ${num(total)} job${total === 1 ? "" : "s"} matching, ${num(n)} ${n === 1 ? "is" : "are"} ` +
          `${a.statuses.join(" or ")}${a.later ? " and due later" : ""}: ${n === 1 ? "it" : "they"} will be ${a.done}, ` +
          `the others left as they are (as they are now: jobs may change before you confirm). ${a.why}`;
      }
    } catch (e) {
      toast(e.message, true);
      return;
    }
    const ok = await ask({ title: `${a.label} ${num(n)} job${n === 1 ? "" : "s"}?`, body, confirm: a.label, danger: a.danger });
    if (!ok) return;
    try {
      if (all) {
        const body = {};
        for (const k of [...LISTS, ...SINGLES]) if (f[k].length) body[k] = f[k];
        if (Object.keys(f.payload).length) {
          body.payload = Object.fromEntries(Object.entries(f.payload).map(([k, v]) => [k, payloadValue(v)]));
        }
        const res = await request("POST", "jobs/" + a.name, body);
        toast(`${num(res.count)} job${res.count === 1 ? "" : "s"} ${a.done}.`);
      } else {
        const res = await actOnIds(chosen.filter(a.applies).map((j) => j.id), a.name);
        const skipped = chosen.length - res.changed;
        toast(`${num(res.changed)} ${a.done}` + (skipped ? `; ${skipped} left as they were (their status does not allow it)` : "") + ".",
          res.changed === 0);
      }
      clear();
      reload();
    } catch (e) {
      toast(e.message, true);
    }
  };
  const pageAll = sel.size === items.length && total > items.length;
  return html`<div class="bulkbar" role="region" aria-label="Selection">
    <strong>${num(count)} selected</strong>
    ${pageAll && !all && (hasFilter(f)
      ? html`<button type="button" class="ghost small" onClick=${() => setAll(true)}>Select all ${num(total)} matching</button>`
      : html`<span class="muted" style="font-size:12.5px">Filter the list to act on every matching job.</span>`)}
    <span class="grow"></span>
    ${ACTIONS.map((a) => html`<button type="button" data-action=${a.name} class=${"small" + (a.danger ? " danger" : "")}
      disabled=${!all && !chosen.some(a.applies)} onClick=${() => run(a)}>${a.label}</button>`)}
    <button type="button" class="ghost small" onClick=${clear}>Clear</button>
  </div>`;
}

// touched counts the jobs action a would change among those filter f
// selects: the list's total of those of a's statuses (and due later, for
// a's later), read before the action runs.
async function touched(f, a) {
  const statuses = f.statuses.length ? f.statuses.filter((s) => a.statuses.includes(s)) : a.statuses;
  if (!statuses.length) return 0;
  const q = { ...params(f), statuses, limit: 1 };
  if (a.later) {
    const now = new Date().toISOString();
    q.run_at_from = f.run_at_from && f.run_at_from > now ? f.run_at_from : now;
  }
  const res = await get("jobs" + query(q));
  return res.total;
}

function Table({ items, sel, setSel, setAll, loading }) {
  const body = useRef(null);
  if (loading) return html`<div class="empty">Loading…</div>`;
  if (!items.length) return html`<div class="empty">No jobs match.</div>`;
  const toggle = (id) => {
    setSel((prev) => {
      const s = new Set(prev);
      s.has(id) ? s.delete(id) : s.add(id);
      return s;
    });
    setAll(false);
  };
  const allOn = items.every((j) => sel.has(j.id));
  const move = (e, d) => {
    const rows = [...body.current.querySelectorAll("tr.row")];
    const i = rows.indexOf(e.currentTarget);
    if (rows[i + d]) { e.preventDefault(); rows[i + d].focus(); }
  };
  const key = (e, j) => {
    if (e.target.tagName === "INPUT") return;
    if (e.key === "Enter") go("#/jobs/" + j.id);
    else if (e.key === " " || e.key === "x") { e.preventDefault(); toggle(j.id); }
    else if (e.key === "ArrowDown" || e.key === "j") move(e, 1);
    else if (e.key === "ArrowUp" || e.key === "k") move(e, -1);
  };
  return html`<div class="table-wrap"><table>
    <thead><tr>
      <th class="check" scope="col"><input type="checkbox" aria-label="Select every job on this page" checked=${allOn}
        onChange=${() => { setSel(allOn ? new Set() : new Set(items.map((j) => j.id))); setAll(false); }} /></th>
      <th scope="col">Status</th><th scope="col">Job</th><th scope="col" class="hide-sm">Queue</th>
      <th scope="col" class="num hide-sm">Attempt</th><th scope="col" class="hide-sm">Detail</th><th scope="col" class="hide-sm">Created</th><th scope="col">When</th>
    </tr></thead>
    <tbody ref=${body}>${items.map((j) => html`<tr key=${j.id} class=${"row" + (sel.has(j.id) ? " selected" : "")} tabindex="0"
        onClick=${(e) => e.target.tagName !== "INPUT" && e.target.tagName !== "A" && go("#/jobs/" + j.id)} onKeyDown=${(e) => key(e, j)}>
      <td class="check"><input type="checkbox" aria-label=${"Select job " + j.id} checked=${sel.has(j.id)} onChange=${() => toggle(j.id)} /></td>
      <td><${Badge} status=${j.status} /></td>
      <td><div class="nowrap"><a href=${"#/jobs/" + j.id} tabindex="-1"><strong>${j.topic}</strong></a>
        ${j.key && html` <span class="key-name hide-sm" title=${"key" + (j.sequence ? ", in sequence (" + j.sequence + ")" : "")}>${j.key}</span>`}
        ${(j.tags || []).slice(0, 2).map((t) => html` <span class="tag hide-sm">${t}</span>`)}${j.tags && j.tags.length > 2 ? html` <span class="faint hide-sm">+${j.tags.length - 2}</span>` : ""}</div>
        <div class="id faint" title=${j.id}>${shortId(j.id)}</div></td>
      <td class="hide-sm">${j.queue}${j.priority ? html` <span class="faint">p${j.priority}</span>` : ""}</td>
      <td class="num hide-sm">${j.attempt}<span class="faint">/${j.max_retries + 1}</span></td>
      <td class="hide-sm"><${Detail} j=${j} /></td>
      <td class="hide-sm nowrap"><${Rel} t=${j.created_at} /></td>
      <td class="nowrap"><${When} j=${j} /></td>
    </tr>`)}</tbody>
  </table></div>`;
}

// Detail is the one thing worth knowing about a job in the list.
function Detail({ j }) {
  if (j.status === "processing" && j.progress) {
    return html`<span class="nowrap"><${ProgressBar} progress=${j.progress} mini /> <span class="muted">${Math.round(j.progress.percent)}%</span></span>`;
  }
  const last = j.errors && j.errors.length ? j.errors[j.errors.length - 1] : null;
  if ((j.status === "failed" || j.status === "pending") && last) return html`<div class="err-line" title=${last.error}>${last.error}</div>`;
  if (j.unique_key) return html`<span class="faint trunc" title="unique key">${j.unique_key}</span>`;
  return null;
}

function When({ j }) {
  if (j.status === "pending") {
    return new Date(j.run_at) > Date.now() ? html`<span class="muted">runs <${Rel} t=${j.run_at} /></span>` : html`<span class="muted">due</span>`;
  }
  if (j.status === "processing") return html`<span class="muted"><span class="hide-sm">started </span><${Rel} t=${j.attempted_at} /></span>`;
  return isZero(j.finalized_at) ? null : html`<span class="muted"><span class="hide-sm">${j.status} </span><${Rel} t=${j.finalized_at} /></span>`;
}

function Pager({ at, limit, total, count, next, set }) {
  const last = Math.max(0, Math.floor((total - 1) / limit) * limit);
  return html`<nav class="pager" aria-label="Pages">
    <span class="muted">${count ? `${num(at + 1)}–${num(at + count)} of ${num(total)}` : `0 of ${num(total)}`}</span>
    <div class="btns">
      <label class="inline muted hide-sm" style="font-size:12.5px">Per page
        <select value=${limit} onChange=${(e) => set({ limit: e.target.value === "50" ? "" : e.target.value })}>
          ${[...new Set([25, 50, 100, 200, limit])].sort((a, b) => a - b).map((n) => html`<option value=${n}>${n}</option>`)}
        </select></label>
      <button type="button" class="small" disabled=${at === 0} onClick=${() => set({ offset: "", cursor: "", at: "" })}>First</button>
      <button type="button" class="small" disabled=${at === 0} onClick=${() => set({ offset: Math.max(0, at - limit) || "", cursor: "", at: "" })}>Previous</button>
      <button type="button" class="small" disabled=${!next} onClick=${() => set({ cursor: next, at: at + limit, offset: "" })}>Next</button>
      <button type="button" class="small" disabled=${!next} onClick=${() => set({ offset: last, cursor: "", at: "" })}>Last</button>
    </div>
  </nav>`;
}
