// LeanIMT (arity 2, Poseidon) in the EVM against cairn. See
// test/leanimt.test.mjs for what is checked.
import assert from "node:assert/strict";
import { CairnTree } from "../cairn.mjs";
import { Chain } from "../chain.mjs";
import { P, batches, random } from "../random.mjs";
import { Tally } from "../run.mjs";

export async function agree({ seed, leaves: count }, note) {
  const rng = random(seed);
  const leaves = rng.leaves(count);
  const chain = await Chain.create();
  const contract = await chain.deploy("LeanIMTHarness");
  const cairn = CairnTree.create({ arity: 2, hash: "poseidon" });
  const tally = new Tally();
  const inserted = new Set();
  const start = performance.now();
  try {
    let size = 0;
    for (const [number, batch] of batches(rng, leaves, 32).entries()) {
      // Alternate the contract's two ways in: a transaction per leaf, or one insertMany.
      if (number % 2 === 0) {
        for (const leaf of batch) {
          await tally.time("insert", 1, async () => (await contract.send("insert", leaf)).gas);
        }
      } else {
        await tally.time("insertMany", batch.length, async () => (await contract.send("insertMany", batch)).gas);
      }
      await tally.time("cairn ingest", batch.length, async () => assert.equal(cairn.ingest(batch).count, batch.length));
      size += batch.length;
      batch.forEach((leaf) => inserted.add(leaf));

      const onChain = await contract.read("root");
      const { root, size: cairnSize } = cairn.root();
      assert.equal(cairnSize, size);
      assert.equal(await contract.read("size"), BigInt(size));
      assert.equal(root, onChain, `root after ${size} leaves (batch ${number})`);

      for (const index of [rng.int(0, size - 1), size - 1]) {
        const proof = cairn.proveZkkit(index);
        assert.equal(BigInt(proof.root), onChain, `proof of ${index}: root`);
        assert.equal(BigInt(proof.leaf), leaves[index], `proof of ${index}: leaf`);
        const siblings = proof.siblings.map(BigInt);
        let fresh;
        do fresh = rng.field();
        while (inserted.has(fresh));
        const accepted = await contract.call("update", leaves[index], fresh, siblings);
        assert.ok(accepted.ok, `proof of ${index} of ${size}: the contract refused it: ${accepted.reason}`);
        if (siblings.length > 0) {
          const at = rng.int(0, siblings.length - 1);
          const tampered = siblings.with(at, (siblings[at] + 1n) % P);
          const refused = await contract.call("update", leaves[index], fresh, tampered);
          assert.ok(!refused.ok, `proof of ${index} of ${size} with sibling ${at} changed: accepted`);
          assert.equal(refused.reason, "WrongSiblingNodes");
        }
      }
    }
    note(`LeanIMT N=2: ${count} leaves in ${((performance.now() - start) / 1000).toFixed(1)} s: ${tally.summary()}`);
  } finally {
    cairn.remove();
  }
}
