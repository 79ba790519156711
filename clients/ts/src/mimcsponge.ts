export * from "./hashes/mimcsponge.js";
