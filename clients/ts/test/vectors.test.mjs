// The shared vectors of test-vectors/: every root reproduced, every valid
// proof decoded from both encodings, re-encoded to the same bytes and
// verified, and every invalid one rejected at the stage cairn rejects it.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  computeRoot,
  decodeConsistency,
  decodeMembership,
  mimcsponge,
  poseidon,
  rollForward,
  verifyConsistency,
  verifyMembership,
} from "cairn-verify";
import { poseidonHasher } from "cairn-verify/core";
import { poseidon2 } from "poseidon-lite/poseidon2";
import { fromHex, rejects, toHexString, tree, vectors } from "./helpers.mjs";

const leaves = vectors("leaves.json").leaves.map(fromHex);
const proofs = vectors("proofs.json");
const invalid = vectors("invalid-proofs.json");

test("computeRoot reproduces every root of roots.json and typescript.json", () => {
  for (const file of ["roots.json", "typescript.json"]) {
    const roots = vectors(file).roots;
    assert.ok(roots.length >= 896);
    for (const entry of roots) {
      const root = computeRoot(leaves.slice(0, entry.size), tree(entry.arity, entry.hash));
      assert.equal(root === null ? null : toHexString(root), entry.root, `${file} ${entry.hash} N=${entry.arity} size ${entry.size}`);
    }
  }
});

test("the poseidon hasher matches every poseidon vector with 2..16 inputs", () => {
  let checked = 0;
  for (const { inputs, output } of vectors("typescript.json").poseidon) {
    if (inputs.length < 2) continue;
    assert.equal(toHexString(poseidon.hashChildren(inputs.map(fromHex))), output);
    checked++;
  }
  assert.ok(checked >= 75);
});

test("the mimcsponge hasher matches every circomlibjs mimcsponge vector with 2..16 inputs", () => {
  let checked = 0;
  for (const { inputs, output } of vectors("typescript.json").mimcsponge) {
    if (inputs.length < 2) continue;
    assert.equal(toHexString(mimcsponge.hashChildren(inputs.map(fromHex))), output);
    checked++;
  }
  assert.ok(checked >= 75);
});

test("every valid membership proof decodes from both encodings, re-encodes and verifies", () => {
  assert.ok(proofs.membership.length >= 392);
  for (const entry of proofs.membership) {
    const context = `${entry.hash} N=${entry.arity} leaf ${entry.index} of ${entry.size}`;
    const binary = fromHex(entry.binary);
    const fromBinary = decodeMembership(binary);
    const fromText = decodeMembership(JSON.stringify(entry.json));
    const fromObject = decodeMembership(entry.json);
    const fromJsonBytes = decodeMembership(new TextEncoder().encode(JSON.stringify(entry.json, null, 2)));
    for (const decoded of [fromText, fromObject, fromJsonBytes]) assert.deepEqual(decoded, fromBinary, context);
    assert.equal(toHexString(fromBinary.toBytes()), entry.binary, context);
    assert.deepEqual(decodeMembership(fromBinary.toJson()), fromBinary, context);
    assert.equal(fromBinary.index, BigInt(entry.index));
    assert.equal(toHexString(fromBinary.leaf), entry.leaf);
    const head = { size: entry.size, root: entry.root };
    verifyMembership(binary, tree(entry.arity, entry.hash), head);
    verifyMembership(fromText, tree(entry.arity, entry.hash), { size: BigInt(entry.size), root: fromHex(entry.root) });
  }
});

test("every valid consistency proof decodes from both encodings, re-encodes and verifies", () => {
  assert.ok(proofs.consistency.length >= 256);
  for (const entry of proofs.consistency) {
    const context = `${entry.hash} N=${entry.arity} ${entry.old_size} -> ${entry.new_size}`;
    const binary = fromHex(entry.binary);
    const fromBinary = decodeConsistency(binary);
    assert.deepEqual(decodeConsistency(JSON.stringify(entry.json)), fromBinary, context);
    assert.deepEqual(decodeConsistency(entry.json), fromBinary, context);
    assert.equal(toHexString(fromBinary.toBytes()), entry.binary, context);
    assert.deepEqual(decodeConsistency(fromBinary.toJson()), fromBinary, context);
    verifyConsistency(
      binary,
      tree(entry.arity, entry.hash),
      { size: entry.old_size, root: entry.old_root },
      { size: entry.new_size, root: entry.new_root },
    );
  }
});

test("rolling a vector proof forward gives the vector proof at the new size", () => {
  const byKey = new Map(proofs.membership.map((m) => [`${m.hash}/${m.arity}/${m.index}/${m.size}`, m]));
  let rolled = 0;
  for (const link of proofs.consistency) {
    if (link.old_size === 0) continue;
    for (const old of proofs.membership) {
      if (old.hash !== link.hash || old.arity !== link.arity || old.size !== link.old_size) continue;
      const result = rollForward(
        fromHex(old.binary),
        fromHex(link.binary),
        tree(link.arity, link.hash),
        { size: link.old_size, root: link.old_root },
        { size: link.new_size, root: link.new_root },
      );
      const expected = byKey.get(`${old.hash}/${old.arity}/${old.index}/${link.new_size}`);
      if (expected !== undefined) {
        assert.equal(toHexString(result.toBytes()), expected.binary);
        rolled++;
      }
    }
  }
  assert.ok(rolled > 100, `only ${rolled} roll-forwards had a vector to compare with`);
});

function check(kind, hash, arity, trusted, input) {
  const t = tree(arity, hash);
  if (kind === "membership") {
    const proof = decodeMembership(input);
    verifyMembership(proof, t, trusted);
  } else {
    const proof = decodeConsistency(input);
    verifyConsistency(proof, t, { size: trusted.old_size, root: trusted.old_root }, { size: trusted.new_size, root: trusted.new_root });
  }
}

test("every named invalid proof is rejected at the same stage, for the same reason, as cairn", () => {
  assert.ok(invalid.cases.length >= 78);
  for (const entry of invalid.cases) {
    const input = entry.binary !== undefined ? fromHex(entry.binary) : JSON.stringify(entry.json);
    rejects(() => check(entry.kind, entry.hash, entry.arity, entry.trusted, input), entry.error, entry.reason, entry.name);
    if (entry.json !== undefined && entry.error === "decode") {
      // The same document as a parsed object, and as pretty-printed bytes.
      rejects(() => check(entry.kind, entry.hash, entry.arity, entry.trusted, entry.json), "decode", entry.reason, `${entry.name} (object)`);
      const bytes = new TextEncoder().encode(JSON.stringify(entry.json, null, 1));
      rejects(() => check(entry.kind, entry.hash, entry.arity, entry.trusted, bytes), "decode", entry.reason, `${entry.name} (bytes)`);
    }
  }
});

test("every bit flip of the bit-flip groups is rejected at the same stage as cairn", () => {
  let flips = 0;
  for (const group of invalid.bit_flips) {
    const valid = fromHex(group.binary);
    check(group.kind, group.hash, group.arity, group.trusted, valid);
    const stages = new Map();
    for (const at of group.decode) stages.set(at, "decode");
    for (const at of group.verify) stages.set(at, "verify");
    assert.equal(stages.size, valid.length * 8);
    for (let byte = 0; byte < valid.length; byte++) {
      for (let bit = 0; bit < 8; bit++) {
        const flipped = valid.slice();
        flipped[byte] ^= 1 << bit;
        rejects(() => check(group.kind, group.hash, group.arity, group.trusted, flipped), stages.get(`${byte}.${bit}`), undefined, `${group.kind} bit-flip@${byte}.${bit}`);
        flips++;
      }
    }
  }
  assert.equal(flips, 4320);
});

test("a Poseidon hasher with only the widths an arity needs verifies that arity and says what is missing", () => {
  const small = { arity: 2, hash: poseidonHasher({ 2: poseidon2 }) };
  let verified = 0;
  for (const entry of proofs.membership.filter((m) => m.hash === "poseidon" && m.arity === 2)) {
    verifyMembership(fromHex(entry.binary), small, { size: entry.size, root: entry.root });
    verified++;
  }
  assert.ok(verified > 5);
  const entry = proofs.membership.find((m) => m.hash === "poseidon" && m.arity === 3 && m.size > 3);
  const error = rejects(() => verifyMembership(fromHex(entry.binary), { arity: 3, hash: small.hash }, { size: entry.size, root: entry.root }), "input", "InvalidArgument", "missing width");
  assert.match(error.message, /poseidon3/);
});
