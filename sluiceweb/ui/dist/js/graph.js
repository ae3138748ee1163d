// The layout of a workflow's graph: tasks in layers by depth, left to
// right, each layer ordered to keep edges short, and the SVG that draws it.
// Plain SVG, no library: a workflow is a DAG (the server refuses cycles).
import { html } from "./vendor/htm-preact.js";

// The geometry of a node and of the gaps between them, in pixels.
export const NODE = { w: 168, h: 46, gapX: 64, gapY: 14, pad: 16 };

// layout places the tasks (jobs with id, task and depends_on): each task's
// depth is one more than the deepest task it comes after, so every edge
// points right. Within a layer, tasks are ordered by the mean place of the
// tasks they come after (the barycentre), which keeps most edges from
// crossing. It returns each task's node (x and y, by the tasks' order),
// the edges (from and to, indexes of tasks), and the drawing's width and
// height. It depends only on the graph's shape, which never changes: the
// statuses are drawn by Graph.
export function layout(jobs) {
  const index = new Map(jobs.map((j, i) => [j.id, i]));
  const parents = jobs.map((j) => (j.depends_on || []).map((id) => index.get(id)).filter((p) => p !== undefined));
  const children = jobs.map(() => []);
  parents.forEach((ps, i) => ps.forEach((p) => children[p].push(i)));
  // Depths in topological order (Kahn), without recursion: a chain of
  // 10,000 tasks is as deep as a stack would go.
  const depth = new Array(jobs.length).fill(0);
  const indegree = parents.map((ps) => ps.length);
  const ready = [];
  indegree.forEach((d, i) => d === 0 && ready.push(i));
  for (let k = 0; k < ready.length; k++) {
    const i = ready[k];
    for (const c of children[i]) {
      depth[c] = Math.max(depth[c], depth[i] + 1);
      if (--indegree[c] === 0) ready.push(c);
    }
  }
  const layers = [];
  jobs.forEach((_, i) => (layers[depth[i]] ||= []).push(i));
  const place = new Array(jobs.length).fill(0);
  layers.forEach((layer, d) => {
    if (d > 0) {
      const bary = (i) => (parents[i].length ? parents[i].reduce((s, p) => s + place[p], 0) / parents[i].length : 0);
      const keys = new Map(layer.map((i) => [i, bary(i)]));
      layer.sort((a, b) => keys.get(a) - keys.get(b) || a - b);
    }
    // A layer's place is relative (0 to 1), so layers of different sizes
    // line up by their middles.
    layer.forEach((i, k) => (place[i] = layer.length > 1 ? k / (layer.length - 1) : 0.5));
  });
  const tall = Math.max(1, ...layers.map((l) => l.length));
  const stepX = NODE.w + NODE.gapX;
  const stepY = NODE.h + NODE.gapY;
  const nodes = new Array(jobs.length);
  layers.forEach((layer, d) => {
    const top = NODE.pad + ((tall - layer.length) * stepY) / 2;
    layer.forEach((i, k) => (nodes[i] = { x: NODE.pad + d * stepX, y: top + k * stepY }));
  });
  const edges = [];
  parents.forEach((ps, i) => ps.forEach((p) => edges.push({ from: p, to: i })));
  return {
    nodes, edges,
    width: 2 * NODE.pad + layers.length * stepX - NODE.gapX,
    height: 2 * NODE.pad + tall * stepY - NODE.gapY,
  };
}

// statusOf is what a node says of its job: waiting for the tasks it comes
// after, or the job's status.
export const statusOf = (j) => (j.status === "pending" && j.waiting ? "waiting" : j.status);

// clip shortens text to n characters, with an ellipsis.
const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

// Graph draws the layout g of jobs: each task a box coloured by its
// status, linking to its job's page; each edge a curve from a task to one
// after it.
export function Graph({ g, jobs }) {
  const { w, h } = NODE;
  return html`<svg class="graph" width=${g.width} height=${g.height} viewBox=${`0 0 ${g.width} ${g.height}`}
      role="group" aria-label="The workflow's tasks and what each comes after">
    <defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto">
      <path d="M0,0 L8,4 L0,8 z" class="arrow" /></marker></defs>
    <g class="edges">${g.edges.map((e) => {
      const a = g.nodes[e.from], b = g.nodes[e.to];
      const x1 = a.x + w, y1 = a.y + h / 2, x2 = b.x - 2, y2 = b.y + h / 2, mx = (x1 + x2) / 2;
      return html`<path class=${"edge s-" + statusOf(jobs[e.from])} marker-end="url(#arrow)"
        d=${`M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`} />`;
    })}</g>
    ${g.nodes.map(({ x, y }, i) => {
      const job = jobs[i];
      const st = statusOf(job);
      return html`<a key=${job.id} href=${"#/jobs/" + job.id} class=${"node s-" + st} data-task=${job.task} data-status=${st}
          aria-label=${`${job.task}: ${st}`} transform=${`translate(${x},${y})`}>
        <title>${job.task} · ${job.topic} · ${st}${job.attempt ? ` · attempt ${job.attempt}` : ""}</title>
        <rect class="box" width=${w} height=${h} rx="7" />
        <rect class="mark" width="4" height=${h - 14} x="7" y="7" rx="2" />
        <text x="19" y="19" class="name">${clip(job.task, 21)}</text>
        <text x="19" y="36" class="st">${st}${job.attempt > 1 ? ` · attempt ${job.attempt}` : ""}</text>
      </a>`;
    })}
  </svg>`;
}
