// circomlib Poseidon over the BN254 scalar field (hash id 4): poseidon_k of
// the children read as big-endian integers. Every value must already be a
// canonical field element; poseidon-lite would reduce a larger one silently,
// so `accepts` is checked by the verifier before any value reaches it.
import { poseidon2 } from "poseidon-lite/poseidon2";
import { poseidon3 } from "poseidon-lite/poseidon3";
import { poseidon4 } from "poseidon-lite/poseidon4";
import { poseidon5 } from "poseidon-lite/poseidon5";
import { poseidon6 } from "poseidon-lite/poseidon6";
import { poseidon7 } from "poseidon-lite/poseidon7";
import { poseidon8 } from "poseidon-lite/poseidon8";
import { poseidon9 } from "poseidon-lite/poseidon9";
import { poseidon10 } from "poseidon-lite/poseidon10";
import { poseidon11 } from "poseidon-lite/poseidon11";
import { poseidon12 } from "poseidon-lite/poseidon12";
import { poseidon13 } from "poseidon-lite/poseidon13";
import { poseidon14 } from "poseidon-lite/poseidon14";
import { poseidon15 } from "poseidon-lite/poseidon15";
import { poseidon16 } from "poseidon-lite/poseidon16";
import type { Hasher } from "../hasher.js";

type Poseidon = (inputs: bigint[]) => bigint;

const BY_WIDTH: readonly (Poseidon | undefined)[] = [
  undefined,
  undefined,
  poseidon2,
  poseidon3,
  poseidon4,
  poseidon5,
  poseidon6,
  poseidon7,
  poseidon8,
  poseidon9,
  poseidon10,
  poseidon11,
  poseidon12,
  poseidon13,
  poseidon14,
  poseidon15,
  poseidon16,
];

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

/** circomlib Poseidon over BN254 (poseidon-lite), 2..16 children. */
export const poseidon: Hasher = Object.freeze({
  name: "poseidon" as const,
  hashChildren(children: readonly Uint8Array[]): Uint8Array {
    const hash = BY_WIDTH[children.length];
    if (hash === undefined) throw new RangeError(`poseidon hashes 2..16 children, got ${children.length}`);
    for (const child of children) {
      if (!isCanonicalFieldElement(child)) throw new RangeError("poseidon child is not a canonical field element");
    }
    return fromField(hash(children.map(toField)));
  },
  accepts: isCanonicalFieldElement,
});
