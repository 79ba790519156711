// `cairn follow` against a real node: Hardhat's JSON-RPC node, started on
// 127.0.0.1 by this test, running the protocols' contracts (Tornado Cash's
// deposit tree with its Deposit event; Semaphore v4, whose groups are
// zk-kit's LeanIMT, with MemberAdded and MembersAdded). Random steps mine
// blocks of inserts and empty blocks, reorganise the chain (evm_snapshot,
// evm_revert, then a different branch), and kill -9 the follower at random
// points before starting it again on the same database. After every step,
// once the follower has caught up, every tagged head of the database must
// be a block of the node's chain whose contract root is the head's root.
// A database built with the wrong hash must stop the follower with exit 1
// and both roots named.
//
// CAIRN_FOLLOW_STEPS sets the number of random steps (default 12);
// CAIRN_EVM_SEED repeats a run.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { mimcSpongecontract } from "circomlibjs";
import { cairnBinary } from "../lib/cairn.mjs";
import { Follower, cairn, checkAgainstChain } from "../lib/follower.mjs";
import { Node } from "../lib/node.mjs";
import { P, random, seed } from "../lib/random.mjs";

const STEPS = Number(process.env.CAIRN_FOLLOW_STEPS ?? 12);
if (!Number.isSafeInteger(STEPS) || STEPS < 1) throw new Error(`CAIRN_FOLLOW_STEPS=${process.env.CAIRN_FOLLOW_STEPS}: want a whole number of steps, at least 1`);
// Reorganisations stay shallower than the confirmations the follower waits
// for; blocks older than that are read in ranges and finalized.
const CONFIRMATIONS = 8;
const MAX_REORG = 6;
const TORNADO_ZERO = "0x2fe54c60d3acabf3343a35b6eba15db4821b340f76e741e2249685ed4899af6c";
const DEPOSIT = "Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)";

const skip = cairnBinary() === null ? "no cairn binary (cargo build --release -p cairn-cli)" : false;
let node;
const work = mkdtempSync(join(tmpdir(), "cairn-follow-"));

before(async () => {
  if (!skip) node = await Node.start();
});

after(async () => {
  await node?.stop();
  rmSync(work, { recursive: true, force: true });
});

const hex32 = (value) => "0x" + value.toString(16).padStart(64, "0");

async function tornado() {
  const hasher = await node.deployCode("MiMCSponge", mimcSpongecontract.createCode("mimcsponge", 220), mimcSpongecontract.abi);
  return node.deploy("TornadoDepositHarness", [20, hasher.address]);
}

function followArgs(contract, extra = []) {
  return ["--rpc", node.url, "--contract", contract.address, "--from-block", String(contract.block), "--confirmations", String(CONFIRMATIONS), "--max-range", "16", "--poll-ms", "20", ...extra];
}

/**
 * Random steps on the chain under a running follower; `insert(n)` sends n
 * inserts (mined by the next block), `root(block)` reads the contract's root.
 */
async function walk(name, dir, contract, args, insert, root) {
  const rng = random(seed);
  const follower = new Follower(dir, args);
  let snapshot = null; // { id, block }
  const tally = { blocks: 0, inserts: 0, reorgs: 0, deepest: 0, kills: 0, heads: 0 };
  try {
    for (let step = 0; step < STEPS; step += 1) {
      const head = await node.blockNumber();
      if (snapshot === null || head - snapshot.block > MAX_REORG) snapshot = { id: await node.snapshot(), block: head };
      const from = follower.lines.length;
      // Step 1 always reorganises and step 2 always kills: every run has both.
      const roll = step === 1 ? 0 : rng.int(0, 9);
      let reorganised = false;
      if (roll <= 1 && head > snapshot.block) {
        // A different branch from the snapshot on, longer or shorter.
        await node.revert(snapshot.id);
        tally.reorgs += 1;
        tally.deepest = Math.max(tally.deepest, head - snapshot.block);
        snapshot = null;
        reorganised = true;
        const blocks = rng.int(1, MAX_REORG);
        for (let b = 0; b < blocks; b += 1) {
          const count = b === 0 ? rng.int(1, 3) : rng.int(0, 3);
          await insert(count, rng);
          tally.inserts += count;
          await node.mine();
        }
        tally.blocks += blocks;
      } else if (roll === 2) {
        const blocks = rng.int(1, 12);
        await node.mineEmpty(blocks);
        tally.blocks += blocks;
      } else {
        const blocks = rng.int(1, 4);
        for (let b = 0; b < blocks; b += 1) {
          const count = rng.int(0, 4);
          await insert(count, rng);
          tally.inserts += count;
          await node.mine();
        }
        tally.blocks += blocks;
      }
      const target = await node.blockNumber();
      if (step === 2 || rng.int(0, 3) === 0) {
        // kill -9 at a random point of its catching up, then again from the database.
        await new Promise((resolve) => setTimeout(resolve, rng.int(0, 150)));
        await follower.crash();
        tally.kills += 1;
        await follower.caughtUp(target);
      } else {
        const start = reorganised ? (await follower.waitFor((line) => line.event === "reorg", from, 60, "the reorganisation seen")) + 1 : from;
        await follower.caughtUp(target, start);
      }
      const heads = await checkAgainstChain(node, dir, root);
      tally.heads = heads.length;
    }
  } finally {
    await follower.stop();
  }
  console.log(`${name}, seed ${seed}: ${STEPS} steps, ${tally.blocks} blocks mined, ${tally.inserts} inserts, ${tally.reorgs} reorgs (deepest ${tally.deepest}), ${tally.kills} kill -9, ${follower.starts} starts, ${tally.heads} tagged heads checked`);
}

test(`Tornado's deposits followed through reorgs and kill -9 (seed ${seed})`, { skip }, async () => {
  const contract = await tornado();
  const dir = join(work, "tornado");
  cairn("init", dir, "--kind", "imt", "--depth", "20", "--zero", TORNADO_ZERO, "--arity", "2", "--hash", "mimcsponge", "--finality", "explicit");
  const args = followArgs(contract, ["--event", DEPOSIT, "--field", "commitment", "--root-call", "getLastRoot()"]);
  const insert = async (count, rng) => {
    for (let i = 0; i < count; i += 1) await contract.send("deposit", hex32(rng.field()));
  };
  const root = async (block) => BigInt(await contract.read("getLastRoot", [], block));
  await walk("Tornado", dir, contract, args, insert, root);
});

test(`Semaphore v4's members (addMember and addMembers) followed through reorgs and kill -9 (seed ${seed})`, { skip }, async () => {
  const semaphore = await node.deploy("semaphore-contracts-v4/Semaphore.sol:Semaphore", ["0x0000000000000000000000000000000000000001"]);
  await semaphore.send("createGroup(address)", node.from);
  await node.mine();
  const groupId = 0n;
  const dir = join(work, "semaphore");
  cairn("init", dir, "--arity", "2", "--hash", "poseidon", "--finality", "explicit");
  const args = followArgs(semaphore, [
    "--event", "MemberAdded(uint256 indexed groupId, uint256 index, uint256 identityCommitment, uint256 merkleTreeRoot)", "--field", "identityCommitment",
    "--event", "MembersAdded(uint256 indexed groupId, uint256 startIndex, uint256[] identityCommitments, uint256 merkleTreeRoot)", "--field", "identityCommitments",
    "--root-call", "getMerkleTreeRoot(uint256 groupId)", "--root-arg", String(groupId),
  ]);
  const insert = async (count, rng) => {
    if (count === 0) return;
    if (count === 1 || rng.int(0, 1) === 0) {
      for (let i = 0; i < count; i += 1) await semaphore.send("addMember", groupId, rng.field());
    } else {
      await semaphore.send("addMembers", groupId, Array.from({ length: count }, () => rng.field()));
    }
  };
  const root = async (block) => BigInt(await semaphore.read("getMerkleTreeRoot", [groupId], block));
  await walk("Semaphore v4", dir, semaphore, args, insert, root);
});

test("a database whose root is not the contract's stops the follower, naming the block and both roots", { skip }, async () => {
  const contract = await tornado();
  const commitment = hex32(P - 1n);
  await contract.send("deposit", commitment);
  const block = await node.mine();
  // The contract hashes with MiMCSponge; this database with Poseidon.
  const dir = join(work, "wrong-hash");
  cairn("init", dir, "--kind", "imt", "--depth", "20", "--zero", TORNADO_ZERO, "--arity", "2", "--hash", "poseidon", "--finality", "explicit");
  const follower = new Follower(dir, [...followArgs(contract, ["--event", DEPOSIT, "--field", "commitment", "--root-call", "getLastRoot()"]), "--exit-at-head"]);
  const { code } = await follower.exit;
  assert.equal(code, 1, follower.stderr);
  const contractRoot = BigInt(await contract.read("getLastRoot", [], block)).toString(16).padStart(64, "0");
  assert.match(follower.stderr, new RegExp(`^error: root mismatch at block ${block}: the contract's getLastRoot\\(\\) is 0x${contractRoot}, cairn's root of 1 leaves is 0x[0-9a-f]{64}\\n$`));
});
