export * from "./hashes/blake3.js";
