// circomlib Poseidon over the BN254 scalar field (hash id 4): poseidon_k of
// the children read as big-endian integers, from poseidon-lite functions the
// caller passes in (each width's constants are large: pass only the widths
// the tree's arity needs). Every value must already be a canonical field
// element; poseidon-lite would reduce a larger one silently, so the
// verifier checks `accepts` before any value reaches it.
import { CairnError } from "../errors.js";
import type { Hasher } from "../hasher.js";
import { fromField, isCanonicalFieldElement, toField } from "./field.js";

/** poseidon-lite's `poseidonK`: k field elements in, one out. */
export type PoseidonFunction = (inputs: bigint[]) => bigint;

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
