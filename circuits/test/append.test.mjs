// The batch-append circuit against cairn: `cairn prove DIR --append-witness
// FROM..TO` for a binary Poseidon database gives a witness of
// LeanIMTAppend(K, D) whose public roots are cairn's, for old sizes 0,
// powers of two and their neighbours, batches crossing a depth increase,
// a batch filling the circuit's 2^D leaves exactly, and random sizes; a
// changed frontier node, a frontier value where the size has none, a
// changed leaf (with the commitment made to match it), another old size,
// and changed roots have none. Then Groth16 from a locally made powers of
// tau: a proof of a batch verifies, the same proof against another new
// root does not.
//
// Depth and batch are small by default; CAIRN_CIRCUIT_DEPTHS=full adds
// K = 16 at depth 12.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { append, compile } from "../scripts/circom.mjs";
import { prove, setup, verify } from "../scripts/groth16.mjs";
import { P, accepts, binary, endCurve, full, load, random, refuses, run, seed, withTree } from "../scripts/harness.mjs";

after(endCurve);

const CASES = full ? [[4, 6], [16, 12]] : [[4, 6]];

/** A binary Poseidon database holding `leaves`, and the witness of `from..to` at circuit depth `depth`. */
function database(dir, name, leaves) {
  const db = join(dir, name);
  run("init", db, "--arity", "2", "--hash", "poseidon");
  const file = join(dir, `${name}.dec`);
  writeFileSync(file, leaves.map(String).join("\n") + "\n");
  run("ingest", db, file, "--format", "dec");
  return (from, to, depth) => JSON.parse(run("prove", db, "--append-witness", `${from}..${to}`, "--circuit-depth", String(depth)));
}

/** Old sizes worth a case: 0, around every power of two, a batch ending at 2^D, random ones. */
function sizes(k, depth, rng) {
  const capacity = 2 ** depth;
  const picked = new Set([0, 1, 2, 3]);
  for (let power = 1; power < capacity; power *= 2) {
    for (const s of [power - 1, power, power + 1, power - k, power - k + 1]) if (s >= 0) picked.add(s);
  }
  picked.add(capacity - k);
  for (let i = 0; i < 6; i++) picked.add(rng.int(0, capacity - k));
  return [...picked].filter((s) => s + k <= capacity).sort((a, b) => a - b);
}

for (const [k, depth] of CASES) {
  test(`LeanIMTAppend(${k}, ${depth}): cairn's append witnesses satisfy it; tampered ones do not (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async () => {
    const circuit = await load(compile(`append_${k}_${depth}`, append(k, depth)));
    const rng = random(seed);
    const capacity = 2 ** depth;
    const leaves = Array.from({ length: capacity }, () => rng.field());
    await withTree(async (dir) => {
      const witness = database(dir, "tree", leaves);
      const roots = JSON.parse(run("root", join(dir, "tree"), "--json"));
      assert.equal(roots.size, capacity);
      for (const s of sizes(k, depth, rng)) {
        const input = witness(s, s + k, depth);
        assert.equal(input.size, String(s));
        assert.deepEqual(input.leaves, leaves.slice(s, s + k).map(String));
        assert.equal(input.frontier.length, depth);
        // Every size's witness checked by snarkjs against the R1CS on its own too.
        await accepts(circuit, input, `append ${s}..${s + k}`, true);

        // A changed frontier node (at a set bit of s), or one where s has none.
        for (let bit = 0; bit < depth; bit++) {
          const frontier = [...input.frontier];
          frontier[bit] = String((BigInt(frontier[bit]) + 1n) % P);
          await refuses(circuit, { ...input, frontier }, `append ${s}..${s + k}: frontier ${bit} changed`);
        }
        // Another old size with the same frontier.
        for (const other of [s - 1, s + 1]) {
          if (other < 0 || other + k > capacity) continue;
          await refuses(circuit, { ...input, size: String(other) }, `append ${s}..${s + k} claimed at size ${other}`);
        }
        // Changed roots.
        await refuses(circuit, { ...input, oldRoot: String((BigInt(input.oldRoot) + 1n) % P) }, `append ${s}..${s + k}: old root changed`);
        await refuses(circuit, { ...input, newRoot: String((BigInt(input.newRoot) + 1n) % P) }, `append ${s}..${s + k}: new root changed`);
        // The leaves out of order: the commitment no longer matches.
        const swapped = [...input.leaves];
        [swapped[0], swapped[k - 1]] = [swapped[k - 1], swapped[0]];
        await refuses(circuit, { ...input, leaves: swapped }, `append ${s}..${s + k}: leaves reordered`);
      }

      // A leaf changed with the commitment made to match it (cairn's
      // commitment of a tree whose batch holds the changed leaf): the new
      // root no longer matches.
      const s = rng.int(1, capacity - k);
      const changed = leaves.slice(0, s + k);
      changed[s + 1] = (changed[s + 1] + 1n) % P;
      const other = database(dir, "changed", changed)(s, s + k, depth);
      const input = witness(s, s + k, depth);
      assert.equal(other.oldRoot, input.oldRoot);
      assert.notEqual(other.commitment, input.commitment);
      await refuses(circuit, { ...input, leaves: other.leaves, commitment: other.commitment }, `append ${s}..${s + k}: leaf ${s + 1} changed`);
      await accepts(circuit, { ...input, leaves: other.leaves, commitment: other.commitment, newRoot: other.newRoot }, `append ${s}..${s + k}: the changed tree's own witness`);

      // Past the circuit's capacity cairn prints nothing (exit 2).
      assert.throws(() => witness(capacity - k + 1, capacity + 1, depth), (error) => error.status === 2);
    });
  });
}

test(`LeanIMTAppend(4, 6): Groth16 from a local powers of tau proves cairn's batch; the proof does not verify for another root (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async () => {
  // Fully simplified (--O2) for Groth16: it then fits the shared 2^12 powers of tau.
  const compiled = compile("append_4_6_o2", append(4, 6), { simplify: true });
  const keys = setup(compiled);
  const rng = random(seed + 1);
  const leaves = Array.from({ length: 24 }, () => rng.field());
  await withTree(async (dir) => {
    const witness = database(dir, "tree", leaves);
    const s = 4 * rng.int(0, 4) + rng.int(0, 3);
    const input = witness(s, s + 4, 6);
    const { proof, publicSignals } = await prove(compiled, keys, input);
    assert.deepEqual(publicSignals, [input.oldRoot, input.newRoot, input.size, input.commitment], "public signals in declaration order");
    assert.ok(await verify(keys, publicSignals, proof), `proof of ${s}..${s + 4}`);
    const forged = publicSignals.with(1, String((BigInt(input.newRoot) + 1n) % P));
    assert.ok(!(await verify(keys, forged, proof)), "the proof verified for another new root");
    // A tampered witness has no proof.
    await assert.rejects(prove(compiled, keys, { ...input, size: String(s + 1) }));
  });
});
