// Fixed-depth IMTs (zk-kit's BinaryIMT and QuinaryIMT, Poseidon) in the
// EVM against @zk-kit/imt and, when it has the kind, cairn. See
// test/imt.test.mjs for what is checked.
import assert from "node:assert/strict";
import { IMT } from "@zk-kit/imt";
import { poseidon2, poseidon5 } from "poseidon-lite";
import { CairnTree } from "../cairn.mjs";
import { Chain } from "../chain.mjs";
import { P, batches, random } from "../random.mjs";
import { Tally } from "../run.mjs";

const HASHES = { 2: poseidon2, 5: poseidon5 };

async function deploy(chain, arity, depth, zero, defaultZeroes = false) {
  if (arity === 2) return chain.deploy("BinaryIMTHarness", [depth, zero, defaultZeroes]);
  if (arity === 5 && !defaultZeroes) return chain.deploy("QuinaryIMTHarness", [depth, zero]);
  throw new Error(`no zk-kit IMT contract for arity ${arity}${defaultZeroes ? " with default zeroes" : ""}`);
}

/**
 * A membership proof as the contract's verify takes it, from zk-kit's IMT
 * proof shape ({ leaf, siblings: one list of N-1 per level, pathIndices },
 * values as decimal strings or bigints); a binary proof may also list one
 * sibling per level without the inner lists.
 */
export function contractProof(proof, arity) {
  const siblings = proof.siblings.map((level) => (Array.isArray(level) ? level.map(BigInt) : [BigInt(level)]));
  const counts = siblings.map((level) => level.length);
  assert.ok(counts.every((n) => n === arity - 1), `proof siblings: want ${arity - 1} per level, got ${counts.join(", ")}`);
  return {
    leaf: BigInt(proof.leaf),
    root: BigInt(proof.root),
    siblings: arity === 2 ? siblings.map((level) => level[0]) : siblings,
    pathIndices: proof.pathIndices.map(Number),
  };
}

/** The three trees (cairn's when `withCairn`) agree on `count` leaves, or up to the capacity. */
export async function agree({ seed, leaves: wanted, arity, depth, zero, withCairn }, note) {
  const rng = random(seed);
  zero = BigInt(zero);
  const capacity = arity ** depth;
  const count = Math.min(wanted, capacity);
  const leaves = rng.leaves(count);
  const chain = await Chain.create();
  const contract = await deploy(chain, arity, depth, zero);
  const library = new IMT(HASHES[arity], depth, zero, arity);
  const cairn = withCairn ? CairnTree.create({ kind: "imt", arity, hash: "poseidon", depth, zero }) : null;
  const tally = new Tally();
  const start = performance.now();
  const what = `IMT N=${arity} depth ${depth} zero ${zero}`;
  try {
    const compare = async (size) => {
      const onChain = await contract.read("root");
      assert.equal(await contract.read("size"), BigInt(size));
      assert.equal(BigInt(library.root), onChain, `${what}: @zk-kit/imt's root after ${size} leaves`);
      if (cairn) {
        const report = cairn.root();
        assert.equal(report.size, size, `${what}: cairn's size`);
        assert.equal(report.root, onChain, `${what}: cairn's root after ${size} leaves`);
      }
      return onChain;
    };
    await compare(0);

    let size = 0;
    for (const batch of batches(rng, leaves, 32)) {
      for (const leaf of batch) {
        await tally.time("insert", 1, async () => (await contract.send("insert", leaf)).gas);
        library.insert(leaf);
      }
      if (cairn) await tally.time("cairn ingest", batch.length, async () => assert.equal(cairn.ingest(batch).count, batch.length));
      size += batch.length;
      const onChain = await compare(size);

      // Two proofs per batch (a random leaf and the newest) must verify;
      // one of them, changed, must not (verify costs as much gas as an
      // insert, so the changes alternate between a sibling and a path index).
      for (const [number, index] of [rng.int(0, size - 1), size - 1].entries()) {
        const source = cairn ? "cairn" : "@zk-kit/imt";
        const proof = contractProof(cairn ? cairn.proveZkkit(index) : library.createProof(index), arity);
        if (cairn) assert.deepEqual(proof, contractProof(library.createProof(index), arity), `${what}: cairn's proof of ${index} differs from @zk-kit/imt's`);
        assert.equal(proof.root, onChain, `${what}: ${source}'s proof of ${index}: root`);
        assert.equal(proof.leaf, leaves[index], `${what}: ${source}'s proof of ${index}: leaf`);
        assert.equal(await contract.read("verify", proof.leaf, proof.siblings, proof.pathIndices), true, `${what}: ${source}'s proof of ${index} of ${size}: refused`);
        if (number === 1) continue;

        const level = rng.int(0, depth - 1);
        if (rng.next() < 0.5) {
          const siblings = structuredClone(proof.siblings);
          if (arity === 2) siblings[level] = (siblings[level] + 1n) % P;
          else {
            const at = rng.int(0, arity - 2);
            siblings[level][at] = (siblings[level][at] + 1n) % P;
          }
          assert.equal(await contract.read("verify", proof.leaf, siblings, proof.pathIndices), false, `${what}: proof of ${index} with a sibling at level ${level} changed: accepted`);
        } else {
          // The node at a level hashes a subtree holding the leaf, so it differs from its siblings (short of a collision): put elsewhere, it must give another root.
          const moved = proof.pathIndices.with(level, (proof.pathIndices[level] + rng.int(1, arity - 1)) % arity);
          assert.equal(await contract.read("verify", proof.leaf, proof.siblings, moved), false, `${what}: proof of ${index} with the path index at level ${level} moved: accepted`);
        }
      }
    }

    if (count === capacity) {
      const full = await contract.call("insert", rng.field());
      assert.deepEqual(full, { ok: false, reason: "TreeIsFull" }, `${what}: insert into the full tree`);
      assert.throws(() => library.insert(1n), /full/, `${what}: @zk-kit/imt insert into the full tree`);
      if (cairn) {
        const refused = cairn.ingestRefused([rng.field()]);
        assert.notEqual(refused.status, 0, `${what}: cairn ingest into the full tree`);
        assert.equal(cairn.root().size, capacity, `${what}: cairn's size after the refused ingest`);
      }
    }
    const filled = count === capacity ? " (full: one more insert refused)" : "";
    note(`${what}: ${count} leaves${filled} in ${((performance.now() - start) / 1000).toFixed(1)} s${cairn ? "" : " (contract and @zk-kit/imt only)"}: ${tally.summary()}`);
  } finally {
    cairn?.remove();
  }
}

/**
 * BinaryIMT's built-in zero table (initWithDefaultZeroes) is the zero
 * chain of 0: at every depth 1..32 the empty root and the root of one leaf
 * equal @zk-kit/imt's and cairn's with zero 0.
 */
export async function defaultZeroes({ seed, withCairn }, note) {
  const rng = random(seed);
  const chain = await Chain.create();
  for (let depth = 1; depth <= 32; depth += 1) {
    const contract = await deploy(chain, 2, depth, 0n, true);
    const library = new IMT(poseidon2, depth, 0n, 2);
    const cairn = withCairn ? CairnTree.create({ kind: "imt", arity: 2, hash: "poseidon", depth, zero: 0n }) : null;
    try {
      for (const leaf of [null, rng.field()]) {
        if (leaf !== null) {
          await contract.send("insert", leaf);
          library.insert(leaf);
          cairn?.ingest([leaf]);
        }
        const onChain = await contract.read("root");
        const at = `depth ${depth}, ${leaf === null ? "empty" : "one leaf"}`;
        assert.equal(BigInt(library.root), onChain, `${at}: @zk-kit/imt`);
        if (cairn) assert.equal(cairn.root().root, onChain, `${at}: cairn`);
      }
    } finally {
      cairn?.remove();
    }
  }
  note(`depths 1 to 32: the default-zero roots agree${withCairn ? "" : " (contract and @zk-kit/imt only)"}`);
}
