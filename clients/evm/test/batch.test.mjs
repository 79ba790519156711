// A tree kept off-chain, its root moved on-chain by one Groth16 proof per
// batch: cairn's LeanIMTAppend(K, D) circuit (circuits/append.circom),
// keys from a powers of tau made locally (circuits/scripts/groth16.mjs),
// the Solidity verifier snarkjs exports compiled with solc, and
// contracts/BatchAppendTree.sol keeping (root, size) and recomputing the
// batch commitment from the leaves in calldata. Batches of random leaves
// go to a cairn database; `cairn prove --append-witness` gives each
// batch's circuit inputs, snarkjs the proof; after every batch the
// contract's root and size are cairn's. A proof with a changed element,
// a proof for other leaves, and a replayed proof are refused; so are a
// wrong batch length and a leaf that is no field element.
//
// K = 4 at depth 6 by default (CAIRN_BATCH_K and CAIRN_BATCH_DEPTH for
// larger runs, CAIRN_BATCH_COUNT batches). The circuits package must be
// installed (npm ci in circuits/): the test skips without it, outside CI.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { checkRefusals, endCurve, figures, installed, provenTree } from "../lib/batch.mjs";
import { binary, CairnTree } from "../lib/cairn.mjs";
import { random, seed } from "../lib/random.mjs";

const K = Number(process.env.CAIRN_BATCH_K ?? 4);
const DEPTH = Number(process.env.CAIRN_BATCH_DEPTH ?? 6);
const COUNT = Number(process.env.CAIRN_BATCH_COUNT ?? Math.min(5, 2 ** DEPTH / K));

after(endCurve);

test(`batch appends proven with Groth16: BatchAppendTree's root is cairn's after every batch of ${K} at depth ${DEPTH} (seed ${seed})`, { skip: (binary === null && "no cairn binary") || (!installed && "circuits/ not installed") }, async (t) => {
  // K = 4 at depth 6 fits the shared 2^12 powers of tau.
  const tree = await provenTree(`evm_append_${K}_${DEPTH}_o2`, "append", "BatchAppendTree", K, DEPTH);
  const { contract } = tree;
  const cairn = CairnTree.create({ arity: 2, hash: "poseidon" });
  const rng = random(seed);
  const gas = [];
  const proving = [];
  try {
    assert.equal(await contract.read("root"), 0n);
    let size = 0;
    let previous = null;
    for (let batch = 0; batch < COUNT; batch++) {
      const leaves = Array.from({ length: K }, () => rng.field());
      cairn.ingest(leaves);
      const input = cairn.appendWitness(size, size + K, DEPTH);
      assert.equal(BigInt(input.oldRoot), await contract.read("root"), `batch ${batch}: the witness starts at the contract's root`);
      assert.equal(BigInt(input.commitment), await contract.read("commitment", leaves), `batch ${batch}: the contract's commitment is cairn's`);
      const { flat, seconds } = await tree.prove(input);
      proving.push(seconds);
      const newRoot = BigInt(input.newRoot);
      await checkRefusals(contract, rng, { newRoot, values: leaves, flat, previous, other: rng.field, context: `batch ${batch}` });

      gas.push((await contract.send("update", newRoot, leaves, flat)).gas);
      size += K;
      const head = cairn.root();
      assert.equal(head.size, size);
      assert.equal(await contract.read("size"), BigInt(size));
      assert.equal(await contract.read("root"), head.root, `root after ${size} leaves`);
      previous = [newRoot, leaves, flat];
    }
    t.diagnostic(figures({ K, depth: DEPTH, ...tree, gas, proving }));
  } finally {
    cairn.remove();
  }
});
