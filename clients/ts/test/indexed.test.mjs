// test-vectors/indexed.json against this package's indexed-tree code,
// written from docs/spec.md section 12 alone: every root recomputed from
// the values, every valid proof decoded from both encodings and verified,
// every invalid one rejected at the stage and for the reason cairn gives.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decodeAbsence,
  decodeIndexedMembership,
  decodeInsertion,
  indexedLeafHash,
  indexedRoot,
  verifyAbsence,
  verifyIndexedMembership,
  verifyInsertion,
} from "cairn-verify";
import { fromHex, rejects, toHexString, tree, vectors } from "./helpers.mjs";

const leaves = vectors("leaves.json").leaves.map(fromHex);
const doc = vectors("indexed.json");

const head = (trusted) => ({ size: BigInt(trusted.size), root: trusted.root });

test("every indexed leaf hash is the hash of its three words", () => {
  for (const entry of doc.leaf_hashes) {
    const leaf = {
      value: fromHex(entry.leaf.value),
      nextIndex: BigInt(entry.leaf.next_index),
      nextValue: fromHex(entry.leaf.next_value),
    };
    assert.equal(toHexString(indexedLeafHash(tree(2, entry.hash).hash, leaf)), entry.leaf_hash, entry.hash);
  }
});

test("indexedRoot reproduces every root of indexed.json from the values", () => {
  assert.equal(doc.roots.length, 144);
  for (const entry of doc.roots) {
    const root = indexedRoot(leaves.slice(0, entry.values), tree(entry.arity, entry.hash));
    assert.equal(toHexString(root), entry.root, `${entry.hash} N=${entry.arity} ${entry.values} values`);
  }
});

test("every valid indexed proof decodes from both encodings and verifies", () => {
  assert.ok(doc.proofs.length >= 90);
  for (const entry of doc.proofs) {
    const context = `${entry.name} ${entry.hash} N=${entry.arity}`;
    const trusted = tree(entry.arity, entry.hash);
    const binary = fromHex(entry.binary);
    const json = JSON.stringify(entry.json);
    switch (entry.kind) {
      case "absence": {
        assert.deepEqual(decodeAbsence(binary), decodeAbsence(json), context);
        verifyAbsence(binary, trusted, head(entry.trusted), entry.value);
        verifyAbsence(entry.json, trusted, head(entry.trusted), entry.value);
        break;
      }
      case "indexed_membership": {
        assert.deepEqual(decodeIndexedMembership(binary), decodeIndexedMembership(json), context);
        verifyIndexedMembership(binary, trusted, head(entry.trusted), entry.value);
        break;
      }
      case "insertion": {
        assert.deepEqual(decodeInsertion(binary), decodeInsertion(json), context);
        const after = verifyInsertion(binary, trusted, head(entry.trusted));
        assert.equal(after.size, BigInt(entry.trusted.size) + BigInt(entry.json.insertions.length), context);
        // The head after is the root of the values inserted, recomputed.
        const inserted = entry.json.insertions.map((step) => fromHex(step.value));
        const values = [...leaves.slice(0, entry.values), ...inserted];
        assert.equal(toHexString(after.root), toHexString(indexedRoot(values, trusted)), context);
        break;
      }
      default:
        assert.fail(`unknown kind ${entry.kind}`);
    }
  }
});

test("every invalid indexed proof is rejected at its stage, for its reason", () => {
  assert.ok(doc.invalid.length >= 13);
  for (const entry of doc.invalid) {
    const trusted = tree(entry.arity, entry.hash);
    const input = entry.binary !== undefined ? fromHex(entry.binary) : entry.json;
    const run = {
      absence: () => verifyAbsence(input, trusted, head(entry.trusted), entry.value),
      indexed_membership: () => verifyIndexedMembership(input, trusted, head(entry.trusted), entry.value),
      insertion: () => verifyInsertion(input, trusted, head(entry.trusted)),
    }[entry.kind];
    rejects(run, entry.error, entry.reason, entry.name);
  }
});

test("a proof about another value, or against an empty head, is refused", () => {
  const entry = doc.proofs.find((p) => p.kind === "absence");
  const trusted = tree(entry.arity, entry.hash);
  rejects(() => verifyAbsence(fromHex(entry.binary), trusted, head(entry.trusted), leaves[3]), "verify", "ValueMismatch");
  rejects(() => verifyAbsence(fromHex(entry.binary), trusted, { size: 0n, root: null }, entry.value), "verify", "EmptyHead");
  rejects(() => decodeAbsence(fromHex(entry.binary).slice(0, 50)), "decode", "WrongLength");
});
