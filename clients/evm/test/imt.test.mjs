// Fixed-depth IMTs in the EVM: the public BinaryIMT and QuinaryIMT libraries
// of @zk-kit/imt.sol, compiled with solc and linked to poseidon-solidity's
// PoseidonT3 and PoseidonT6, receive the same seeded random BN254 leaves as
// @zk-kit/imt (npm) and a cairn database made by `cairn init --kind imt`;
// after every batch the three roots must be equal (the empty root too),
// proofs from `cairn prove --proof-format zkkit` must pass the contract's
// own verify while a changed sibling or path index must not, and a full
// tree must refuse one more leaf on all three.
//
// Until this cairn has `--kind` (`cairn init --help`), the contract is
// compared with @zk-kit/imt alone and the cairn comparison is reported as
// skipped; CAIRN_EVM_REQUIRE_IMT=1 makes that a failure instead.
import assert from "node:assert/strict";
import { test } from "node:test";
import { binary, hasImtKind } from "../lib/cairn.mjs";
import { random, seed } from "../lib/random.mjs";
import { LEAVES } from "../lib/run.mjs";
import { inChild } from "../lib/child.mjs";

const withCairn = hasImtKind();
const required = process.env.CAIRN_EVM_REQUIRE_IMT === "1";
const rng = random(seed);

// The shapes the trees are checked at: zero 0 (what zk-kit's built-in zero
// table starts from) at a depth the run stays inside, and small trees with a random
// non-zero zero value that the run fills.
const SHAPES = [
  { arity: 2, depth: 10, zero: 0n, leaves: LEAVES },
  { arity: 5, depth: 6, zero: 0n, leaves: LEAVES },
  { arity: 2, depth: 4, zero: rng.field(), leaves: 16 },
  { arity: 5, depth: 2, zero: rng.field(), leaves: 25 },
];

for (const shape of SHAPES) {
  const name = `IMT N=${shape.arity} depth ${shape.depth} zero ${shape.zero === 0n ? 0 : "random"}, Poseidon: @zk-kit/imt.sol${withCairn ? ", @zk-kit/imt and cairn" : " and @zk-kit/imt"} agree (seed ${seed})`;
  test(name, async (t) => {
    const args = { ...shape, zero: shape.zero.toString(), seed: seed + shape.arity * 100 + shape.depth, withCairn };
    for (const line of await inChild("imt", "agree", args)) t.diagnostic(line);
  });
}

test(`BinaryIMT's default zeroes equal the Poseidon zero chain of 0 at depths 1 to 32 (seed ${seed})`, async (t) => {
  for (const line of await inChild("imt", "defaultZeroes", { seed, withCairn })) t.diagnostic(line);
});

test("cairn's --kind imt is compared with the contracts", { skip: !withCairn && !required && `${binary ?? "no cairn binary"} has no --kind imt (cairn init --help): the contracts were compared with @zk-kit/imt only` }, () => {
  assert.ok(withCairn, `CAIRN_EVM_REQUIRE_IMT=1 and ${binary} has no --kind in cairn init --help`);
});
