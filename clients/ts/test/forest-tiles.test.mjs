// A tile store of a database of several trees: the root of roots and the
// inclusion proofs of test-vectors/forest.json (computed independently of
// cairn), and a store the cairn CLI publishes (served by a local HTTP server
// this test starts): its checkpoint, signed or not, its entries checked
// against the root of roots, each tree's proofs from its own tiles at its
// entry's head, and refusals of an altered entry, checkpoint or key.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  CairnError,
  computeRoot,
  fetchForest,
  forestInclusion,
  forestLeaf,
  forestRoot,
  forestTree,
  hashers,
  parseForestCheckpoint,
  parseForestEntries,
  parseForestEntry,
  proveFromTiles,
  verifyForestCheckpoint,
  verifyForestEntry,
} from "cairn-verify";
import { cairnBinary, fromHex, random, seed, toHexString, vectors } from "./helpers.mjs";

const binary = cairnBinary();
const skip = binary === null && "no cairn binary";
const forest = vectors("forest.json");
const utf8 = (text) => new TextEncoder().encode(text);

function throwsCairn(body, stage, kind) {
  assert.throws(body, (error) => error instanceof CairnError && error.stage === stage && (kind === undefined || error.kind === kind));
}

test("the root of roots, each entry's leaf and inclusion proof match the vectors", () => {
  const entries = parseForestEntries(utf8(forest.entries));
  assert.deepEqual(
    entries.map((e) => forestLeaf(e.line)).map(toHexString),
    forest.leaves,
  );
  assert.equal(toHexString(forestRoot(entries)), forest.root);
  const head = parseForestCheckpoint(forest.checkpoint);
  assert.equal(head.block, 42n);
  assert.equal(head.trees, 3n);
  assert.equal(toHexString(head.root), forest.root);
  assert.equal(head.origin, null);
  for (const want of forest.proofs) {
    const { index, path } = forestInclusion(entries, want.name);
    assert.equal(index, BigInt(want.index));
    assert.deepEqual(path.map(toHexString), want.path);
    const entry = entries[want.index];
    verifyForestEntry(head, entry, index, path);
    // Another index, a changed path, a changed entry: refused.
    throwsCairn(() => verifyForestEntry(head, entry, (index + 1n) % 3n, path), "verify", "RootMismatch");
    const bent = path.map((p) => p.slice());
    bent[0][5] ^= 1;
    throwsCairn(() => verifyForestEntry(head, entry, index, bent), "verify", "RootMismatch");
    throwsCairn(() => verifyForestEntry(head, entry, index, path.slice(1)), "verify", "RootMismatch");
    const other = parseForestEntry(entry.line.slice(0, -1).replace(/size=(\d+)/, (_, n) => `size=${Number(n) + 1}`).replace("root=none", "root=0x" + "11".repeat(32)));
    throwsCairn(() => verifyForestEntry(head, other, index, path), "verify", "RootMismatch");
  }
});

test("entries and checkpoints cairn would not write are refused", () => {
  const lines = forest.entries.slice(0, -1).split("\n");
  const refused = [
    lines.slice().reverse().join("\n") + "\n", // not sorted
    lines.join("\n"), // no final newline
    [lines[0], lines[0]].join("\n") + "\n", // a name twice
    lines[1].replace("arity=2", "arity=02") + "\n",
    lines[1].replace("arity=2", "arity=17") + "\n",
    lines[1].replace("size=5", "size=05") + "\n",
    lines[1].replace("hash=sha256", "hash=md5") + "\n",
    lines[1].replace("kind=lean", "kind=leanimt") + "\n",
    lines[1].replace("root=0x1111", "root=0X1111") + "\n",
    lines[1].replace("notes", "Notes") + "\n",
    lines[1].replace("notes", "a/../b") + "\n",
    lines[1] + " extra\n",
    lines[1].replace("size=5", "size=0") + "\n", // an empty lean tree has no root
    lines[2].replace("size=3", "size=0") + "\n", // an indexed tree holds its guard
    lines[0].replace("depth=20", "depth=0") + "\n",
  ];
  for (const text of refused) throwsCairn(() => parseForestEntries(utf8(text)), "decode");
  throwsCairn(() => parseForestEntries(Uint8Array.of(0xff, 0x0a)), "decode");
  const checkpoint = forest.checkpoint;
  for (const text of [
    checkpoint.replace("block 42", "block 042"),
    checkpoint.replace("trees 3", "trees 0"),
    checkpoint.replace("root 0x", "root 0X"),
    checkpoint.slice(0, -1),
    checkpoint + "\n",
    checkpoint.replace("cairn forest v1", "cairn forest v2"),
  ]) {
    throwsCairn(() => parseForestCheckpoint(text), "decode");
  }
});

let dir;
let server;
let base;
/** path -> replacement body. */
const overrides = new Map();

before(async () => {
  if (binary === null) return;
  dir = mkdtempSync(join(tmpdir(), "cairn-forest-tiles-"));
  server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
    const file = join(dir, path);
    const override = overrides.get(path);
    const body = override !== undefined ? Buffer.from(override) : path.split("/").includes("..") || !existsSync(file) ? null : readFileSync(file);
    if (body === null) {
      response.writeHead(404).end();
      return;
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

async function rejection(promise) {
  return promise.then(
    () => assert.fail("accepted"),
    (error) => {
      assert.ok(error instanceof CairnError, String(error));
      return error;
    },
  );
}

test(`a published forest proves each tree from its tiles at its entry's head (seed ${seed})`, { skip }, async () => {
  const rng = random(seed);
  const db = join(dir, "db");
  run("init", db);
  run("tree", "add", db, "notes", "--arity", "2", "--hash", "blake3");
  run("tree", "add", db, "deposits", "--arity", "4", "--hash", "sha256");
  run("tree", "add", db, "nullifiers", "--kind", "indexed", "--arity", "2", "--hash", "blake3");
  const held = { notes: [], deposits: [], nullifiers: [] };
  const counts = { notes: 700, deposits: 300, nullifiers: 40 };
  for (const [i, name] of ["notes", "deposits", "nullifiers"].entries()) {
    const values = Array.from({ length: counts[name] }, () => rng.bytes(32));
    held[name] = values;
    writeFileSync(join(dir, `${name}.bin`), Buffer.concat(values));
    run("ingest", db, "--tree", name, ...(i === 2 ? ["--block", "7"] : []), join(dir, `${name}.bin`));
  }
  const key = join(dir, "forest.key");
  const vkey = run("keygen", "--name", "example.org/forest", "--out", key).toString().trim();
  const other = run("keygen", "--name", "example.org/forest", "--out", join(dir, "other.key")).toString().trim();
  run("publish", db, "--to", join(dir, "public"), "--sign-key", key);
  const url = `${base}/public`;

  const read = await fetchForest(url, { verifierKey: vkey });
  assert.equal(read.head.block, 7n);
  assert.equal(read.head.origin, "example.org/forest");
  assert.deepEqual(read.entries.map((e) => [e.name, e.kind, e.size]), [
    ["deposits", "lean", 300n],
    ["notes", "lean", 700n],
    ["nullifiers", "indexed", 41n],
  ]);
  for (const [name, hasher, arity] of [["notes", hashers.blake3, 2], ["deposits", hashers.sha256, 4]]) {
    const entry = read.entries.find((e) => e.name === name);
    assert.deepEqual(entry.root, computeRoot(held[name], { arity, hash: hasher }));
    const { baseUrl, head } = forestTree(read, name, hasher);
    for (const index of [0, 1, rng.int(0, held[name].length - 1), held[name].length - 1]) {
      const proof = await proveFromTiles(baseUrl, head, index);
      assert.deepEqual(proof.leaf, held[name][index], `${name} leaf ${index}`);
    }
    // One tree's verifier handed only its entry and inclusion proof.
    const { index, path } = forestInclusion(read.entries, name);
    verifyForestEntry(read.head, entry, index, path);
  }
  assert.throws(() => forestTree(read, "nullifiers", hashers.blake3), (e) => e instanceof CairnError && e.stage === "input");
  assert.throws(() => forestTree(read, "notes", hashers.sha256), (e) => e instanceof CairnError && e.stage === "input");
  assert.throws(() => forestTree(read, "ghost", hashers.sha256), (e) => e instanceof CairnError && e.stage === "input");
  // Unsigned reading of the same store.
  const plain = await fetchForest(url);
  assert.equal(plain.head.origin, "example.org/forest");
  assert.deepEqual(plain.entries, read.entries);

  // Another key, an altered checkpoint, an altered entries object: refused.
  assert.equal((await rejection(fetchForest(url, { verifierKey: other }))).stage, "verify");
  const checkpoint = readFileSync(join(dir, "public", "checkpoint"), "utf8");
  overrides.set("public/checkpoint", checkpoint.replace(/block=7 /, "block=8 "));
  const altered = await rejection(fetchForest(url, { verifierKey: vkey }));
  assert.equal(altered.stage, "verify", altered.message);
  overrides.delete("public/checkpoint");
  const entriesPath = `public/forest/${toHexString(read.head.root).slice(2)}`;
  const entriesText = readFileSync(join(dir, entriesPath), "utf8");
  overrides.set(entriesPath, entriesText.replace("size=700", "size=699"));
  const bent = await rejection(fetchForest(url, { verifierKey: vkey }));
  assert.equal(bent.stage, "fetch");
  assert.match(bent.message, /root of roots/);
  overrides.set(entriesPath, entriesText.split("\n").slice(1).join("\n"));
  assert.equal((await rejection(fetchForest(url))).stage, "fetch");
  overrides.delete(entriesPath);
  // A signed forest checkpoint is not a tree's: the tree reader refuses it.
  throwsCairn(() => verifyForestCheckpoint(checkpoint.replace("example.org/forest\n", "example.org/other\n"), vkey), "verify");
  assert.equal(verifyForestCheckpoint(checkpoint, vkey).block, 7n);
  assert.deepEqual(fromHex(toHexString(read.head.root)), read.head.root);
});
