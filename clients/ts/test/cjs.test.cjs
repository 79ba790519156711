// The CommonJS build: require() of the package and of a subpath works and
// verifies a vector proof (the ESM tests cover the rest).
const assert = require("node:assert/strict");
const { readFileSync } = require("node:fs");
const { join } = require("node:path");
const { test } = require("node:test");
const { verifyMembership, CairnError } = require("cairn-verify/core");
const { blake3 } = require("cairn-verify/blake3");
const everything = require("cairn-verify");

test("require() loads the CommonJS build and verifies a proof", () => {
  const proofs = JSON.parse(readFileSync(join(__dirname, "../../../test-vectors/proofs.json"), "utf8"));
  const entry = proofs.membership.find((m) => m.hash === "blake3" && m.size > 10);
  const bytes = Uint8Array.from(Buffer.from(entry.binary.slice(2), "hex"));
  const proof = verifyMembership(bytes, { arity: entry.arity, hash: blake3 }, { size: entry.size, root: entry.root });
  assert.equal(proof.index, BigInt(entry.index));
  assert.throws(() => verifyMembership(bytes.slice(1), { arity: entry.arity, hash: blake3 }, { size: entry.size, root: entry.root }), CairnError);
  assert.equal(typeof everything.CairnClient, "function");
  assert.equal(everything.hashers.poseidon.name, "poseidon");
  assert.equal(require("cairn-verify/checkpoint").verifyCheckpoint, everything.verifyCheckpoint);
});
