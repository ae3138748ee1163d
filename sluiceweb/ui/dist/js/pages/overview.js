// Overview: counts by status, throughput over a recent window, outcomes,
// durations, clients online, and jobs by queue and topic.
import { html, useEffect } from "../vendor/htm-preact.js";
import { get, query } from "../api.js";
import { useResource } from "../live.js";
import { href, go } from "../router.js";
import { num, pct, duration, clock, minute } from "../format.js";
import { STATUSES, Problem } from "../ui.js";

// WINDOWS are the windows offered, with the bucket of each one's chart.
const WINDOWS = [
  { window: "15m", bucket: "15s", label: "15 min" },
  { window: "1h", bucket: "1m", label: "1 hour" },
  { window: "6h", bucket: "5m", label: "6 hours" },
  { window: "24h", bucket: "20m", label: "24 hours" },
];

export function Overview({ route }) {
  const w = WINDOWS.find((x) => x.window === route.params.get("window")) || WINDOWS[1];
  const res = useResource(async () => {
    const [stats, queues, clients] = await Promise.all([
      get("jobs/stats" + query({ window: w.window, bucket: w.bucket })),
      get("queues"),
      get("clients"),
    ]);
    return { stats, queues: queues.items, clients: clients.items };
  }, [w.window], () => true, 1500);
  // The window slides with the clock, and clients come and go without a
  // job event: read again now and then, even when no job changes.
  useEffect(() => {
    const t = setInterval(() => !document.hidden && res.reload(), 15000);
    return () => clearInterval(t);
  }, []);
  const d = res.data;
  return html`
    <div class="page-head">
      <div><h1>Overview</h1><div class="sub">Every job in the database, live.</div></div>
      <div class="seg" role="group" aria-label="Window">
        ${WINDOWS.map((x) => html`<button type="button" aria-pressed=${x === w}
          onClick=${() => go(href("/", { window: x.window === "1h" ? "" : x.window }), true)}>${x.label}</button>`)}
      </div>
    </div>
    <${Problem} error=${res.error} what="Loading the overview" />
    ${d && html`<div class="stack">
      <${StatusCards} stats=${d.stats} />
      <${Throughput} stats=${d.stats} clients=${d.clients} label=${w.label} />
      <div class="grid-2">
        <${Breakdown} title="Queues" by=${d.stats.by_queue} param="queues"
          extra=${Object.fromEntries(d.queues.map((q) => [q.name, q]))} />
        <${Breakdown} title="Topics" by=${d.stats.by_topic} param="topics" />
      </div>
    </div>`}`;
}

function StatusCards({ stats }) {
  return html`<div class="grid-cards">
    ${STATUSES.map((s) => html`<a class=${"card s-" + s} href=${href("/jobs", { statuses: s })}>
      <div class="label"><span class=${"badge s-" + s}>${s}</span></div>
      <div class="value">${num(stats.by_status[s])}</div>
    </a>`)}
  </div>`;
}

function Throughput({ stats, clients, label }) {
  const online = clients.filter((c) => c.online).length;
  const kpis = [
    ["Completed", num(stats.completed), "in the last " + label],
    ["Failed", num(stats.failed), "retries used up"],
    ["Success rate", pct(stats.success_rate), "completed of finished"],
    // No job completed in the window: no duration to show, not 0 ms.
    ["Duration", duration(stats.completed ? stats.avg_duration_ms : null),
      "avg · p95 " + duration(stats.completed ? stats.p95_duration_ms : null)],
  ];
  return html`<section class="panel" aria-labelledby="tp-h">
    <div class="panel-head">
      <h2 id="tp-h">Throughput</h2>
      <div class="legend" aria-hidden="true">
        <span><i style="background:var(--chart-completed)"></i>completed</span>
        <span><i style="background:var(--chart-failed)"></i>failed</span>
        <span><a href="#/clients">${online} client${online === 1 ? "" : "s"} online</a></span>
      </div>
    </div>
    <div class="panel-body stack">
      <div class="kpis">
        ${kpis.map(([k, v, h]) => html`<div><div class="muted" style="font-size:12.5px">${k}</div>
          <div style="font-size:20px;font-weight:650">${v}</div><div class="faint" style="font-size:12px">${h}</div></div>`)}
      </div>
      <${Chart} series=${stats.series} bucket=${stats.bucket_seconds} />
    </div>
  </section>`;
}

// nice rounds n up to 1, 2 or 5 times a power of ten.
export function nice(n) {
  if (n <= 4) return 4;
  const p = Math.pow(10, Math.floor(Math.log10(n)));
  return [1, 2, 5, 10].map((m) => m * p).find((x) => x >= n);
}

// Frame lays a chart out: its axis's labels (top, half, 0, each written
// by fmt), the chart (children), and under it the times of four buckets.
export function Frame({ series, bucket, top, fmt, height, children, cls }) {
  const n = series.length;
  const labels = [0, Math.floor(n / 3), Math.floor((2 * n) / 3), n - 1];
  return html`<figure style="margin:0" class=${cls}>
    <div style="display:grid;grid-template-columns:40px 1fr;gap:6px">
      <div style=${`display:flex;flex-direction:column;justify-content:space-between;text-align:right;font-size:11px;height:${height}px;white-space:nowrap`} class="faint" aria-hidden="true">
        <span>${fmt(top)}</span><span>${fmt(top / 2)}</span><span>0</span>
      </div>
      ${children}
    </div>
    <figcaption style="display:flex;justify-content:space-between;margin-left:46px;font-size:11px" class="faint">
      ${labels.map((i) => html`<span>${bucket >= 60 ? minute(series[i].start) : clock(series[i].start)}</span>`)}
    </figcaption>
  </figure>`;
}

// Chart draws completed and failed jobs per bucket as stacked bars.
export function Chart({ series, bucket }) {
  const n = series.length;
  if (!n) return html`<div class="empty">No outcomes in this window.</div>`;
  const top = nice(Math.max(...series.map((p) => p.completed + p.failed)));
  const W = n * 10;
  const total = series.reduce((a, p) => a + p.completed + p.failed, 0);
  const per = bucket >= 60 ? (bucket / 60) + " min" : bucket + " s";
  return html`<${Frame} series=${series} bucket=${bucket} top=${top} fmt=${num} height=${200}>
      <svg class="chart" viewBox=${`0 0 ${W} 100`} preserveAspectRatio="none" role="img"
        aria-label=${`${num(total)} jobs finished in ${n} buckets of ${per}`}>
        <g class="grid">${[0, 50, 100].map((y) => html`<line x1="0" x2=${W} y1=${y} y2=${y} vector-effect="non-scaling-stroke" />`)}</g>
        ${series.map((p, i) => {
          const hc = (p.completed / top) * 100;
          const hf = (p.failed / top) * 100;
          return html`<g class="b"><title>${`${clock(p.start)}: ${num(p.completed)} completed, ${num(p.failed)} failed`}</title>
            <rect class="hover" x=${i * 10} y="0" width="10" height="100" />
            <rect class="c" x=${i * 10 + 1.5} y=${100 - hc} width="7" height=${hc} />
            <rect class="f" x=${i * 10 + 1.5} y=${100 - hc - hf} width="7" height=${hf} /></g>`;
        })}
      </svg>
  <//>`;
}

// Breakdown lists jobs by status for each queue or topic; a row links to
// the jobs list filtered by it.
function Breakdown({ title, by, param, extra }) {
  const names = Object.keys(by || {}).sort();
  if (extra) for (const k of Object.keys(extra)) if (!names.includes(k)) names.push(k);
  const cols = ["pending", "processing", "failed"];
  return html`<section class="panel" aria-label=${title}>
    <div class="panel-head"><h2>${title}</h2>
      ${param === "queues" && html`<a href="#/queues" class="muted" style="font-size:12.5px">All queues →</a>`}</div>
    ${names.length === 0 ? html`<div class="empty">None yet.</div>` : html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">${title.slice(0, -1)}</th>${cols.map((c) => html`<th scope="col" class="num">${c}</th>`)}
        ${extra && html`<th scope="col" class="num hide-sm">workers</th>`}</tr></thead>
      <tbody>${names.map((name) => {
        const c = (by && by[name]) || {};
        return html`<tr>
          <td><a href=${href("/jobs", { [param]: name })}>${name}</a></td>
          ${cols.map((s) => html`<td class="num">${c[s] ? html`<a class=${"s-" + s} style="color:var(--c)"
            href=${href("/jobs", { [param]: name, statuses: s })}>${num(c[s])}</a>` : html`<span class="faint">0</span>`}</td>`)}
          ${extra && html`<td class="num hide-sm">${extra[name] ? num(extra[name].workers) : "0"}</td>`}
        </tr>`;
      })}</tbody></table></div>`}
  </section>`;
}
