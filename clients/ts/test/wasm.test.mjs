// The WebAssembly fast path (`cairn-verify/wasm`, the module crates/wasm
// builds) against the pure TypeScript path: the same proofs, intact and
// with single bit flips, give the same result or the same CairnError
// (stage, kind, message) through both; and the module's wallet tracker,
// synced from tiles the cairn CLI published and served over HTTP, gives
// the witnesses `cairn prove` prints, keeps them across growth, rewinds
// with no network and round-trips its state as bytes; and proveFromTiles
// and TileClient with the module give the proofs and errors of the pure
// path, for lean and imt trees.
//
// Needs dist/cairn.wasm (`cargo build -p cairn-wasm --release --target
// wasm32-unknown-unknown`, then `npm run build`); skipped without it unless
// CAIRN_WASM=1, which makes its absence a failure.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { CairnError, decodeMembership, hashers, proveFromTiles, TileClient, verifyConsistency, verifyMembership } from "cairn-verify";
import { loadWasm, tryLoadWasm, verifier } from "cairn-verify/wasm";
import { cairnBinary, fromHex, random, seed, tree, vectors } from "./helpers.mjs";

const wasmFile = fileURLToPath(new URL("../dist/cairn.wasm", import.meta.url));
if (!existsSync(wasmFile) && process.env.CAIRN_WASM === "1") throw new Error(`CAIRN_WASM=1: ${wasmFile} is missing`);
const noWasm = !existsSync(wasmFile) && "no dist/cairn.wasm";
const binary = cairnBinary();

let wasm;
before(async () => {
  if (!noWasm) wasm = await loadWasm(readFileSync(wasmFile));
});

/** The outcome of `body`: "ok" and its result's bytes, or the CairnError's stage, kind and message. */
function outcome(body) {
  try {
    return { ok: Buffer.from(body().toBytes()).toString("hex") };
  } catch (error) {
    assert.ok(error instanceof CairnError, String(error));
    return { stage: error.stage, kind: error.kind, message: error.message };
  }
}

/** Every proof of proofs.json and imt.json with what it is verified against. */
function cases() {
  const proofs = vectors("proofs.json");
  const plain = [...proofs.membership, ...proofs.consistency].map((e) => ({ ...e, trusted: tree(e.arity, e.hash) }));
  const imt = vectors("imt.json").trees.flatMap((t) =>
    [...t.membership, ...t.consistency].map((e) => ({ ...e, trusted: { ...tree(t.arity, t.hash), kind: "imt", depth: t.depth, zero: t.zero } })),
  );
  return [...plain, ...imt];
}

function check(fast, entry, input) {
  if (entry.json.kind === "membership") {
    const head = { size: entry.size, root: entry.root };
    return [outcome(() => verifyMembership(input, entry.trusted, head)), outcome(() => fast.verifyMembership(input, entry.trusted, head))];
  }
  const old = { size: entry.old_size, root: entry.old_root ?? null };
  const head = { size: entry.new_size, root: entry.new_root };
  return [outcome(() => verifyConsistency(input, entry.trusted, old, head)), outcome(() => fast.verifyConsistency(input, entry.trusted, old, head))];
}

test(`every vector proof, intact and with a bit flipped: the same result through WebAssembly and TypeScript (seed ${seed})`, { skip: noWasm }, () => {
  const fast = verifier(wasm);
  const rng = random(seed);
  const seen = { ok: 0, refused: 0 };
  for (const entry of cases()) {
    const bytes = fromHex(entry.binary);
    const [pure, viaWasm] = check(fast, entry, bytes);
    assert.deepEqual(viaWasm, pure, `${entry.hash} arity ${entry.arity} ${entry.json.kind}`);
    assert.ok(pure.ok, `${entry.hash} ${entry.json.kind}: ${pure.message}`);
    seen.ok++;
    const flipped = bytes.slice();
    flipped[rng.int(0, flipped.length - 1)] ^= 1 << rng.int(0, 7);
    const [pureFlipped, wasmFlipped] = check(fast, entry, flipped);
    assert.deepEqual(wasmFlipped, pureFlipped, `${entry.hash} arity ${entry.arity} ${entry.json.kind}, flipped`);
    if (!pureFlipped.ok) seen.refused++;
    // Another head: refused by both with the same error.
    const wrongHead = { ...entry, size: entry.size === undefined ? undefined : BigInt(entry.size) + 1n, new_size: entry.new_size === undefined ? undefined : BigInt(entry.new_size) + 1n };
    const [pureWrong, wasmWrong] = check(fast, wrongHead, bytes);
    assert.deepEqual(wasmWrong, pureWrong);
    assert.ok(!pureWrong.ok);
  }
  assert.ok(seen.ok > 100 && seen.refused > 50, JSON.stringify(seen));
});

test("verifier(null) is the pure path, and tryLoadWasm gives null for bytes that are no module", async () => {
  assert.equal(verifier(null).verifyMembership, verifyMembership);
  assert.equal(await tryLoadWasm(new Uint8Array([0, 1, 2, 3])), null);
});

let dir;
let server;
let base;
const paths = [];

before(async () => {
  if (binary === null || noWasm) return;
  dir = mkdtempSync(join(tmpdir(), "cairn-wasm-"));
  server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
    paths.push(path);
    const file = join(dir, path);
    if (path.split("/").includes("..") || !existsSync(file)) return void response.writeHead(404).end();
    const body = readFileSync(file);
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

test("the WebAssembly tracker syncs from published tiles: witnesses equal cairn prove, survive growth, rewind and a save/load", { skip: noWasm || (binary === null && "no cairn binary") }, async () => {
  const rng = random(seed);
  const db = join(dir, "db");
  const store = join(dir, "tiles");
  run("init", db, "--arity", "2", "--hash", "poseidon");
  const ingest = (count) => {
    const leaves = Array.from({ length: count }, () => {
      const leaf = rng.bytes(32);
      leaf[0] &= 0x1f;
      return leaf;
    });
    const file = join(dir, "leaves.bin");
    writeFileSync(file, Buffer.concat(leaves));
    run("ingest", db, file);
    run("publish", db, "--to", store);
  };
  const prove = (index) => decodeMembership(new Uint8Array(run("prove", db, "--index", String(index), "--binary")));
  ingest(700);
  const trusted = { arity: 2, hash: hashers.poseidon };
  const tracker = wasm.tracker(trusted, 10);
  const marks = [3n, 511n, 699n];
  for (const i of marks) tracker.mark(i);
  paths.length = 0;
  const first = await tracker.sync(`${base}/tiles`);
  assert.equal(first.head.size, 700n);
  assert.ok(first.tiles > 0 && paths.length === first.tiles + 1, `${first.tiles} tiles, ${paths.length} requests`);
  assert.ok(paths.every((p) => p === "tiles/checkpoint" || /^tiles\/tile\//.test(p)), paths.join(" "));
  for (const i of marks) assert.deepEqual(tracker.witness(i).toBytes(), prove(i).toBytes(), `witness ${i}`);
  tracker.checkpoint(1);
  const atOne = tracker.witness(3n).toBytes();

  ingest(300);
  const second = await tracker.sync(`${base}/tiles`);
  assert.equal(second.head.size, 1000n);
  for (const i of marks) assert.deepEqual(tracker.witness(i).toBytes(), prove(i).toBytes(), `witness ${i} after growth`);
  const saved = tracker.save();
  assert.ok(saved instanceof Uint8Array);

  const before = paths.length;
  tracker.rewind(1);
  assert.equal(paths.length, before, "a rewind fetches nothing");
  assert.deepEqual(tracker.witness(3n).toBytes(), atOne);
  assert.equal(tracker.info().head.size, 700n);

  const loaded = wasm.loadTracker(saved);
  assert.equal(loaded.info().head.size, 1000n);
  assert.deepEqual(loaded.info().marked, marks);
  assert.deepEqual(loaded.witness(511n).toBytes(), prove(511).toBytes());
  assert.equal(loaded.unmark(511n), true);
  const refused = assert.throws(() => loaded.witness(511n), (e) => e instanceof CairnError && e.kind === "Wallet");
  void refused;
  const tampered = saved.slice();
  tampered[tampered.length - 1] ^= 1;
  assert.throws(() => wasm.loadTracker(tampered), (e) => e instanceof CairnError && e.kind === "Wallet" && /checksum|CRC|crc/i.test(e.message));
  tracker.free();
  loaded.free();
  assert.throws(() => tracker.witness(3n), (e) => e instanceof CairnError && e.stage === "input");
});

/** A proof's bytes, or the CairnError's stage, kind and message. */
async function settled(body) {
  try {
    return { ok: Buffer.from((await body()).toBytes()).toString("hex") };
  } catch (error) {
    assert.ok(error instanceof CairnError, String(error));
    return { stage: error.stage, kind: error.kind, message: error.message };
  }
}

test("proveFromTiles and TileClient with the module: the pure path's proofs and errors, lean and imt", { skip: noWasm || (binary === null && "no cairn binary") }, async () => {
  const rng = random(seed + 1);
  const stores = [
    { name: "lean", init: [], trusted: { arity: 2, hash: hashers.poseidon }, count: 1300 },
    { name: "imt", init: ["--kind", "imt", "--depth", "12", "--zero", "0"], trusted: { arity: 2, hash: hashers.poseidon, kind: "imt", depth: 12 }, count: 700 },
    { name: "n4", init: ["--arity", "4"], trusted: { arity: 4, hash: hashers.poseidon }, count: 900 },
  ];
  for (const store of stores) {
    const db = join(dir, `fast-${store.name}`);
    const tiles = join(dir, `fast-${store.name}-tiles`);
    const args = store.init.includes("--arity") ? store.init : ["--arity", "2", ...store.init];
    run("init", db, "--hash", "poseidon", ...args);
    const file = join(dir, `fast-${store.name}.bin`);
    writeFileSync(
      file,
      Buffer.concat(
        Array.from({ length: store.count }, () => {
          const leaf = rng.bytes(32);
          leaf[0] &= 0x1f;
          return leaf;
        }),
      ),
    );
    run("ingest", db, file);
    run("publish", db, "--to", tiles);
    const lines = readFileSync(join(tiles, "checkpoint"), "utf8").split("\n");
    const value = (name) => lines.find((l) => l.startsWith(`${name} `)).slice(name.length + 1);
    const zero = store.trusted.kind === "imt" ? { zero: fromHex(value("zero")) } : {};
    const head = { ...store.trusted, ...zero, size: BigInt(value("size")), root: fromHex(value("root")) };
    const url = `${base}/fast-${store.name}-tiles`;
    const indices = [0, 255, 256, store.count - 1, rng.int(0, store.count - 1), rng.int(0, store.count - 1)];
    const fast = new TileClient(url, head, { wasm });
    for (const index of indices) {
      const pure = await settled(() => proveFromTiles(url, head, index));
      assert.ok(pure.ok, `${store.name} ${index}: ${pure.message}`);
      assert.deepEqual(await settled(() => proveFromTiles(url, head, index, { wasm })), pure, `${store.name} leaf ${index}`);
      assert.deepEqual(await settled(() => fast.prove(index)), pure, `${store.name} leaf ${index}, shared client`);
      assert.equal(pure.ok, Buffer.from(prove(db, index)).toString("hex"), `${store.name} leaf ${index} is cairn prove's`);
    }
    assert.equal(fast.stats().wasmProofs, indices.length, "every proof came from the module");
    // Refusals: a head of another root, an index beyond the head, and a
    // tile cut short: the same CairnError through both.
    const otherRoot = { ...head, root: fromHex(value("root")).map((b, i) => (i === 31 ? b ^ 1 : b)) };
    const beyond = head.size;
    for (const [what, h, i] of [["another root", otherRoot, 7], ["beyond the head", head, beyond]]) {
      const pure = await settled(() => proveFromTiles(url, h, i));
      assert.ok(!pure.ok, `${store.name}: ${what}`);
      assert.deepEqual(await settled(() => proveFromTiles(url, h, i, { wasm })), pure, `${store.name}: ${what}`);
    }
  }
  // A tile cut short (the lean store's first leaf tile).
  const cut = join(dir, "fast-lean-tiles", "tile", "0", "000");
  const whole = readFileSync(cut);
  writeFileSync(cut, whole.subarray(0, whole.length - 32));
  try {
    const lines = readFileSync(join(dir, "fast-lean-tiles", "checkpoint"), "utf8").split("\n");
    const value = (name) => lines.find((l) => l.startsWith(`${name} `)).slice(name.length + 1);
    const head = { arity: 2, hash: hashers.poseidon, size: BigInt(value("size")), root: fromHex(value("root")) };
    const url = `${base}/fast-lean-tiles`;
    const pure = await settled(() => proveFromTiles(url, head, 3));
    assert.equal(pure.kind, "BadTile", pure.message);
    assert.deepEqual(await settled(() => proveFromTiles(url, head, 3, { wasm })), pure);
  } finally {
    writeFileSync(cut, whole);
  }
});

const prove = (db, index) => new Uint8Array(run("prove", db, "--index", String(index), "--binary"));
