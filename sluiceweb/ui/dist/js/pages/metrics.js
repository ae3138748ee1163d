// Metrics: what is slow, and for whom. Per topic over a window, from the
// metrics store: throughput, failure rate and duration percentiles, in a
// table sorted by what is slowest and in charts per topic.
import { html, useEffect } from "../vendor/htm-preact.js";
import { get, query } from "../api.js";
import { useResource } from "../live.js";
import { href, go } from "../router.js";
import { num, pct, duration, clock } from "../format.js";
import { Problem } from "../ui.js";
import { Chart, Frame, nice } from "./overview.js";

// WINDOWS are the windows offered, as the API takes them.
const WINDOWS = [["1h", "Hour"], ["6h", "6 hours"], ["24h", "Day"], ["168h", "Week"]];

export function Metrics({ route }) {
  const p = route.params;
  const window = WINDOWS.some(([w]) => w === p.get("window")) ? p.get("window") : "1h";
  const topics = (p.get("topics") || "").split(",").filter(Boolean);
  const set = (changes) => go(href("/metrics", { ...Object.fromEntries(p), ...changes }), true);
  const m = useResource(() => get("metrics" + query({ window, topics })), [window, topics.join(",")], () => true, 5000);
  // Clients write the store every few seconds, not as jobs change: read it
  // again on a timer too.
  useEffect(() => {
    const t = setInterval(() => !document.hidden && m.reload(), 5000);
    return () => clearInterval(t);
  }, []);
  const rows = m.data ? [...m.data.topics].sort((a, b) => b.p95_ms - a.p95_ms) : [];
  const minutes = m.data ? (new Date(m.data.to) - new Date(m.data.from)) / 60000 : 1;
  return html`
    <div class="page-head">
      <div><h1>Metrics</h1><div class="sub">Attempts per topic, from the metrics store; the slowest first</div></div>
      <div class="seg" role="group" aria-label="Window">
        ${WINDOWS.map(([w, label]) => html`<button type="button" aria-pressed=${w === window} onClick=${() => set({ window: w })}>${label}</button>`)}
      </div>
    </div>
    <${Problem} error=${m.error} what="Reading metrics" />
    ${m.data && !rows.length && html`<div class="empty">No attempts recorded in this window.</div>`}
    ${rows.length > 0 && html`<section class="panel" aria-labelledby="mt-h">
      <div class="panel-head"><h2 id="mt-h">Topics</h2>
        ${topics.length > 0 && html`<a href=${href("/metrics", { window })} class="muted" style="font-size:12.5px">All topics</a>`}</div>
      <div class="table-wrap"><table class="metrics-table">
        <thead><tr><th scope="col">Topic</th><th scope="col" class="num">Attempts</th><th scope="col" class="num">Per minute</th>
          <th scope="col" class="num">Failure rate</th><th scope="col" class="num">p50</th><th scope="col" class="num">p95</th>
          <th scope="col" class="num">p99</th><th scope="col" class="hide-sm"></th></tr></thead>
        <tbody>${rows.map((t) => html`<tr key=${t.topic} data-topic=${t.topic}>
          <td><a href=${href("/metrics", { window, topics: t.topic })}><strong>${t.topic}</strong></a></td>
          <td class="num">${num(t.completed + t.failed)}</td>
          <td class="num">${num(Math.round(((t.completed + t.failed) / minutes) * 10) / 10)}</td>
          <td class=${"num" + (t.failure_rate > 0 ? " bad" : "")}>${pct(t.failure_rate)}</td>
          <td class="num">${duration(t.p50_ms)}</td><td class="num"><strong>${duration(t.p95_ms)}</strong></td>
          <td class="num">${duration(t.p99_ms)}</td>
          <td class="hide-sm"><a href=${"#/jobs" + query({ topics: t.topic, statuses: "failed" })} class="muted">failed jobs</a></td>
        </tr>`)}</tbody>
      </table></div>
    </section>`}
    <div class="metrics-grid">
      ${rows.map((t) => html`<section class="panel" key=${t.topic} aria-label=${t.topic} data-topic=${t.topic}>
        <div class="panel-head"><h2>${t.topic}</h2>
          <div class="legend" aria-hidden="true">
            <span><i style="background:var(--chart-completed)"></i>completed</span>
            <span><i style="background:var(--chart-failed)"></i>failed</span>
            <span><i style="background:var(--accent)"></i>p95</span><span><i style="background:var(--faint)"></i>p50</span>
          </div></div>
        <div class="panel-body stack">
          <${Chart} series=${t.series} bucket=${m.data.bucket_seconds} />
          <${Durations} series=${t.series} bucket=${m.data.bucket_seconds} />
        </div>
      </section>`)}
    </div>`;
}

// Durations draws the p50, p95 and p99 of each bucket as lines, over the
// buckets that had attempts, with a tick at each bucket's p50 and p95.
function Durations({ series, bucket }) {
  const n = series.length;
  const top = nice(Math.max(1, ...series.map((p) => p.p99_ms)));
  const W = n * 10;
  const y = (ms) => 100 - (ms / top) * 100;
  const line = (k) => series.map((p, i) => (p.completed + p.failed ? `${i * 10 + 5},${y(p[k])}` : "")).filter(Boolean).join(" ");
  return html`<${Frame} series=${series} bucket=${bucket} top=${top} fmt=${duration} height=${120} cls="durations">
      <svg class="chart lines" viewBox=${`0 0 ${W} 100`} preserveAspectRatio="none" role="img"
        aria-label="Duration percentiles per bucket: p50, p95 and p99">
        <g class="grid">${[0, 50, 100].map((v) => html`<line x1="0" x2=${W} y1=${v} y2=${v} vector-effect="non-scaling-stroke" />`)}</g>
        <polyline class="p99" points=${line("p99_ms")} vector-effect="non-scaling-stroke" />
        <polyline class="p95" points=${line("p95_ms")} vector-effect="non-scaling-stroke" />
        <polyline class="p50" points=${line("p50_ms")} vector-effect="non-scaling-stroke" />
        ${series.map((p, i) => p.completed + p.failed ? html`<g class="b"><title>${`${clock(p.start)}: p50 ${duration(p.p50_ms)}, p95 ${duration(p.p95_ms)}, p99 ${duration(p.p99_ms)}`}</title>
          <rect class="hover" x=${i * 10} y="0" width="10" height="100" />
          ${["p50", "p95"].map((k) => html`<line class=${"tick " + k} x1=${i * 10 + 2} x2=${i * 10 + 8} y1=${y(p[k + "_ms"])} y2=${y(p[k + "_ms"])}
            vector-effect="non-scaling-stroke" />`)}</g>` : null)}
      </svg>
  <//>`;
}
