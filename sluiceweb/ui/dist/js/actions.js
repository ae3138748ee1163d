// The operator's actions on jobs, with the statuses each applies to (the
// rules of the API: see docs/operations.md): applies for one job, and
// statuses (with later, for jobs due later only) for a count of those a
// filter selects.

export const ACTIONS = [
  { name: "requeue", label: "Requeue", done: "requeued", applies: (j) => j.status === "failed" || j.status === "cancelled",
    statuses: ["failed", "cancelled"],
    why: "Runs the job again from its first attempt." },
  { name: "retry", label: "Run now", done: "made due now", applies: (j) => j.status === "pending",
    statuses: ["pending"], later: true,
    why: "Makes the pending job due now, skipping the rest of its wait." },
  { name: "cancel", label: "Cancel", done: "cancelled", danger: true, applies: (j) => j.status === "pending" || j.status === "processing",
    statuses: ["pending", "processing"],
    why: "A pending job will not run; a running one is told to stop and is not retried." },
  { name: "delete", label: "Delete", done: "deleted", danger: true, applies: (j) => j.status !== "processing",
    statuses: ["pending", "completed", "failed", "cancelled"],
    why: "Removes the job and its history for good." },
];

export const action = (name) => ACTIONS.find((a) => a.name === name);
