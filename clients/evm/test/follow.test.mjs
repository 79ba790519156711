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
// and both roots named. One Semaphore group of two is followed with
// --where groupId=1 while both grow. Finality from the node's `finalized`
// tag (Hardhat's is its head) finalizes what it ingests, and a revert
// below it stops the follower (exit 4). A node restarted under the
// follower with another chain (hardhat_reset on a node of its own: block
// 0 again, a new history at the same URL) stops it with exit 4, naming the
// final block and both hashes.
//
// CAIRN_FOLLOW_STEPS sets the number of random steps (default 12);
// CAIRN_EVM_SEED repeats a run.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

const MEMBER_ADDED = "MemberAdded(uint256 indexed groupId, uint256 index, uint256 identityCommitment, uint256 merkleTreeRoot)";
const MEMBERS_ADDED = "MembersAdded(uint256 indexed groupId, uint256 startIndex, uint256[] identityCommitments, uint256 merkleTreeRoot)";

test(`one Semaphore group of two (--where groupId=1) followed through reorgs and kill -9 (seed ${seed})`, { skip }, async () => {
  const semaphore = await node.deploy("semaphore-contracts-v4/Semaphore.sol:Semaphore", ["0x0000000000000000000000000000000000000001"]);
  await semaphore.send("createGroup(address)", node.from);
  await semaphore.send("createGroup(address)", node.from);
  await node.mine();
  const [other, followed] = [0n, 1n];
  const dir = join(work, "semaphore-group");
  cairn("init", dir, "--arity", "2", "--hash", "poseidon", "--finality", "explicit");
  const args = followArgs(semaphore, [
    "--event", MEMBER_ADDED, "--field", "identityCommitment",
    "--event", MEMBERS_ADDED, "--field", "identityCommitments",
    "--where", `groupId=${followed}`,
    "--root-call", "getMerkleTreeRoot(uint256 groupId)", "--root-arg", String(followed),
  ]);
  // Both groups grow in the same blocks; only the followed one's members count.
  const insert = async (count, rng) => {
    for (const group of [other, followed]) {
      const n = group === followed ? count : rng.int(0, 2);
      if (n === 0) continue;
      if (n === 1 || rng.int(0, 1) === 0) {
        for (let i = 0; i < n; i += 1) await semaphore.send("addMember", group, rng.field());
      } else {
        await semaphore.send("addMembers", group, Array.from({ length: n }, () => rng.field()));
      }
    }
  };
  const root = async (block) => BigInt(await semaphore.read("getMerkleTreeRoot", [followed], block));
  await walk("Semaphore v4, group 1 of 2", dir, semaphore, args, insert, root);
  const size = Number(await semaphore.read("getMerkleTreeSize", [followed]));
  const { heads } = JSON.parse(cairn("heads", dir, "--json", "--limit", "1000000"));
  assert.equal(heads.at(-1).size, size, "the database holds the followed group's members only");
});

test("finality from the node's finalized tag: what is ingested is finalized, and a revert below it stops the follower (exit 4)", { skip }, async () => {
  const contract = await tornado();
  const snapshot = await node.snapshot();
  for (let i = 1n; i <= 3n; i += 1n) await contract.send("deposit", hex32(i));
  const block = await node.mine();
  const dir = join(work, "finalized-tag");
  cairn("init", dir, "--kind", "imt", "--depth", "20", "--zero", TORNADO_ZERO, "--arity", "2", "--hash", "mimcsponge", "--finality", "explicit");
  const args = ["--rpc", node.url, "--contract", contract.address, "--from-block", String(contract.block), "--finality-tag", "finalized", "--poll-ms", "20",
    "--event", DEPOSIT, "--field", "commitment", "--root-call", "getLastRoot()"];
  const first = new Follower(dir, [...args, "--exit-at-head"]);
  const { code } = await first.exit;
  assert.equal(code, 0, first.stderr);
  assert.ok(first.lines.some((line) => line.event === "ingested" && line.to >= block), JSON.stringify(first.lines));
  const heads = JSON.parse(cairn("heads", dir, "--json"));
  assert.equal(heads.finalized_size, 3, JSON.stringify(heads));
  // Another history from before the deposits: below what is final.
  await node.revert(snapshot);
  await contract.send("deposit", hex32(7n));
  await node.mine();
  await node.mineEmpty(3);
  const second = new Follower(dir, [...args, "--exit-at-head"]);
  const stopped = await second.exit;
  assert.equal(stopped.code, 4, second.stderr);
  assert.match(second.stderr, /^error: the chain reorganised below final block \d+: block \d+ was 0x[0-9a-f]{64}, the node now has 0x[0-9a-f]{64} \(a node restarted/);
  assert.equal(JSON.parse(cairn("heads", dir, "--json")).finalized_size, 3, "nothing final was touched");
});

test("a node restarted under the follower with another chain stops it (exit 4), naming the final block and both hashes", { skip }, async () => {
  const own = await Node.start();
  try {
    const hasher = await own.deployCode("MiMCSponge", mimcSpongecontract.createCode("mimcsponge", 220), mimcSpongecontract.abi);
    const contract = await own.deploy("TornadoDepositHarness", [20, hasher.address]);
    for (let i = 1n; i <= 4n; i += 1n) {
      await contract.send("deposit", hex32(i));
      await own.mine();
    }
    await own.mineEmpty(CONFIRMATIONS + 2);
    const target = await own.blockNumber();
    const dir = join(work, "restarted");
    cairn("init", dir, "--kind", "imt", "--depth", "20", "--zero", TORNADO_ZERO, "--arity", "2", "--hash", "mimcsponge", "--finality", "explicit");
    const follower = new Follower(dir, ["--rpc", own.url, "--contract", contract.address, "--from-block", String(contract.block), "--confirmations", String(CONFIRMATIONS),
      "--poll-ms", "20", "--event", DEPOSIT, "--field", "commitment", "--root-call", "getLastRoot()"]);
    await follower.caughtUp(target);
    // Every block was there at its first poll: final up to K below that head.
    const finalBlock = target - CONFIRMATIONS;
    const stored = (await own.block(finalBlock)).hash;
    const before = cairn("heads", dir);
    // Block 0 again, another history: the follower's final block is gone.
    await own.rpc("hardhat_reset", []);
    const { code } = await follower.exit;
    assert.equal(code, 4, follower.stderr);
    assert.match(follower.stderr, new RegExp(`^error: the chain reorganised below final block ${finalBlock}: block ${finalBlock} was ${stored}, the node now has (no block|0x[0-9a-f]{64}) \\(a node restarted with another chain`));
    assert.equal(cairn("heads", dir), before, "nothing was rolled back");
  } finally {
    await own.stop();
  }
});

test(`two contracts into two trees of one database (--config): Tornado's deposits and a Semaphore group, one block across both, through a reorg and kill -9 (seed ${seed})`, { skip }, async () => {
  const rng = random(seed + 7);
  const tornadoContract = await tornado();
  const semaphore = await node.deploy("semaphore-contracts-v4/Semaphore.sol:Semaphore", ["0x0000000000000000000000000000000000000001"]);
  await semaphore.send("createGroup(address)", node.from);
  await node.mine();
  const dir = join(work, "two-trees");
  cairn("init", dir);
  cairn("tree", "add", dir, "deposits", "--kind", "imt", "--depth", "20", "--zero", TORNADO_ZERO, "--arity", "2", "--hash", "mimcsponge");
  cairn("tree", "add", dir, "members", "--arity", "2", "--hash", "poseidon");
  const config = join(work, "two-trees.json");
  writeFileSync(config, JSON.stringify({
    from_block: Math.min(tornadoContract.block, semaphore.block),
    sources: [
      { tree: "deposits", contract: tornadoContract.address, events: [{ signature: DEPOSIT, field: "commitment" }], root_call: "getLastRoot()" },
      {
        tree: "members", contract: semaphore.address,
        events: [{ signature: MEMBER_ADDED, field: "identityCommitment" }, { signature: MEMBERS_ADDED, field: "identityCommitments" }],
        where: { groupId: "0" }, root_call: "getMerkleTreeRoot(uint256)", root_args: ["0"],
      },
    ],
  }));
  const args = ["--rpc", node.url, "--config", config, "--confirmations", String(CONFIRMATIONS), "--max-range", "16", "--poll-ms", "20"];
  // Blocks with values for both contracts, for one, or none.
  const mineBlocks = async (count) => {
    for (let b = 0; b < count; b += 1) {
      const deposits = rng.int(0, 1);
      for (let i = 0; i < deposits; i += 1) await tornadoContract.send("deposit", hex32(rng.field()));
      const members = rng.int(0, 1);
      for (let i = 0; i < members; i += 1) await semaphore.send("addMember", 0n, rng.field());
      await node.mine();
    }
  };
  const roots = {
    deposits: async (block) => BigInt(await tornadoContract.read("getLastRoot", [], block)),
    members: async (block) => BigInt(await semaphore.read("getMerkleTreeRoot", [0n], block)),
  };
  // Every block held is the node's, each tree's root at it the contract's.
  const check = async () => {
    const { blocks } = JSON.parse(cairn("heads", dir, "--json"));
    assert.ok(blocks.length > 0);
    for (const { block, block_hash: hash, trees } of blocks) {
      assert.equal(hash, (await node.block(block)).hash, `block ${block} is the node's`);
      for (const { tree, size, root } of trees) {
        if (size > 0) assert.equal(BigInt(root), await roots[tree](block), `tree ${tree} at block ${block}`);
      }
    }
    for (const tree of ["deposits", "members"]) {
      const { root } = JSON.parse(cairn("root", dir, "--tree", tree, "--json"));
      assert.equal(BigInt(root), await roots[tree]("latest"), `tree ${tree} now`);
    }
    return blocks.length;
  };
  const runToHead = async () => {
    const follower = new Follower(dir, [...args, "--exit-at-head"]);
    const { code } = await follower.exit;
    assert.equal(code, 0, follower.stderr);
    return follower.lines;
  };
  await mineBlocks(6);
  const first = await runToHead();
  assert.ok(first.some((line) => line.event === "ingested" && line.trees && "deposits" in line.trees && "members" in line.trees), JSON.stringify(first.slice(-2)));
  await check();
  // A reorganisation of both trees at once: one rollback.
  const snapshot = await node.snapshot();
  // A block with values above the snapshot: held, so the revert orphans it.
  await tornadoContract.send("deposit", hex32(rng.field()));
  await mineBlocks(2);
  await runToHead();
  await node.revert(snapshot);
  await mineBlocks(3);
  const reorged = await runToHead();
  assert.equal(reorged.filter((line) => line.event === "reorg").length, 1, JSON.stringify(reorged));
  await check();
  // kill -9 while it catches up, then again from the database alone.
  await mineBlocks(6);
  const target = await node.blockNumber();
  const running = new Follower(dir, args);
  await new Promise((resolve) => setTimeout(resolve, rng.int(20, 200)));
  await running.stop();
  const resumed = await runToHead();
  assert.ok(resumed.some((line) => (line.event === "ingested" && line.to >= target) || (line.event === "resumed" && line.next_block > target)), JSON.stringify(resumed));
  const held = await check();
  console.log(`two contracts into two trees, seed ${seed}: ${held} blocks held and checked`);
});
