export * from "./hashes/poseidon.js";
