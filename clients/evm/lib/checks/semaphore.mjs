// Semaphore's groups in its published contracts: v3 (solc 0.8.4, its
// IncrementalBinaryTree linked to circomlibjs's Poseidon contract) against
// @zk-kit/imt and, when it has the kind, cairn; v4 (LeanIMT) against
// cairn. See test/protocols.test.mjs for what is checked.
import assert from "node:assert/strict";
import { IMT } from "@zk-kit/imt";
import { LeanIMT } from "@zk-kit/lean-imt";
import { poseidonContract } from "circomlibjs";
import { keccak256, solidityPacked } from "ethers";
import { poseidon2 } from "poseidon-lite";
import { CairnTree } from "../cairn.mjs";
import { Chain } from "../chain.mjs";
import { P, batches, random } from "../random.mjs";
import { Tally } from "../run.mjs";
import { contractProof } from "./imt.mjs";

export const DEPTH = 20;
/** A group's zero value, as Semaphore v3's _createGroup derives it. */
export const zeroOf = (groupId) => BigInt(keccak256(solidityPacked(["uint256"], [groupId]))) >> 8n;
// Semaphore's constructor stores its proof verifier's address; nothing here calls it.
const UNUSED_VERIFIER = "0x000000000000000000000000000000000000dEaD";
const NOT_IN_TREE = "Error(IncrementalBinaryTree: leaf is not part of the tree)";

export async function agreeV3({ seed, leaves: count, withCairn }, note) {
  const rng = random(seed);
  const leaves = rng.leaves(count);
  const groupId = BigInt(rng.int(1, 2 ** 31));
  const zero = zeroOf(groupId);
  const chain = await Chain.create();
  // What Semaphore v3's deployment links as PoseidonT3: circomlibjs's generated Poseidon contract of 2 inputs.
  const poseidon = await chain.deployCode("PoseidonT3", poseidonContract.createCode(2), poseidonContract.generateABI(2));
  chain.provide("@zk-kit/incremental-merkle-tree.sol/Hashes.sol:PoseidonT3", poseidon.address);
  const semaphore = await chain.deploy("@semaphore-protocol/contracts/Semaphore.sol:Semaphore", [UNUSED_VERIFIER]);
  await semaphore.send("createGroup(uint256,uint256,address)", groupId, DEPTH, chain.sender.toString());
  const library = new IMT(poseidon2, DEPTH, zero, 2);
  const cairn = withCairn ? CairnTree.create({ kind: "imt", arity: 2, hash: "poseidon", depth: DEPTH, zero }) : null;
  const tally = new Tally();
  const start = performance.now();
  const what = `Semaphore v3 group ${groupId} (zero ${zero})`;
  try {
    const compare = async (size) => {
      const onChain = await semaphore.read("getMerkleTreeRoot", groupId);
      assert.equal(await semaphore.read("getNumberOfMerkleTreeLeaves", groupId), BigInt(size));
      assert.equal(BigInt(library.root), onChain, `${what}: @zk-kit/imt's root after ${size} members`);
      if (cairn) assert.equal(cairn.root().root, onChain, `${what}: cairn's root after ${size} members`);
      return onChain;
    };
    await compare(0);

    let size = 0;
    for (const [number, batch] of batches(rng, leaves, 16).entries()) {
      // Alternate Semaphore's two ways in: addMember per member, or one addMembers.
      if (number % 2 === 0) {
        for (const leaf of batch) await tally.time("addMember", 1, async () => (await semaphore.send("addMember", groupId, leaf)).gas);
      } else {
        await tally.time("addMembers", batch.length, async () => (await semaphore.send("addMembers", groupId, batch)).gas);
      }
      batch.forEach((leaf) => library.insert(leaf));
      if (cairn) await tally.time("cairn ingest", batch.length, async () => assert.equal(cairn.ingest(batch).count, batch.length));
      size += batch.length;
      const onChain = await compare(size);

      // Semaphore's removeMember checks a membership proof (the tree's
      // private verify) before it zeroes the leaf: a valid proof passes, one
      // with a changed sibling does not.
      const index = rng.int(0, size - 1);
      const source = cairn ? "cairn" : "@zk-kit/imt";
      const proof = contractProof(cairn ? cairn.proveZkkit(index) : library.createProof(index), 2);
      assert.equal(proof.root, onChain, `${what}: ${source}'s proof of ${index}: root`);
      const removed = await semaphore.call("removeMember", groupId, proof.leaf, proof.siblings, proof.pathIndices);
      assert.ok(removed.ok, `${what}: ${source}'s proof of ${index} of ${size}: refused: ${removed.reason}`);
      const level = rng.int(0, DEPTH - 1);
      const tampered = proof.siblings.with(level, (proof.siblings[level] + 1n) % P);
      const refused = await semaphore.call("removeMember", groupId, proof.leaf, tampered, proof.pathIndices);
      assert.deepEqual(refused, { ok: false, reason: NOT_IN_TREE }, `${what}: proof of ${index} with the sibling at level ${level} changed`);
    }
    note(`${what}, depth ${DEPTH}: ${count} members in ${((performance.now() - start) / 1000).toFixed(1)} s${cairn ? "" : " (contract and @zk-kit/imt only)"}: ${tally.summary()}`);
  } finally {
    cairn?.remove();
  }
}

/**
 * Semaphore v4: a group (a LeanIMT, N = 2, Poseidon) fed batches of
 * members by addMember or addMembers has cairn's root and @zk-kit/lean-imt's
 * after every batch; removeMember, which checks zk-kit's proof siblings
 * against the root, accepts cairn's zkkit proof and refuses it with a
 * sibling changed.
 */
export async function agreeV4({ seed, leaves: count }, note) {
  const rng = random(seed);
  const leaves = rng.leaves(count);
  const chain = await Chain.create();
  const semaphore = await chain.deploy("semaphore-contracts-v4/Semaphore.sol:Semaphore", [UNUSED_VERIFIER]);
  const groupId = await semaphore.read("createGroup(address)", chain.sender.toString());
  await semaphore.send("createGroup(address)", chain.sender.toString());
  const library = new LeanIMT((a, b) => poseidon2([a, b]));
  const cairn = CairnTree.create({ arity: 2, hash: "poseidon" });
  const tally = new Tally();
  const start = performance.now();
  const what = `Semaphore v4 group ${groupId}`;
  try {
    let size = 0;
    for (const [number, batch] of batches(rng, leaves, 16).entries()) {
      if (number % 2 === 0) {
        for (const leaf of batch) await tally.time("addMember", 1, async () => (await semaphore.send("addMember", groupId, leaf)).gas);
      } else {
        await tally.time("addMembers", batch.length, async () => (await semaphore.send("addMembers", groupId, batch)).gas);
      }
      library.insertMany(batch);
      await tally.time("cairn ingest", batch.length, async () => assert.equal(cairn.ingest(batch).count, batch.length));
      size += batch.length;
      const onChain = await semaphore.read("getMerkleTreeRoot", groupId);
      assert.equal(await semaphore.read("getMerkleTreeSize", groupId), BigInt(size));
      assert.equal(library.root, onChain, `${what}: @zk-kit/lean-imt's root after ${size} members`);
      assert.equal(cairn.root().root, onChain, `${what}: cairn's root after ${size} members`);

      const index = rng.int(0, size - 1);
      const proof = cairn.proveZkkit(index);
      assert.equal(BigInt(proof.root), onChain, `${what}: cairn's proof of ${index}: root`);
      const siblings = proof.siblings.map(BigInt);
      const removed = await semaphore.call("removeMember", groupId, leaves[index], siblings);
      assert.ok(removed.ok, `${what}: cairn's proof of ${index} of ${size}: refused: ${removed.reason}`);
      if (siblings.length > 0) {
        const at = rng.int(0, siblings.length - 1);
        const refused = await semaphore.call("removeMember", groupId, leaves[index], siblings.with(at, (siblings[at] + 1n) % P));
        assert.deepEqual(refused, { ok: false, reason: "WrongSiblingNodes" }, `${what}: proof of ${index} with sibling ${at} changed`);
      }
    }
    note(`${what}: ${count} members in ${((performance.now() - start) / 1000).toFixed(1)} s: ${tally.summary()}`);
  } finally {
    cairn.remove();
  }
}
