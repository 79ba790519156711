// `cairn follow`'s figures on a local Hardhat node (see docs/performance.md):
// catch-up of E events of a contract that only emits them (Leaf(uint256
// indexed index, uint256 value), E/L blocks of L events), read as final
// history; catch-up of N Semaphore v4 members (a LeanIMT with Poseidon,
// whose inserts cost the node far more to make: MembersAdded events of B
// members) with the root compared at every block, at each range's end, or
// not at all; and a reorganisation of depth D (D blocks of members
// replaced by D + 1 others) under a follower at the chain's head.
//
//   cargo build --release -p cairn-cli
//   cd clients/evm && npm ci
//   node bench/follow.mjs   # E=100000 L=200 N=3000 B=150 D=64
//   CAIRN_FOLLOW_BENCH_EVENTS=10000 CAIRN_FOLLOW_BENCH_MEMBERS=300 node bench/follow.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Follower, cairn } from "../lib/follower.mjs";
import { Node } from "../lib/node.mjs";
import { random } from "../lib/random.mjs";

const EVENTS_TOTAL = Number(process.env.CAIRN_FOLLOW_BENCH_EVENTS ?? 100_000);
const EVENTS_PER_BLOCK = Number(process.env.CAIRN_FOLLOW_BENCH_EVENTS_PER_BLOCK ?? 200);
const MEMBERS = Number(process.env.CAIRN_FOLLOW_BENCH_MEMBERS ?? 3000);
const BATCH = Number(process.env.CAIRN_FOLLOW_BENCH_BATCH ?? 150);
const PER_BLOCK = Number(process.env.CAIRN_FOLLOW_BENCH_TXS_PER_BLOCK ?? 10);
const DEPTH = Number(process.env.CAIRN_FOLLOW_BENCH_REORG ?? 64);
const rng = random(2026);
const work = mkdtempSync(join(tmpdir(), "cairn-follow-bench-"));
const node = await Node.start();
let start;
const seconds = (start) => (performance.now() - start) / 1000;

// Plain events: what reading and ingesting costs, the node's part apart.
{
  const emitter = await node.deploy("FollowEmitter");
  let start = performance.now();
  for (let sent = 0; sent < EVENTS_TOTAL; sent += EVENTS_PER_BLOCK) {
    await emitter.send("emitMany", Math.min(EVENTS_PER_BLOCK, EVENTS_TOTAL - sent));
    await node.mine();
  }
  console.log(`node: ${EVENTS_TOTAL} Leaf events in ${(await node.blockNumber()) - emitter.block} blocks, mined in ${seconds(start).toFixed(1)} s`);
  for (const range of [2000, 100]) {
    const dir = join(work, `emitter-${range}`);
    cairn("init", dir, "--arity", "2", "--hash", "poseidon", "--finality", "explicit");
    start = performance.now();
    const follower = new Follower(dir, ["--rpc", node.url, "--contract", emitter.address, "--from-block", String(emitter.block), "--confirmations", "0", "--exit-at-head", "--max-range", String(range), "--event", "Leaf(uint256 indexed index, uint256 value)", "--field", "value"]);
    const { code } = await follower.exit;
    const wall = seconds(start);
    if (code !== 0) throw new Error(`emitter: exit ${code}: ${follower.stderr}`);
    const stopped = follower.lines.at(-1);
    const size = JSON.parse(cairn("root", dir, "--json")).size;
    if (size !== EVENTS_TOTAL) throw new Error(`emitter: ${size} leaves, want ${EVENTS_TOTAL}`);
    const cairnSeconds = stopped.seconds - stopped.rpc_seconds;
    console.log(
      `catch-up of ${EVENTS_TOTAL} Leaf events, --max-range ${range}: ${stopped.seconds.toFixed(2)} s (${(EVENTS_TOTAL / stopped.seconds).toFixed(0)} events/s; wall ${wall.toFixed(2)} s with process start), ` +
        `${stopped.rpc_requests} requests, ${stopped.rpc_seconds.toFixed(2)} s waiting on the node, ${cairnSeconds.toFixed(2)} s in cairn (${(EVENTS_TOTAL / cairnSeconds).toFixed(0)} events/s)`,
    );
  }
}

const semaphore = await node.deploy("semaphore-contracts-v4/Semaphore.sol:Semaphore", ["0x0000000000000000000000000000000000000001"]);
await semaphore.send("createGroup(address)", node.from);
await node.mine();
const EVENTS = [
  "--event", "MemberAdded(uint256 indexed groupId, uint256 index, uint256 identityCommitment, uint256 merkleTreeRoot)", "--field", "identityCommitment",
  "--event", "MembersAdded(uint256 indexed groupId, uint256 startIndex, uint256[] identityCommitments, uint256 merkleTreeRoot)", "--field", "identityCommitments",
  "--root-call", "getMerkleTreeRoot(uint256)", "--root-arg", "0",
];

async function addMembers(count) {
  let sent = 0;
  while (sent < count) {
    for (let t = 0; t < PER_BLOCK && sent < count; t += 1) {
      const n = Math.min(BATCH, count - sent);
      await semaphore.send("addMembers", 0n, Array.from({ length: n }, () => rng.field()));
      sent += n;
    }
    await node.mine();
  }
}

start = performance.now();
await addMembers(MEMBERS);
const made = seconds(start);
const head = await node.blockNumber();
console.log(`node: ${MEMBERS} members in ${head - semaphore.block} blocks, mined in ${made.toFixed(1)} s`);

async function catchUp(name, extra) {
  const dir = join(work, name);
  cairn("init", dir, "--arity", "2", "--hash", "poseidon", "--finality", "explicit");
  start = performance.now();
  const follower = new Follower(dir, ["--rpc", node.url, "--contract", semaphore.address, "--from-block", String(semaphore.block), "--confirmations", "0", "--exit-at-head", ...EVENTS, ...extra]);
  const { code } = await follower.exit;
  const wall = seconds(start);
  if (code !== 0) throw new Error(`${name}: exit ${code}: ${follower.stderr}`);
  const stopped = follower.lines.at(-1);
  const size = JSON.parse(cairn("root", dir, "--json")).size;
  if (size !== MEMBERS) throw new Error(`${name}: ${size} leaves, want ${MEMBERS}`);
  const cairnSeconds = stopped.seconds - stopped.rpc_seconds;
  console.log(
    `catch-up ${name}: ${MEMBERS} events in ${stopped.seconds.toFixed(2)} s (${(MEMBERS / stopped.seconds).toFixed(0)} events/s; wall ${wall.toFixed(2)} s with process start), ` +
      `${stopped.rpc_requests} requests, ${stopped.rpc_seconds.toFixed(2)} s waiting on the node, ${cairnSeconds.toFixed(2)} s in cairn (${(MEMBERS / cairnSeconds).toFixed(0)} events/s)`,
  );
}

await catchUp("range-ends", ["--root-checks", "range-ends", "--max-range", "2000"]);
await catchUp("every-block", ["--root-checks", "every-block", "--max-range", "2000"]);
await catchUp("no-root-check", ["--max-range", "2000"].concat([]));

// A reorganisation of DEPTH blocks under a follower at the head.
const dir = join(work, "reorg");
cairn("init", dir, "--arity", "2", "--hash", "poseidon", "--finality", "explicit");
const snapshot = await node.snapshot();
const base = await node.blockNumber();
for (let b = 0; b < DEPTH; b += 1) {
  await semaphore.send("addMembers", 0n, Array.from({ length: 10 }, () => rng.field()));
  await node.mine();
}
const follower = new Follower(dir, ["--rpc", node.url, "--contract", semaphore.address, "--from-block", String(semaphore.block), "--confirmations", String(DEPTH + 16), "--poll-ms", "10", "--max-range", "2000", "--root-checks", "range-ends", ...EVENTS]);
await follower.caughtUp(base + DEPTH);
await node.revert(snapshot);
const from = follower.lines.length;
start = performance.now();
for (let b = 0; b <= DEPTH; b += 1) {
  await semaphore.send("addMembers", 0n, Array.from({ length: 10 }, () => rng.field()));
  await node.mine();
}
const mined = seconds(start);
const at = await follower.waitFor((line) => line.event === "reorg", from, 120, "the reorganisation");
const reorg = follower.lines[at];
await follower.caughtUp(base + DEPTH + 1, at);
const total = seconds(start);
await follower.stop();
console.log(
  `reorg: depth ${reorg.depth} (${reorg.removed} leaves removed), rollback ${(reorg.rollback_seconds * 1000).toFixed(2)} ms; ` +
    `${DEPTH + 1} new blocks mined in ${mined.toFixed(2)} s, all ingested ${total.toFixed(2)} s after the revert`,
);
await node.stop();
rmSync(work, { recursive: true, force: true });
