// The on-chain cost of the batch commitment the batch circuits make public
// (see docs/performance.md, "Batch appends"): the execution gas of
// BatchTree.commitment over K field elements, as `update` recomputes it
// from calldata, and of one poseidon-solidity hash of each width a
// commitment could chain (PoseidonT3: one leaf a call; PoseidonT6: four),
// compiled as the harness compiles every contract (lib/compile.mjs). The
// gas is the execution's alone, and the same for any field elements.
//
//   cd clients/evm && npm ci
//   node bench/commitment.mjs            # K = 4, 16, 64, 256
//   node bench/commitment.mjs 64,1024
import { Chain } from "../lib/chain.mjs";
import { random } from "../lib/random.mjs";

const ks = (process.argv[2] ?? "4,16,64,256").split(",").map(Number);
const rng = random(2026);
const chain = await Chain.create();
// The verifier is never called: commitment() is pure.
const tree = await chain.deploy("BatchAppendTree", ["0x" + "11".repeat(20), 4, 1]);

const run = async (contract, method, args) => {
  const result = await contract.call(method, args);
  if (!result.ok) throw new Error(`${contract.name}.${method} reverted: ${result.reason}`);
  return result.gas;
};

console.log("| hash | inputs | gas a call | gas a leaf of a chain |");
console.log("|---|---|---|---|");
for (const [width, leaves] of [[3, 1], [6, 4]]) {
  const library = await chain.deploy(`poseidon-solidity/PoseidonT${width}.sol:PoseidonT${width}`);
  const gas = await run(library, "hash", Array.from({ length: width - 1 }, () => rng.field()));
  console.log(`| PoseidonT${width} | ${width - 1} | ${gas} | ${gas / BigInt(leaves)} |`);
}
console.log();
console.log("| K | commitment gas | a leaf |");
console.log("|---|---|---|");
for (const k of ks) {
  const gas = await run(tree, "commitment", Array.from({ length: k }, () => rng.field()));
  console.log(`| ${k} | ${gas} | ${gas / BigInt(k)} |`);
}
