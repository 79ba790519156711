// Membership proof verification in node through the WebAssembly module
// (`cairn-verify/wasm`) against the pure TypeScript verifier, on the same
// proofs in the same run, rounds interleaved (TS, WebAssembly, TS, ...).
// The proofs: the cairn CLI builds Poseidon N = 2 trees (a fixed-depth one
// of depth 16 and one of depth 32, 256 leaves each: 16 and 32 hashes a
// proof, the 2^16-leaf and Semaphore/Tornado shapes) and proves 50 leaves.
//   cargo build -p cairn-wasm --release --target wasm32-unknown-unknown && npm run build
//   CAIRN_BIN=../../target/debug/cairn node scripts/bench-wasm.mjs [ROUNDS]
// Each figure is the median over rounds of (time for the proofs) / proofs,
// decoding from binary and verifying, with the spread (min..max).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashers, verifyMembership } from "cairn-verify";
import { loadWasm } from "cairn-verify/wasm";

const [roundsText = "9"] = process.argv.slice(2);
const rounds = Number(roundsText);
const binary = process.env.CAIRN_BIN ?? new URL("../../../target/release/cairn", import.meta.url).pathname;
const wasm = await loadWasm(readFileSync(new URL("../dist/cairn.wasm", import.meta.url)));
const sorted = (values) => [...values].sort((a, b) => a - b);
const us = (ns) => (ns / 1000).toFixed(ns < 10_000 ? 1 : 0);
const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });

const dir = mkdtempSync(join(tmpdir(), "cairn-bench-wasm-"));
const entries = [];
try {
  for (const depth of [16, 32]) {
    const db = join(dir, `db-${depth}`);
    run("init", db, "--arity", "2", "--hash", "poseidon", "--kind", "imt", "--depth", String(depth));
    const leaves = Buffer.alloc(256 * 32);
    for (let i = 0; i < 256; i++) leaves.writeUInt32BE(i * 2654435761 >>> 0, i * 32 + 28);
    writeFileSync(join(dir, "leaves.bin"), leaves);
    run("ingest", db, join(dir, "leaves.bin"));
    const proofs = Array.from({ length: 50 }, (_, i) => new Uint8Array(run("prove", db, "--index", String((i * 37) % 256), "--binary")));
    const root = JSON.parse(run("root", db, "--json").toString());
    entries.push({ depth, proofs, size: root.size, root: root.root });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(`node ${process.version}, ${rounds} rounds interleaved`);
console.log("| tree | hashes a proof | proofs timed | TypeScript µs/proof | WebAssembly µs/proof | speed-up |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const entry of entries) {
  const count = entry.proofs.length;
  const encoded = entry.proofs;
  const tree = { arity: 2, hash: hashers.poseidon, kind: "imt", depth: entry.depth };
  const head = { size: entry.size, root: entry.root };
  const paths = { ts: verifyMembership, wasm: (p, t, h) => wasm.verifyMembership(p, t, h) };
  const runs = { ts: [], wasm: [] };
  for (let round = 0; round < rounds + 1; round++) {
    for (const [name, verify] of Object.entries(paths)) {
      const started = process.hrtime.bigint();
      for (const bytes of encoded) verify(bytes, tree, head);
      const elapsed = Number(process.hrtime.bigint() - started) / count;
      if (round > 0) runs[name].push(elapsed); // the first round warms up
    }
  }
  const ts = sorted(runs.ts);
  const fast = sorted(runs.wasm);
  const mid = (values) => values[Math.floor(values.length / 2)];
  console.log(
    `| Poseidon N = 2, imt depth ${entry.depth} | ${entry.depth} | ${count} | ${us(mid(ts))} (${us(ts[0])}..${us(ts.at(-1))}) | ${us(mid(fast))} (${us(fast[0])}..${us(fast.at(-1))}) | ${(mid(ts) / mid(fast)).toFixed(1)}x |`,
  );
}
