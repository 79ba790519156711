// Plain (leaf-hash) proofs of indexed trees against indexed.json's
// leaf_hash_proofs and leaf_hash_invalid: format version 2 with tree kind 2,
// decoded from both encodings, re-encoded to cairn's bytes, verified with
// the Lean shape against a trusted indexed tree whose root is the one the
// values give, refused against any other kind; and every refusal cairn
// makes (a depth or zero under kind 2, another kind's proof, any
// consistency proof) made at the same stage for the same reason.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decodeConsistency,
  decodeMembership,
  FORMAT_VERSION_KINDS,
  INDEXED,
  indexedRoot,
  LEAN,
  rollForward,
  verifyConsistency,
  verifyMembership,
} from "cairn-verify";
import { fromHex, rejects, toHexString, tree, vectors } from "./helpers.mjs";

const leaves = vectors("leaves.json").leaves.map(fromHex);
const doc = vectors("indexed.json");

const head = (trusted) => ({ size: BigInt(trusted.size), root: trusted.root });
const indexedTree = (entry) => ({ ...tree(entry.arity, entry.hash), kind: "indexed" });
/** The proof a case holds: bytes, or its JSON text. */
const input = (entry) => (entry.binary !== undefined ? fromHex(entry.binary) : JSON.stringify(entry.json));
const label = (entry) => `${entry.name} (${entry.hash} N=${entry.arity}, ${entry.binary !== undefined ? "binary" : "json"})`;

test("indexed.json has plain proofs of indexed trees in both encodings, and their refusals", () => {
  assert.equal(doc.leaf_hash_proofs.length, 8);
  assert.deepEqual(new Set(doc.leaf_hash_proofs.map((e) => (e.binary !== undefined ? "binary" : "json"))), new Set(["binary", "json"]));
  assert.deepEqual(
    doc.leaf_hash_invalid.map((e) => `${e.error} ${e.reason}`),
    ["decode TreeKind", "decode TreeKind", "decode TreeKind", "verify KindMismatch", "verify NotAppendOnly"],
  );
});

test("every plain proof of an indexed tree decodes, re-encodes to cairn's bytes and verifies with the Lean shape", () => {
  for (const entry of doc.leaf_hash_proofs) {
    const t = indexedTree(entry);
    // The trusted head is the indexed tree's over the first `values` values.
    assert.equal(toHexString(indexedRoot(leaves.slice(0, entry.values), t)), entry.trusted.root, label(entry));
    const proof = decodeMembership(input(entry));
    assert.equal(proof.tree, INDEXED, label(entry));
    const bytes = proof.toBytes();
    assert.equal(bytes[0], FORMAT_VERSION_KINDS);
    assert.deepEqual([...bytes.subarray(4, 38)], [2, ...new Array(33).fill(0)], `${label(entry)}: tree part`);
    if (entry.binary !== undefined) assert.equal(toHexString(bytes), entry.binary, label(entry));
    // This package's JSON names the tree as cairn's does, and reads back the same.
    assert.deepEqual(JSON.parse(proof.toJson()).tree, { kind: "indexed" });
    assert.deepEqual(JSON.parse(proof.toJson()), entry.json ?? JSON.parse(decodeMembership(bytes).toJson()));
    assert.deepEqual(decodeMembership(proof.toJson()).toBytes(), bytes, label(entry));
    verifyMembership(input(entry), t, head(entry.trusted));
    // The kind is part of what is trusted: the same proof against a lean tree is refused.
    rejects(() => verifyMembership(input(entry), tree(entry.arity, entry.hash), head(entry.trusted)), "verify", "KindMismatch", label(entry));
    rejects(
      () => verifyMembership(input(entry), { ...tree(entry.arity, entry.hash), kind: "imt", depth: 8 }, head(entry.trusted)),
      "verify",
      "KindMismatch",
      label(entry),
    );
    // A changed sibling no longer proves the leaf.
    const changed = fromHex(entry.binary ?? toHexString(bytes));
    changed[changed.length - 1] ^= 1;
    rejects(() => verifyMembership(changed, t, head(entry.trusted)), "verify", "RootMismatch", label(entry));
  }
});

test("every invalid plain proof of an indexed tree is refused at cairn's stage for cairn's reason", () => {
  for (const entry of doc.leaf_hash_invalid) {
    const t = indexedTree(entry);
    if (entry.kind === "membership") {
      rejects(() => verifyMembership(input(entry), t, head(entry.trusted)), entry.error, entry.reason, label(entry));
    } else {
      rejects(
        () => verifyConsistency(input(entry), t, head(entry.trusted_old), head(entry.trusted_new)),
        entry.error,
        entry.reason,
        label(entry),
      );
    }
  }
});

test("a consistency proof of an indexed tree decodes but never verifies, nor rolls a proof forward", () => {
  const entry = doc.leaf_hash_invalid.find((e) => e.kind === "consistency");
  const proof = decodeConsistency(fromHex(entry.binary));
  assert.equal(proof.tree, INDEXED);
  assert.equal(toHexString(proof.toBytes()), entry.binary);
  assert.deepEqual(decodeConsistency(proof.toJson()).toBytes(), proof.toBytes());
  const t = indexedTree(entry);
  const error = rejects(() => verifyConsistency(proof, t, head(entry.trusted_old), head(entry.trusted_new)), "verify", "NotAppendOnly");
  assert.match(error.message, /consistency proof of an indexed tree/);
  // Against a lean tree the kinds differ first, as in cairn.
  rejects(() => verifyConsistency(proof, tree(entry.arity, entry.hash), head(entry.trusted_old), head(entry.trusted_new)), "verify", "KindMismatch");
  const member = doc.leaf_hash_proofs.find((e) => e.hash === entry.hash && e.arity === entry.arity && e.binary !== undefined);
  rejects(
    () => rollForward(fromHex(member.binary), proof, t, head(entry.trusted_old), head(entry.trusted_new)),
    "verify",
  );
});

test("the indexed tree part is refused exactly where cairn's decoders refuse it", () => {
  const entry = doc.leaf_hash_proofs.find((e) => e.json !== undefined && e.hash === "blake3");
  const json = (tree) => JSON.stringify({ ...entry.json, tree });
  const t = indexedTree(entry);
  const trusted = head(entry.trusted);
  // null reads as absent (an optional field), as serde reads it.
  verifyMembership(json({ kind: "indexed", depth: null, zero: null }), t, trusted);
  for (const [tree, reason] of [
    [{ kind: "indexed", depth: 0 }, "TreeKind"],
    [{ kind: "indexed", zero: "0x" + "00".repeat(32) }, "TreeKind"],
    [{ kind: "imt", depth: 3 }, "TreeKind"],
    [{ kind: "imt", zero: "0x" + "00".repeat(32) }, "TreeKind"],
    [{ kind: "sparse" }, "TreeKind"],
    [{ kind: "indexed", extra: 1 }, "Json"],
    [{ kind: "indexed", depth: -1 }, "Json"],
  ]) {
    rejects(() => decodeMembership(json(tree)), "decode", reason, JSON.stringify(tree));
  }
  const bytes = decodeMembership(JSON.stringify(entry.json)).toBytes();
  for (const [at, value] of [
    [4, 3],
    [4, 0],
    [5, 64],
    [6, 1],
    [37, 0x80],
  ]) {
    const bad = Uint8Array.from(bytes);
    bad[at] = value;
    rejects(() => decodeMembership(bad), "decode", "TreeKind", `byte ${at} = ${value}`);
  }
  // The version 1 header is a lean tree's: its proof of the same leaf is another kind.
  assert.equal(decodeMembership(bytes).tree, INDEXED);
  assert.notEqual(INDEXED, LEAN);
});

test("a trusted indexed tree takes no depth or zero and has a root exactly when it has leaves", () => {
  const entry = doc.leaf_hash_proofs[0];
  const t = indexedTree(entry);
  rejects(() => verifyMembership(input(entry), { ...t, depth: 4 }, head(entry.trusted)), "input");
  rejects(() => verifyMembership(input(entry), { ...t, zero: "0x" + "00".repeat(32) }, head(entry.trusted)), "input");
  rejects(() => verifyMembership(input(entry), t, { size: entry.trusted.size, root: null }), "verify", "InconsistentHead");
  rejects(() => verifyConsistency(input(doc.leaf_hash_invalid[4]), t, { size: 0, root: "0x" + "00".repeat(32) }, head(entry.trusted)), "verify");
});
