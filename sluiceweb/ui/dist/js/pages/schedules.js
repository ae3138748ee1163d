// Schedules: stored cron schedules, their next and last runs, and a form
// to create, change, pause and delete them.
import { html, useState } from "../vendor/htm-preact.js";
import { get, request } from "../api.js";
import { useResource } from "../live.js";
import { Rel, Problem, Unavailable, Modal, ask, toast } from "../ui.js";

const enabled = (s) => s.enabled !== false;

export function Schedules() {
  const res = useResource(() => get("schedules"), [],
    (name, d) => name === "job" && d.kind === "enqueued", 2000);
  const [edit, setEdit] = useState(null);
  if (res.error && res.error.status === 404 && !res.data) {
    return html`<${Head} /><${Unavailable} what="Stored schedules" />`;
  }
  const items = (res.data && res.data.items) || [];
  const toggle = async (s) => {
    try {
      await request("PUT", "schedules/" + encodeURIComponent(s.name), { ...body(s), enabled: !enabled(s) });
      res.reload();
    } catch (e) {
      toast(e.message, true);
    }
  };
  const remove = async (s) => {
    if (!(await ask({ title: `Delete the schedule ${s.name}?`, body: "Jobs it enqueued stay; no more are enqueued.", confirm: "Delete", danger: true }))) return;
    try {
      await request("DELETE", "schedules/" + encodeURIComponent(s.name));
      toast(`The schedule ${s.name} was deleted.`);
      res.reload();
    } catch (e) {
      toast(e.message, true);
    }
  };
  return html`
    <${Head} onNew=${() => setEdit({})} />
    <${Problem} error=${res.error} what="Listing schedules" />
    <section class="panel" aria-label="Schedules">
      ${res.data && !items.length ? html`<div class="empty">No stored schedules. Periodic jobs declared in code are not listed here.</div>` : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Schedule</th><th scope="col">When</th><th scope="col" class="hide-sm">Topic · queue</th>
          <th scope="col">Enabled</th><th scope="col">Next run</th><th scope="col" class="hide-sm">Last run</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>${items.map((s) => html`<tr key=${s.name}>
          <td><strong>${s.name}</strong></td>
          <td><code>${s.cron}</code>${s.time_zone && html`<div class="faint" style="font-size:12px">${s.time_zone}</div>`}</td>
          <td class="hide-sm"><a href=${"#/jobs?topics=" + encodeURIComponent(s.topic)}>${s.topic}</a> <span class="faint">· ${s.queue || "default"}</span></td>
          <td><button type="button" role="switch" class="switch" aria-checked=${enabled(s)} aria-label=${"Enabled: " + s.name} onClick=${() => toggle(s)}></button></td>
          <td class="nowrap">${enabled(s) ? html`<${Rel} t=${s.next_run_at} />` : html`<span class="faint">paused</span>`}</td>
          <td class="hide-sm nowrap"><${Rel} t=${s.last_run_at} empty="never" />${s.last_job_id && html` · <a href=${"#/jobs/" + s.last_job_id}>job</a>`}</td>
          <td class="nowrap" style="text-align:right"><button type="button" class="small ghost" onClick=${() => setEdit(s)}>Edit</button>
            <button type="button" class="small ghost danger" onClick=${() => remove(s)}>Delete</button></td>
        </tr>`)}</tbody></table></div>`}
    </section>
    ${edit && html`<${Editor} s=${edit} close=${() => setEdit(null)} saved=${() => { setEdit(null); res.reload(); }} />`}`;
}

function Head({ onNew }) {
  return html`<div class="page-head"><div><h1>Schedules</h1>
    <div class="sub">Cron schedules stored in the database: each tick enqueues one job, however many processes run.</div></div>
    ${onNew && html`<button type="button" class="primary" onClick=${onNew}>New schedule</button>`}</div>`;
}

// body is what a schedule's form sends: its settings, not what the server
// computes. max_retries is sent only when set: left out, the jobs take the
// worker's or the client's default; 0 means no retries.
function body(s) {
  const b = { cron: s.cron, time_zone: s.time_zone || "", topic: s.topic, queue: s.queue || "", priority: s.priority || 0,
    catch_up: s.catch_up || "once" };
  if (s.max_retries !== undefined && s.max_retries !== null && s.max_retries !== "") b.max_retries = Number(s.max_retries);
  if (s.payload !== undefined && s.payload !== null) b.payload = s.payload;
  return b;
}

function Editor({ s, close, saved }) {
  const creating = !s.name;
  const [v, setV] = useState({ ...s, payload: s.payload === undefined ? "{}" : JSON.stringify(s.payload, null, 2), on: creating || enabled(s) });
  const [err, setErr] = useState(null);
  const field = (k) => (e) => setV({ ...v, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  const submit = async (e) => {
    e.preventDefault();
    let payload;
    try {
      payload = JSON.parse(v.payload || "{}");
    } catch (x) {
      setErr({ title: "Bad Request", message: "payload: not JSON: " + x.message, code: "", field: "payload" });
      return;
    }
    const b = { ...body({ ...v, payload, priority: Number(v.priority) || 0 }), enabled: v.on };
    try {
      if (creating) await request("POST", "schedules", { name: v.name, ...b });
      else await request("PUT", "schedules/" + encodeURIComponent(s.name), b);
      toast(`The schedule ${v.name} was ${creating ? "created" : "saved"}.`);
      saved();
    } catch (x) {
      setErr(x);
    }
  };
  const input = (k, label, attrs = {}) => html`<label class="field">${label}<input name=${k} value=${v[k] ?? ""} onInput=${field(k)} ...${attrs} /></label>`;
  return html`<${Modal} open=${true} wide onClose=${close} title=${creating ? "New schedule" : "Edit " + s.name}
      footer=${html`<button type="button" onClick=${close}>Cancel</button><button type="submit" form="sched-form" class="primary">${creating ? "Create" : "Save"}</button>`}>
    <form id="sched-form" class="form-grid" onSubmit=${submit}>
      ${input("name", "Name", { required: true, disabled: !creating })}
      ${input("topic", "Topic", { required: true })}
      ${input("cron", "Cron (5 or 6 fields, or @every 5m)", { required: true, placeholder: "*/5 * * * *" })}
      ${input("time_zone", "Time zone (IANA; empty is UTC)", { placeholder: "Europe/Paris" })}
      ${input("queue", "Queue", { placeholder: "default" })}
      ${input("priority", "Priority", { type: "number", min: -32768, max: 32767 })}
      ${input("max_retries", "Max retries (empty: the default; 0: none)", { type: "number", min: 0 })}
      <label class="field">Missed ticks<select name="catch_up" value=${v.catch_up || "once"} onChange=${field("catch_up")}>
        <option value="once">Catch up once</option><option value="skip">Skip</option></select></label>
      <label class="field span2">Payload (JSON)<textarea name="payload" rows="5" value=${v.payload} onInput=${field("payload")}></textarea></label>
      <label class="inline span2"><input type="checkbox" checked=${v.on} onChange=${field("on")} /> Enabled</label>
      <div class="span2"><${Problem} error=${err} /></div>
    </form>
  <//>`;
}
