// BLAKE3-256 of the concatenated children (hash id 1).
import { blake3 as digest } from "@noble/hashes/blake3";
import { byteHasher, type Hasher } from "../hasher.js";

/** BLAKE3-256 over the concatenated children. */
export const blake3: Hasher = /* @__PURE__ */ byteHasher("blake3", (bytes) => digest(bytes));
