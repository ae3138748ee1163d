// The enqueue form: a job by topic and JSON payload, with its queue,
// priority, delay, unique key and tags, sent to POST api/jobs (so the
// server's checks, ReadOnly and AllowedTopics among them, decide).
import { html, useState } from "../vendor/htm-preact.js";
import { request } from "../api.js";
import { go } from "../router.js";
import { num } from "../format.js";
import { Modal, Problem, toast } from "../ui.js";

// checkPayload returns why the payload's text cannot be sent, or "".
export function checkPayload(text, max) {
  let v;
  try {
    v = JSON.parse(text || "{}");
  } catch (x) {
    return "not JSON: " + x.message;
  }
  if (v === null || typeof v !== "object") return "must be a JSON object or array: a job's arguments";
  const size = new TextEncoder().encode(text).length;
  if (max && size > max) return `${num(size)} bytes, over the limit of ${num(max)}`;
  return "";
}

// EnqueueForm enqueues one job. settings are GET api/settings; topics and
// queues the names offered (the stats' and the settings').
export function EnqueueForm({ settings, topics, queues, close }) {
  const [v, setV] = useState({ topic: "", payload: "{}", queue: "", priority: "", delay: "", unique_key: "", tags: "" });
  const [err, setErr] = useState(null);
  const field = (k) => (e) => setV({ ...v, [k]: e.target.value });
  const allowed = settings.allowed_topics || [];
  const payloadErr = checkPayload(v.payload, settings.max_payload_bytes);
  const topicErr = v.topic && allowed.length && !allowed.includes(v.topic) ? "not one of the topics allowed here: " + allowed.join(", ") : "";
  const submit = async (e) => {
    e.preventDefault();
    if (payloadErr || topicErr) return;
    const body = { topic: v.topic.trim(), payload: JSON.parse(v.payload || "{}") };
    if (v.queue.trim()) body.queue = v.queue.trim();
    if (v.priority !== "") body.priority = Number(v.priority);
    if (v.delay.trim()) body.delay = v.delay.trim();
    if (v.unique_key) body.unique_key = v.unique_key;
    const tags = v.tags.split(",").map((s) => s.trim()).filter(Boolean);
    if (tags.length) body.tags = tags;
    try {
      const res = await request("POST", "jobs", body);
      toast(res.duplicate ? `A live job has this unique key: ${res.job.id}` : `Enqueued ${res.job.topic}.`);
      close();
      go("#/jobs/" + res.job.id);
    } catch (x) {
      setErr(x);
    }
  };
  const names = allowed.length ? allowed : topics;
  const input = (k, label, attrs = {}) => html`<label class="field">${label}<input name=${k} value=${v[k]} onInput=${field(k)} ...${attrs} /></label>`;
  return html`<${Modal} open=${true} wide onClose=${close} title="New job"
      footer=${html`<button type="button" onClick=${close}>Cancel</button>
        <button type="submit" form="enqueue-form" class="primary" disabled=${!!(payloadErr || topicErr || !v.topic.trim())}>Enqueue</button>`}>
    <form id="enqueue-form" class="form-grid" onSubmit=${submit}>
      <label class="field">Topic<input name="topic" list="enqueue-topics" required value=${v.topic} onInput=${field("topic")}
        aria-invalid=${topicErr ? "true" : undefined} autocomplete="off" />
        ${topicErr && html`<span class="field-error" role="alert">${topicErr}</span>`}</label>
      <datalist id="enqueue-topics">${names.map((t) => html`<option value=${t} />`)}</datalist>
      <label class="field">Queue<input name="queue" list="enqueue-queues" placeholder="default" value=${v.queue} onInput=${field("queue")} autocomplete="off" /></label>
      <datalist id="enqueue-queues">${queues.map((q) => html`<option value=${q} />`)}</datalist>
      ${input("priority", "Priority (smaller first)", { type: "number", min: -32768, max: 32767, placeholder: "0" })}
      ${input("delay", "Delay (a duration: 30s, 10m, 2h)", { placeholder: "none: due now" })}
      ${input("unique_key", "Unique key", { placeholder: "none" })}
      ${input("tags", "Tags (comma-separated)", { placeholder: "none" })}
      <label class="field span2">Payload (JSON)<textarea name="payload" rows="7" spellcheck="false" value=${v.payload}
        onInput=${field("payload")} aria-invalid=${payloadErr ? "true" : undefined}></textarea>
        ${payloadErr && html`<span class="field-error" role="alert">payload: ${payloadErr}</span>`}</label>
      <div class="span2"><${Problem} error=${err} what="Enqueueing" /></div>
    </form>
  <//>`;
}
