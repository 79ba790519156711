// Mutable trees in the EVM: seeded random sequences of adds, updates and
// removals applied to zk-kit's LeanIMT.sol and BinaryIMT.sol (through the
// harnesses in contracts/) and to a Semaphore v4 group (addMember(s),
// updateMember, removeMember), and to a mutable cairn database through its
// CLI (`cairn init --mutable`, `cairn ingest`, `cairn update`, `cairn
// remove`). Every update and removal is made first in cairn, and the old
// leaf's proof cairn prints (`--proof-format zkkit`) is what the contract
// is given (no proof is computed here); after every step the contract's
// root and size must equal cairn's (and, for BinaryIMT, @zk-kit/imt's).
// Before each change the same proof with one sibling altered must be
// refused by the contract.
//
// BinaryIMT.sol's update keeps a cache of the rightmost path that a zero
// subtree elsewhere can mislead (its next insert then hashes with the wrong
// node): the BinaryIMT sequences do not make those changes (they are
// counted), and a fixed sequence pins the contract's wrong root.
//
// CAIRN_EVM_MUTATION_STEPS (default 8, to keep CI short) sets the steps per sequence.
import { test } from "node:test";
import { binary } from "../lib/cairn.mjs";
import { inChild } from "../lib/child.mjs";
import { random, seed } from "../lib/random.mjs";

const STEPS = Number(process.env.CAIRN_EVM_MUTATION_STEPS ?? 8);
if (!Number.isSafeInteger(STEPS) || STEPS < 1) throw new Error(`CAIRN_EVM_MUTATION_STEPS=${process.env.CAIRN_EVM_MUTATION_STEPS}: want a whole number of steps, at least 1`);
const skip = binary === null && "no cairn binary";
const zero = random(seed + 29).field();

test(`LeanIMT.sol and cairn --mutable --readmit-removed agree over ${STEPS} random adds, updates and removals (seed ${seed})`, { skip }, async (t) => {
  for (const line of await inChild("mutation", "leanImt", { seed: seed + 17, steps: STEPS })) t.diagnostic(line);
});

// Deep enough that the adds of a run seldom fill it (a full tree with many
// zero leaves leaves few changes the contract gets right).
const depth = Math.max(5, Math.ceil(Math.log2(STEPS)) + 1);
for (const shape of [
  { depth, zero: 0n },
  { depth: 3, zero },
]) {
  test(`BinaryIMT.sol depth ${shape.depth} zero ${shape.zero === 0n ? 0 : "random"}, @zk-kit/imt and cairn --kind imt --mutable agree over ${STEPS} random adds, updates and removals (seed ${seed})`, { skip }, async (t) => {
    const args = { seed: seed + 19 + shape.depth, steps: STEPS, depth: shape.depth, zero: shape.zero.toString() };
    for (const line of await inChild("mutation", "binaryImt", args)) t.diagnostic(line);
  });
}

test(`BinaryIMT.sol's rightmost-path cache goes wrong after removals next to a zero leaf; cairn and @zk-kit/imt keep the tree's root (seed ${seed})`, { skip }, async (t) => {
  for (const line of await inChild("mutation", "binaryImtCache", { seed: seed + 23 })) t.diagnostic(line);
});

test(`Semaphore v4 updateMember/removeMember and cairn --mutable agree over ${STEPS} random changes (seed ${seed})`, { skip }, async (t) => {
  for (const line of await inChild("mutation", "semaphoreV4", { seed: seed + 31, steps: STEPS })) t.diagnostic(line);
});
