// Groth16 with snarkjs and nothing downloaded: a powers-of-tau ceremony of
// one local contribution (fine for tests and measurements, never for a
// deployment, whose parameters must come from a ceremony nobody can
// undo), the circuit's keys, proofs, their verification and the Solidity
// verifier snarkjs exports. Keys go to circuits/build/.
//
// Making a powers of tau is the slow part (minutes at 2^12 on two cores,
// nearly all of it in `prepare phase2`), so every Groth16 run of the
// circuits' and the EVM harness's tests shares one file, made once: the
// smallest power that fits the circuits those tests prove (SHARED_POWER),
// kept in target/ptau/ at the repository's root (CAIRN_PTAU_DIR moves it),
// made when absent. A circuit takes the smallest kept file that fits it,
// so a larger run (the figures) makes a larger one beside it.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as snarkjs from "snarkjs";
import { root } from "./circom.mjs";

const require = createRequire(import.meta.url);
// The CLI sits next to the package's CommonJS entry (build/main.cjs), which its exports do not name.
const cli = join(dirname(require.resolve("snarkjs")), "cli.cjs");

const snark = (...args) => execFileSync(process.execPath, [cli, ...args], { cwd: root, maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "pipe"] }).toString();

/**
 * The power every Groth16 run of the default tests uses: the smallest that
 * fits all of them (LeanIMTAppend(4, 6), compiled with circom's --O2, has
 * 3,746 constraints and 4 public inputs: below 2^12).
 */
export const SHARED_POWER = Number(process.env.CAIRN_PTAU_POWER ?? 12);

/** Where the powers of tau are kept: target/ptau/ of the repository, or CAIRN_PTAU_DIR. */
export const ptauDir = process.env.CAIRN_PTAU_DIR ?? `${root}../target/ptau`;

const finalName = /^pot(\d+)_final\.ptau$/;

/**
 * The phase-2-ready powers of tau for circuits of up to 2^power
 * constraints: the smallest kept one of at least that power, else one of
 * exactly that power made here.
 */
export function powersOfTau(power) {
  mkdirSync(ptauDir, { recursive: true });
  const kept = readdirSync(ptauDir)
    .map((name) => Number(finalName.exec(name)?.[1]))
    .filter((p) => p >= power)
    .sort((a, b) => a - b);
  if (kept.length > 0) return `${ptauDir}/pot${kept[0]}_final.ptau`;
  const final = `${ptauDir}/pot${power}_final.ptau`;
  // Per-process names until the final rename: two runs racing both make one, and either's is whole.
  const started = `${ptauDir}/pot${power}_0.ptau.${process.pid}`;
  const contributed = `${ptauDir}/pot${power}_1.ptau.${process.pid}`;
  snark("powersoftau", "new", "bn128", String(power), started);
  snark("powersoftau", "contribute", started, contributed, "--name=cairn tests", `-e=${randomBytes(32).toString("hex")}`);
  snark("powersoftau", "prepare", "phase2", contributed, `${final}.${process.pid}`);
  renameSync(`${final}.${process.pid}`, final);
  for (const scratch of [started, contributed]) rmSync(scratch, { force: true });
  return final;
}

/**
 * The smallest power of tau snarkjs's Groth16 setup takes for the R1CS at
 * `path`: 2^power must exceed its constraints plus public inputs and
 * outputs (read from the file's header section).
 */
export function neededPower(path) {
  const fd = openSync(path, "r");
  try {
    const read = (offset, length) => {
      const buffer = Buffer.alloc(length);
      if (readSync(fd, buffer, 0, length, offset) !== length) throw new Error(`${path}: truncated R1CS`);
      return buffer;
    };
    const magic = read(0, 12);
    if (magic.toString("latin1", 0, 4) !== "r1cs") throw new Error(`${path}: not an R1CS file`);
    let offset = 12;
    for (let section = 0; section < magic.readUInt32LE(8); section++) {
      const head = read(offset, 12);
      const type = head.readUInt32LE(0);
      const size = Number(head.readBigUInt64LE(4));
      if (type === 1) {
        const fieldSize = read(offset + 12, 4).readUInt32LE(0);
        const counts = read(offset + 16 + fieldSize, 32);
        const outputs = counts.readUInt32LE(4);
        const publics = counts.readUInt32LE(8);
        const constraints = counts.readUInt32LE(24);
        return (constraints + publics + outputs).toString(2).length;
      }
      offset += 12 + size;
    }
    throw new Error(`${path}: no header section`);
  } finally {
    closeSync(fd);
  }
}

/**
 * The proving key, verification key and Solidity verifier of `compiled`
 * (what scripts/circom.mjs's compile returns), from the shared powers of
 * tau, or a larger one when the circuit needs it: { zkey, vkey, solidity,
 * power, seconds }.
 */
export function setup(compiled) {
  const power = Math.max(SHARED_POWER, neededPower(compiled.r1cs));
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
    power,
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
