// Railgun's commitment trees across the rollover from tree 0 to tree 1
// (test-vectors/railgun.json, computed by @railgun-community/engine's own
// merkle tree): the fixed-depth verifier, given Railgun's depth, zero value
// and hash, reproduces the root of every tree number after every batch, and
// the zero value is keccak256("Railgun") mod p. The leaves are recomputed from
// leaves.json's rule (65,541 of them).
import assert from "node:assert/strict";
import { test } from "node:test";
import { sha256 } from "@noble/hashes/sha2";
import { keccak_256 } from "@noble/hashes/sha3";
import { computeRoot } from "cairn-verify";
import { toHexString, tree, vectors } from "./helpers.mjs";

const railgun = vectors("railgun.json");
const BN254_P = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** Leaf i of leaves.json's rule, past its 1,100 leaves. */
function leaf(i) {
  const tag = new TextEncoder().encode("cairn/test-vector-leaf/v1");
  const input = new Uint8Array(tag.length + 8);
  input.set(tag);
  new DataView(input.buffer).setBigUint64(tag.length, BigInt(i));
  const out = sha256(input);
  out[0] &= 0x1f;
  return out;
}

test("railgun.json's zero is keccak256(\"Railgun\") mod p and its empty root is zeros[16]", () => {
  const zero = BigInt(toHexString(keccak_256(new TextEncoder().encode("Railgun")))) % BN254_P;
  assert.equal(railgun.zero, "0x" + zero.toString(16).padStart(64, "0"));
  const t = { ...tree(2, "poseidon"), kind: "imt", depth: railgun.depth, zero: railgun.zero };
  assert.equal(toHexString(computeRoot([], t)), railgun.empty_root);
});

test("every root of railgun.json, on both sides of the rollover, is the imt root of its tree's leaves", () => {
  const { capacity } = railgun;
  const leaves = Array.from({ length: railgun.leaf_count }, (_, i) => leaf(i));
  assert.deepEqual(railgun.first_leaves, leaves.slice(0, 3).map(toHexString));
  const t = { ...tree(2, "poseidon"), kind: "imt", depth: railgun.depth, zero: railgun.zero };
  const numbers = new Set();
  // Size 65,535 is left to the Rust check (crates/db, rollover.rs): each full-size
  // root costs 65,535 Poseidon hashes here, and 65,536 covers the full tree.
  for (const { tree: number, size, root } of railgun.roots.filter((r) => r.size !== capacity - 1)) {
    const offset = number * capacity;
    assert.equal(toHexString(computeRoot(leaves.slice(offset, offset + size), t)), root, `tree ${number} size ${size}`);
    numbers.add(number);
  }
  assert.deepEqual([...numbers], [0, 1], "roots of tree 0 and tree 1");
  assert.ok(railgun.roots.some((r) => r.tree === 0 && r.size === capacity), "tree 0 full");
});
