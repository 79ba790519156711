// Runs a check in a child process. The EVM awaits a promise at nearly every
// state access, and node's test runner tracks every promise of the process
// it runs in (to tie stray errors to tests): in the test's own process a
// check takes three times as long. (Not a worker thread: ffjavascript,
// under circomlibjs, takes any worker thread for one of its own.)
import { fork } from "node:child_process";

/**
 * Runs export `name` of lib/checks/`module`.mjs with `args` in a child
 * process; resolves to the lines it noted, or rejects with its error (an
 * assertion failure keeps its message, the stack says where in the child).
 */
export function inChild(module, name, args) {
  return new Promise((resolve, reject) => {
    const child = fork(new URL("./child-entry.mjs", import.meta.url), [module, name], { serialization: "advanced" });
    let outcome;
    // A check's libraries may leave threads of their own running (circomlibjs
    // starts ffjavascript's): the outcome ends the child.
    child.on("message", (message) => {
      if (message.ready) return child.send(args);
      outcome = message;
      child.kill();
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (outcome?.ok) resolve(outcome.notes);
      else if (outcome) reject(Object.assign(new Error(outcome.message), { stack: `${outcome.message}\n(in the child) ${outcome.stack}` }));
      else reject(new Error(`the child running ${module}.${name} exited (${signal ?? `code ${code}`}) with no outcome`));
    });
  });
}
