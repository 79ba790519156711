// Tornado Cash's deposit tree (MiMCSponge, depth 20, zero keccak256("tornado")
// mod p) in the EVM against circomlibjs + @zk-kit/imt and, when it has the
// kind, cairn. See test/tornado.test.mjs for what is checked.
import assert from "node:assert/strict";
import { IMT } from "@zk-kit/imt";
import { buildMimcSponge, mimcSpongecontract } from "circomlibjs";
import { keccak256, toUtf8Bytes } from "ethers";
import { CairnTree } from "../cairn.mjs";
import { Chain } from "../chain.mjs";
import { P, batches, random } from "../random.mjs";
import { Tally } from "../run.mjs";

export const DEPTH = 20;
/** Tornado's zero value, derived here as its contract's comment says it is: keccak256("tornado") mod p. */
export const ZERO = BigInt(keccak256(toUtf8Bytes("tornado"))) % P;
/** Roots Tornado's contract remembers (its ROOT_HISTORY_SIZE): a withdrawal may prove against any of them. */
const HISTORY = 30;

export async function agree({ seed, leaves: count, withCairn }, note) {
  const rng = random(seed);
  const leaves = rng.leaves(count);
  const chain = await Chain.create();
  // The hasher Tornado deploys: circomlib's MiMCSponge contract, generated from the seed "mimcsponge" with 220 rounds.
  const hasher = await chain.deployCode("MiMCSponge", mimcSpongecontract.createCode("mimcsponge", 220), mimcSpongecontract.abi);
  const contract = await chain.deploy("TornadoTreeHarness", [DEPTH, hasher.address.toString()]);
  const mimc = await buildMimcSponge();
  const hash = ([left, right]) => mimc.F.toObject(mimc.multiHash([left, right]));
  const library = new IMT(hash, DEPTH, ZERO, 2);
  const cairn = withCairn ? CairnTree.create({ kind: "imt", arity: 2, hash: "mimcsponge", depth: DEPTH, zero: ZERO }) : null;
  const tally = new Tally();
  const start = performance.now();
  try {
    assert.equal(BigInt(await contract.read("ZERO_VALUE")), ZERO, "the contract's ZERO_VALUE is keccak256(\"tornado\") mod p");
    assert.equal(BigInt(await contract.read("zeros", 0)), ZERO, "the contract's zeros(0)");
    for (const level of [1, DEPTH - 1, DEPTH]) {
      assert.equal(BigInt(await contract.read("zeros", level)), BigInt(library.zeroes[level] ?? new IMT(hash, DEPTH + 1, ZERO, 2).zeroes[level]), `the contract's zeros(${level})`);
    }
    // Before the first deposit the contract holds zeros(levels - 1), the
    // empty root of a tree one level shorter, not the depth-20 empty root
    // (zeros(20)) that @zk-kit/imt and cairn give: no proof can be made
    // against an empty tree, so only this one root differs.
    assert.equal(BigInt(await contract.read("getLastRoot")), BigInt(await contract.read("zeros", DEPTH - 1)), "the contract's root before any deposit");
    if (cairn) assert.equal(cairn.root().root, BigInt(library.root), "cairn's empty root");

    const roots = [BigInt(library.root)]; // by size
    let size = 0;
    for (const batch of batches(rng, leaves, 16)) {
      for (const leaf of batch) {
        await tally.time("insert", 1, async () => (await contract.send("insert", "0x" + leaf.toString(16).padStart(64, "0"))).gas);
        library.insert(leaf);
        roots.push(BigInt(library.root));
      }
      if (cairn) await tally.time("cairn ingest", batch.length, async () => assert.equal(cairn.ingest(batch).count, batch.length));
      size += batch.length;

      const onChain = BigInt(await contract.read("getLastRoot"));
      assert.equal(await contract.read("nextIndex"), BigInt(size));
      assert.equal(roots[size], onChain, `@zk-kit/imt with circomlibjs's MiMCSponge: root after ${size} leaves`);
      if (cairn) assert.equal(cairn.root().root, onChain, `cairn's root after ${size} leaves`);

      // The root history: the last HISTORY roots are known, the one before them is not.
      for (const at of [size, Math.max(1, size - HISTORY + 1), rng.int(Math.max(1, size - HISTORY + 1), size)]) {
        const root = cairn ? cairn.rootAt(at) : roots[at];
        assert.equal(root, roots[at], `cairn's root of the first ${at} leaves`);
        assert.equal(await contract.read("isKnownRoot", hex(root)), true, `root of the first ${at} of ${size} leaves: unknown to the contract`);
      }
      if (size - HISTORY >= 1) {
        const old = cairn ? cairn.rootAt(size - HISTORY) : roots[size - HISTORY];
        assert.equal(await contract.read("isKnownRoot", hex(old)), false, `root of the first ${size - HISTORY} of ${size} leaves: still known`);
      }
    }
    note(`Tornado Cash tree (MiMCSponge, depth ${DEPTH}): ${count} leaves in ${((performance.now() - start) / 1000).toFixed(1)} s${cairn ? "" : " (contract and @zk-kit/imt only)"}: ${tally.summary()}`);
  } finally {
    cairn?.remove();
  }
}

const hex = (value) => "0x" + value.toString(16).padStart(64, "0");
