export * from "./hashes/sha256.js";
