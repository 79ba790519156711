// Prints the constraint counts of LeanIMTAppend(K, D) as circom2 (the
// default --O1) reports them, per appended leaf, with and without the batch
// commitment (BatchCommitment(K) compiled on its own), for the batch sizes
// and depths given:
//   node scripts/append-figures.mjs "16,64,256" "20,32"
// With a third argument "prove" it also times a Groth16 proof of each
// (powers of tau made locally, kept in target/ptau), which needs the
// witness wasm and a cairn binary (CAIRN_BIN or target/release/cairn).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { append, compile } from "./circom.mjs";
import { endCurve, prove, setup } from "./groth16.mjs";
import { binary, random } from "./harness.mjs";

const ks = (process.argv[2] ?? "16,64,256").split(",").map(Number);
const depths = (process.argv[3] ?? "20,32").split(",").map(Number);
const proving = process.argv[4] === "prove";

const commitments = new Map();
console.log("| K | D | non-linear | per leaf | commitment | per leaf without it | compile s |" + (proving ? " setup s | prove s |" : ""));
console.log("|---|---|---|---|---|---|---|" + (proving ? "---|---|" : ""));
for (const k of ks) {
  if (!commitments.has(k)) {
    const c = compile(`count_commitment_${k}`, `include "../../append.circom";\ncomponent main = BatchCommitment(${k});`, { wasm: false });
    commitments.set(k, c.nonLinear);
  }
  const commitment = commitments.get(k);
  for (const depth of depths) {
    const c = compile(`count_append_${k}_${depth}`, append(k, depth), { wasm: proving });
    // Proving compiles it again fully simplified (--O2), as the tests' Groth16 runs do.
    const proved = proving ? compile(`prove_append_${k}_${depth}`, append(k, depth), { simplify: true }) : null;
    let timing = "";
    if (proving) {
      const keys = setup(proved);
      const dir = mkdtempSync(join(tmpdir(), "cairn-append-"));
      try {
        const rng = random(k * 100 + depth);
        const size = rng.int(0, 4 * k);
        writeFileSync(join(dir, "leaves.dec"), Array.from({ length: size + k }, () => rng.field()).join("\n") + "\n");
        const cairn = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 }).toString();
        cairn("init", join(dir, "db"), "--arity", "2", "--hash", "poseidon");
        cairn("ingest", join(dir, "db"), join(dir, "leaves.dec"), "--format", "dec");
        const input = JSON.parse(cairn("prove", join(dir, "db"), "--append-witness", `${size}..${size + k}`, "--circuit-depth", String(depth)));
        const { seconds } = await prove(proved, keys, input);
        timing = ` ${keys.seconds.toFixed(0)} | ${seconds.toFixed(1)} |`;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const perLeaf = (c.nonLinear / k).toFixed(0);
    const without = ((c.nonLinear - commitment) / k).toFixed(0);
    console.log(`| ${k} | ${depth} | ${c.nonLinear} | ${perLeaf} | ${commitment} | ${without} | ${c.seconds.toFixed(1)} |${timing}`);
  }
}
await endCurve();
