/// <reference path="../pb_data/types.d.ts" />

// A JavaScript worker: it writes an order's receipt and completes its job
// in the same transaction, so a receipt is written once, or the job runs
// again. A throw retries the job, with the error's message recorded.
$jobs.work("receipt", (job) => {
  $app.runInTransaction((txApp) => {
    const order = txApp.findRecordById("orders", job.payload.order);
    if (order.getString("status") !== "charged") {
      throw new Error("order " + order.id + " is not charged yet");
    }
    order.set("receipt", "Charged " + order.getInt("amount") + " for order " + order.id);
    txApp.save(order);
    $jobs.ack(txApp, job, { receipt: order.getString("receipt") });
  });
}, { maxRetries: 5 });

// An order updated to charged enqueues its receipt in the transaction of
// the update: if the update rolls back, there is no receipt job. The
// update may already be in a transaction (the charge worker's); if it is
// not (an edit in the admin UI), one is opened around it, as PocketBase
// does for a delete.
onRecordUpdateExecute((e) => {
  const charged = e.record.getString("status") === "charged" && e.record.original().getString("status") !== "charged";
  if (!charged) {
    return e.next();
  }
  const app = e.app;
  try {
    app.runInTransaction((txApp) => {
      e.app = txApp;
      e.next();
      $jobs.enqueueTx(txApp, "receipt", { order: e.record.id }, { uniqueKey: "receipt-" + e.record.id });
    });
  } finally {
    e.app = app;
  }
}, "orders");
