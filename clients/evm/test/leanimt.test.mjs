// LeanIMT (arity 2, Poseidon) in the EVM: @zk-kit/lean-imt.sol's library,
// compiled with solc and linked to poseidon-solidity's PoseidonT3, receives
// the same seeded random BN254 leaves as a cairn database (a transaction
// per leaf, or one insertMany per batch); after every batch the contract's
// root must equal `cairn root`, and proofs from `cairn prove --proof-format
// zkkit` must pass the contract's own proof check (its update, which
// recomputes the root from the siblings) while a tampered sibling must not.
import { test } from "node:test";
import { binary } from "../lib/cairn.mjs";
import { seed } from "../lib/random.mjs";
import { LEAVES } from "../lib/run.mjs";
import { inChild } from "../lib/child.mjs";

test(`LeanIMT N=2 Poseidon: @zk-kit/lean-imt.sol and cairn agree on ${LEAVES} leaves (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async (t) => {
  for (const line of await inChild("leanimt", "agree", { seed, leaves: LEAVES })) t.diagnostic(line);
});
