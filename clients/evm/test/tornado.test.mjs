// Tornado Cash's deposit tree in the EVM: MerkleTreeWithHistory.sol as the
// zk-merkle-tree package publishes it (tornado-core's contract ported to
// Solidity 0.8: the same zero value keccak256("tornado") mod p, zero
// table, MiMCSponge hashing, insert and 30-root history), deployed at
// Tornado's depth 20 with circomlibjs's generated MiMCSponge contract as its
// hasher, receives the same seeded random BN254 leaves as @zk-kit/imt (with
// circomlibjs's MiMCSponge) and a cairn database made by `cairn init --kind
// imt --depth 20 --zero <that value> --hash mimcsponge`; after every batch
// the roots must be equal, and cairn's roots of the last 30 sizes must be
// ones the contract accepts (isKnownRoot) while the one before must not.
//
// Until this cairn has `--kind`, the contract is compared with @zk-kit/imt
// alone (test/imt.test.mjs reports the cairn comparison as skipped).
import { test } from "node:test";
import { hasImtKind } from "../lib/cairn.mjs";
import { seed } from "../lib/random.mjs";
import { inChild } from "../lib/child.mjs";

// An insert costs about a million gas (40 MiMCSponge calls), five times a
// LeanIMT insert: the Tornado tree gets its own, smaller knob.
const LEAVES = Number(process.env.CAIRN_EVM_TORNADO_LEAVES ?? 64);
const withCairn = hasImtKind();

test(`Tornado Cash tree (MiMCSponge, depth 20): the contract${withCairn ? ", @zk-kit/imt and cairn" : " and @zk-kit/imt"} agree on ${LEAVES} leaves (seed ${seed})`, async (t) => {
  for (const line of await inChild("tornado", "agree", { seed: seed + 7, leaves: LEAVES, withCairn })) t.diagnostic(line);
});
