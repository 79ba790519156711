// Compiles a circom main component with the npm circom2 (circom compiled to
// wasm), which sees only the current directory: sources live under
// circuits/, outputs go to circuits/build/<name>/.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../", import.meta.url));
const require = createRequire(import.meta.url);
const circom = require.resolve("circom2/cli.js");

/** The include paths every compile passes, relative to circuits/ (the README's command names the first). */
export const includes = ["node_modules/circomlib/circuits", "node_modules/@zk-kit/binary-merkle-root.circom/src"];

/**
 * Writes build/<name>/<name>.circom holding `body` (after the pragma),
 * compiles it to R1CS and (unless `wasm` is false) a witness-generator
 * wasm, and returns the paths and the compiler's counts. With `simplify`
 * it passes --O2 (circom's full simplification, which folds the linear
 * constraints the default --O1 keeps into others): what a circuit given to
 * Groth16 wants, since the powers of tau must exceed the R1CS's
 * constraints (LeanIMTAppend(4, 6): 8,172 at --O1, 3,746 at --O2, so 2^12
 * instead of 2^13). The counts the figures report are --O1's non-linear
 * ones unless they say otherwise.
 */
export function compile(name, body, { wasm = true, simplify = false } = {}) {
  const dir = `build/${name}`;
  mkdirSync(`${root}${dir}`, { recursive: true });
  // circom writes its witness calculator as CommonJS. Written once: CI runs
  // the circuits' and the EVM's tests side by side, and a rewrite would
  // truncate the file under the other's require.
  const marker = `${root}build/package.json`;
  if (!existsSync(marker)) {
    writeFileSync(`${marker}.${process.pid}`, '{"type": "commonjs"}\n');
    renameSync(`${marker}.${process.pid}`, marker);
  }
  writeFileSync(`${root}${dir}/${name}.circom`, `pragma circom 2.1.5;\n${body}\n`);
  const started = performance.now();
  const run = () =>
    execFileSync(
      process.execPath,
      [circom, `${dir}/${name}.circom`, "--r1cs", ...(wasm ? ["--wasm"] : []), ...(simplify ? ["--O2"] : []), "-o", dir, ...includes.flatMap((l) => ["-l", l])],
      { cwd: root, maxBuffer: 1 << 24, stdio: ["ignore", "pipe", "pipe"] },
    ).toString();
  // circom2's WASI shim reads a pointer past 2 GiB of wasm memory as a
  // negative offset ("Start offset -N is outside the bounds of the
  // buffer") when opening an output file; the arity-16 compiles hit it now
  // and then, depending on the compiler's allocations. That failure is the
  // shim's, not the circuit's: retry it (at most twice), fail on anything
  // else.
  let output;
  for (let attempt = 1; ; attempt++) {
    try {
      output = run();
      break;
    } catch (error) {
      const shim = /Start offset -\d+ is outside the bounds of the buffer/.test(String(error.stderr ?? error.message));
      if (!shim || attempt === 3) throw error;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const count = (label) => Number(new RegExp(`(?:^|\\s)${label}: (\\d+)`, "m").exec(output.replace(/\x1b\[[0-9;]*m/g, ""))?.[1]);
  return {
    r1cs: `${root}${dir}/${name}.r1cs`,
    wasm: `${root}${dir}/${name}_js/${name}.wasm`,
    calculator: `${root}${dir}/${name}_js/witness_calculator.js`,
    nonLinear: count("non-linear constraints"),
    linear: count("linear constraints"),
    wires: count("wires"),
    seconds,
  };
}

/** The n-ary membership template as a main component with public root and size. */
export const inclusion = (arity, depth) =>
  `include "../../leanimt.circom";\ncomponent main {public [root, size]} = LeanIMTInclusion(${arity}, ${depth});`;

/** The indexed-tree absence template as a main component with public root, size and value. */
export const absence = (arity, depth) =>
  `include "../../indexed.circom";\ncomponent main {public [root, size, value]} = IndexedAbsence(${arity}, ${depth});`;

/** zk-kit's BinaryMerkleRoot as a main component. */
export const binaryMerkleRoot = (depth) =>
  `include "binary-merkle-root.circom";\ncomponent main = BinaryMerkleRoot(${depth});`;

/** The batch-append template as a main component with its public inputs. */
export const append = (k, depth) =>
  `include "../../append.circom";\ncomponent main {public [oldRoot, newRoot, size, commitment]} = LeanIMTAppend(${k}, ${depth});`;

/** The indexed batch-insert template as a main component with its public inputs. */
export const indexedBatch = (k, depth) =>
  `include "../../indexed-batch.circom";\ncomponent main {public [oldRoot, newRoot, size, commitment]} = IndexedInsertBatch(${k}, ${depth});`;
