// The indexed batch-insert circuit against cairn: IndexedInsertBatch(K, D)
// takes the witness `cairn prove --insert-witness` prints for a batch at an
// indexed Poseidon database's head, whose new root is cairn's root after
// the batch is then inserted and whose commitment is the one `cairn prove
// --append-witness` prints for the same values as leaves. Batches
// cover random values, two new values sharing one low leaf, a value above
// every stored one (end marker), values near p - 1. A stored value, a
// value repeated in the batch, a changed low leaf, path, frontier, size or
// root have no witness.
//
// K = 4 at depth 4 runs by default (a compile of about a minute, the
// witnesses a few seconds); CAIRN_INDEXED_BATCH=1 or
// CAIRN_CIRCUIT_DEPTHS=full adds K = 8 at depth 8 (minutes).
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { compile, indexedBatch } from "../scripts/circom.mjs";
import { P, accepts, binary, endCurve, full, load, random, refuses, run, seed, withTree } from "../scripts/harness.mjs";

after(endCurve);

const larger = full || process.env.CAIRN_INDEXED_BATCH === "1";
const SIZES = [
  [4, 4],
  [8, 8],
];
const bump = (value) => String((BigInt(value) + 1n) % P);

/** An indexed Poseidon database in `dir` holding `values`, with what a batch witness needs. */
function indexedDatabase(dir, name, values) {
  const db = join(dir, name);
  run("init", db, "--kind", "indexed", "--arity", "2", "--hash", "poseidon");
  let files = 0;
  const ingest = (batch) => {
    const file = join(dir, `${name}-${files++}.dec`);
    writeFileSync(file, batch.map(String).join("\n") + "\n");
    run("ingest", db, file, "--format", "dec");
  };
  if (values.length > 0) ingest(values);
  const head = () => JSON.parse(run("root", db, "--json"));
  return { db, ingest, head };
}

/** cairn's batch commitment of `values` (the Poseidon(5) chain of --append-witness over them as leaves). */
function commitmentOf(dir, values, depth) {
  const db = join(dir, `commit-${values.join("-").slice(0, 40)}-${Math.random().toString(36).slice(2)}`);
  run("init", db, "--arity", "2", "--hash", "poseidon", "--no-unique");
  writeFileSync(`${db}.dec`, values.map(String).join("\n") + "\n");
  run("ingest", db, `${db}.dec`, "--format", "dec");
  return JSON.parse(run("prove", db, "--append-witness", `0..${values.length}`, "--circuit-depth", String(depth))).commitment;
}

/**
 * The circuit input of inserting `values` in order, from
 * `cairn prove --insert-witness` at the database's head (which it does not
 * change); then the values inserted for real, whose new root must be the
 * one the witness claims.
 */
function insertBatch(dir, tree, values, depth) {
  const before = tree.head();
  const input = JSON.parse(run("prove", tree.db, "--insert-witness", values.map(String).join(","), "--circuit-depth", String(depth)));
  assert.equal(tree.head().root, before.root, "the witness inserts nothing");
  assert.equal(input.size, String(before.size));
  assert.equal(input.oldRoot, BigInt(before.root).toString());
  assert.deepEqual(input.values, values.map(String));
  assert.equal(input.commitment, commitmentOf(dir, values, depth), "the append circuit's commitment of the same values");
  tree.ingest(values);
  const after = tree.head();
  assert.equal(after.size, before.size + values.length);
  assert.equal(input.newRoot, BigInt(after.root).toString(), "the root the insert reaches");
  return input;
}

for (const [K, DEPTH] of SIZES) {
  const skip = (binary === null && "no cairn binary") || (K > 4 && !larger && "CAIRN_INDEXED_BATCH=1 to run");
  test(`IndexedInsertBatch(${K}, ${DEPTH}): cairn's insertions satisfy it with cairn's new root; stored, repeated and tampered values do not (seed ${seed})`, { skip }, () => checkBatches(K, DEPTH));
}

async function checkBatches(K, DEPTH) {
  const circuit = await load(compile(`ibatch_${K}_${DEPTH}`, indexedBatch(K, DEPTH)));
  const rng = random(seed);
  await withTree(async (dir) => {
    // Random batches onto a tree of a few random values.
    for (let round = 0; round < 2; round++) {
      const stored = Array.from({ length: rng.int(0, 4) }, () => rng.element());
      const tree = indexedDatabase(dir, `random${round}`, stored);
      const batch = new Set();
      while (batch.size < K) batch.add(rng.int(0, 1) ? rng.element() : rng.field());
      const input = insertBatch(dir, tree, [...batch], DEPTH);
      await accepts(circuit, input, `random batch ${round}`, true);

      await refuses(circuit, { ...input, newRoot: bump(input.newRoot) }, "another new root");
      await refuses(circuit, { ...input, oldRoot: bump(input.oldRoot) }, "another old root");
      await refuses(circuit, { ...input, size: String(Number(input.size) + 1) }, "another size");
      for (let t = 0; t < K; t++) {
        const frontier = structuredClone(input.frontier);
        const bit = [...Array(DEPTH).keys()].find((k) => ((Number(input.size) + t) >> k) & 1);
        frontier[t][bit] = bump(frontier[t][bit]);
        await refuses(circuit, { ...input, frontier }, `step ${t}: frontier changed`);
        const lowSiblings = structuredClone(input.lowSiblings);
        lowSiblings[t][0][0] = bump(lowSiblings[t][0][0]);
        await refuses(circuit, { ...input, lowSiblings }, `step ${t}: low path changed`);
        await refuses(circuit, { ...input, lowNextValue: input.lowNextValue.with(t, bump(input.lowNextValue[t])) }, `step ${t}: low leaf changed`);
        // The low leaf's pointer rewritten to the end marker (as if x were above everything).
        if (input.lowNextValue[t] !== "0") {
          await refuses(circuit, { ...input, lowNextValue: input.lowNextValue.with(t, "0"), lowNextIndex: input.lowNextIndex.with(t, "0") }, `step ${t}: end marker forged`);
        }
      }
    }

    // Two new values sharing one low leaf, one above every stored value, one near p - 1 (then values between 9500 and p - 2).
    const tree = indexedDatabase(dir, "shared", [1000n, 5000n, 9000n]);
    const values = [2000n, 3000n, 9500n, P - 2n, ...Array.from({ length: K - 4 }, (_, i) => 10_000n + BigInt(i))];
    const input = insertBatch(dir, tree, values, DEPTH);
    await accepts(circuit, input, "shared low leaf, end marker", true);
    assert.equal(input.lowIndex[1], String(Number(input.size) + 0), "3000's low leaf is 2000's new leaf");
    assert.equal(input.lowNextValue[3], "0", "p - 2's low leaf is the last");
    assert.equal(input.lowValue[3], "9500");

    // A value stored already: its predecessor's low leaf (x < x fails) or its own leaf (v < x fails).
    const dupNext = values.with(1, 5000n);
    await refuses(circuit, { ...input, values: dupNext.map(String), commitment: commitmentOf(dir, dupNext, DEPTH) }, "a stored value (its predecessor's leaf)");
    // A value repeated in the batch: its second copy's low leaf is its first copy's new leaf.
    const repeated = values.with(1, 2000n);
    await refuses(circuit, { ...input, values: repeated.map(String), commitment: commitmentOf(dir, repeated, DEPTH) }, "a value repeated in the batch");
    // The guard's 0.
    const zero = values.with(0, 0n);
    await refuses(circuit, { ...input, values: zero.map(String), commitment: commitmentOf(dir, zero, DEPTH) }, "the guard's value");
    // The commitment of other values.
    await refuses(circuit, { ...input, commitment: commitmentOf(dir, [...values].reverse(), DEPTH) }, "values reordered under the commitment");
  });
}
