export * from "./hashes/keccak256.js";
