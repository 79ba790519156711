// Builds dist/esm (ES modules) and dist/cjs (CommonJS), each with its .d.ts,
// with the TypeScript compiler alone.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync("dist", { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { stdio: "inherit" });
execFileSync(process.execPath, [tsc, "-p", "tsconfig.cjs.json"], { stdio: "inherit" });
mkdirSync("dist/cjs", { recursive: true });
// The package is "type": "module"; this marks the .js and .d.ts files of
// dist/cjs as CommonJS for node and for TypeScript.
writeFileSync("dist/cjs/package.json", '{"type": "commonjs"}\n');
// The WebAssembly module (crates/wasm), when it has been built:
// `cargo build -p cairn-wasm --release --target wasm32-unknown-unknown`.
// It ships as `cairn-verify/cairn.wasm` for `loadWasm` from `cairn-verify/wasm`.
const wasm = "../../target/wasm32-unknown-unknown/release/cairn_wasm.wasm";
if (existsSync(wasm)) copyFileSync(wasm, "dist/cairn.wasm");
