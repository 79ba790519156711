// Bundle sizes, minified and gzipped, of what an application pulls in:
// esbuild bundles a one-line entry per row (browser, ESM, minified), and
// zlib gzips it at level 9. Run after `npm run build`.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";

const core = "verifyMembership, verifyConsistency, rollForward, decodeMembership, decodeConsistency, computeRoot, CairnError";
const rows = [
  ["verifier, all four hashes", `export { ${core} } from "cairn-verify/core"; export { blake3 } from "cairn-verify/blake3"; export { sha256 } from "cairn-verify/sha256"; export { keccak256 } from "cairn-verify/keccak256"; export { poseidon } from "cairn-verify/poseidon";`],
  ["verifier, the three byte hashes (no Poseidon)", `export { ${core} } from "cairn-verify/core"; export { blake3 } from "cairn-verify/blake3"; export { sha256 } from "cairn-verify/sha256"; export { keccak256 } from "cairn-verify/keccak256";`],
  ["verifier, BLAKE3 only", `export { ${core} } from "cairn-verify/core"; export { blake3 } from "cairn-verify/blake3";`],
  ["verifier, Keccak-256 only", `export { ${core} } from "cairn-verify/core"; export { keccak256 } from "cairn-verify/keccak256";`],
  ["verifier, Poseidon only", `export { ${core} } from "cairn-verify/core"; export { poseidon } from "cairn-verify/poseidon";`],
  ["verifier, Poseidon for arity 2 (poseidon2 only)", `export { ${core}, poseidonHasher } from "cairn-verify/core"; export { poseidon2 } from "poseidon-lite/poseidon2";`],
  ["verifier, Poseidon for arity 4 (poseidon2..4)", `export { ${core}, poseidonHasher } from "cairn-verify/core"; export { poseidon2 } from "poseidon-lite/poseidon2"; export { poseidon3 } from "poseidon-lite/poseidon3"; export { poseidon4 } from "poseidon-lite/poseidon4";`],
  ["verifier + HTTP client, BLAKE3 only", `export { ${core} } from "cairn-verify/core"; export { CairnClient } from "cairn-verify/client"; export { blake3 } from "cairn-verify/blake3";`],
  ["signed checkpoints (`verifyCheckpoint`: Ed25519, SHA-256)", `export { verifyCheckpoint } from "cairn-verify/checkpoint";`],
  ["everything (`cairn-verify`)", `export * from "cairn-verify";`],
];

console.log("| bundle | minified bytes | minified + gzip bytes |");
console.log("|---|---:|---:|");
for (const [name, contents] of rows) {
  const result = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2020",
    write: false,
  });
  const bytes = result.outputFiles[0].contents;
  console.log(`| ${name} | ${bytes.length.toLocaleString("en")} | ${gzipSync(bytes, { level: 9 }).length.toLocaleString("en")} |`);
}
