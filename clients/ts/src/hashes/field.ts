// BN254 scalar field elements as cairn writes them: 32 bytes, big-endian,
// canonical (below the modulus p). Shared by the field hashes (Poseidon,
// MiMCSponge) and the verifier's canonical-value check; nothing here reduces.

/** The BN254 scalar field modulus p. */
export const MODULUS = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001n;

/** p, big-endian, for the byte-wise comparison of isCanonicalFieldElement. */
const MODULUS_BYTES = Uint8Array.from(
  "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001".match(/../g)!.map((pair) => parseInt(pair, 16)),
);

/** Whether `value` is 32 bytes that, read big-endian, are below the BN254 modulus. */
export function isCanonicalFieldElement(value: Uint8Array): boolean {
  if (value.length !== 32) return false;
  for (let i = 0; i < 32; i++) {
    if (value[i]! !== MODULUS_BYTES[i]!) return value[i]! < MODULUS_BYTES[i]!;
  }
  return false;
}

/** 32 bytes read as a big-endian integer (not reduced: check isCanonicalFieldElement first where it matters). */
export function toField(value: Uint8Array): bigint {
  let out = 0n;
  for (let i = 0; i < 32; i += 8) {
    const view = new DataView(value.buffer, value.byteOffset + i, 8);
    out = (out << 64n) | view.getBigUint64(0);
  }
  return out;
}

/** An integer below 2^256 as 32 bytes, big-endian. */
export function fromField(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  const view = new DataView(out.buffer);
  for (let i = 24; i >= 0; i -= 8) {
    view.setBigUint64(i, value & 0xffffffffffffffffn);
    value >>= 64n;
  }
  return out;
}
