// Deployed protocols' own tree contracts in the EVM, each against
// @zk-kit/imt with the protocol's hash and a cairn database made with
// `cairn init --kind imt` and the protocol's parameters:
//
// Tornado Cash: MerkleTreeWithHistory.sol as the zk-merkle-tree package
// publishes it (tornado-core's contract ported to Solidity 0.8 with the same
// zero value keccak256("tornado") mod p, zero table, MiMCSponge hashing,
// insert and 30-root history), at Tornado's depth 20, with circomlibjs's
// generated MiMCSponge contract as its hasher. After every batch the roots
// must be equal, and cairn's roots of the last 30 sizes must be ones the
// contract accepts (isKnownRoot) while the one before must not.
//
// Semaphore v3: its Semaphore.sol as @semaphore-protocol/contracts@3
// publishes it, compiled with the solc 0.8.4 it pins, its
// IncrementalBinaryTree linked to circomlibjs's generated Poseidon contract
// as Semaphore's deployment links it; a group of depth 20 whose zero value
// is Semaphore's keccak256(groupId) >> 8. After every batch of members
// (addMember or addMembers) the roots must be equal, and cairn's proofs must
// pass removeMember's membership check while a changed sibling must not.
//
// Semaphore v4: its Semaphore.sol as @semaphore-protocol/contracts@4
// publishes it (a LeanIMT of @zk-kit/lean-imt.sol with poseidon-solidity's
// PoseidonT3), against a plain cairn database (`--arity 2 --hash poseidon`)
// and @zk-kit/lean-imt: roots after every batch of members, and cairn's
// zkkit proofs through removeMember's check of the siblings.
//
// Until this cairn has `--kind`, the contracts are compared with @zk-kit/imt
// alone (test/imt.test.mjs reports the cairn comparison as skipped).
import { test } from "node:test";
import { binary, hasImtKind } from "../lib/cairn.mjs";
import { inChild } from "../lib/child.mjs";
import { seed } from "../lib/random.mjs";

// A depth-20 insert costs about a million gas (Tornado: 40 MiMCSponge calls;
// Semaphore v3: 20 calls of circomlibjs's Poseidon), five times a LeanIMT
// insert: these trees get their own, smaller knob.
const LEAVES = Number(process.env.CAIRN_EVM_PROTOCOL_LEAVES ?? 64);
if (!Number.isSafeInteger(LEAVES) || LEAVES < 1) throw new Error(`CAIRN_EVM_PROTOCOL_LEAVES=${process.env.CAIRN_EVM_PROTOCOL_LEAVES}: want a whole number of leaves, at least 1`);
const withCairn = hasImtKind();
const also = withCairn ? ", @zk-kit/imt and cairn" : " and @zk-kit/imt";

test(`Tornado Cash tree (MiMCSponge, depth 20): the contract${also} agree on ${LEAVES} leaves (seed ${seed})`, async (t) => {
  for (const line of await inChild("tornado", "agree", { seed: seed + 7, leaves: LEAVES, withCairn })) t.diagnostic(line);
});

test(`Semaphore v3 group (Poseidon, depth 20, zero keccak256(groupId) >> 8): the contract${also} agree on ${LEAVES} members (seed ${seed})`, async (t) => {
  for (const line of await inChild("semaphore", "agreeV3", { seed: seed + 11, leaves: LEAVES, withCairn })) t.diagnostic(line);
});

test(`Semaphore v4 group (LeanIMT, Poseidon): the contract, @zk-kit/lean-imt and cairn agree on ${LEAVES} members (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async (t) => {
  for (const line of await inChild("semaphore", "agreeV4", { seed: seed + 13, leaves: LEAVES })) t.diagnostic(line);
});
