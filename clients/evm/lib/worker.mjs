// Runs a check in a worker thread. The EVM awaits a promise at nearly every
// state access, and node's test runner tracks every promise of the thread
// it runs in (to tie stray errors to tests): in the test's own thread a
// check takes three times as long. A worker has no such tracking.
import { Worker } from "node:worker_threads";

/**
 * Runs export `name` of lib/checks/`module`.mjs with `args` in a worker;
 * resolves to the lines it noted, or rejects with its error (an assertion
 * failure keeps its message, the stack says where in the worker).
 */
export function inWorker(module, name, args) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./worker-entry.mjs", import.meta.url), { workerData: { module, name, args } });
    let outcome;
    worker.on("message", (message) => (outcome = message));
    worker.on("error", reject);
    worker.on("exit", (code) => {
      if (outcome?.ok) resolve(outcome.notes);
      else if (outcome) reject(Object.assign(new Error(outcome.message), { stack: `${outcome.message}\n(in the worker) ${outcome.stack}` }));
      else reject(new Error(`the worker running ${module}.${name} exited with code ${code} and no outcome`));
    });
  });
}
