// Checks the package as a user receives it: `npm pack` (whose prepack
// builds dist/), then a fresh project installs the tarball and
//   - imports every entry point in ESM and requires it in CommonJS, and
//     verifies a proof made by the cairn CLI in both (and refuses it
//     against another root);
//   - bundles the README's root import for the browser with esbuild, runs
//     the bundle in a context with no node globals, verifies the proof,
//     and holds the bundle to its size limit (the root import must
//     tree-shake);
//   - type-checks imports of every entry point with tsc under the module
//     resolutions users have: node10 (through typesVersions), node16 and
//     bundler.
// Dependencies come from npm's cache (`--prefer-offline`), the registry
// only for what it lacks.
//
//   node scripts/pack-check.mjs [--keep]
//
// Needs the cairn binary: $CAIRN_BIN, else the workspace's release or
// debug build. --keep leaves the temporary directory for inspection.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runInNewContext } from "node:vm";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { ROWS } from "./size.mjs";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const repo = fileURLToPath(new URL("../../../", import.meta.url));
const keep = process.argv.includes("--keep");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const started = Date.now();
const step = (what) => console.log(`pack-check: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

function fail(message) {
  console.error(`pack-check: ${message}`);
  process.exit(1);
}

function cairnBinary() {
  for (const candidate of [process.env.CAIRN_BIN, `${repo}target/release/cairn`, `${repo}target/debug/cairn`]) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  return fail("no cairn binary: cargo build --release -p cairn-cli, or set CAIRN_BIN");
}

const run = (command, args, cwd) => execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 26 });

const work = mkdtempSync(join(tmpdir(), "cairn-verify-pack-"));
try {
  // 1. The tarball, built from this checkout by prepack.
  const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
  const [packed] = JSON.parse(run(npm, ["pack", "--json", "--loglevel=error", "--pack-destination", work], packageDir));
  const files = new Set(packed.files.map((file) => file.path));
  const targets = [manifest.main, manifest.module, manifest.types, "dist/cjs/package.json"];
  for (const [subpath, conditions] of Object.entries(manifest.exports)) {
    if (typeof conditions === "string") continue;
    for (const condition of Object.values(conditions)) targets.push(condition.types, condition.default);
    if (subpath !== ".") targets.push(...manifest.typesVersions["*"][subpath.slice(2)]);
  }
  for (const target of targets) {
    if (!files.has(target.replace(/^\.\//, ""))) fail(`the tarball lacks ${target}, which package.json names`);
  }
  // Modules only: a string export is a file (package.json, cairn.wasm).
  const subpaths = Object.keys(manifest.exports).filter((subpath) => typeof manifest.exports[subpath] !== "string");
  for (const subpath of subpaths.filter((s) => s !== ".")) {
    if (!(subpath.slice(2) in manifest.typesVersions["*"])) fail(`typesVersions has no ${subpath}: node10 resolution would not find its types`);
  }
  step(`packed ${packed.filename}: ${packed.entryCount} files, ${packed.size} bytes`);

  // 2. A fresh project that installs it.
  const project = join(work, "project");
  execFileSync("mkdir", [project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", version: "0.0.0", private: true }));
  run(npm, ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", join(work, packed.filename)], project);
  step("installed into a fresh project");

  // 3. A proof made by the CLI: leaf 5 of 11 leaves, arity 4, BLAKE3.
  const cairn = cairnBinary();
  const leaves = Array.from({ length: 11 }, (_, i) => `0x${(i + 1).toString(16).padStart(64, "0")}`).join("\n") + "\n";
  writeFileSync(join(work, "leaves.hex"), leaves);
  const common = ["--arity", "4", "--hash", "blake3", "--format", "hex"];
  const root = JSON.parse(run(cairn, ["root", ...common, "--json", join(work, "leaves.hex")])).root;
  const proof = run(cairn, ["prove", ...common, "--leaves", join(work, "leaves.hex"), "--index", "5"]);
  const fixture = { proof, head: { size: 11, root }, leaf: `0x${(6).toString(16).padStart(64, "0")}` };
  writeFileSync(join(project, "fixture.json"), JSON.stringify(fixture));

  // 4. Node, ESM and CommonJS: every entry point loads; the proof verifies.
  // (A block that leaves the verified proof in \`proof\`, declared by the caller.)
  const check = (verifyMembership, blake3, toHex, CairnError) => `{
    const tree = { arity: 4, hash: ${blake3} };
    proof = ${verifyMembership}(fixture.proof, tree, fixture.head);
    if (${toHex}(proof.leaf) !== fixture.leaf || proof.index !== 5n) throw new Error("verified the wrong leaf: " + ${toHex}(proof.leaf));
    let refused = null;
    try { ${verifyMembership}(fixture.proof, tree, { size: 11, root: "0x" + "00".repeat(32) }); } catch (error) { refused = error; }
    if (!(refused instanceof ${CairnError}) || refused.kind !== "RootMismatch") throw new Error("a wrong root was not refused: " + refused);
  }`;
  writeFileSync(
    join(project, "esm.mjs"),
    `import { readFileSync } from "node:fs";
    import { verifyMembership, blake3, toHex, CairnError } from "cairn-verify";
    import * as core from "cairn-verify/core";
    import { blake3 as blake3Alone } from "cairn-verify/blake3";
    const fixture = JSON.parse(readFileSync(new URL("./fixture.json", import.meta.url), "utf8"));
    let proof;
    for (const subpath of ${JSON.stringify(subpaths)}) {
      const module = await import("cairn-verify" + subpath.slice(1));
      if (Object.keys(module).length === 0) throw new Error("import cairn-verify" + subpath.slice(1) + ": no exports");
    }
    ${check("verifyMembership", "blake3", "toHex", "CairnError")}
    ${check("core.verifyMembership", "blake3Alone", "core.toHex", "core.CairnError")}
    console.log("esm: verified leaf", proof.index);`,
  );
  writeFileSync(
    join(project, "cjs.cjs"),
    `const { readFileSync } = require("node:fs");
    const { verifyMembership, blake3, toHex, CairnError } = require("cairn-verify");
    const core = require("cairn-verify/core");
    const { blake3: blake3Alone } = require("cairn-verify/blake3");
    const fixture = JSON.parse(readFileSync(__dirname + "/fixture.json", "utf8"));
    let proof;
    for (const subpath of ${JSON.stringify(subpaths)}) {
      const module = require("cairn-verify" + subpath.slice(1));
      if (Object.keys(module).length === 0) throw new Error("require cairn-verify" + subpath.slice(1) + ": no exports");
    }
    if (require("cairn-verify").CairnError !== CairnError) throw new Error("two CairnError classes in one CommonJS program");
    ${check("verifyMembership", "blake3", "toHex", "CairnError")}
    ${check("core.verifyMembership", "blake3Alone", "core.toHex", "core.CairnError")}
    console.log("cjs: verified leaf", proof.index);`,
  );
  for (const file of ["esm.mjs", "cjs.cjs"]) process.stdout.write(run(process.execPath, [file], project));

  // 5. A browser bundle of the README's root import, run with no node globals.
  writeFileSync(
    join(project, "browser.mjs"),
    `import { verifyMembership, blake3, toHex, CairnError } from "cairn-verify";
    const fixture = globalThis.fixture;
    let proof;
    ${check("verifyMembership", "blake3", "toHex", "CairnError")}
    globalThis.verified = toHex(proof.leaf);`,
  );
  const bundled = await build({
    entryPoints: [join(project, "browser.mjs")],
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    write: false,
    logLevel: "silent",
  });
  const bundle = bundled.outputFiles[0].contents;
  const sandbox = { fixture, TextEncoder, TextDecoder, Uint8Array, verified: null };
  runInNewContext(new TextDecoder().decode(bundle), sandbox, { filename: "browser-bundle.js" });
  if (sandbox.verified !== fixture.leaf) fail(`the browser bundle verified ${sandbox.verified}, want ${fixture.leaf}`);
  const gzipped = gzipSync(bundle, { level: 9 }).length;
  const limit = ROWS[0][2];
  if (gzipped > limit) fail(`the browser bundle of the root import is ${gzipped} bytes gzipped, limit ${limit}: the root import no longer tree-shakes`);
  step(`browser bundle (root import) verified leaf 5: ${bundle.length} bytes minified, ${gzipped} gzipped`);

  // 6. Types of every entry point under three module resolutions.
  const imports = subpaths
    .map((subpath, i) => `import * as entry${i} from "cairn-verify${subpath.slice(1)}";`)
    .join("\n");
  writeFileSync(
    join(project, "types.ts"),
    `${imports}
import { verifyMembership, type TrustedTree, type TreeHead } from "cairn-verify/core";
import { blake3 } from "cairn-verify/blake3";
import { CairnClient } from "cairn-verify/client";
import { verifyCheckpoint } from "cairn-verify/checkpoint";
const tree: TrustedTree = { arity: 4, hash: blake3 };
const head: TreeHead = { size: 11n, root: "0x" + "00".repeat(32) };
export const index: bigint = verifyMembership("{}", tree, head).index;
export const client: CairnClient = new CairnClient("http://127.0.0.1:1", tree);
export const origin: string = verifyCheckpoint("", "").origin;
// @ts-expect-error: a number is not a trusted tree (fails if the types resolve to any)
verifyMembership("{}", 4, head);
export const entries = [${subpaths.map((_, i) => `entry${i}`).join(", ")}];
`,
  );
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const resolutions = [
    ["node10", "commonjs"],
    ["node16", "node16"],
    ["bundler", "esnext"],
  ];
  // The three run side by side; the package's .d.ts files are checked
  // (skipLibCheck off), TypeScript's own lib files are not.
  const runs = resolutions.map(([moduleResolution, module]) => {
    const config = `tsconfig.${moduleResolution}.json`;
    const compilerOptions = { noEmit: true, strict: true, skipLibCheck: false, skipDefaultLibCheck: true, target: "es2020", lib: ["es2020", "dom"], types: [], module, moduleResolution };
    writeFileSync(join(project, config), JSON.stringify({ compilerOptions, files: ["types.ts"] }));
    return new Promise((resolve) => {
      execFile(process.execPath, [tsc, "-p", config], { cwd: project, encoding: "utf8" }, (error, stdout) => resolve({ moduleResolution, error, stdout }));
    });
  });
  for (const { moduleResolution, error, stdout } of await Promise.all(runs)) {
    if (error) fail(`tsc --moduleResolution ${moduleResolution} refused the imports:\n${stdout}`);
  }
  step(`tsc resolves the types of ${subpaths.length} entry points under ${resolutions.map(([r]) => r).join(", ")}`);
} finally {
  if (keep) console.log(`pack-check: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
