// Verification time per proof in node, on the proofs cairn's Rust
// `verify_timing` example wrote (the same proofs it timed):
//   cargo run --release -p cairn-core --example verify_timing -- /tmp/verify-timing.json
//   npm run build && node scripts/bench.mjs /tmp/verify-timing.json [ROUNDS]
// Median over rounds of (time for all proofs) / proofs, decoding from
// binary + verifying, and verifying proofs decoded beforehand.
import { readFileSync } from "node:fs";
import { decodeMembership, hashers, verifyMembership } from "cairn-verify";

const [file = "/tmp/verify-timing.json", roundsText = "15"] = process.argv.slice(2);
const rounds = Number(roundsText);
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fromHex = (text) => Uint8Array.from(Buffer.from(text.slice(2), "hex"));

console.log(`node ${process.version}, ${rounds} rounds`);
console.log("| hash | arity | size | proofs timed | node decode + verify | node verify | Rust decode + verify | ratio (node / Rust) |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const entry of JSON.parse(readFileSync(file, "utf8"))) {
  // Poseidon in JavaScript is slow (BigInt field arithmetic): time a sample.
  const count = entry.hash === "poseidon" ? 50 : entry.proofs.length;
  const encoded = entry.proofs.slice(0, count).map(fromHex);
  const decoded = encoded.map((bytes) => decodeMembership(bytes));
  const tree = { arity: entry.arity, hash: hashers[entry.hash] };
  const head = { size: entry.size, root: entry.root };
  const time = (body) => {
    const runs = [];
    for (let round = 0; round < rounds + 2; round++) {
      const started = process.hrtime.bigint();
      body();
      const elapsed = Number(process.hrtime.bigint() - started) / count;
      if (round >= 2) runs.push(elapsed); // two warm-up rounds for the JIT
    }
    return median(runs);
  };
  const decodeVerify = time(() => encoded.forEach((bytes) => verifyMembership(bytes, tree, head)));
  const verify = time(() => decoded.forEach((proof) => verifyMembership(proof, tree, head)));
  const us = (ns) => `${(ns / 1000).toLocaleString("en", { maximumFractionDigits: 1 })} µs`;
  console.log(
    `| ${entry.hash} | ${entry.arity} | ${entry.size.toLocaleString("en")} | ${count} | ${us(decodeVerify)} | ${us(verify)} | ${us(entry.rust_decode_verify_ns)} | ${(decodeVerify / entry.rust_decode_verify_ns).toFixed(1)}x |`,
  );
}
