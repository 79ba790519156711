// Prints the constraint counts of IndexedInsertBatch(K, D) as circom2 (at its
// default --O1) reports them, per inserted value, with and without the
// batch commitment (BatchCommitment(K) compiled on its own), for the batch
// sizes and depths given:
//   node scripts/indexed-figures.mjs "16,64,256" "20,32"
// A compile needs memory in proportion to the constraints (about 27k a
// value at depth 20): the largest sizes take minutes each.
import { compile, indexedBatch } from "./circom.mjs";

const ks = (process.argv[2] ?? "16,64,256").split(",").map(Number);
const depths = (process.argv[3] ?? "20,32").split(",").map(Number);

const commitments = new Map();
console.log("| K | D | non-linear | per value | commitment | per value without it | compile s |");
console.log("|---|---|---|---|---|---|---|");
for (const k of ks) {
  if (!commitments.has(k)) {
    const c = compile(`count_commitment_${k}`, `include "../../append.circom";\ncomponent main = BatchCommitment(${k});`, { wasm: false });
    commitments.set(k, c.nonLinear);
  }
  const commitment = commitments.get(k);
  for (const depth of depths) {
    const c = compile(`count_ibatch_${k}_${depth}`, indexedBatch(k, depth), { wasm: false });
    const perValue = (c.nonLinear / k).toFixed(0);
    const without = ((c.nonLinear - commitment) / k).toFixed(0);
    console.log(`| ${k} | ${depth} | ${c.nonLinear} | ${perValue} | ${commitment} | ${without} | ${c.seconds.toFixed(1)} |`);
  }
}
