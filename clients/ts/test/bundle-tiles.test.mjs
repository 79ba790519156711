// Bundles as the leaf level (docs/spec.md section 8.1), against tiles the
// cairn CLI published and a local HTTP server this test starts: a leaf tile
// inside a complete bundle has no object, and is read as a `Range:` of the
// bundle (a 206, or a 200 of the whole bundle from a server without ranges,
// cut); proofs on both sides of the last complete bundle equal `cairn
// prove`'s; a wrong range, a wrong length or a wrong Content-Range is
// refused naming the bundle; a store of the older layout (leaf tiles, no
// bundle) is still read; the WebAssembly tracker's sync reads the same.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { bundleLeaves, CairnError, fetchCheckpoint, hashers, leafTileInBundle, proveFromTiles, TileClient } from "cairn-verify";
import { tryLoadWasm } from "cairn-verify/wasm";
import { cairnBinary, random, seed, toHexString } from "./helpers.mjs";

const binary = cairnBinary();
const skip = binary === null && "no cairn binary";
const wasmFile = fileURLToPath(new URL("../dist/cairn.wasm", import.meta.url));

// N = 4: bundles of 65,536 leaves, leaf tiles of 256; one complete bundle
// and a tail of two full leaf tiles and a partial one.
const ARITY = 4;
const B = 65536;
const SIZE = B + 2 * 256 + 77;

let dir;
let server;
let base;
/** How the server answers: "ranges" (206), "whole" (ignores Range: 200), or a function (path, range, body) -> [status, headers, body]. */
let mode = "ranges";
const seen = [];

before(async () => {
  if (binary === null) return;
  dir = mkdtempSync(join(tmpdir(), "cairn-bundles-"));
  server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
    const file = join(dir, path);
    const range = request.headers.range ?? null;
    seen.push(range === null ? path : `${path} ${range}`);
    if (path.split("/").includes("..") || !existsSync(file)) return void response.writeHead(404).end();
    const body = readFileSync(file);
    if (typeof mode === "function") {
      const [status, headers, out] = mode(path, range, body);
      return void response.writeHead(status, headers).end(out);
    }
    const match = /^bytes=(\d+)-(\d+)$/.exec(range ?? "");
    if (mode === "ranges" && match !== null) {
      const [start, end] = [Number(match[1]), Math.min(Number(match[2]), body.length - 1)];
      const part = body.subarray(start, end + 1);
      return void response.writeHead(206, { "content-length": part.length, "content-range": `bytes ${start}-${end}/${body.length}` }).end(part);
    }
    response.writeHead(200, { "content-length": body.length }).end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });

/** A database of SIZE random leaves published to `dir/name`. */
function publish(name, rng) {
  const db = join(dir, `${name}-db`);
  run("init", db, "--arity", String(ARITY), "--hash", "blake3");
  const leaves = Buffer.alloc(SIZE * 32);
  for (let i = 0; i < SIZE; i++) leaves.set(rng.bytes(32), i * 32);
  writeFileSync(join(dir, `${name}.bin`), leaves);
  run("ingest", db, join(dir, `${name}.bin`));
  run("publish", db, "--to", join(dir, name));
  return db;
}

async function trusted(url) {
  const checkpoint = await fetchCheckpoint(url);
  return { arity: checkpoint.arity, hash: hashers[checkpoint.hash], size: checkpoint.size, root: checkpoint.root };
}

const INDICES = [0, 300, B - 1, B, B + 511, SIZE - 1];

async function provesLikeTheCli(db, url, context) {
  const head = await trusted(url);
  const client = new TileClient(url, head);
  for (const index of INDICES) {
    const want = toHexString(run("prove", db, "--index", String(index), "--binary"));
    assert.equal(toHexString((await client.prove(index)).toBytes()), want, `${context}: leaf ${index}`);
    assert.equal(toHexString((await proveFromTiles(url, head, index)).toBytes()), want, `${context}: cold leaf ${index}`);
  }
  return client;
}

test(`the geometry: leaf tiles of complete bundles are ranges, the tail is tiles`, () => {
  assert.equal(bundleLeaves(4), 65536n);
  assert.equal(bundleLeaves(3), 59049n);
  assert.equal(bundleLeaves(5), 15625n);
  assert.deepEqual(leafTileInBundle(4, 256n, BigInt(SIZE), 1n), { path: "bundle/000", offset: 8192n, length: 8192, bundleBytes: 65536n * 32n });
  assert.equal(leafTileInBundle(4, 256n, BigInt(SIZE), 256n), null);
  assert.equal(leafTileInBundle(4, 256n, 65535n, 0n), null);
  assert.equal(leafTileInBundle(2, 256n, 3n * 65536n, 300n).path, "bundle/001");
});

test(`proofs read leaf tiles inside bundles as ranges, 206 or a whole 200 (seed ${seed})`, { skip }, async () => {
  const db = publish("new", random(seed));
  assert.ok(!existsSync(join(dir, "new/tile/0/000")), "no leaf tile inside a complete bundle");
  assert.ok(existsSync(join(dir, "new/tile/0/256")) && existsSync(join(dir, "new/tile/0/258.p/77")), "the tail keeps its leaf tiles");
  const url = `${base}/new`;
  mode = "ranges";
  seen.length = 0;
  const client = await provesLikeTheCli(db, url, "ranges");
  assert.ok(seen.includes("new/bundle/000 bytes=0-8191"), seen.join(" "));
  assert.ok(!seen.some((s) => s.startsWith("new/tile/0/000")), seen.join(" "));
  assert.ok(client.stats().bytes < 200_000, `${client.stats().bytes} bytes: ranges, not whole bundles`);
  mode = "whole";
  await provesLikeTheCli(db, url, "a server without ranges");
  mode = "ranges";
});

test(`a wrong bundle range, length or Content-Range is refused naming the bundle (seed ${seed})`, { skip }, async () => {
  publish("bad", random(seed + 1));
  const url = `${base}/bad`;
  const head = await trusted(url);
  const bundle = join(dir, "bad/bundle/000");
  const good = readFileSync(bundle);
  const refused = async (context, kind, ...needles) => {
    const client = new TileClient(url, head);
    const error = await client.prove(300).then(
      () => assert.fail(`${context}: accepted`),
      (e) => e,
    );
    assert.ok(error instanceof CairnError, `${context}: ${error}`);
    if (kind === "verify") assert.equal(error.stage, "verify", `${context}: ${error.message}`);
    else assert.equal(error.kind, kind, `${context}: ${error.message}`);
    for (const needle of needles) assert.ok(error.message.includes(needle), `${context}: ${error.message}`);
    assert.equal(client.stats().cachedTiles, 0, `${context}: nothing of a failed proof is cached`);
  };
  try {
    const wrong = Buffer.from(good);
    wrong[300 * 32 + 3] ^= 1;
    writeFileSync(bundle, wrong);
    await refused("a changed leaf", "verify", "tiles read", "bundle/000[8192..16384]");
    writeFileSync(bundle, good.subarray(0, good.length - 32));
    await refused("a short bundle", "BadTile", "bad/bundle/000", `/${B * 32}`);
    mode = "whole";
    await refused("a short bundle sent whole", "BadTile", "bad/bundle/000", `exactly ${B * 32}`);
    writeFileSync(bundle, good);
    mode = (path, range, body) => [206, { "content-range": `bytes 0-8191/${body.length}` }, body.subarray(0, 8192)];
    await refused("another range", "BadTile", "bad/bundle/000", "want");
    mode = (path, range, body) => [206, {}, body.subarray(8192, 16384)];
    await refused("no Content-Range", "BadTile", "bad/bundle/000");
  } finally {
    mode = "ranges";
    writeFileSync(bundle, good);
  }
});

test(`a store of the older layout (leaf tiles, no bundle) is still read (seed ${seed})`, { skip }, async () => {
  const db = publish("old", random(seed + 2));
  const bundle = join(dir, "old/bundle/000");
  const bytes = readFileSync(bundle);
  for (let j = 0; j < B / 256; j++) {
    const file = join(dir, `old/tile/0/${String(j).padStart(3, "0")}`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes.subarray(j * 8192, (j + 1) * 8192));
  }
  unlinkSync(bundle);
  seen.length = 0;
  const client = await provesLikeTheCli(db, `${base}/old`, "older layout");
  assert.ok(seen.includes("old/tile/0/001"), seen.join(" "));
  // A missing bundle is asked for once per client, then its tiles are read.
  assert.ok(client.stats().requests > 0);
});

test(`the WebAssembly tracker's sync reads bundle ranges (seed ${seed})`, { skip: skip || (!existsSync(wasmFile) && "no dist/cairn.wasm") }, async () => {
  const db = publish("wallet", random(seed + 3));
  const wasm = await tryLoadWasm(readFileSync(wasmFile));
  assert.ok(wasm !== null, "the module loads");
  const url = `${base}/wallet`;
  const tracker = wasm.tracker({ arity: ARITY, hash: hashers.blake3 }, 1);
  try {
    for (const index of INDICES) tracker.mark(BigInt(index));
    const plan = tracker.plan(readFileSync(join(dir, "wallet/checkpoint")));
    const inBundle = plan.tiles.filter((t) => t.bundle !== null);
    assert.ok(inBundle.length > 0 && inBundle.every((t) => t.bundle.path === "bundle/000" && t.path.startsWith("tile/0/")), JSON.stringify(plan.tiles, (_, v) => (typeof v === "bigint" ? String(v) : v)));
    seen.length = 0;
    const report = await tracker.sync(url);
    assert.equal(report.head.size, BigInt(SIZE));
    assert.ok(seen.some((s) => s.startsWith("wallet/bundle/000 bytes=")), seen.join(" "));
    for (const index of INDICES) {
      const want = toHexString(run("prove", db, "--index", String(index), "--binary"));
      assert.equal(toHexString(tracker.witness(BigInt(index)).toBytes()), want, `leaf ${index}`);
    }
  } finally {
    tracker.free();
  }
});
