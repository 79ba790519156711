// The worker side of inWorker: runs one check, posts its notes or its error.
import { parentPort, workerData } from "node:worker_threads";

const { module, name, args } = workerData;
const notes = [];
try {
  const checks = await import(`./checks/${module}.mjs`);
  await checks[name](args, (line) => notes.push(line));
  parentPort.postMessage({ ok: true, notes });
} catch (error) {
  parentPort.postMessage({ ok: false, message: String(error?.message ?? error), stack: String(error?.stack ?? "") });
}
