// The dashboard's calls to the sluice API. Every URL is relative, so the
// dashboard works wherever the handler is mounted: the page is always the
// mount root.

// ApiError is a failed call: the problem+json body's detail, code and
// field when the server sent one.
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && body.detail ? body.detail : (status ? `HTTP ${status}` : "the server did not answer");
    super(detail);
    this.status = status;
    this.code = (body && body.code) || "";
    this.field = (body && body.field) || "";
    this.title = (body && body.title) || "";
  }
}

// request calls the API: path is relative to api/; body, when given, is
// sent as JSON. It resolves to the decoded answer and rejects with an
// ApiError.
export async function request(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch("api/" + path, init);
  } catch (e) {
    throw new ApiError(0, { detail: "the server did not answer: " + e.message, code: "network" });
  }
  const type = res.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await res.json().catch(() => null) : null;
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const get = (path) => request("GET", path);

// query encodes params for a query string, dropping empty values and
// joining arrays with commas.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)) continue;
    q.set(k, Array.isArray(v) ? v.join(",") : String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// jobAction applies action (cancel, requeue, retry, delete) to one job.
export function jobAction(id, action) {
  const path = "jobs/" + encodeURIComponent(id);
  return action === "delete" ? request("DELETE", path) : request("POST", path + "/" + action);
}

// actOnIds applies action to each job of ids, a few at a time, and
// resolves to how many it changed and the errors of the others.
export async function actOnIds(ids, action) {
  const out = { changed: 0, failed: [] };
  const queue = [...ids];
  const worker = async () => {
    while (queue.length) {
      const id = queue.shift();
      try {
        await jobAction(id, action);
        out.changed++;
      } catch (e) {
        out.failed.push({ id, error: e });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, ids.length) }, worker));
  return out;
}
