// SHA-256 of the concatenated children (hash id 2).
import { sha256 as digest } from "@noble/hashes/sha2";
import { byteHasher, type Hasher } from "../hasher.js";

/** SHA-256 over the concatenated children. */
export const sha256: Hasher = /* @__PURE__ */ byteHasher("sha256", (bytes) => digest(bytes));
