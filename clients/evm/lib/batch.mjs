// What the two batch-proof tests share (test/batch.test.mjs for appends,
// test/indexed-batch.test.mjs for indexed inserts): a circuit of
// circuits/ compiled with --O2 and given Groth16 keys from the powers of
// tau kept in target/ptau/ (circuits/scripts/groth16.mjs), its exported
// verifier compiled with solc and deployed under a batch tree contract
// (contracts/BatchTree.sol), the refusals every batch must meet, and the
// figures a run reports.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { Chain } from "./chain.mjs";
import { compileSource, root } from "./compile.mjs";
import { P } from "./random.mjs";

const circuits = `${root}../../circuits/`;

/** Whether circuits/ is installed (npm ci there): the tests skip without it, and fail under CI. */
export const installed = existsSync(`${circuits}node_modules/snarkjs`);
if (!installed && process.env.CI) throw new Error("CI: circuits/node_modules missing (npm ci in circuits/ first)");

let groth16;

/** Ends the curve's worker threads (they keep node alive): the tests' `after`. */
export const endCurve = async () => groth16?.endCurve();

/**
 * The circuit `template(K, depth)` of circuits/scripts/circom.mjs compiled
 * fully simplified under `name` (its own build directory: CI runs the
 * circuits' tests beside these, and they compile the same templates), its
 * keys, and `contract` deployed over its verifier on a fresh chain with
 * (verifier, K, depth): { compiled, keys, chain, contract, prove }.
 */
export async function provenTree(name, template, contract, K, depth) {
  const circom = await import(`${circuits}scripts/circom.mjs`);
  groth16 = await import(`${circuits}scripts/groth16.mjs`);
  // --O2, as the circuits' Groth16 test compiles: the powers of tau must exceed the constraints.
  const compiled = circom.compile(name, circom[template](K, depth), { simplify: true });
  // The powers of tau kept in target/ptau/ (the smallest that fits), made here only when none does.
  const keys = groth16.setup(compiled);
  const verifier = compileSource(`${name}_verifier.sol`, keys.solidity, "Groth16Verifier");
  const chain = await Chain.create();
  const deployedVerifier = await chain.deployCode("Groth16Verifier", "0x" + verifier.bytecode, verifier.abi);
  const deployed = await chain.deploy(contract, [deployedVerifier.address.toString(), K, depth]);
  const g = groth16;
  return {
    compiled,
    keys,
    chain,
    contract: deployed,
    /** A proof of `input`, checked by snarkjs: { flat (the contract's uint256[8]), seconds }; throws when no witness satisfies the circuit. */
    async prove(input) {
      const { proof, publicSignals, seconds } = await g.prove(compiled, keys, input);
      assert.ok(await g.verify(keys, publicSignals, proof), "snarkjs refuses its own proof");
      return { flat: g.solidityProof(proof).flat(2), seconds };
    },
  };
}

/**
 * What `contract.update` must refuse before the batch `values` with proof
 * `flat` to `newRoot` is sent: a changed proof element, other values (the
 * commitment of others), another root, a short batch, a value that is no
 * field element, and the previous batch's update replayed (`previous`, its
 * arguments, or null).
 */
export async function checkRefusals(contract, rng, { newRoot, values, flat, previous, other, context }) {
  const at = rng.int(0, 7);
  const changed = flat.with(at, (flat[at] + 1n) % P);
  assert.ok(!(await contract.call("update", newRoot, values, changed)).ok, `${context}: proof element ${at} changed, accepted`);
  const others = values.with(rng.int(0, values.length - 1), other());
  assert.equal((await contract.call("update", newRoot, others, flat)).reason, "InvalidProof", `${context}: other values`);
  assert.equal((await contract.call("update", (newRoot + 1n) % P, values, flat)).reason, "InvalidProof", `${context}: another root`);
  assert.match((await contract.call("update", newRoot, values.slice(1), flat)).reason, /^WrongBatchSize/);
  assert.match((await contract.call("update", newRoot, values.with(0, values[0] + P), flat)).reason, /^NotFieldElement/);
  if (previous !== null) {
    assert.equal((await contract.call("update", ...previous)).reason, "InvalidProof", `${context}: the previous batch's proof replayed`);
  }
}

/** One line of a run's figures: constraints, power of tau, gas per update and per value, proving and setup times. */
export function figures({ K, depth, compiled, keys, gas, proving }) {
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  const meanGas = gas.reduce((a, b) => a + b, 0n) / BigInt(gas.length);
  const least = gas.reduce((a, b) => (a < b ? a : b));
  const most = gas.reduce((a, b) => (a > b ? a : b));
  return `K=${K} D=${depth}: ${compiled.nonLinear} constraints (--O2), power ${keys.power}; ${gas.length} batches; update gas mean ${meanGas} (${meanGas / BigInt(K)} a value), min ${least}, max ${most}; proving ${mean(proving).toFixed(2)} s a batch; setup ${keys.seconds.toFixed(1)} s`;
}
