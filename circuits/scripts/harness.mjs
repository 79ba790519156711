// What the circuit tests share: the cairn binary, a seeded generator of
// field elements, loading a compiled circuit's witness calculator once, and
// witnesses that either satisfy every constraint or report the error.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as snarkjs from "snarkjs";
import { root as circuits } from "./circom.mjs";

const require = createRequire(import.meta.url);

/** The BN254 scalar field's modulus, p. */
export const P = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** `CAIRN_CIRCUIT_DEPTHS=full`: the deeper (slow) circuits. */
export const full = process.env.CAIRN_CIRCUIT_DEPTHS === "full";

function cairnBinary() {
  const candidates = [process.env.CAIRN_BIN, `${circuits}../target/release/cairn`, `${circuits}../target/debug/cairn`];
  const found = candidates.find((c) => c && existsSync(c));
  if (!found && process.env.CI) throw new Error("CI: no cairn binary (cargo build --release -p cairn-cli, or set CAIRN_BIN)");
  return found ?? null;
}
/** The cairn binary, or null where there is none (outside CI the tests then skip). */
export const binary = cairnBinary();

/** Runs cairn with `args`, returning its stdout. */
export const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 }).toString();

/** The seed of this run's random trees: `CAIRN_TS_SEED` repeats one. */
export const seed = Number(process.env.CAIRN_TS_SEED ?? Date.now() % 1_000_000);

/** A seeded generator: `int(low, high)`, `field()` below 2^248, `element()` below p. */
export function random(start) {
  let state = start >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low, high) => low + Math.floor(next() * (high - low + 1));
  const bytes = (count) => BigInt("0x" + Array.from({ length: count }, () => int(0, 255).toString(16).padStart(2, "0")).join(""));
  // Below 2^248: canonical BN254 elements.
  const field = () => bytes(31);
  // Anywhere in [1, p - 1], so values reach the field's top bits.
  const element = () => (bytes(40) % (P - 1n)) + 1n;
  return { int, field, element };
}

/** The circuit with its witness calculator loaded once (compiling its wasm is the slow part). */
export async function load(compiled) {
  const builder = require(compiled.calculator);
  return { ...compiled, calculator: await builder(readFileSync(compiled.wasm)) };
}

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

/**
 * The witness of `input` if every constraint holds, else the error that
 * stopped it. The calculator asserts each constraint as it goes; with
 * `check`, snarkjs also checks the witness against the R1CS on its own.
 */
export async function witness(circuit, input, check = false) {
  try {
    if (check) {
      const data = new Uint8Array(await circuit.calculator.calculateWTNSBin(input, true));
      if (!(await snarkjs.wtns.check(circuit.r1cs, { type: "mem", data }, quiet))) {
        return { error: new Error("snarkjs wtns check: a constraint does not hold") };
      }
    }
    return { values: await circuit.calculator.calculateWitness(input, true) };
  } catch (error) {
    return { error };
  }
}

/** The witness of `input`, failing the test unless it satisfies the circuit. */
export async function accepts(circuit, input, context, check = false) {
  const result = await witness(circuit, input, check);
  assert.ok(result.values, `${context}: refused: ${result.error?.message}`);
  return result.values;
}

/** Fails the test unless no witness of `input` satisfies the circuit. */
export async function refuses(circuit, input, context) {
  const result = await witness(circuit, input);
  assert.ok(result.error, `${context}: a tampered input satisfies the circuit`);
}

/** Runs `body` with a fresh temporary directory, removed afterwards. */
export async function withTree(body) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-circuit-"));
  try {
    return await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The curve's worker threads, which keep node alive: end them after the tests. */
export async function endCurve() {
  await globalThis.curve_bn128?.terminate();
}
