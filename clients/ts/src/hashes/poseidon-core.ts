// circomlib Poseidon over the BN254 scalar field (hash id 4): poseidon_k of
// the children read as big-endian integers, from poseidon-lite functions the
// caller passes in (each width's constants are large: pass only the widths
// the tree's arity needs). Every value must already be a canonical field
// element; poseidon-lite would reduce a larger one silently, so the
// verifier checks `accepts` before any value reaches it.
import { CairnError } from "../errors.js";
import type { Hasher } from "../hasher.js";

/** poseidon-lite's `poseidonK`: k field elements in, one out. */
export type PoseidonFunction = (inputs: bigint[]) => bigint;



/** The BN254 scalar field modulus, big-endian. */
const MODULUS = Uint8Array.from(
  "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001".match(/../g)!.map((pair) => parseInt(pair, 16)),
);

/** Whether `value`, read big-endian, is below the BN254 modulus. */
export function isCanonicalFieldElement(value: Uint8Array): boolean {
  if (value.length !== 32) return false;
  for (let i = 0; i < 32; i++) {
    if (value[i]! !== MODULUS[i]!) return value[i]! < MODULUS[i]!;
  }
  return false;
}

function toField(value: Uint8Array): bigint {
  let out = 0n;
  for (let i = 0; i < 32; i += 8) {
    const view = new DataView(value.buffer, value.byteOffset + i, 8);
    out = (out << 64n) | view.getBigUint64(0);
  }
  return out;
}

function fromField(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  const view = new DataView(out.buffer);
  for (let i = 24; i >= 0; i -= 8) {
    view.setBigUint64(i, value & 0xffffffffffffffffn);
    value >>= 64n;
  }
  return out;
}

/**
 * A Poseidon hasher from poseidon-lite functions by width, e.g.
 * `poseidonHasher({ 2: poseidon2 })` for arity 2. A tree of arity N hashes
 * groups of 2..N children, so pass every width from 2 to N.
 */
export function poseidonHasher(byWidth: Readonly<Record<number, PoseidonFunction>>): Hasher {
  const table = { ...byWidth };
  return Object.freeze({
    name: "poseidon" as const,
    hashChildren(children: readonly Uint8Array[]): Uint8Array {
      const hash = table[children.length];
      if (typeof hash !== "function") {
        throw new CairnError("input", "InvalidArgument", `this Poseidon hasher has no poseidon${children.length}: pass it to poseidonHasher`);
      }
      for (const child of children) {
        if (!isCanonicalFieldElement(child)) throw new CairnError("input", "NonCanonical", "poseidon child is not a canonical field element");
      }
      return fromField(hash(children.map(toField)));
    },
    accepts: isCanonicalFieldElement,
  });
}
