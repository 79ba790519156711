// A wallet that keeps its notes' witnesses current from a tile store
// served by a static HTTP server, with the WebAssembly tracker:
//
//   cairn publish db --to ./tiles
//   node examples/wallet.mjs ./tiles 5 1234        # marks leaves 5 and 1234
//   node examples/wallet.mjs ./tiles               # later: follows the tree
//
// It serves ./tiles on 127.0.0.1 (any static server or CDN would do), loads
// the module (dist/cairn.wasm: build it and `npm run build` first), syncs
// (fetching the checkpoint and whole tiles only), prints each witness as
// the proof JSON and keeps the tracker's state in wallet.bin between runs.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, resolve } from "node:path";
import { hashers, parseCheckpoint } from "cairn-verify";
import { loadWasm } from "cairn-verify/wasm";

const [dir, ...marks] = process.argv.slice(2);
if (dir === undefined) {
  console.error("usage: node examples/wallet.mjs TILE_DIR [LEAF_INDEX...]");
  process.exit(2);
}
const root = resolve(dir);
const stateFile = "wallet.bin";

const fetched = [];
const server = createServer((request, response) => {
  const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
  const file = join(root, path);
  if (path.split("/").includes("..") || !existsSync(file)) return void response.writeHead(404).end();
  const body = readFileSync(file);
  fetched.push(body.length);
  response.writeHead(200, { "content-length": body.length }).end(body);
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const base = `http://127.0.0.1:${server.address().port}`;

try {
  const wasm = await loadWasm(readFileSync(new URL("../dist/cairn.wasm", import.meta.url)));
  let tracker;
  if (existsSync(stateFile)) {
    tracker = wasm.loadTracker(readFileSync(stateFile));
  } else {
    const checkpoint = parseCheckpoint(readFileSync(join(root, "checkpoint"), "utf8"));
    const kind = checkpoint.kind === "imt" ? { kind: "imt", depth: checkpoint.depth, zero: checkpoint.zero } : {};
    tracker = wasm.tracker({ arity: checkpoint.arity, hash: hashers[checkpoint.hash], ...kind });
  }
  for (const index of marks) tracker.mark(BigInt(index));
  const report = await tracker.sync(base);
  const bytes = fetched.reduce((a, b) => a + b, 0);
  console.error(`synced to ${report.head.size} leaves: ${fetched.length} objects, ${bytes} bytes`);
  for (const index of tracker.info().marked) {
    if (index < report.head.size) console.log(tracker.witness(index).toJson());
  }
  writeFileSync(stateFile, tracker.save());
  tracker.free();
} finally {
  server.close();
}
