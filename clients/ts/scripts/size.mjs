// Bundle sizes of what an application pulls in, one row per entry point
// (or entry + hash): esbuild bundles a one-line entry (browser, ESM,
// minified) and zlib gzips it at level 9. Each row has a limit on the
// gzipped bytes; a row above its limit fails, so a lost tree-shaking
// annotation (one call esbuild cannot prove pure keeps every hash, and
// poseidon-lite's 430 KB of constants, in every bundle) fails here.
//
//   node scripts/size.mjs            print the table, fail above a limit
//   node scripts/size.mjs --check    also fail if a README's table is stale
//   node scripts/size.mjs --write    rewrite the tables in the READMEs
//
// The tables live between `<!-- bundle-sizes:begin -->` and
// `<!-- bundle-sizes:end -->` in this package's README and in
// docs/performance.md, and are only ever written by --write. --check
// allows a figure 2% (at least 0.1 KB) off the measurement, so that a small
// change to the code, or another zlib in another node, does not make the
// tables stale; a bundle that grows more needs --write. Run after
// `npm run build` (or `npm pack`, whose prepack builds).
import { build } from "esbuild";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const KB = 1000;
/** How far (a fraction) a README's figure may be from the measurement. */
const TOLERANCE = 0.02;
const core = "verifyMembership, verifyConsistency, rollForward, decodeMembership, decodeConsistency, computeRoot, CairnError";
const from = (entry, names) => `export { ${names} } from "cairn-verify${entry}";`;

/** The WebAssembly module's limit in gzipped bytes. */
const WASM_LIMIT = 400 * KB;

/** [what, the entry's source, limit in gzipped bytes] */
export const ROWS = [
  ["`cairn-verify` as the README imports it (`verifyMembership`, `blake3`, `toHex`)", from("", "verifyMembership, blake3, toHex"), 14 * KB],
  ["`cairn-verify/core`: the verifier, no hash", from("/core", core), 12 * KB],
  ["`cairn-verify/core` + `/blake3`", from("/core", core) + from("/blake3", "blake3"), 14 * KB],
  ["`cairn-verify/core` + `/sha256`", from("/core", core) + from("/sha256", "sha256"), 14 * KB],
  ["`cairn-verify/core` + `/keccak256`", from("/core", core) + from("/keccak256", "keccak256"), 13 * KB],
  ["`cairn-verify/core` + `/blake3`, `/sha256`, `/keccak256`", from("/core", core) + from("/blake3", "blake3") + from("/sha256", "sha256") + from("/keccak256", "keccak256"), 17 * KB],
  ["`cairn-verify/core` + Poseidon for arity 2 (`poseidonHasher`, `poseidon-lite/poseidon2`)", from("/core", `${core}, poseidonHasher`) + `export { poseidon2 } from "poseidon-lite/poseidon2";`, 21 * KB],
  ["`cairn-verify/core` + Poseidon for arity 4 (widths 2..4)", from("/core", `${core}, poseidonHasher`) + [2, 3, 4].map((w) => `export { poseidon${w} } from "poseidon-lite/poseidon${w}";`).join(""), 45 * KB],
  ["`cairn-verify/core` + `/poseidon` (widths 2..16)", from("/core", core) + from("/poseidon", "poseidon"), 480 * KB],
  ["`cairn-verify/core` + `/mimcsponge`", from("/core", core) + from("/mimcsponge", "mimcsponge"), 14 * KB],
  ["`cairn-verify/client` (`CairnClient`) + `/blake3`", from("/core", core) + from("/client", "CairnClient") + from("/blake3", "blake3"), 16 * KB],
  ["`cairn-verify/checkpoint` (`verifyCheckpoint`: Ed25519, SHA-256)", from("/checkpoint", "verifyCheckpoint"), 20 * KB],
  ["`cairn-verify/wasm` (`loadWasm`, `verifier`, the tracker; the module itself is `cairn-verify/cairn.wasm`, below)", from("/wasm", "loadWasm, tryLoadWasm, verifier"), 14 * KB],
  ["`cairn-verify`, everything (`export *`: every hash, both clients, signed checkpoints)", `export * from "cairn-verify";`, 500 * KB],
];

/** The minified and gzipped sizes of one entry, bundled from `resolveDir` (where `cairn-verify` resolves). */
export async function measure(contents, resolveDir) {
  const result = await build({
    stdin: { contents, resolveDir, loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2020",
    write: false,
    logLevel: "silent",
  });
  const bytes = result.outputFiles[0].contents;
  return { minified: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
}

const kb = (bytes) => `${(bytes / KB).toFixed(1)} KB`;

function table(measured) {
  const lines = ["| bundle | minified | minified + gzip | limit (gzip) |", "|---|---:|---:|---:|"];
  for (const { name, minified, gzipped, limit } of measured) lines.push(`| ${name} | ${kb(minified)} | ${kb(gzipped)} | ${kb(limit)} |`);
  return lines.join("\n");
}

const BEGIN = "<!-- bundle-sizes:begin (written by `npm run size -- --write` in clients/ts; do not edit) -->";
const END = "<!-- bundle-sizes:end -->";
const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const READMES = [here("../README.md"), here("../../../docs/performance.md")];

/** The table between the markers of `text`, or a reason it has none. */
function section(text, file) {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) return { error: `${file} has no ${BEGIN} ... ${END} section` };
  return { begin: begin + BEGIN.length, end, body: text.slice(begin + BEGIN.length, end).trim() };
}

/** Differences between a README's table and the measured one (none when the figures agree). */
function stale(body, measured) {
  const rows = body.split("\n").slice(2);
  if (rows.length !== measured.length) return [`has ${rows.length} rows, want ${measured.length}`];
  const problems = [];
  measured.forEach((want, i) => {
    const cells = rows[i].split(" | ").map((cell) => cell.replace(/^\| /, "").replace(/ \|$/, ""));
    const [name, minified, gzipped, limit] = cells;
    const near = (text, bytes) => Math.abs(Number.parseFloat(text) * KB - bytes) <= Math.max(100, bytes * TOLERANCE);
    if (name !== want.name) problems.push(`row ${i + 1} is ${JSON.stringify(name)}, want ${JSON.stringify(want.name)}`);
    else if (!near(minified, want.minified)) problems.push(`${want.name}: minified ${minified}, measured ${kb(want.minified)}`);
    else if (!near(gzipped, want.gzipped)) problems.push(`${want.name}: gzipped ${gzipped}, measured ${kb(want.gzipped)}`);
    else if (limit !== kb(want.limit)) problems.push(`${want.name}: limit ${limit}, want ${kb(want.limit)}`);
  });
  return problems;
}

async function main(args) {
  const unknown = args.filter((arg) => arg !== "--check" && arg !== "--write");
  if (unknown.length > 0) throw new Error(`unknown argument ${unknown[0]}: want --check or --write`);
  const measured = [];
  for (const [name, contents, limit] of ROWS) measured.push({ name, ...(await measure(contents, process.cwd())), limit });
  const generated = table(measured);
  console.log(generated);
  let failed = false;
  for (const row of measured) {
    if (row.gzipped > row.limit) {
      console.error(`over its limit: ${row.name}: ${row.gzipped} bytes gzipped, limit ${row.limit}`);
      failed = true;
    }
  }
  // The WebAssembly module, when built (it is fetched, not bundled).
  const wasmFile = here("../dist/cairn.wasm");
  if (existsSync(wasmFile)) {
    const bytes = readFileSync(wasmFile);
    const gzipped = gzipSync(bytes, { level: 9 }).length;
    console.log(`\n\`cairn-verify/cairn.wasm\`: ${kb(bytes.length)}, ${kb(gzipped)} gzipped (limit ${kb(WASM_LIMIT)})`);
    if (gzipped > WASM_LIMIT) {
      console.error(`over its limit: cairn.wasm: ${gzipped} bytes gzipped, limit ${WASM_LIMIT}`);
      failed = true;
    }
  }
  for (const file of READMES) {
    const text = readFileSync(file, "utf8");
    const found = section(text, file);
    if (found.error) {
      console.error(found.error);
      failed = true;
      continue;
    }
    if (args.includes("--write")) {
      writeFileSync(file, `${text.slice(0, found.begin)}\n${generated}\n${text.slice(found.end)}`);
    } else if (args.includes("--check")) {
      for (const problem of stale(found.body, measured)) {
        console.error(`${file}: the bundle-size table is stale: ${problem} (run npm run size -- --write)`);
        failed = true;
      }
    }
  }
  if (failed) process.exit(1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
