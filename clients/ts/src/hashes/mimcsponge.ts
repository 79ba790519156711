// circomlib MiMCSponge over the BN254 scalar field (hash id 5): the sponge
// `MiMCSponge(k, 220, 1)` with key 0 over the children read as big-endian
// integers; Tornado Cash's hash at k = 2. The 220 round constants are
// derived on first use from circomlib's chain: k_0 = keccak256("mimcsponge"),
// k_i = keccak256(k_{i-1}), constant i = k_i mod p for i in 1..218, and 0 for
// rounds 0 and 219. Every value must be a canonical field element.
import { keccak_256 } from "@noble/hashes/sha3";
import { CairnError } from "../errors.js";
import type { Hasher } from "../hasher.js";
import { fromField, isCanonicalFieldElement, MODULUS as P, toField } from "./field.js";

const ROUNDS = 220;

let constants: bigint[] | null = null;

function roundConstants(): bigint[] {
  if (constants !== null) return constants;
  const out = new Array<bigint>(ROUNDS).fill(0n);
  let link = keccak_256(new TextEncoder().encode("mimcsponge"));
  for (let i = 1; i < ROUNDS - 1; i++) {
    link = keccak_256(link);
    out[i] = toField(link) % P;
  }
  constants = out;
  return out;
}

/** a + b mod P for a, b < P: one comparison instead of a division. */
const add = (a: bigint, b: bigint): bigint => {
  const sum = a + b;
  return sum >= P ? sum - P : sum;
};

/** The key-0 MiMC-Feistel permutation of (left, right). */
function permute(left: bigint, right: bigint): [bigint, bigint] {
  const c = roundConstants();
  for (let i = 0; i < ROUNDS - 1; i++) {
    const t = add(left, c[i]!);
    const t2 = (t * t) % P;
    const mixed = add(right, (((t2 * t2) % P) * t) % P);
    right = left;
    left = mixed;
  }
  const t = add(left, c[ROUNDS - 1]!);
  const t2 = (t * t) % P;
  return [left, add(right, (((t2 * t2) % P) * t) % P)];
}

/** circomlib MiMCSponge over BN254 (220 rounds, key 0, one output), 2..16 children. */
export const mimcsponge: Hasher = /* @__PURE__ */ Object.freeze({
  name: "mimcsponge" as const,
  hashChildren(children: readonly Uint8Array[]): Uint8Array {
    let left = 0n;
    let right = 0n;
    for (const child of children) {
      if (!isCanonicalFieldElement(child)) throw new CairnError("input", "NonCanonical", "mimcsponge child is not a canonical field element");
      [left, right] = permute(add(left, toField(child)), right);
    }
    return fromField(left);
  },
  accepts: isCanonicalFieldElement,
});
