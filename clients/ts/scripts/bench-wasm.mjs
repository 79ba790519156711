// Membership proof verification in node through the WebAssembly module
// (`cairn-verify/wasm`) against the pure TypeScript verifier, on the same
// proofs in the same run, rounds interleaved (TS, WebAssembly, TS, ...):
//   cargo run --release -p cairn-core --example verify_timing -- /tmp/verify-timing.json
//   cargo build -p cairn-wasm --release --target wasm32-unknown-unknown && npm run build
//   node scripts/bench-wasm.mjs /tmp/verify-timing.json [ROUNDS]
// Each figure is the median over rounds of (time for the proofs) / proofs,
// decoding from binary and verifying, with the spread (min..max).
import { readFileSync } from "node:fs";
import { hashers, verifyMembership } from "cairn-verify";
import { loadWasm } from "cairn-verify/wasm";

const [file = "/tmp/verify-timing.json", roundsText = "9"] = process.argv.slice(2);
const rounds = Number(roundsText);
const wasm = await loadWasm(readFileSync(new URL("../dist/cairn.wasm", import.meta.url)));
const fromHex = (text) => Uint8Array.from(Buffer.from(text.slice(2), "hex"));
const sorted = (values) => [...values].sort((a, b) => a - b);
const us = (ns) => (ns / 1000).toFixed(ns < 10_000 ? 1 : 0);

console.log(`node ${process.version}, ${rounds} rounds interleaved`);
console.log("| hash | arity | size | proofs timed | TypeScript µs/proof | WebAssembly µs/proof | speed-up |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const entry of JSON.parse(readFileSync(file, "utf8"))) {
  // Poseidon in JavaScript is slow (BigInt field arithmetic): time a sample.
  const count = entry.hash === "poseidon" ? 50 : entry.proofs.length;
  const encoded = entry.proofs.slice(0, count).map(fromHex);
  const tree = { arity: entry.arity, hash: hashers[entry.hash] };
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
    `| ${entry.hash} | ${entry.arity} | ${entry.size} | ${count} | ${us(mid(ts))} (${us(ts[0])}..${us(ts.at(-1))}) | ${us(mid(fast))} (${us(fast[0])}..${us(fast.at(-1))}) | ${(mid(ts) / mid(fast)).toFixed(1)}x |`,
  );
}
