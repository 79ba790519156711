// A wallet that keeps its notes' witnesses current from a tile store
// served by a static HTTP server:
//
//   cairn publish db --to ./tiles
//   node examples/wallet.mjs ./tiles 5 1234        # marks leaves 5 and 1234
//   node examples/wallet.mjs ./tiles               # later: follows the tree
//
// It serves ./tiles on 127.0.0.1 (any static server or CDN would do; it
// answers `Range:`) and fetches the checkpoint and tiles only (a leaf tile
// inside a complete bundle as its range of the bundle), never an object
// that names one leaf. With the WebAssembly module (dist/cairn.wasm, present once
// crates/wasm is built and `npm run build` copied it) the wallet is the
// module's tracker, whose state (bytes, versioned and checksummed) is kept
// in the state file between runs; without it, the marks are kept there and
// each witness is computed from tiles by the TypeScript path. Either way it
// prints each marked leaf's witness as proof JSON, one a line on stdout, and
// what it fetched on stderr.
//
// Options: --state FILE (default wallet.state), --wasm FILE (the module;
// default dist/cairn.wasm), --no-wasm (the TypeScript path even where the
// module loads).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, resolve } from "node:path";
import { fetchCheckpoint, hashers, TileClient } from "cairn-verify";
import { tryLoadWasm } from "cairn-verify/wasm";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at < 0 ? fallback : args.splice(at, 2)[1];
};
const stateFile = option("--state", "wallet.state");
const wasmFile = option("--wasm", new URL("../dist/cairn.wasm", import.meta.url));
const pure = args.includes("--no-wasm") && args.splice(args.indexOf("--no-wasm"), 1);
const [dir, ...marks] = args;
if (dir === undefined || marks.some((m) => !/^(0|[1-9][0-9]*)$/.test(m))) {
  console.error("usage: node examples/wallet.mjs TILE_DIR [--state FILE] [--wasm FILE] [--no-wasm] [LEAF_INDEX...]");
  process.exit(2);
}

// The static server: files under the tile directory, nothing else.
const root = resolve(dir);
const fetched = [];
const server = createServer((request, response) => {
  const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
  const file = join(root, path);
  if (path.split("/").includes("..") || !existsSync(file)) return void response.writeHead(404).end();
  const body = readFileSync(file);
  // A leaf tile inside a complete bundle is read as a range of the bundle.
  const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? "");
  if (range !== null && Number(range[2]) < body.length) {
    const part = body.subarray(Number(range[1]), Number(range[2]) + 1);
    fetched.push({ path, bytes: part.length });
    const headers = { "content-length": part.length, "content-range": `bytes ${range[1]}-${range[2]}/${body.length}` };
    return void response.writeHead(206, headers).end(part);
  }
  fetched.push({ path, bytes: body.length });
  response.writeHead(200, { "content-length": body.length }).end(body);
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const base = `http://127.0.0.1:${server.address().port}`;

try {
  const wasm = pure ? null : await tryLoadWasm(existsSync(wasmFile) ? readFileSync(wasmFile) : new Uint8Array(0));
  // The store's checkpoint names the tree (unsigned here: trusted as far as
  // this server; pass a verifier key to fetchCheckpoint or the tracker's
  // sync to trust only a signed one).
  const treeOf = (checkpoint) => {
    const kind = checkpoint.kind === "imt" ? { kind: "imt", depth: checkpoint.depth, zero: checkpoint.zero } : {};
    return { arity: checkpoint.arity, hash: hashers[checkpoint.hash], ...kind };
  };
  // The state: the tracker's bytes, or (from the TypeScript path) the marks as JSON.
  const saved = existsSync(stateFile) ? readFileSync(stateFile) : null;
  const savedMarks = saved !== null && saved[0] === 0x7b ? JSON.parse(saved.toString("utf8")).marked.map(BigInt) : [];
  if (wasm === null && saved !== null && saved[0] !== 0x7b) throw new Error(`${stateFile} is a WebAssembly tracker's state: load the module to read it`);
  let witnesses;
  let size;
  if (wasm !== null) {
    const tracker = saved !== null && saved[0] !== 0x7b ? wasm.loadTracker(saved) : wasm.tracker(treeOf(await fetchCheckpoint(base)));
    for (const index of [...savedMarks, ...marks]) tracker.mark(BigInt(index));
    const report = await tracker.sync(base);
    size = report.head.size;
    witnesses = tracker.info().marked.filter((index) => index < size).map((index) => tracker.witness(index));
    writeFileSync(stateFile, tracker.save());
    tracker.free();
  } else {
    // The marks as JSON; each witness from whole tiles at the checkpoint's head.
    const marked = [...new Set([...savedMarks, ...marks.map(BigInt)])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const checkpoint = await fetchCheckpoint(base);
    size = checkpoint.size;
    const client = new TileClient(base, { ...treeOf(checkpoint), size, root: checkpoint.root });
    witnesses = [];
    for (const index of marked) if (index < size) witnesses.push(await client.prove(index));
    writeFileSync(stateFile, JSON.stringify({ marked: [...marked].map(String) }));
  }
  for (const witness of witnesses) console.log(witness.toJson());
  const bytes = fetched.reduce((sum, f) => sum + f.bytes, 0);
  const perLeaf = fetched.filter((f) => !(f.path === "checkpoint" || f.path.startsWith("tile/") || (f.path.startsWith("bundle/") && f.bytes <= 8192)));
  console.error(
    `${wasm !== null ? "webassembly tracker" : "typescript"}: ${witnesses.length} witnesses at ${size} leaves; fetched ${fetched.length} objects, ${bytes} bytes` +
      (perLeaf.length > 0 ? `; unexpected objects: ${perLeaf.map((f) => f.path).join(" ")}` : ""),
  );
} finally {
  server.close();
}
