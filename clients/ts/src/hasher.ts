// What a verifier needs from a hash: its name and id (to compare with the
// proof's), H over 2..16 children, and which 32-byte values it accepts.
// Hashers are passed in, so a build only carries the ones it imports.

/** The hash names of docs/spec.md section 3. */
export type HashName = "blake3" | "sha256" | "keccak256" | "poseidon" | "mimcsponge";

/** Hash ids of the binary encoding. */
export const HASH_IDS: Readonly<Record<HashName, number>> = {
  blake3: 1,
  sha256: 2,
  keccak256: 3,
  poseidon: 4,
  mimcsponge: 5,
};

export const HASH_NAMES: readonly HashName[] = ["blake3", "sha256", "keccak256", "poseidon", "mimcsponge"];

/**
 * Whether the hash works over the BN254 field (Poseidon, MiMCSponge), so
 * its values must be canonical field elements: the one place this is
 * asked (cairn's Rust core: `HashKind::is_field_hash`).
 */
export function isFieldHash(name: HashName): boolean {
  return name === "poseidon" || name === "mimcsponge";
}

/** A node hash H(c_1, .., c_k) for groups of 2..16 children. */
export interface Hasher {
  readonly name: HashName;
  /** H of the children, each 32 bytes, in order; 32 bytes out. */
  hashChildren(children: readonly Uint8Array[]): Uint8Array;
  /** Whether a leaf or node value is acceptable (Poseidon, MiMCSponge: below the BN254 modulus). */
  accepts(value: Uint8Array): boolean;
}

/** A hasher over byte strings: H(c_1 ‖ .. ‖ c_k). */
export function byteHasher(name: HashName, digest: (bytes: Uint8Array) => Uint8Array): Hasher {
  return Object.freeze({
    name,
    hashChildren(children: readonly Uint8Array[]): Uint8Array {
      const buffer = new Uint8Array(32 * children.length);
      for (let i = 0; i < children.length; i++) buffer.set(children[i]!, 32 * i);
      return digest(buffer);
    },
    accepts(): boolean {
      return true;
    },
  });
}
