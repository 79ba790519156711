// Two builds of the WebAssembly module against each other and against the
// pure TypeScript verifier, on the same Poseidon N = 2 imt proofs (depth 32,
// 30 proofs made by the CLI), rounds interleaved in one process:
//   node scripts/ab-wasm.mjs BEFORE.wasm AFTER.wasm [ROUNDS]
// Prints the median µs per proof (min..max) of each, and the ratios.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeMembership, hashers, verifyMembership } from "cairn-verify";
import { loadWasm } from "cairn-verify/wasm";

const [beforeFile, afterFile, roundsText = "15"] = process.argv.slice(2);
if (afterFile === undefined) throw new Error("usage: node scripts/ab-wasm.mjs BEFORE.wasm AFTER.wasm [ROUNDS]");
const rounds = Number(roundsText);
const before = await loadWasm(readFileSync(beforeFile));
const after = await loadWasm(readFileSync(afterFile));
const binary = process.env.CAIRN_BIN ?? new URL("../../../target/release/cairn", import.meta.url).pathname;
const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });

const depth = 32;
const dir = mkdtempSync(join(tmpdir(), "cairn-ab-wasm-"));
let proofs;
let root;
try {
  const db = join(dir, "db");
  run("init", db, "--arity", "2", "--hash", "poseidon", "--kind", "imt", "--depth", String(depth));
  const leaves = Buffer.alloc(256 * 32);
  for (let i = 0; i < 256; i++) leaves.writeUInt32BE((i * 2654435761) >>> 0, i * 32 + 28);
  writeFileSync(join(dir, "leaves.bin"), leaves);
  run("ingest", db, join(dir, "leaves.bin"));
  proofs = Array.from({ length: 30 }, (_, i) => new Uint8Array(run("prove", db, "--index", String((i * 37) % 256), "--binary")));
  root = JSON.parse(run("root", db, "--json").toString());
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const tree = { arity: 2, hash: hashers.poseidon, kind: "imt", depth, zero: decodeMembership(proofs[0]).kind.zero };
const head = { size: root.size, root: root.root };
const time = (verify) => {
  const start = process.hrtime.bigint();
  for (const proof of proofs) verify(proof);
  return Number(process.hrtime.bigint() - start) / proofs.length / 1000;
};
const runs = { typescript: [], before: [], after: [] };
for (let round = 0; round < rounds; round++) {
  runs.typescript.push(time((p) => verifyMembership(p, tree, head)));
  runs.before.push(time((p) => before.verifyMembership(p, tree, head)));
  runs.after.push(time((p) => after.verifyMembership(p, tree, head)));
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const [name, values] of Object.entries(runs)) {
  console.log(`${name}: ${median(values).toFixed(0)} µs/proof (${Math.min(...values).toFixed(0)}..${Math.max(...values).toFixed(0)})`);
}
console.log(`typescript / after ${(median(runs.typescript) / median(runs.after)).toFixed(1)}x, before / after ${(median(runs.before) / median(runs.after)).toFixed(2)}x`);
