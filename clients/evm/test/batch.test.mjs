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
import { existsSync } from "node:fs";
import { after, test } from "node:test";
import { binary, CairnTree } from "../lib/cairn.mjs";
import { Chain } from "../lib/chain.mjs";
import { compileSource, root } from "../lib/compile.mjs";
import { P, random, seed } from "../lib/random.mjs";

const K = Number(process.env.CAIRN_BATCH_K ?? 4);
const DEPTH = Number(process.env.CAIRN_BATCH_DEPTH ?? 6);
const COUNT = Number(process.env.CAIRN_BATCH_COUNT ?? Math.min(5, 2 ** DEPTH / K));
const circuits = `${root}../../circuits/`;
const installed = existsSync(`${circuits}node_modules/snarkjs`);
if (!installed && process.env.CI) throw new Error("CI: circuits/node_modules missing (npm ci in circuits/ first)");

let groth16;
after(async () => groth16?.endCurve());

test(`batch appends proven with Groth16: BatchAppendTree's root is cairn's after every batch of ${K} at depth ${DEPTH} (seed ${seed})`, { skip: (binary === null && "no cairn binary") || (!installed && "circuits/ not installed") }, async (t) => {
  const { append, compile } = await import(`${circuits}scripts/circom.mjs`);
  groth16 = await import(`${circuits}scripts/groth16.mjs`);
  // Fully simplified (--O2), as the circuits' Groth16 test compiles it: K = 4 at depth 6 then fits the shared 2^12 powers of tau.
  // Its own build directory: CI runs the circuits' tests beside this file, and they compile the same circuit.
  const compiled = compile(`evm_append_${K}_${DEPTH}_o2`, append(K, DEPTH), { simplify: true });
  // The powers of tau the circuits' tests made (target/ptau/), made here only when absent.
  const keys = groth16.setup(compiled);
  const verifier = compileSource("AppendVerifier.sol", keys.solidity, "Groth16Verifier");

  const chain = await Chain.create();
  const deployedVerifier = await chain.deployCode("Groth16Verifier", "0x" + verifier.bytecode, verifier.abi);
  const contract = await chain.deploy("BatchAppendTree", [deployedVerifier.address.toString(), K, DEPTH]);
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
      const { proof, publicSignals, seconds } = await groth16.prove(compiled, keys, input);
      proving.push(seconds);
      assert.ok(await groth16.verify(keys, publicSignals, proof));
      const flat = groth16.solidityProof(proof).flat(2);
      const newRoot = BigInt(input.newRoot);

      // Refused: a changed proof element, other leaves, a wrong batch length, a leaf that is no field element.
      const at = rng.int(0, 7);
      const changed = flat.with(at, (flat[at] + 1n) % P);
      assert.ok(!(await contract.call("update", newRoot, leaves, changed)).ok, `batch ${batch}: proof element ${at} changed, accepted`);
      const others = leaves.with(rng.int(0, K - 1), rng.field());
      assert.equal((await contract.call("update", newRoot, others, flat)).reason, "InvalidProof", `batch ${batch}: other leaves`);
      assert.equal((await contract.call("update", (newRoot + 1n) % P, leaves, flat)).reason, "InvalidProof", `batch ${batch}: another root`);
      assert.match((await contract.call("update", newRoot, leaves.slice(1), flat)).reason, /^WrongBatchSize/);
      assert.match((await contract.call("update", newRoot, leaves.with(0, leaves[0] + P), flat)).reason, /^NotFieldElement/);
      if (previous !== null) {
        assert.equal((await contract.call("update", ...previous)).reason, "InvalidProof", `batch ${batch}: the previous batch's proof replayed`);
      }

      gas.push((await contract.send("update", newRoot, leaves, flat)).gas);
      size += K;
      const head = cairn.root();
      assert.equal(head.size, size);
      assert.equal(await contract.read("size"), BigInt(size));
      assert.equal(await contract.read("root"), head.root, `root after ${size} leaves`);
      previous = [newRoot, leaves, flat];
    }
    const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
    const meanGas = gas.reduce((a, b) => a + b, 0n) / BigInt(gas.length);
    t.diagnostic(
      `K=${K} D=${DEPTH}: ${compiled.nonLinear} constraints, power ${keys.power}; ${COUNT} batches; update gas mean ${meanGas} (${meanGas / BigInt(K)} a leaf), min ${gas.reduce((a, b) => (a < b ? a : b))}, max ${gas.reduce((a, b) => (a > b ? a : b))}; proving ${mean(proving).toFixed(2)} s a batch; setup ${keys.seconds.toFixed(1)} s`,
    );
  } finally {
    cairn.remove();
  }
});
