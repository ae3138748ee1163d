// The jobs of a PocketBase app that runs sluice (the Go module
// github.com/sluicehq/sluice/sluicepb), from the PocketBase JavaScript SDK.
//
//   import PocketBase from "pocketbase";
//   import { withJobs } from "@sluicehq/sluicepb";
//
//   const pb = withJobs(new PocketBase("http://127.0.0.1:8090"));
//   await pb.collection("users").authWithPassword(email, password);
//   const { job } = await pb.jobs.enqueue("send_invoice", { order: "o1" }, { maxRetries: 5 });
//
// Every call goes through pb.send, so it carries the auth store's token and
// fails with the SDK's ClientResponseError (status, and in response the
// problem's code and detail) like any other PocketBase call.

import type Client from "pocketbase";
import type { SendOptions } from "pocketbase";

/** A job's status. */
export type JobStatus = "pending" | "processing" | "completed" | "failed" | "cancelled";

/** The error of one failed attempt. */
export interface AttemptError {
  attempt: number;
  at: string;
  error: string;
  trace?: string;
  started_at?: string;
  client_id?: string;
}

/** One attempt of a job, as `get` reports its history. */
export interface Attempt {
  attempt: number;
  started_at: string;
  client_id?: string;
  ended_at?: string;
  error?: string;
  trace?: string;
}

/** What a running job last reported of its progress. */
export interface Progress {
  attempt: number;
  percent: number;
  message?: string;
  at: string;
}

/** A record its worker logged. */
export interface LogRecord {
  attempt?: number;
  level: string;
  time: string;
  message: string;
  attrs: Record<string, unknown>;
}

/** A job as the API answers it; times are RFC 3339 strings in UTC. */
export interface Job<P = unknown> {
  id: string;
  topic: string;
  queue: string;
  priority: number;
  payload: P;
  status: JobStatus;
  attempt: number;
  max_retries: number;
  run_at: string;
  created_at: string;
  attempted_at?: string;
  attempted_by?: string;
  finalized_at?: string;
  locked_by?: string;
  unique_key?: string;
  errors?: AttemptError[];
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** The job's key: the customer, account or order the limits per key count it under. */
  key?: string;
  /** The policy of the sequence of its key the job runs in, one at a time, in order. */
  sequence?: SequencePolicy;
  progress?: Progress;
  result?: unknown;
  /** Only in `get`'s answer. */
  history?: Attempt[];
  /** Only in `get`'s answer. */
  logs?: LogRecord[];
  /** Only in `get`'s answer. */
  logs_dropped?: number;
  /** The IDs of the jobs it waits for; in a workflow, the tasks it comes after. */
  depends_on?: string[];
  /** True while it still waits for them. */
  waiting?: boolean;
  /** The workflow or batch it belongs to. */
  group_id?: string;
  /** Its task's name, in a workflow. */
  task?: string;
  /** The workflow or batch it is a callback of. */
  callback_of?: string;
}

/**
 * What a job of a sequence that fails for good does to the rest: "hold"
 * holds them until it is requeued, cancelled or deleted; "continue" lets
 * them go on.
 */
export type SequencePolicy = "hold" | "continue";

/** Options of `enqueue`; each left out takes the server's default. */
export interface EnqueueOptions {
  /** When the job may run; default now. Not with `delay`. */
  runAt?: Date | string;
  /** How long from now it may run, in Go's syntax ("90s", "15m", "1h30m") or milliseconds. Not with `runAt`. */
  delay?: string | number;
  /** Retries after the first attempt: 0 for none; default the worker's, or 3. */
  maxRetries?: number;
  /** The queue; default "default". */
  queue?: string;
  /** Smaller runs first within the queue, -32768 to 32767; default 0. */
  priority?: number;
  /** While a pending or processing job has this key, that job is returned instead. */
  uniqueKey?: string;
  /** Labels to find the job by. */
  tags?: string[];
  /** A JSON object about the job. */
  metadata?: Record<string, unknown>;
  /**
   * The job's key (1 to 255 bytes): the customer, account or order the
   * limits per key of its queue and topic count it under.
   */
  key?: string;
  /**
   * Runs the job in the sequence of its key, one at a time, in order; it
   * needs a `key`. Default: the policy stored for its topic or queue, if any.
   */
  sequence?: SequencePolicy;
}

/** What `enqueue` answers: the job, and whether it was one already there with the same unique key. */
export interface EnqueueResult<P = unknown> {
  job: Job<P>;
  duplicate: boolean;
}

/** A filter of `list`; every member narrows it. */
export interface ListFilter {
  topics?: string[];
  statuses?: JobStatus[];
  queues?: string[];
  uniqueKey?: string;
  createdFrom?: Date | string;
  createdBefore?: Date | string;
  runAtFrom?: Date | string;
  runAtBefore?: Date | string;
  /** Jobs carrying every one of these tags (one of them with `anyTag`). */
  tags?: string[];
  anyTag?: boolean;
  /** Jobs whose metadata has each key with this string value. */
  metadata?: Record<string, string>;
  /** Jobs with one of these keys. */
  keys?: string[];
  /** The jobs of these workflows and batches, by ID. */
  groupIds?: string[];
  /** "oldest" (default) or "newest" first. */
  order?: "oldest" | "newest";
  /** Default 100, at most 10,000. */
  limit?: number;
  /** The previous page's `next_cursor`. */
  cursor?: string;
  offset?: number;
}

/** A page of `list`. */
export interface JobList {
  items: Job[];
  /** How many jobs the filter selects, on every page. */
  total: number;
  /** The next page's cursor; absent on the last page. */
  next_cursor?: string;
}

/** What a task does when a task it comes after fails for good: "cancel" (the default) is cancelled, "run" runs anyway. */
export type DependencyPolicy = "cancel" | "run";

/** Options of a workflow's task: a job's, and what a failure of a task it comes after does to it. */
export interface TaskOptions extends EnqueueOptions {
  onDependencyFailure?: DependencyPolicy;
}

/** A job of a batch, or a callback: what `enqueue` takes, as an object. */
export interface JobSpec<P = unknown> {
  topic: string;
  /** Any JSON value; undefined means {}. */
  payload?: P;
  options?: EnqueueOptions;
}

/** A task of a workflow: a job named `name`, run once every task named in `after` completed. */
export interface TaskSpec<P = unknown> {
  name: string;
  topic: string;
  payload?: P;
  options?: TaskOptions;
  after?: string[];
}

/** The callbacks of a workflow or batch: jobs enqueued once it is done. */
export interface GroupCallbacks {
  /** Once every job completed. */
  onSuccess?: JobSpec[];
  /** Once none is pending or running and one failed for good or was cancelled. */
  onFailure?: JobSpec[];
  /** Once none is pending or running, whatever their outcomes. */
  onComplete?: JobSpec[];
}

/** A workflow to enqueue: `workflows.create`. */
export interface WorkflowSpec extends GroupCallbacks {
  /** A label to find it by; not unique. */
  name?: string;
  /** One to 10,000 tasks. */
  tasks: TaskSpec[];
}

/** A batch to enqueue: `batches.create`. */
export interface BatchSpec extends GroupCallbacks {
  name?: string;
  /** Up to 10,000 jobs; none only when `keepOpen`. */
  jobs?: JobSpec[];
  /** Takes more jobs (`batches.add`) until `batches.close`; its callbacks wait for the close. */
  keepOpen?: boolean;
}

/** A workflow or batch enqueued: its ID, and its jobs as stored, in the order given. */
export interface EnqueuedGroup {
  id: string;
  kind: GroupKind;
  name: string;
  jobs: Job[];
}

/** What a group is. */
export type GroupKind = "workflow" | "batch";

/** Where a workflow or batch is: "open" (a batch kept open), "running", "completed" (every job), "failed". */
export type GroupStatus = "open" | "running" | "completed" | "failed";

/** A workflow or batch, with the counts of its jobs by status. */
export interface Group {
  id: string;
  kind: GroupKind;
  name: string;
  created_at: string;
  status: GroupStatus;
  counts: Partial<Record<JobStatus, number>>;
  started_at?: string;
  finished_at?: string;
  /** When it was found done and its callbacks enqueued. */
  settled_at?: string;
  /** How it ended, once settled. */
  outcome?: "success" | "failure";
}

/** A callback of a workflow or batch, with its job once enqueued. */
export interface GroupCallback {
  on: "success" | "failure" | "complete";
  topic: string;
  job_id: string;
  job?: Job;
}

/** A workflow or batch with its jobs, oldest first, and its callbacks. */
export interface GroupDetail extends Group {
  jobs: Job[];
  callbacks: GroupCallback[];
}

/** A page of workflows or batches, newest first. */
export interface GroupList {
  items: Group[];
  /** The next page's cursor; absent on the last page. */
  next_cursor?: string;
}

/** A filter of `workflows.list` and `batches.list`; every member narrows it. */
export interface GroupFilter {
  name?: string;
  statuses?: GroupStatus[];
  createdFrom?: Date | string;
  createdBefore?: Date | string;
  /** Default 100, at most 10,000. */
  limit?: number;
  /** The previous page's `next_cursor`. */
  cursor?: string;
}

/** The jobs an action changed. */
export interface JobsChanged {
  items: Job[];
  count: number;
}

/** A filter of `stats`. */
export interface StatsFilter {
  topics?: string[];
  queues?: string[];
  /** The window of the outcome figures, in Go's syntax; default "1h". */
  window?: string;
  /** The series' bucket, in Go's syntax; default "1m". */
  bucket?: string;
}

/** Counts by status and the outcomes of a recent window. */
export interface Stats {
  total: number;
  by_status: Partial<Record<JobStatus, number>>;
  by_topic: Record<string, Partial<Record<JobStatus, number>>>;
  by_queue: Record<string, Partial<Record<JobStatus, number>>>;
  window_seconds: number;
  completed: number;
  failed: number;
  /** completed / (completed + failed); null when neither happened in the window. */
  success_rate: number | null;
  avg_duration_ms?: number;
  p95_duration_ms?: number;
  bucket_seconds: number;
  series: { start: string; completed: number; failed: number }[];
}

/** What happened to a job, as the event stream reports it. */
export type ChangeKind =
  | "enqueued"
  | "started"
  | "progressed"
  | "logged"
  | "retried"
  | "requeued"
  | "completed"
  | "failed"
  | "cancelled"
  | "deleted";

/** A job's state in a change: no payload, errors, result or logs (`get` them). */
export interface JobState {
  id: string;
  topic: string;
  queue: string;
  status: JobStatus;
  attempt: number;
  max_retries: number;
  run_at: string;
  created_at: string;
  attempted_at?: string;
  finalized_at?: string;
  locked_by?: string;
  progress?: Progress;
  logged?: number;
}

/** One change of a job. */
export interface JobChange {
  /** The event's id, the stream's own sequence. */
  id: string;
  kind: ChangeKind;
  job: JobState;
  at: string;
}

/** A record a worker of the serving process logged, sent as it is logged. */
export interface JobLogEvent {
  job_id: string;
  attempt: number;
  record: LogRecord;
}

/** Options of `subscribe`. */
export interface SubscribeOptions {
  /** Only the changes of these jobs. */
  ids?: string[];
  /** Only the changes of jobs of these topics. */
  topics?: string[];
  /** Records logged by workers of the serving process. */
  onLog?: (event: JobLogEvent) => void;
  /**
   * Some changes were not sent (`"resync"`), or the stream could not resume
   * where it left off, or fell behind and had events dropped (`"reset"`):
   * refetch what you show. A stream of a few jobs is never near the
   * server's limits; one of every change may be reset when jobs change
   * faster than it sends.
   */
  onResync?: (reason: "resync" | "reset") => void;
  /** An error of the stream; it reconnects by itself unless the error is a refusal (401, 403, 400). */
  onError?: (err: unknown) => void;
  /** Extra headers; the auth store's token is sent unless an Authorization header is given. */
  headers?: Record<string, string>;
}

/** Ends a subscription; the promise settles once the stream is closed. */
export type Unsubscribe = () => Promise<void>;

/** Options of `withJobs`. */
export interface JobsOptions {
  /** Where the app serves the jobs API; default "/api/jobs". */
  basePath?: string;
}

/** The calls of the jobs API; `pb.jobs` after `withJobs(pb)`. */
export class JobsService {
  readonly client: Client;
  readonly basePath: string;
  /** Workflows: graphs of jobs enqueued together. */
  readonly workflows: WorkflowsService;
  /** Batches: jobs watched as one, with callbacks. */
  readonly batches: BatchesService;

  constructor(client: Client, options: JobsOptions = {}) {
    this.client = client;
    this.basePath = (options.basePath ?? "/api/jobs").replace(/\/+$/, "");
    const send: Sender = (path, base, extra) => this.send(path, base, extra);
    this.workflows = new WorkflowsService(this.basePath + "/workflows", send);
    this.batches = new BatchesService(this.basePath + "/batches", send);
  }

  /** Enqueues a job of topic with payload (any JSON value; undefined means {}). */
  async enqueue<P = unknown>(
    topic: string,
    payload?: P,
    options: EnqueueOptions = {},
    send?: SendOptions,
  ): Promise<EnqueueResult<P>> {
    return this.send(this.basePath + "/enqueue", { method: "POST", body: jobBody(topic, payload, options) }, send);
  }

  /** Returns one job with its history, progress, result and logs. */
  async get<P = unknown>(id: string, send?: SendOptions): Promise<Job<P>> {
    return this.send(this.jobPath(id), { method: "GET" }, send);
  }

  /** Returns a page of the jobs filter selects. */
  async list(filter: ListFilter = {}, send?: SendOptions): Promise<JobList> {
    const query: Record<string, unknown> = {};
    put(query, "topics", filter.topics);
    put(query, "statuses", filter.statuses);
    put(query, "queues", filter.queues);
    put(query, "unique_key", filter.uniqueKey);
    put(query, "created_from", filter.createdFrom && time(filter.createdFrom));
    put(query, "created_before", filter.createdBefore && time(filter.createdBefore));
    put(query, "run_at_from", filter.runAtFrom && time(filter.runAtFrom));
    put(query, "run_at_before", filter.runAtBefore && time(filter.runAtBefore));
    put(query, "tags", filter.tags);
    put(query, "any_tag", filter.anyTag);
    for (const [key, value] of Object.entries(filter.metadata ?? {})) query["metadata." + key] = value;
    put(query, "keys", filter.keys);
    put(query, "group_ids", filter.groupIds);
    put(query, "order", filter.order);
    put(query, "limit", filter.limit);
    put(query, "cursor", filter.cursor);
    put(query, "offset", filter.offset);
    return this.send(this.basePath, { method: "GET", query }, send);
  }

  /** Returns counts by status, topic and queue, and the outcomes of a recent window. */
  async stats(filter: StatsFilter = {}, send?: SendOptions): Promise<Stats> {
    const query: Record<string, unknown> = {};
    put(query, "topics", filter.topics);
    put(query, "queues", filter.queues);
    put(query, "window", filter.window);
    put(query, "bucket", filter.bucket);
    return this.send(this.basePath + "/stats", { method: "GET", query }, send);
  }

  /** Makes a failed or cancelled job pending again, with its retries renewed; returns it as it is now. */
  async requeue(id: string, send?: SendOptions): Promise<Job> {
    return this.act(id, "requeue", send);
  }

  /** Cancels a pending or processing job; returns it as it is now. */
  async cancel(id: string, send?: SendOptions): Promise<Job> {
    return this.act(id, "cancel", send);
  }

  /** Makes a pending job waiting for a later run_at due now; returns it as it is now. */
  async retry(id: string, send?: SendOptions): Promise<Job> {
    return this.act(id, "retry", send);
  }

  /** Deletes a job that is not processing; returns it as it was. */
  async delete(id: string, send?: SendOptions): Promise<Job> {
    const res = await this.send<{ job: Job }>(this.jobPath(id), { method: "DELETE" }, send);
    return res.job;
  }

  /**
   * Calls onChange with every change to the jobs the options select, made
   * by any process on the app's database, within about a second. The
   * stream reconnects by itself and resumes where it left off; it stops on
   * a refusal (401, 403 or 400), reported to onError. The promise resolves
   * once the stream is open.
   */
  async subscribe(onChange: (change: JobChange) => void, options: SubscribeOptions = {}): Promise<Unsubscribe> {
    const stream = new EventStream(this, onChange, options);
    await stream.opened;
    return () => stream.close();
  }

  private async act(id: string, action: string, send?: SendOptions): Promise<Job> {
    const res = await this.send<{ job: Job }>(this.jobPath(id) + "/" + action, { method: "POST" }, send);
    return res.job;
  }

  private jobPath(id: string): string {
    if (!id) throw new TypeError("a job id is required");
    return this.basePath + "/" + encodeURIComponent(id);
  }

  // send sends a request through the PocketBase client. Requests are not
  // cancelled automatically unless a requestKey is given: two enqueues at
  // once are two jobs, not one request cancelling the other.
  private send<T>(path: string, base: SendOptions, extra?: SendOptions): Promise<T> {
    const options: SendOptions = { requestKey: null, ...base, ...extra };
    if (base.query || extra?.query) options.query = { ...base.query, ...extra?.query };
    return this.client.send<T>(path, options);
  }
}

/** Sends a request of the jobs API, as JobsService does. */
export type Sender = <T>(path: string, base: SendOptions, extra?: SendOptions) => Promise<T>;

/** The calls workflows and batches share. */
export abstract class GroupsService {
  constructor(
    readonly basePath: string,
    protected readonly send: Sender,
  ) {}

  /** Returns a page of those filter selects, newest first. */
  async list(filter: GroupFilter = {}, send?: SendOptions): Promise<GroupList> {
    return this.send(this.basePath, { method: "GET", query: groupQuery(filter) }, send);
  }

  /** Returns one, with its jobs and callbacks. */
  async get(id: string, send?: SendOptions): Promise<GroupDetail> {
    return this.send(this.path(id), { method: "GET" }, send);
  }

  /** Cancels its pending and running jobs; returns them. */
  async cancel(id: string, send?: SendOptions): Promise<JobsChanged> {
    return this.send(this.path(id) + "/cancel", { method: "POST" }, send);
  }

  /**
   * Runs its failed and cancelled jobs again, with fresh retries (a
   * workflow's tasks after others wait for them again); returns the jobs
   * changed.
   */
  async retry(id: string, send?: SendOptions): Promise<JobsChanged> {
    return this.send(this.path(id) + "/retry", { method: "POST" }, send);
  }

  protected path(id: string): string {
    if (!id) throw new TypeError("an id is required");
    return this.basePath + "/" + encodeURIComponent(id);
  }
}

/** The calls on workflows; `pb.jobs.workflows`. */
export class WorkflowsService extends GroupsService {
  /** Enqueues a workflow: every task and callback, or none. */
  async create(workflow: WorkflowSpec, send?: SendOptions): Promise<EnqueuedGroup> {
    const body: Record<string, unknown> = {
      tasks: workflow.tasks.map((t) => {
        const task = jobBody(t.topic, t.payload, t.options);
        task.name = t.name;
        if (t.after !== undefined) task.after = t.after;
        if (t.options?.onDependencyFailure !== undefined) task.on_dependency_failure = t.options.onDependencyFailure;
        return task;
      }),
    };
    if (workflow.name !== undefined) body.name = workflow.name;
    putCallbacks(body, workflow);
    return this.send(this.basePath, { method: "POST", body }, send);
  }
}

/** The calls on batches; `pb.jobs.batches`. */
export class BatchesService extends GroupsService {
  /** Enqueues a batch: every job and callback, or none. */
  async create(batch: BatchSpec, send?: SendOptions): Promise<EnqueuedGroup> {
    const body: Record<string, unknown> = {};
    if (batch.name !== undefined) body.name = batch.name;
    if (batch.jobs !== undefined) body.jobs = batch.jobs.map(specBody);
    if (batch.keepOpen !== undefined) body.keep_open = batch.keepOpen;
    putCallbacks(body, batch);
    return this.send(this.basePath, { method: "POST", body }, send);
  }

  /** Adds jobs to a batch kept open; returns them. */
  async add(id: string, jobs: JobSpec[], send?: SendOptions): Promise<JobsChanged> {
    return this.send(this.path(id) + "/jobs", { method: "POST", body: { jobs: jobs.map(specBody) } }, send);
  }

  /** Closes a batch kept open: it is done, and its callbacks enqueued, once its jobs are; returns it. */
  async close(id: string, send?: SendOptions): Promise<GroupDetail> {
    return this.send(this.path(id) + "/close", { method: "POST" }, send);
  }
}

// jobBody returns a job as the API's bodies name its members.
function jobBody(topic: string, payload: unknown, options: EnqueueOptions = {}): Record<string, unknown> {
  const body: Record<string, unknown> = { topic };
  if (payload !== undefined) body.payload = payload;
  if (options.runAt !== undefined) body.run_at = time(options.runAt);
  if (options.delay !== undefined) {
    body.delay = typeof options.delay === "number" ? `${options.delay}ms` : options.delay;
  }
  if (options.maxRetries !== undefined) body.max_retries = options.maxRetries;
  if (options.queue !== undefined) body.queue = options.queue;
  if (options.priority !== undefined) body.priority = options.priority;
  if (options.uniqueKey !== undefined) body.unique_key = options.uniqueKey;
  if (options.tags !== undefined) body.tags = options.tags;
  if (options.metadata !== undefined) body.metadata = options.metadata;
  if (options.key !== undefined) body.key = options.key;
  if (options.sequence !== undefined) body.sequence = options.sequence;
  return body;
}

function specBody(job: JobSpec): Record<string, unknown> {
  return jobBody(job.topic, job.payload, job.options);
}

function putCallbacks(body: Record<string, unknown>, cb: GroupCallbacks): void {
  if (cb.onSuccess !== undefined) body.on_success = cb.onSuccess.map(specBody);
  if (cb.onFailure !== undefined) body.on_failure = cb.onFailure.map(specBody);
  if (cb.onComplete !== undefined) body.on_complete = cb.onComplete.map(specBody);
}

function groupQuery(filter: GroupFilter): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  put(query, "name", filter.name);
  put(query, "statuses", filter.statuses);
  put(query, "created_from", filter.createdFrom && time(filter.createdFrom));
  put(query, "created_before", filter.createdBefore && time(filter.createdBefore));
  put(query, "limit", filter.limit);
  put(query, "cursor", filter.cursor);
  return query;
}

/** A PocketBase client with `jobs`. */
export type WithJobs<C extends Client> = C & { jobs: JobsService };

/** Adds `jobs`, a JobsService, to a PocketBase client and returns it. */
export function withJobs<C extends Client>(client: C, options: JobsOptions = {}): WithJobs<C> {
  const c = client as WithJobs<C>;
  c.jobs = new JobsService(client, options);
  return c;
}

function time(t: Date | string): string {
  return t instanceof Date ? t.toISOString() : t;
}

function put(query: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined || value === null || value === "") return;
  if (Array.isArray(value) && value.length === 0) return;
  query[key] = value;
}

// EventStream reads the Server-Sent Events of the jobs API with fetch, so
// that it can send the auth token as a header (EventSource cannot), and
// reconnects with the last event id when the connection drops.
class EventStream {
  readonly opened: Promise<void>;
  private readonly abort = new AbortController();
  private lastEventId = "";
  private retryMs = 2000;
  private done: Promise<void>;

  constructor(
    private readonly jobs: JobsService,
    private readonly onChange: (change: JobChange) => void,
    private readonly options: SubscribeOptions,
  ) {
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    this.opened = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.done = this.run(resolve, reject);
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.done;
  }

  private async run(opened: () => void, failed: (err: unknown) => void): Promise<void> {
    let first = true;
    while (!this.abort.signal.aborted) {
      try {
        const res = await this.connect();
        if (first) {
          first = false;
          opened();
        }
        await this.read(res);
      } catch (err) {
        if (this.abort.signal.aborted) break;
        if (first) {
          failed(err);
          return;
        }
        this.options.onError?.(err);
        if (err instanceof StreamError && err.status >= 400 && err.status < 500 && err.status !== 429) return;
      }
      if (this.abort.signal.aborted) break;
      await sleep(this.retryMs, this.abort.signal);
    }
  }

  private async connect(): Promise<Response> {
    const client = this.jobs.client;
    const params = new URLSearchParams();
    for (const id of this.options.ids ?? []) params.append("ids", id);
    for (const topic of this.options.topics ?? []) params.append("topics", topic);
    if (this.lastEventId) params.set("last_event_id", this.lastEventId);
    let url = client.buildURL(this.jobs.basePath + "/events");
    const qs = params.toString();
    if (qs) url += "?" + qs;
    const headers: Record<string, string> = { Accept: "text/event-stream", ...this.options.headers };
    if (client.authStore.token && !Object.keys(headers).some((h) => h.toLowerCase() === "authorization")) {
      headers.Authorization = client.authStore.token;
    }
    const res = await fetch(url, { headers, signal: this.abort.signal, cache: "no-store" });
    if (!res.ok || !res.body) {
      let detail: unknown;
      try {
        detail = await res.json();
      } catch {
        detail = undefined;
      }
      throw new StreamError(res.status, url, detail);
    }
    return res;
  }

  private async read(res: Response): Promise<void> {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let event = "";
    let data: string[] = [];
    let id: string | undefined;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let nl: number;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + (buf[nl] === "\r" && buf[nl + 1] === "\n" ? 2 : 1));
          if (line === "") {
            if (id !== undefined) this.lastEventId = id;
            if (data.length > 0) this.dispatch(event || "message", data.join("\n"));
            event = "";
            data = [];
            id = undefined;
            continue;
          }
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? "" : line.slice(colon + 1);
          if (val.startsWith(" ")) val = val.slice(1);
          switch (field) {
            case "event":
              event = val;
              break;
            case "data":
              data.push(val);
              break;
            case "id":
              id = val;
              break;
            case "retry":
              if (/^\d+$/.test(val)) this.retryMs = Number(val);
              break;
          }
        }
      }
    } finally {
      reader.releaseLock();
    }
  }

  private dispatch(event: string, data: string): void {
    switch (event) {
      case "job":
        this.onChange(JSON.parse(data) as JobChange);
        break;
      case "log":
        this.options.onLog?.(JSON.parse(data) as JobLogEvent);
        break;
      case "resync":
      case "reset":
        this.options.onResync?.(event);
        break;
    }
  }
}

/** StreamError is a refusal of the event stream: its HTTP status and the problem the server answered. */
export class StreamError extends Error {
  constructor(
    readonly status: number,
    readonly url: string,
    readonly response: unknown,
  ) {
    const detail = (response as { detail?: string; message?: string } | undefined) ?? {};
    super(`jobs event stream: ${status}${detail.detail || detail.message ? ": " + (detail.detail || detail.message) : ""}`);
    this.name = "StreamError";
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
