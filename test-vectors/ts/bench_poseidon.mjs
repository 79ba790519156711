// Times zk-kit's TypeScript LeanIMT with poseidon-lite's poseidon2 building a
// tree over the hex leaves in FILE (one 0x-hex leaf per line), the peer of
// cairn's Poseidon batch build. Prints `ms=<build time> root=<0x-hex>`.
// Run by `cargo run --release -p cairn-bench --bin peers`.
import { readFileSync } from "node:fs";
import { LeanIMT } from "@zk-kit/lean-imt";
import { poseidon2 } from "poseidon-lite";

const file = process.argv[2];
if (!file) {
  console.error("usage: node bench_poseidon.mjs LEAVES.hex");
  process.exit(2);
}
const leaves = readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "").map((line) => BigInt(line.trim()));
const started = process.hrtime.bigint();
const tree = new LeanIMT((a, b) => poseidon2([a, b]), leaves);
const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
console.log(`ms=${elapsed.toFixed(3)} root=0x${tree.root.toString(16).padStart(64, "0")}`);
