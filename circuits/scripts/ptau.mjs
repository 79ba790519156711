// Makes the shared powers of tau (scripts/groth16.mjs's SHARED_POWER, in
// target/ptau/) unless it is kept already, and prints its path: CI runs it
// once before the circuits' and the EVM harness's tests, which reuse it.
//   node scripts/ptau.mjs [power]
import { SHARED_POWER, powersOfTau } from "./groth16.mjs";

const power = Number(process.argv[2] ?? SHARED_POWER);
const started = performance.now();
const path = powersOfTau(power);
console.log(`${path} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
