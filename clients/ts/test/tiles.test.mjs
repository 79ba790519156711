// Proofs from tiles that the cairn CLI published, served by a local HTTP
// server this test starts: they equal the proofs `cairn prove` and `cairn
// consistency` print (byte for byte), a warm cache fetches fewer tiles, and
// a wrong, truncated, oversized or missing tile is refused naming it and is
// never cached.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  CairnError,
  computeRoot,
  consistencyFromTiles,
  fetchCheckpoint,
  hashers,
  parseCheckpoint,
  proveFromTiles,
  TileClient,
  tilePath,
} from "cairn-verify";
import { cairnBinary, random, seed, toHexString } from "./helpers.mjs";

const binary = cairnBinary();
const skip = binary === null && "no cairn binary";

let dir;
let server;
let base;
let requests = 0;
/** path -> replacement body (tampering), or "oversized": a content-length above the real one is not sent; a longer body is. */
const overrides = new Map();

before(async () => {
  if (binary === null) return;
  dir = mkdtempSync(join(tmpdir(), "cairn-tiles-"));
  server = createServer((request, response) => {
    requests++;
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
    const file = join(dir, path);
    const body = overrides.get(path) ?? (path.split("/").includes("..") || !existsSync(file) ? null : readFileSync(file));
    if (body === null) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-length": body.length, "content-type": "application/octet-stream" }).end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });

/** A database of `size` random leaves at `arity` under `hash` (and `kind`, options of `cairn init`), published to `dir/name`. */
function publish(name, arity, hash, size, rng, kind = []) {
  const db = join(dir, `${name}-db`);
  run("init", db, "--arity", String(arity), "--hash", hash, ...kind);
  const leaves = Array.from({ length: size }, () => {
    const leaf = rng.bytes(32);
    leaf[0] &= 0x1f;
    return leaf;
  });
  const file = join(dir, `${name}.bin`);
  writeFileSync(file, Buffer.concat(leaves));
  run("ingest", db, file);
  run("publish", db, "--to", join(dir, name));
  return { db, leaves };
}

async function trustedHead(url) {
  const checkpoint = await fetchCheckpoint(url);
  const kind = checkpoint.kind === "imt" ? { kind: "imt", depth: checkpoint.depth, zero: checkpoint.zero } : {};
  return { arity: checkpoint.arity, hash: hashers[checkpoint.hash], ...kind, size: checkpoint.size, root: checkpoint.root };
}

test(`proofs from an imt's tiles equal the CLI's, from its empty tree on (seed ${seed})`, { skip }, async () => {
  const rng = random(seed + 2);
  for (const [arity, hash, depth, size] of [
    [2, "poseidon", 12, 600],
    [5, "keccak256", 6, 2000],
  ]) {
    const name = `imt${arity}${hash}`;
    const zero = `0x${"00".repeat(31)}05`;
    const { db, leaves } = publish(name, arity, hash, size, rng, ["--kind", "imt", "--depth", String(depth), "--zero", zero]);
    const url = `${base}/${name}`;
    const head = await trustedHead(url);
    assert.deepEqual([head.kind, head.depth, toHexString(head.zero)], ["imt", depth, zero]);
    const tree = { arity, hash: hashers[hash], kind: "imt", depth, zero };
    const client = new TileClient(url, head);
    for (const index of [0, size - 1, 255, 256, rng.int(0, size - 1)]) {
      const want = toHexString(run("prove", db, "--index", String(index), "--binary"));
      assert.equal(toHexString((await client.prove(index)).toBytes()), want, `${name} leaf ${index}`);
    }
    for (const from of [0, 1, Math.floor(size / 3), size]) {
      const old = { size: from, root: computeRoot(leaves.slice(0, from), tree) };
      const proof = await consistencyFromTiles(url, head, old);
      const want = toHexString(run("consistency", db, "--from", String(from), "--to", String(size), "--binary"));
      assert.equal(toHexString(proof.toBytes()), want, `${name} consistency from ${from}`);
    }
    // The same tiles trusted as a lean tree's: refused.
    const lean = { arity, hash: hashers[hash], size: head.size, root: head.root };
    await assert.rejects(proveFromTiles(url, lean, 3), (error) => error instanceof CairnError && error.stage === "verify");
  }
});

test(`proofs from tiles equal the CLI's, cold and warm (seed ${seed})`, { skip }, async () => {
  const rng = random(seed);
  for (const [arity, hash, size] of [
    [2, "blake3", 3000],
    [4, "sha256", 5000],
    [16, "keccak256", 4100],
    [3, "poseidon", 700],
  ]) {
    const name = `t${arity}${hash}`;
    const { db, leaves } = publish(name, arity, hash, size, rng);
    const url = `${base}/${name}`;
    const head = await trustedHead(url);
    assert.equal(head.size, BigInt(size));
    const client = new TileClient(url, head);
    const indices = [0, size - 1, 255, 256, Math.floor(size / 2), rng.int(0, size - 1)].filter((i) => i < size);
    let coldRequests = 0;
    for (const index of indices) {
      const want = toHexString(run("prove", db, "--index", String(index), "--binary"));
      const before = requests;
      const cold = await proveFromTiles(url, head, index);
      coldRequests = Math.max(coldRequests, requests - before);
      assert.equal(toHexString(cold.toBytes()), want, `${name} leaf ${index}`);
      const warm = await client.prove(index);
      assert.equal(toHexString(warm.toBytes()), want);
    }
    // Proving a leaf already proven fetches nothing.
    const before = client.stats().requests;
    await client.prove(indices[0]);
    assert.equal(client.stats().requests, before, `${name}: warm proof refetched`);
    assert.ok(coldRequests >= 1 && coldRequests <= 8, `${name}: ${coldRequests} GETs for a cold proof`);
    // Consistency from an earlier size, from tiles.
    for (const from of [1, Math.floor(size / 3), size]) {
      const old = { size: from, root: computeRoot(leaves.slice(0, from), { arity, hash: hashers[hash] }) };
      const proof = await consistencyFromTiles(url, head, old);
      const want = toHexString(run("consistency", db, "--from", String(from), "--to", String(size), "--binary"));
      assert.equal(toHexString(proof.toBytes()), want, `${name} consistency from ${from}`);
    }
  }
});

test("bad tiles are refused naming them and never cached", { skip }, async () => {
  const rng = random(seed + 1);
  publish("bad", 4, "blake3", 2000, rng);
  const url = `${base}/bad`;
  const head = await trustedHead(url);
  const path = tilePath(4, 0, 2n, 256n);
  assert.equal(path, "tile/0/002");
  const good = readFileSync(join(dir, "bad", path));
  const client = new TileClient(url, head);
  const refused = async (body, kind, needle) => {
    overrides.set(`bad/${path}`, body);
    const error = await client.prove(600).then(
      () => assert.fail("accepted"),
      (error) => error,
    );
    assert.ok(error instanceof CairnError, String(error));
    assert.equal(error.kind, kind, error.message);
    assert.ok(error.message.includes(path), error.message);
    if (needle) assert.ok(error.message.includes(needle), error.message);
    assert.equal(client.stats().cachedTiles, 0, "nothing of a failed proof is cached");
  };
  const wrong = Buffer.from(good);
  wrong[33] ^= 4;
  await refused(wrong, "RootMismatch", "tiles read");
  await refused(good.subarray(0, 1000), "BadTile", "1000 bytes");
  await refused(Buffer.concat([good, Buffer.alloc(32)]), "BadTile", "8224 bytes");
  overrides.delete(`bad/${path}`);
  rmSync(join(dir, "bad", path));
  await refused(undefined, "BadTile", "404");
  writeFileSync(join(dir, "bad", path), good);
  // Repaired: the tile is fetched again and the proof verifies.
  await client.prove(600);
  assert.ok(client.stats().cachedTiles > 0);
  // A head the tiles do not belong to.
  const forged = { ...head, root: new Uint8Array(32).fill(7) };
  await assert.rejects(proveFromTiles(url, forged, 5), (error) => error instanceof CairnError && error.stage === "verify");
});

test("checkpoints are parsed strictly", () => {
  const good = `cairn tiles v1\narity 4\nhash sha256\nsize 5\nroot 0x${"01".repeat(32)}\n`;
  const parsed = parseCheckpoint(good);
  assert.equal(parsed.size, 5n);
  assert.equal(parsed.arity, 4);
  for (const bad of [
    good.replace("arity 4", "arity 04"),
    good.replace("arity 4", "arity 17"),
    good.replace("size 5", "size 0"),
    good.replace("hash sha256", "hash md5"),
    good.replace("v1", "v2"),
    good.trimEnd(),
    `${good}extra\n`,
    good.replace("root 0x", "root 0X"),
    `cairn tiles v1\narity 2\nhash poseidon\nsize 1\nroot 0x${"ff".repeat(32)}\n`,
  ]) {
    assert.throws(() => parseCheckpoint(bad), (error) => error instanceof CairnError && error.kind === "BadCheckpoint", JSON.stringify(bad));
  }
  assert.equal(parseCheckpoint("cairn tiles v1\narity 2\nhash blake3\nsize 0\nroot none\n").root, null);
  // An imt's object names its kind, depth and zero; its empty tree has a root.
  const imt = `cairn tiles v2\narity 2\nhash poseidon\nkind imt\ndepth 20\nzero 0x${"00".repeat(32)}\nsize 0\nroot 0x${"01".repeat(32)}\n`;
  const pool = parseCheckpoint(imt);
  assert.deepEqual([pool.kind, pool.depth, pool.size], ["imt", 20, 0n]);
  for (const bad of [
    imt.replace("kind imt", "kind indexed"),
    imt.replace("depth 20", "depth 020"),
    imt.replace("depth 20", "depth 65"),
    imt.replace("size 0", "size 1048577"),
    imt.replace(/root 0x01+/, "root none"),
    imt.replace("zero 0x00", "zero 0xff"),
    imt.replace("\nkind imt", ""),
  ]) {
    assert.throws(() => parseCheckpoint(bad), (error) => error instanceof CairnError && error.kind === "BadCheckpoint", JSON.stringify(bad));
  }
});
