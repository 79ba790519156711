// Groth16 with snarkjs and nothing downloaded: a powers-of-tau ceremony of
// one local contribution (fine for tests and measurements, never for a
// deployment, whose parameters must come from a ceremony nobody can
// undo), the circuit's keys, proofs, their verification and the Solidity
// verifier snarkjs exports. Files go to circuits/build/; the powers of tau
// of each size are kept there between runs.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as snarkjs from "snarkjs";
import { root } from "./circom.mjs";

const require = createRequire(import.meta.url);
// The CLI sits next to the package's CommonJS entry (build/main.cjs), which its exports do not name.
const cli = join(dirname(require.resolve("snarkjs")), "cli.cjs");

const snark = (...args) => execFileSync(process.execPath, [cli, ...args], { cwd: root, maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "pipe"] }).toString();

/** The phase-2-ready powers of tau for circuits of up to 2^power constraints, made here once. */
export function powersOfTau(power) {
  const dir = `${root}build/ptau`;
  const final = `${dir}/pot${power}_final.ptau`;
  if (existsSync(final)) return final;
  mkdirSync(dir, { recursive: true });
  const started = `${dir}/pot${power}_0.ptau`;
  const contributed = `${dir}/pot${power}_1.ptau`;
  snark("powersoftau", "new", "bn128", String(power), started);
  snark("powersoftau", "contribute", started, contributed, "--name=cairn tests", `-e=${randomBytes(32).toString("hex")}`);
  snark("powersoftau", "prepare", "phase2", contributed, `${final}.${process.pid}`);
  renameSync(`${final}.${process.pid}`, final);
  return final;
}

/**
 * The proving key, verification key and Solidity verifier of `compiled`
 * (what scripts/circom.mjs's compile returns), from the powers of tau of
 * 2^power: { zkey, vkey, solidity, seconds }.
 */
export function setup(compiled, power) {
  const ptau = powersOfTau(power);
  const base = compiled.r1cs.replace(/\.r1cs$/, "");
  const started = performance.now();
  snark("groth16", "setup", compiled.r1cs, ptau, `${base}_0.zkey`);
  snark("zkey", "contribute", `${base}_0.zkey`, `${base}.zkey`, "--name=cairn tests", `-e=${randomBytes(32).toString("hex")}`);
  snark("zkey", "export", "verificationkey", `${base}.zkey`, `${base}_vkey.json`);
  snark("zkey", "export", "solidityverifier", `${base}.zkey`, `${base}_verifier.sol`);
  return {
    zkey: `${base}.zkey`,
    vkey: JSON.parse(readFileSync(`${base}_vkey.json`, "utf8")),
    solidity: readFileSync(`${base}_verifier.sol`, "utf8"),
    seconds: (performance.now() - started) / 1000,
  };
}

/** A proof of `input`: { proof, publicSignals, seconds }; throws when no witness satisfies the circuit. */
export async function prove(compiled, keys, input) {
  const started = performance.now();
  const { proof, publicSignals } = await snarkjs.groth16.fullProve(input, compiled.wasm, keys.zkey);
  return { proof, publicSignals, seconds: (performance.now() - started) / 1000 };
}

/** snarkjs's own check of a proof. */
export const verify = (keys, publicSignals, proof) => snarkjs.groth16.verify(keys.vkey, publicSignals, proof);

/** A proof as the exported verifier's verifyProof takes it: [a, b, c] (b's coordinates swapped, as the precompile reads them). */
export function solidityProof(proof) {
  const a = [BigInt(proof.pi_a[0]), BigInt(proof.pi_a[1])];
  const b = [
    [BigInt(proof.pi_b[0][1]), BigInt(proof.pi_b[0][0])],
    [BigInt(proof.pi_b[1][1]), BigInt(proof.pi_b[1][0])],
  ];
  const c = [BigInt(proof.pi_c[0]), BigInt(proof.pi_c[1])];
  return [a, b, c];
}

/** The curve's worker threads, which keep node alive: end them after the tests. */
export async function endCurve() {
  await globalThis.curve_bn128?.terminate();
}
