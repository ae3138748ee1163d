// Declarations of $jobs for pb_hooks files, beside PocketBase's own
// types.d.ts: reference both at the top of a *.pb.js file,
//
//   /// <reference path="../pb_data/types.d.ts" />
//   /// <reference path="../node_modules/@sluicehq/sluicepb/pb_hooks.d.ts" />
//
// (or copy this file next to them). $jobs exists when the app registers
// the jsvm plugin with Jobs.JSConfig (Go package sluicepb); see
// docs/pocketbase-js.md.

declare namespace sluicepb {
  type JobStatus = "pending" | "processing" | "completed" | "failed" | "cancelled";

  /** A job as $jobs returns it; times are RFC 3339 strings in UTC. */
  interface Job<P = any> {
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
    errors?: { attempt: number; at: string; error: string; trace?: string }[];
    result?: any;
    progress?: { attempt: number; percent: number; message?: string; at: string };
    tags?: string[];
    metadata?: { [key: string]: any };
    /** The job's key: the customer, account or order its limits per key count it under. */
    key?: string;
    /** The policy of the sequence of its key the job runs in. */
    sequence?: "hold" | "continue";
    logs?: { attempt: number; level: string; time: string; message: string; attrs: { [key: string]: any } }[];
    logs_dropped?: number;
    /** The IDs of the jobs it waits for (in a workflow, the tasks it comes after). */
    depends_on?: string[];
    /** True while it waits for them. */
    waiting?: boolean;
    /** The workflow or batch it belongs to. */
    group_id?: string;
    /** Its task's name, in a workflow. */
    task?: string;
    /** The workflow or batch it is a callback of. */
    callback_of?: string;
  }

  /** The job a JavaScript worker's handler gets. */
  interface WorkerJob<P = any> extends Job<P> {
    /** Reports how far the job is: percent from 0 to 100 (job.progress is the progress stored earlier). */
    reportProgress(percent: number, message?: string): void;
    /** Logs records kept with the job. */
    logger: {
      debug(message: string, attrs?: { [key: string]: any }): void;
      info(message: string, attrs?: { [key: string]: any }): void;
      warn(message: string, attrs?: { [key: string]: any }): void;
      error(message: string, attrs?: { [key: string]: any }): void;
    };
  }

  interface EnqueueOptions {
    /** A Date or an RFC 3339 string; not with delay. */
    runAt?: Date | string;
    /** Milliseconds, or Go's syntax ("90s", "1h30m"); not with runAt. */
    delay?: number | string;
    /** Retries after the first attempt; 0 for none. */
    maxRetries?: number;
    queue?: string;
    priority?: number;
    uniqueKey?: string;
    tags?: string[];
    metadata?: { [key: string]: any };
    /** The job's key, 1 to 255 bytes. */
    key?: string;
    /** Runs the job in the sequence of its key, one at a time, in order; it needs a key. */
    sequence?: "hold" | "continue";
  }

  /** The options of a workflow's task: a job's, and what a failure of a task it comes after does to it. */
  interface TaskOptions extends EnqueueOptions {
    /** "cancel" (the default): it is cancelled; "run": it runs anyway. */
    onDependencyFailure?: "cancel" | "run";
  }

  /** A job of $jobs.addToBatch. */
  interface JobSpec<P = any> {
    topic: string;
    payload?: P;
    options?: EnqueueOptions;
  }

  /** A workflow or batch enqueued: its ID and its jobs, in the order added. */
  interface EnqueuedGroup {
    id: string;
    kind: "workflow" | "batch";
    name: string;
    jobs: Job[];
  }

  type GroupStatus = "open" | "running" | "completed" | "failed";

  /** A workflow or batch; jobs and callbacks only from get and closeBatch. */
  interface Group {
    id: string;
    kind: "workflow" | "batch";
    name: string;
    created_at: string;
    status: GroupStatus;
    counts: { [status: string]: number };
    started_at?: string;
    finished_at?: string;
    /** When it was found done and its callbacks enqueued. */
    settled_at?: string;
    outcome?: "success" | "failure";
    jobs?: Job[];
    callbacks?: { on: "success" | "failure" | "complete"; topic: string; job_id: string; job?: Job }[];
  }

  interface GroupFilter {
    name?: string;
    statuses?: GroupStatus[];
    createdFrom?: Date | string;
    createdBefore?: Date | string;
    limit?: number;
    cursor?: string;
  }

  /** Callbacks of a workflow or batch: jobs enqueued once it is done. */
  interface GroupCallbacks<B> {
    /** Once every job completed. */
    onSuccess<P = any>(topic: string, payload?: P, options?: EnqueueOptions): B;
    /** Once none is pending or running and one failed for good or was cancelled. */
    onFailure<P = any>(topic: string, payload?: P, options?: EnqueueOptions): B;
    /** Once none is pending or running, whatever their outcomes. */
    onComplete<P = any>(topic: string, payload?: P, options?: EnqueueOptions): B;
  }

  /** What $jobs.workflow(name) returns. */
  interface WorkflowBuilder extends GroupCallbacks<WorkflowBuilder> {
    /** Adds the task named task, run once every task named in after completed. */
    add<P = any>(task: string, topic: string, payload?: P, options?: TaskOptions | null, after?: string[]): WorkflowBuilder;
    /** Enqueues every task and callback, committed at once. */
    enqueue(): EnqueuedGroup;
    /** Enqueues in txApp's transaction ($app.runInTransaction). */
    enqueueTx(txApp: any): EnqueuedGroup;
  }

  /** What $jobs.batch(name) returns. */
  interface BatchBuilder extends GroupCallbacks<BatchBuilder> {
    add<P = any>(topic: string, payload?: P, options?: EnqueueOptions | null): BatchBuilder;
    /** Takes more jobs ($jobs.addToBatch) until $jobs.closeBatch. */
    keepOpen(): BatchBuilder;
    enqueue(): EnqueuedGroup;
    enqueueTx(txApp: any): EnqueuedGroup;
  }

  interface ListFilter {
    topics?: string[];
    statuses?: JobStatus[];
    queues?: string[];
    uniqueKey?: string;
    createdFrom?: Date | string;
    createdBefore?: Date | string;
    runAtFrom?: Date | string;
    runAtBefore?: Date | string;
    tags?: string[];
    anyTag?: boolean;
    metadata?: { [key: string]: string };
    /** Jobs with one of these keys. */
    keys?: string[];
    /** The tasks and jobs of these workflows and batches. */
    groupIds?: string[];
    order?: "oldest" | "newest";
    limit?: number;
    offset?: number;
    cursor?: string;
  }

  interface StatsFilter {
    topics?: string[];
    queues?: string[];
    /** Milliseconds, or Go's syntax; default "1h". */
    window?: number | string;
    /** Milliseconds, or Go's syntax; none by default. */
    bucket?: number | string;
  }

  interface WorkOptions {
    /** Retries of the topic's jobs enqueued without maxRetries; 0 for none. */
    maxRetries?: number;
    /** How long a job may run before the handler is interrupted: milliseconds, or Go's syntax. */
    timeout?: number | string;
  }

  interface Jobs {
    enqueue<P = any>(topic: string, payload?: P, options?: EnqueueOptions): { job: Job<P>; duplicate: boolean };
    /** Enqueues in txApp's transaction ($app.runInTransaction). */
    enqueueTx<P = any>(txApp: any, topic: string, payload?: P, options?: EnqueueOptions): { job: Job<P>; duplicate: boolean };
    get(id: string): Job;
    list(filter?: ListFilter): { items: Job[]; total: number; next_cursor?: string };
    stats(filter?: StatsFilter): {
      total: number;
      by_status: { [status: string]: number };
      by_topic: { [topic: string]: { [status: string]: number } };
      by_queue: { [queue: string]: { [status: string]: number } };
      window_seconds: number;
      completed: number;
      failed: number;
      /** completed / (completed + failed); null when neither happened in the window. */
      success_rate: number | null;
      avg_duration_ms: number;
      p95_duration_ms: number;
      /** With a bucket: completed and failed jobs per bucket, oldest first. */
      bucket_seconds?: number;
      series?: { start: string; completed: number; failed: number }[];
    };
    requeue(id: string): Job;
    cancel(id: string): Job;
    retry(id: string): Job;
    delete(id: string): Job;
    /**
     * Registers a worker for topic while pb_hooks load. A throw retries the
     * job with its message recorded; a returned value is its result.
     */
    work<P = any>(topic: string, handler: (job: WorkerJob<P>) => any, options?: WorkOptions): void;
    /** Completes a worker's job in txApp's transaction, with an optional result. */
    ack(txApp: any, job: Job, result?: any): void;
    /** Records a failure of a worker's job in txApp's transaction. */
    nack(txApp: any, job: Job, message: string): void;

    /** A workflow to build and enqueue: tasks, each a job, run once those they come after completed. */
    workflow(name?: string): WorkflowBuilder;
    /** A batch to build and enqueue: jobs watched as one, with callbacks. */
    batch(name?: string): BatchBuilder;
    getWorkflow(id: string): Group;
    listWorkflows(filter?: GroupFilter): { items: Group[]; next_cursor?: string };
    /** Cancels its pending and running tasks; returns them. */
    cancelWorkflow(id: string): { items: Job[]; count: number };
    /** Runs its failed tasks again, and those after them; returns the tasks changed. */
    retryWorkflow(id: string): { items: Job[]; count: number };
    getBatch(id: string): Group;
    listBatches(filter?: GroupFilter): { items: Group[]; next_cursor?: string };
    cancelBatch(id: string): { items: Job[]; count: number };
    retryBatch(id: string): { items: Job[]; count: number };
    /** Adds jobs to a batch kept open. */
    addToBatch(id: string, jobs: JobSpec[]): { items: Job[]; count: number };
    /** addToBatch in txApp's transaction. */
    addToBatchTx(txApp: any, id: string, jobs: JobSpec[]): { items: Job[]; count: number };
    /** Closes a batch kept open: it is done once its jobs are. */
    closeBatch(id: string): Group;
  }
}

declare var $jobs: sluicepb.Jobs;
