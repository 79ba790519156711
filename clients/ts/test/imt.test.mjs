// Fixed-depth (imt) trees against the committed vectors: every zero hash
// and root of imt.json (each also @zk-kit/imt's, in typescript.json)
// reproduced, every format version 2 proof decoded from both encodings,
// re-encoded to the same bytes and verified against the tree it is of and
// refused against any other, zk-kit's own proofs accepted once mapped to
// cairn's encoding, and every named invalid case refused at the stage and
// for the reason cairn refuses it.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  computeRoot,
  decodeConsistency,
  decodeMembership,
  FORMAT_VERSION_KINDS,
  path,
  rollForward,
  verifyConsistency,
  verifyMembership,
} from "cairn-verify";
import { fromHex, rejects, toHexString, tree, vectors } from "./helpers.mjs";

const leaves = vectors("leaves.json").leaves.map(fromHex);
const imt = vectors("imt.json");
const zkkit = vectors("typescript.json").imt;

/** The tree an imt.json tree (or invalid case) describes, as a verifier trusts it. */
const imtTree = (entry) => ({ ...tree(entry.arity, entry.hash), kind: "imt", depth: entry.depth, zero: entry.zero });
const label = (entry) => `${entry.hash} N=${entry.arity} depth ${entry.depth}`;

test("imt.json covers the four trees of typescript.json's imt array", () => {
  assert.equal(imt.format_version, FORMAT_VERSION_KINDS);
  assert.equal(imt.trees.length, 4);
  assert.deepEqual(
    imt.trees.map((t) => [t.hash, t.arity, t.depth, t.zero]),
    zkkit.map((t) => [t.hash, t.arity, t.depth, t.zero]),
  );
});

test("computeRoot reproduces every zero hash and root of imt.json, which are @zk-kit/imt's", () => {
  let checked = 0;
  for (const [at, entry] of imt.trees.entries()) {
    const t = imtTree(entry);
    assert.deepEqual(entry.zeros, zkkit[at].zeros, label(entry));
    // zeros[k] is the root of the empty tree of depth k.
    entry.zeros.forEach((zero, k) => {
      if (k > 0) assert.equal(toHexString(computeRoot([], { ...t, depth: k })), zero, `${label(entry)} zeros[${k}]`);
    });
    const theirs = new Map(zkkit[at].roots.map((r) => [r.size, r.root]));
    for (const { size, root } of entry.roots) {
      assert.equal(toHexString(computeRoot(leaves.slice(0, size), t)), root, `${label(entry)} size ${size}`);
      assert.equal(theirs.get(size), root, `${label(entry)} size ${size}: zk-kit`);
      checked++;
    }
    assert.equal(entry.roots[0].size, 0);
    assert.equal(entry.roots[0].root, entry.zeros[entry.depth], "the empty tree's root is zeros[depth]");
  }
  assert.ok(checked >= 100, `${checked} roots`);
});

test("an imt holds at most N^depth leaves and needs a canonical zero under a field hash", () => {
  const t = { ...tree(2, "keccak256"), kind: "imt", depth: 2 };
  assert.equal(toHexString(computeRoot(leaves.slice(0, 4), t)), toHexString(computeRoot(leaves.slice(0, 4), tree(2, "keccak256"))));
  rejects(() => computeRoot(leaves.slice(0, 5), t), "input", "InvalidArgument", "5 leaves at depth 2");
  rejects(() => computeRoot([], { ...tree(2, "poseidon"), kind: "imt", depth: 3, zero: "0x" + "ff".repeat(32) }), "input", "NonCanonical");
});

/** Decodes `entry` from every form, checks they agree and re-encode to `entry.binary`; returns the proof. */
function decodedFromEveryForm(decode, entry, context) {
  const binary = fromHex(entry.binary);
  const proof = decode(binary);
  assert.equal(proof.tree.kind, "imt", context);
  for (const input of [JSON.stringify(entry.json), entry.json, new TextEncoder().encode(JSON.stringify(entry.json, null, 2))]) {
    assert.deepEqual(decode(input), proof, context);
  }
  assert.equal(toHexString(proof.toBytes()), entry.binary, context);
  assert.deepEqual(JSON.parse(proof.toJson()), entry.json, context);
  assert.deepEqual(decode(proof.toJson()), proof, context);
  return proof;
}

/** Trusted trees a proof of `entry`'s tree must be refused against, each for a KindMismatch. */
function otherTrees(entry) {
  const t = imtTree(entry);
  const otherZero = "0x" + "00".repeat(31) + "07";
  return [
    ["lean", tree(entry.arity, entry.hash)],
    ["deeper", { ...t, depth: entry.depth + 1 }],
    ["another zero", { ...t, zero: entry.zero === otherZero ? "0x" + "00".repeat(32) : otherZero }],
  ];
}

test("every imt membership proof decodes from both encodings, re-encodes, verifies, and is refused for any other tree", () => {
  let checked = 0;
  for (const entry of imt.trees) {
    const t = imtTree(entry);
    for (const m of entry.membership) {
      const context = `${label(entry)}: leaf ${m.index} of ${m.size}`;
      const proof = decodedFromEveryForm(decodeMembership, m, context);
      assert.equal(proof.tree.depth, entry.depth);
      assert.equal(toHexString(proof.tree.zero), entry.zero);
      assert.equal(proof.levels().length, entry.depth, `${context}: one level per level of the tree`);
      assert.equal(toHexString(proof.leaf), toHexString(leaves[m.index]));
      const head = { size: m.size, root: m.root };
      assert.deepEqual(verifyMembership(fromHex(m.binary), t, head), proof);
      for (const [name, other] of otherTrees(entry)) {
        const rootOfOther = name === "lean" ? computeRoot(leaves.slice(0, m.size), other) : m.root;
        rejects(() => verifyMembership(proof, other, { size: m.size, root: rootOfOther }), "verify", "KindMismatch", `${context} as ${name}`);
      }
      const wrongRoot = m.root.slice(0, -1) + (m.root.endsWith("0") ? "1" : "0");
      rejects(() => verifyMembership(proof, t, { size: m.size, root: wrongRoot }), "verify", "RootMismatch", context);
      checked++;
    }
  }
  assert.equal(checked, 40);
});

test("every imt consistency proof decodes from both encodings, re-encodes, verifies, and is refused for any other tree", () => {
  let checked = 0;
  for (const entry of imt.trees) {
    const t = imtTree(entry);
    for (const c of entry.consistency) {
      const context = `${label(entry)}: ${c.old_size} -> ${c.new_size}`;
      const proof = decodedFromEveryForm(decodeConsistency, c, context);
      const old = { size: c.old_size, root: c.old_root };
      const next = { size: c.new_size, root: c.new_root };
      assert.deepEqual(verifyConsistency(fromHex(c.binary), t, old, next), proof);
      for (const [name, other] of otherTrees(entry)) {
        if (name === "lean" && c.old_size === 0) continue; // no lean head of size 0 has a root
        rejects(() => verifyConsistency(proof, other, old, next), "verify", "KindMismatch", `${context} as ${name}`);
      }
      if (c.old_size > 0 && c.new_size > c.old_size) {
        rejects(() => verifyConsistency(proof, t, old, { ...next, root: old.root }), "verify", "RootMismatch", context);
      }
      checked++;
    }
  }
  assert.equal(checked, 28);
});

test("rolling an imt membership proof forward gives a proof that verifies against the new head", () => {
  let rolled = 0;
  for (const entry of imt.trees) {
    const t = imtTree(entry);
    for (const c of entry.consistency.filter((c) => c.old_size > 0)) {
      for (const m of entry.membership.filter((m) => m.size === c.old_size)) {
        const result = rollForward(fromHex(m.binary), fromHex(c.binary), t, { size: m.size, root: m.root }, { size: c.new_size, root: c.new_root });
        assert.equal(result.size, BigInt(c.new_size));
        assert.equal(result.tree.kind, "imt");
        const same = entry.membership.find((x) => x.index === m.index && x.size === c.new_size);
        if (same !== undefined) assert.equal(toHexString(result.toBytes()), same.binary);
        rolled++;
      }
    }
  }
  assert.ok(rolled >= 4, `${rolled} roll-forwards`);
});

test("@zk-kit/imt's createProof, mapped to cairn's encoding, verifies; its absent siblings are the zeros", () => {
  let checked = 0;
  for (const [at, theirs] of zkkit.entries()) {
    const entry = imt.trees[at];
    const t = imtTree(entry);
    for (const p of theirs.proofs) {
      const context = `${label(entry)}: zk-kit leaf ${p.leafIndex} of ${p.size}`;
      // zk-kit lists the N - 1 other members of every group, absent ones
      // as the level's zero; cairn carries only the members that exist.
      const steps = path(BigInt(p.leafIndex), BigInt(p.size), entry.arity, entry.depth);
      assert.equal(steps.length, p.siblings.length, context);
      const siblings = steps.map((step, level) => {
        assert.equal(step.position, p.pathIndices[level], `${context} level ${level}`);
        const others = p.siblings[level];
        others.slice(step.groupLen - 1).forEach((value) => assert.equal(value, entry.zeros[level], `${context} level ${level}`));
        return others.slice(0, step.groupLen - 1);
      });
      const json = {
        version: 2, kind: "membership", arity: entry.arity, hash: entry.hash,
        tree: { kind: "imt", depth: entry.depth, zero: entry.zero },
        index: p.leafIndex, size: p.size, leaf: p.leaf, siblings,
      };
      verifyMembership(json, t, { size: p.size, root: p.root });
      checked++;
    }
  }
  assert.equal(checked, 40);
});

test("every named invalid imt case is refused at the same stage, for the same reason, as cairn", () => {
  assert.ok(imt.invalid.length >= 16);
  const reasons = new Set();
  for (const entry of imt.invalid) {
    const trusted = entry.tree === "lean" ? tree(entry.arity, entry.hash) : imtTree(entry);
    const input = entry.binary !== undefined ? fromHex(entry.binary) : JSON.stringify(entry.json);
    const check = (proof) =>
      entry.kind === "membership"
        ? verifyMembership(proof, trusted, entry.trusted)
        : verifyConsistency(proof, trusted, { size: entry.trusted.old_size, root: entry.trusted.old_root }, { size: entry.trusted.new_size, root: entry.trusted.new_root });
    const error = rejects(() => check(input), entry.error, entry.reason, entry.name);
    if (entry.json !== undefined) rejects(() => check(entry.json), entry.error, entry.reason, `${entry.name} (object)`);
    assert.doesNotMatch(error.message, /undefined|NaN|\[object/, entry.name);
    reasons.add(entry.reason);
  }
  for (const reason of ["KindMismatch", "RootMismatch", "TreeKind", "BeyondCapacity", "InconsistentHead"]) assert.ok(reasons.has(reason), reason);
});

test("a trusted imt tree is checked: a depth out of range, a stray depth or zero, an unknown kind", () => {
  const m = imt.trees[0].membership[2];
  const head = { size: m.size, root: m.root };
  const base = imtTree(imt.trees[0]);
  for (const [name, t] of [
    ["depth 0", { ...base, depth: 0 }],
    ["depth 65", { ...base, depth: 65 }],
    ["no depth", { ...base, depth: undefined }],
    ["depth without kind", { ...tree(2, "poseidon"), depth: 10 }],
    ["zero without kind", { ...tree(2, "poseidon"), zero: base.zero }],
    ["unknown kind", { ...base, kind: "merkle" }],
    ["short zero", { ...base, zero: "0x00" }],
  ]) {
    rejects(() => verifyMembership(fromHex(m.binary), t, head), "input", "InvalidArgument", name);
  }
  // The zero value defaults to 32 zero bytes, as in `cairn init --kind imt`.
  const { zero, ...withoutZero } = base;
  assert.equal(zero, "0x" + "00".repeat(32));
  verifyMembership(fromHex(m.binary), withoutZero, head);
  // An imt head always has a root, the empty tree's too.
  const empty = imt.trees[0].consistency.find((c) => c.old_size === 0 && c.new_size > 0);
  rejects(() => verifyConsistency(fromHex(empty.binary), base, { size: 0, root: null }, { size: empty.new_size, root: empty.new_root }), "verify", "InconsistentHead");
  verifyConsistency(fromHex(empty.binary), base, { size: 0, root: empty.old_root }, { size: empty.new_size, root: empty.new_root });
});
