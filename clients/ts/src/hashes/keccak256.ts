// Keccak-256 with the original padding, as in Ethereum (hash id 3).
import { keccak_256 as digest } from "@noble/hashes/sha3";
import { byteHasher, type Hasher } from "../hasher.js";

/** Keccak-256 (Ethereum's, not NIST SHA3-256) over the concatenated children. */
export const keccak256: Hasher = /* @__PURE__ */ byteHasher("keccak256", (bytes) => digest(bytes));
