// Keys: the keys of each queue's jobs, how many of each wait and run and
// the limits that hold for them, the stored limits of topics, and a form
// to set the limits of a queue's keys.
import { html, useState, useEffect } from "../vendor/htm-preact.js";
import { get, request } from "../api.js";
import { useResource } from "../live.js";
import { href } from "../router.js";
import { num, when } from "../format.js";
import { Problem, Modal, toast } from "../ui.js";

// rateText says a rate limit briefly: "10 per 1m"; "" for none.
const rateText = (n, per) => (n ? `${num(n)} per ${per}` : "");

// limitWords says a concurrency and a rate limit in a few words.
function limitWords(max, rate, per) {
  return [max && `at most ${num(max)} running`, rate && `at most ${num(rate)} started per ${per}`].filter(Boolean).join(", ");
}

// keyWords says a scope's key limits in a few words: "each key at most 2
// running · sequence hold · fair"; "" when it has none.
export function keyWords(kl) {
  if (!kl) return "";
  const each = limitWords(kl.max_running, kl.rate_limit, kl.rate_period);
  const own = (kl.keys || []).length;
  return [each && "each key " + each, kl.sequence && "sequence " + kl.sequence, kl.fair && "fair",
    own && `${own} key${own === 1 ? "" : "s"} with limits of their own`].filter(Boolean).join(" · ");
}

// limitOf returns the limits that hold for key under kl: its own, or else
// its scope's defaults; own says which fields are its own.
function limitOf(kl, key) {
  const out = { max: (kl && kl.max_running) || 0, rate: (kl && kl.rate_limit) || 0, per: (kl && kl.rate_period) || "", weight: 0, own: {} };
  const k = ((kl && kl.keys) || []).find((x) => x.key === key);
  if (!k) return out;
  if (k.max_running) {
    out.max = k.max_running;
    out.own.max = true;
  }
  if (k.rate_limit) {
    out.rate = k.rate_limit;
    out.per = k.rate_period;
    out.own.rate = true;
  }
  out.weight = k.weight || 0;
  return out;
}

// useKeys loads the stored limits and the keys of each of queues, again
// as jobs change, and every few seconds: limits set elsewhere change no
// job. A server without the endpoints answers 404: unavailable.
export function useKeys(queues) {
  const res = useResource(async () => {
    const limits = await get("limits");
    const keys = await Promise.all(queues.map((q) => get("queues/" + encodeURIComponent(q) + "/keys?limit=50")));
    return { limits: limits.items, keys: Object.fromEntries(queues.map((q, i) => [q, keys[i].items])) };
  }, [queues.join("\n")], () => true, 1500);
  useEffect(() => {
    const t = setInterval(() => !document.hidden && res.reload(), 5000);
    return () => clearInterval(t);
  }, []);
  return res;
}

// limitsOf returns the stored limits of queue among those res loaded.
export function limitsOf(res, queue) {
  return ((res.data && res.data.limits) || []).find((l) => l.kind === "queue" && l.name === queue);
}

// Keys shows, for each queue with keys or key limits, its keys; then the
// limits of topics.
export function Keys({ res }) {
  if (res.error && res.error.status === 404 && !res.data) return null; // an older server: no keys
  if (!res.data) return html`<div class="keys-section"><${Problem} error=${res.error} what="Reading the keys" /></div>`;
  const { limits, keys } = res.data;
  const queues = Object.keys(keys).filter((q) => keys[q].length || limitsOf(res, q));
  const topics = limits.filter((l) => l.kind === "topic");
  return html`<div class="stack keys-section">
    <${Problem} error=${res.error} what="Refreshing the keys" />
    ${queues.map((q) => html`<${QueueKeys} key=${q} queue=${q} keys=${keys[q]} limits=${limitsOf(res, q)} />`)}
    ${!queues.length && html`<div class="notice" data-testid="no-keys">No job waiting or running has a key, and no queue has key limits.
      <div class="keys-hint">Enqueue jobs with a <code>key</code> (a customer, an account) to limit, order and share them per key.</div></div>`}
    ${topics.length > 0 && html`<${TopicLimits} topics=${topics} />`}
  </div>`;
}

// QueueKeys is the panel of one queue's keys.
function QueueKeys({ queue, keys, limits }) {
  const kl = limits && limits.key_limits;
  const words = keyWords(kl);
  // Keys with limits of their own and no jobs are listed too.
  const rows = [...keys];
  for (const k of (kl && kl.keys) || []) {
    if (!rows.some((r) => r.key === k.key)) rows.push({ key: k.key, pending: 0, processing: 0 });
  }
  return html`<section class="panel" aria-label=${"Keys of " + queue} data-keys-queue=${queue}>
    <div class="panel-head">
      <div><h2>Keys of <a href=${href("/jobs", { queues: queue })}>${queue}</a></h2>
        <div class="sub" data-testid="key-limits">${words || "No key limits: every key runs as the queue allows."}</div></div>
    </div>
    ${rows.length === 0 ? html`<div class="empty">No job of this queue with a key is waiting or running.</div>` : html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">Key</th><th scope="col" class="num">Waiting</th><th scope="col" class="num">Running</th>
        <th scope="col" class="num">Max running</th><th scope="col" class="hide-sm">Rate</th><th scope="col" class="num hide-sm">Weight</th></tr></thead>
      <tbody>${rows.map((r) => {
        const l = limitOf(kl, r.key);
        const full = l.max && r.processing >= l.max;
        return html`<tr data-key=${r.key}>
          <td><a class="mono" href=${href("/jobs", { queues: queue, keys: r.key })}>${r.key}</a></td>
          <td class="num">${r.pending ? html`<a href=${href("/jobs", { queues: queue, keys: r.key, statuses: "pending" })}>${num(r.pending)}</a>` : html`<span class="faint">0</span>`}</td>
          <td class="num" data-testid="running">${num(r.processing)}${full ? html` <span class="badge s-pending" title="As many of its jobs run as its limit allows">at limit</span>` : ""}</td>
          <td class="num">${l.max ? html`${num(l.max)}${l.own.max ? html` <span class="faint">own</span>` : ""}` : html`<span class="faint">–</span>`}</td>
          <td class="hide-sm">${l.rate ? html`${rateText(l.rate, l.per)}${l.own.rate ? html` <span class="faint">own</span>` : ""}` : html`<span class="faint">–</span>`}</td>
          <td class="num hide-sm">${l.weight || html`<span class="faint">${kl && kl.fair ? "1" : "–"}</span>`}</td>
        </tr>`;
      })}</tbody></table></div>`}
  </section>`;
}

// TopicLimits lists the stored limits of topics.
function TopicLimits({ topics }) {
  return html`<section class="panel" aria-label="Topic limits">
    <div class="panel-head"><div><h2>Topic limits</h2>
      <div class="sub">Limits of all the jobs of a topic, in whatever queue, and of each of its keys.</div></div></div>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Topic</th><th scope="col">Its jobs</th><th scope="col">Its keys</th><th scope="col" class="hide-sm">Changed</th></tr></thead>
      <tbody>${topics.map((t) => html`<tr data-topic=${t.name}>
        <td><a href=${href("/jobs", { topics: t.name })}><strong>${t.name}</strong></a></td>
        <td>${limitWords(t.max_running, t.rate_limit, t.rate_period) || html`<span class="faint">–</span>`}</td>
        <td>${keyWords(t.key_limits) || html`<span class="faint">–</span>`}</td>
        <td class="hide-sm muted nowrap">${when(t.updated_at)}</td>
      </tr>`)}</tbody></table></div>
  </section>`;
}

// blank is a key's row in the form.
const blank = () => ({ key: "", max_running: "", rate_limit: "", rate_period: "", weight: "" });

// formOf returns the form's values for stored key limits.
function formOf(kl) {
  kl = kl || {};
  const text = (n) => (n ? String(n) : "");
  return {
    max_running: text(kl.max_running), rate_limit: text(kl.rate_limit), rate_period: kl.rate_period || "",
    sequence: kl.sequence || "", fair: !!kl.fair,
    keys: (kl.keys || []).map((k) => ({ key: k.key, max_running: text(k.max_running), rate_limit: text(k.rate_limit),
      rate_period: k.rate_period || "", weight: text(k.weight) })),
  };
}

// bodyOf returns the request body of the form's values: the members set,
// numbers as numbers.
function bodyOf(v) {
  const put = (to, from) => {
    for (const k of ["max_running", "rate_limit", "weight"]) if (from[k] !== undefined && from[k] !== "") to[k] = Number(from[k]);
    if (from.rate_period) to.rate_period = from.rate_period.trim();
    return to;
  };
  const b = put({}, v);
  if (v.sequence) b.sequence = v.sequence;
  if (v.fair) b.fair = true;
  const keys = v.keys.filter((k) => k.key !== "").map((k) => put({ key: k.key }, k));
  if (keys.length) b.keys = keys;
  return b;
}

// KeyLimitsEditor sets the limits of a queue's keys, replacing those
// stored.
export function KeyLimitsEditor({ queue, limits, close, saved }) {
  const [v, setV] = useState(() => formOf(limits && limits.key_limits));
  const [err, setErr] = useState(null);
  const field = (k) => (e) => setV({ ...v, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  const keyField = (i, k) => (e) => setV({ ...v, keys: v.keys.map((x, j) => (j === i ? { ...x, [k]: e.target.value } : x)) });
  const submit = async (e) => {
    e.preventDefault();
    try {
      await request("PUT", "limits/queue/" + encodeURIComponent(queue) + "/keys", bodyOf(v));
      toast(`The key limits of ${queue} were saved.`);
      saved();
    } catch (x) {
      setErr(x);
    }
  };
  const number = (k, label) => html`<label class="field">${label}<input name=${k} type="number" min="0" value=${v[k]} onInput=${field(k)} /></label>`;
  return html`<${Modal} open=${true} wide onClose=${close} title=${"Key limits of " + queue}
      footer=${html`<button type="button" onClick=${close}>Cancel</button><button type="submit" form="keys-form" class="primary">Save</button>`}>
    <p class="muted" style="margin:0">Limits of each key of the queue's jobs, across every client. Empty is no limit.</p>
    <form id="keys-form" class="form-grid" onSubmit=${submit}>
      ${number("max_running", "Running at once, per key")}
      <div class="form-pair">
        ${number("rate_limit", "Started per period, per key")}
        <label class="field">Period<input name="rate_period" value=${v.rate_period} placeholder="1m" onInput=${field("rate_period")} /></label>
      </div>
      <label class="field">Sequence of each key's jobs<select name="sequence" value=${v.sequence} onChange=${field("sequence")}>
        <option value="">None: they run as they may</option>
        <option value="hold">Hold: in order, held behind a failure</option>
        <option value="continue">Continue: in order, going on past a failure</option></select></label>
      <label class="inline" style="align-self:end"><input type="checkbox" name="fair" checked=${v.fair} onChange=${field("fair")} /> Fair: keys take turns</label>
      <fieldset class="span2 key-rows">
        <legend>Keys with limits of their own</legend>
        ${v.keys.length === 0 ? html`<div class="faint">None: every key has the limits above.</div>`
          : html`<div class="key-row key-head" aria-hidden="true"><span>Key</span><span>Running</span><span>Started</span><span>Per</span><span>Weight</span><span></span></div>`}
        ${v.keys.map((k, i) => html`<div class="key-row" data-row=${i}>
          <input aria-label="Key" name="key" placeholder="key" value=${k.key} onInput=${keyField(i, "key")} />
          <input aria-label="Running at once" name="key_max_running" type="number" min="0" placeholder="running" value=${k.max_running} onInput=${keyField(i, "max_running")} />
          <input aria-label="Started per period" name="key_rate_limit" type="number" min="0" placeholder="started" value=${k.rate_limit} onInput=${keyField(i, "rate_limit")} />
          <input aria-label="Period" name="key_rate_period" placeholder="per" value=${k.rate_period} onInput=${keyField(i, "rate_period")} />
          <input aria-label="Weight" name="key_weight" type="number" min="0" max="1000" placeholder="weight" value=${k.weight} onInput=${keyField(i, "weight")} />
          <button type="button" class="ghost small danger" aria-label=${"Remove " + (k.key || "this key")}
            onClick=${() => setV({ ...v, keys: v.keys.filter((_, j) => j !== i) })}>Remove</button>
        </div>`)}
        <div><button type="button" class="small" onClick=${() => setV({ ...v, keys: [...v.keys, blank()] })}>Add a key</button></div>
      </fieldset>
      <div class="span2"><${Problem} error=${err} /></div>
    </form>
  <//>`;
}
