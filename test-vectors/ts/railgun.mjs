#!/usr/bin/env node
// Generates test-vectors/railgun.json: roots of Railgun's commitment trees across the
// rollover from tree 0 to tree 1, computed by @railgun-community/engine's own merkle
// tree, for cairn's rollover families (an imt family of depth 16, Poseidon, Railgun's
// zero value, capacity 65,536) to reproduce root for root.
//
//   cd test-vectors/ts && npm ci               # once; installs the exact pinned versions
//   node test-vectors/ts/railgun.mjs           # (re)write test-vectors/railgun.json (~3 min)
//   node test-vectors/ts/railgun.mjs --check   # exit 1 if the committed file is stale
//
// Sources of truth:
//   - the roots: the engine's UTXOMerkletree (dist/merkletree/utxo-merkletree.js, a
//     Merkletree of TREE_DEPTH 16 and TREE_MAX_ITEMS 65,536 leaves per tree number,
//     hashLeftRight = poseidon([left, right]), zeros[0] = MERKLE_ZERO_VALUE), over an
//     in-memory memdown store, fed by queueLeaves(tree, start, leaves) and
//     updateTreesFromWriteQueue(), read back with getRoot(tree) after each batch;
//   - cross-checked against a plain fixed-depth tree in this file over poseidon-lite,
//     and the zero value against keccak256("Railgun") mod p from @noble/hashes.
// The leaves follow leaves.json's rule (SHA-256 of "cairn/test-vector-leaf/v1" and the
// big-endian u64 index, top three bits cleared), extended to 65,541 leaves.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import poseidonLite from 'poseidon-lite';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import memdown from 'memdown';

const require = createRequire(import.meta.url);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT_PATH = join(HERE, '..', 'railgun.json');
const PACKAGE = '@railgun-community/engine';
const BN254_P = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const DEPTH = 16;
const CAPACITY = 1 << DEPTH;
// Each batch: [tree number, first index, last index + 1]; a root is read after each.
const BATCHES = [
  [0, 0, 1],
  [0, 1, 3],
  [0, 3, 1000],
  [0, 1000, CAPACITY - 1],
  [0, CAPACITY - 1, CAPACITY],
  [1, 0, 1],
  [1, 1, 2],
  [1, 2, 5],
];

// The whole-batch case: batches of the stream's next leaves, each going whole to one
// tree under Railgun's rule (a batch that does not fit in the current tree starts the
// next one, leaving it short). Tree 0 is closed at 65,534 leaves by a batch of 3.
const WHOLE_BATCHES = [1000, CAPACITY - 2 - 1000, 3, 2];

function fail(msg) {
  console.error(`railgun.mjs: ${msg}`);
  process.exit(1);
}

const hex = (bytes) => '0x' + Buffer.from(bytes).toString('hex');
const big = (x) => '0x' + x.toString(16).padStart(64, '0');

/** Leaf i of leaves.json's rule. */
function leaf(i) {
  const tag = new TextEncoder().encode('cairn/test-vector-leaf/v1');
  const input = new Uint8Array(tag.length + 8);
  input.set(tag);
  new DataView(input.buffer).setBigUint64(tag.length, BigInt(i));
  const out = sha256(input);
  out[0] &= 0x1f;
  return hex(out);
}

/** The root of a binary fixed-depth Poseidon tree over `leaves`, padded with `zero`'s chain. */
function plainRoot(leaves, zero) {
  let level = leaves.map((l) => BigInt(l));
  let z = BigInt(zero);
  for (let k = 0; k < DEPTH; k++) {
    const up = [];
    for (let i = 0; i < level.length; i += 2) {
      up.push(poseidonLite.poseidon2([level[i], i + 1 < level.length ? level[i + 1] : z]));
    }
    level = up.length ? up : [];
    z = poseidonLite.poseidon2([z, z]);
  }
  return big(level.length ? level[0] : z);
}

async function generate() {
  const dist = dirname(require.resolve(PACKAGE));
  const version = JSON.parse(readFileSync(join(dist, '..', 'package.json'), 'utf8')).version;
  const { Database, TXIDVersion } = require(PACKAGE);
  const { UTXOMerkletree } = require(join(dist, 'merkletree', 'utxo-merkletree.js'));
  const types = require(join(dist, 'models', 'merkletree-types.js'));
  if (types.TREE_DEPTH !== DEPTH || types.TREE_MAX_ITEMS !== CAPACITY) {
    fail(`the engine's trees are depth ${types.TREE_DEPTH} of ${types.TREE_MAX_ITEMS} leaves`);
  }
  const zero = '0x' + types.MERKLE_ZERO_VALUE.replace(/^0x/, '');
  const ours = BigInt(hex(keccak_256(new TextEncoder().encode('Railgun')))) % BN254_P;
  if (big(ours) !== zero) fail(`zero ${zero}, keccak256("Railgun") mod p is ${big(ours)}`);

  const tree = await UTXOMerkletree.create(
    new Database(memdown()),
    { type: 0, id: 1 },
    TXIDVersion.V2_PoseidonMerkle,
    async () => true,
  );
  const leaves = Array.from({ length: CAPACITY + 5 }, (_, i) => leaf(i));
  const roots = [];
  for (const [number, from, to] of BATCHES) {
    const offset = number * CAPACITY;
    const batch = leaves.slice(offset + from, offset + to).map((l) => ({ hash: l.slice(2) }));
    await tree.queueLeaves(number, from, batch);
    await tree.updateTreesFromWriteQueue();
    const length = await tree.getTreeLength(number);
    if (length !== to) fail(`tree ${number} holds ${length} leaves after a batch to ${to}`);
    const root = '0x' + (await tree.getRoot(number)).replace(/^0x/, '');
    const plain = plainRoot(leaves.slice(offset, offset + to), zero);
    if (plain !== root) fail(`tree ${number} size ${to}: engine ${root}, plain ${plain}`);
    roots.push({ tree: number, size: to, root });
  }
  const whole = await wholeBatch(UTXOMerkletree, Database, TXIDVersion, leaves, zero);
  const empty = plainRoot([], zero);
  return {
    description:
      "Roots of Railgun's commitment trees (binary, depth 16, Poseidon, 65,536 leaves per tree number) across the rollover from tree 0 to tree 1: leaf g of the stream (g = tree * 65536 + index) is leaf g of leaves.json's rule, extended to 65,541 leaves. A cairn family `--kind imt --depth 16 --zero <zero> --arity 2 --hash poseidon --capacity 65536 --rollover` fed the stream in order holds member k = Railgun's tree k.",
    generator: 'node test-vectors/ts/railgun.mjs',
    agreed_with: [`${PACKAGE}@${version} UTXOMerkletree`, 'a plain fixed-depth tree over poseidon-lite 0.3.0'],
    depth: DEPTH,
    capacity: CAPACITY,
    zero,
    empty_root: empty,
    leaf_count: leaves.length,
    first_leaves: leaves.slice(0, 3),
    roots,
    whole_batch: {
      description:
        "Railgun's whole-batch rollover: each batch is the stream's next `values` leaves, written whole to tree `tree` from `first_index` (a batch that does not fit in the current tree starts the next, leaving it short), and `root` is that tree's root after it; `closed` is each tree's last root. Placed by the rule in this file, rooted by the engine's UTXOMerkletree (fed the same batches at the same tree numbers and indices) and by a plain fixed-depth tree.",
      batches: whole.batches,
      closed: whole.closed,
    },
  };
}

/** Where each of WHOLE_BATCHES goes under the whole-batch rule: [tree, first index]. */
function placeWhole(counts) {
  let tree = 0;
  let size = 0;
  return counts.map((count) => {
    if (count > CAPACITY) fail(`a batch of ${count} is more than one tree holds`);
    if (size + count > CAPACITY) {
      tree += 1;
      size = 0;
    }
    const at = [tree, size];
    size += count;
    return at;
  });
}

/** The whole-batch case, through a fresh engine tree: every batch's root, and each tree's last. */
async function wholeBatch(UTXOMerkletree, Database, TXIDVersion, leaves, zero) {
  const tree = await UTXOMerkletree.create(new Database(memdown()), { type: 0, id: 2 }, TXIDVersion.V2_PoseidonMerkle, async () => true);
  const placed = placeWhole(WHOLE_BATCHES);
  const held = [];
  const batches = [];
  let next = 0;
  for (const [i, count] of WHOLE_BATCHES.entries()) {
    const [number, first] = placed[i];
    const batch = leaves.slice(next, next + count);
    next += count;
    await tree.queueLeaves(number, first, batch.map((l) => ({ hash: l.slice(2) })));
    await tree.updateTreesFromWriteQueue();
    (held[number] ??= []).push(...batch);
    const length = await tree.getTreeLength(number);
    if (length !== first + count) fail(`whole-batch: tree ${number} holds ${length} leaves after a batch to ${first + count}`);
    const root = '0x' + (await tree.getRoot(number)).replace(/^0x/, '');
    const plain = plainRoot(held[number], zero);
    if (plain !== root) fail(`whole-batch: tree ${number} size ${first + count}: engine ${root}, plain ${plain}`);
    batches.push({ values: count, tree: number, first_index: first, root });
  }
  if (placed[2][0] !== 1 || placed[2][1] !== 0) fail('whole-batch: the third batch must start tree 1');
  const closed = [];
  for (let number = 0; number < held.length; number++) {
    const root = '0x' + (await tree.getRoot(number)).replace(/^0x/, '');
    if (root !== plainRoot(held[number], zero)) fail(`whole-batch: tree ${number} changed after it was closed`);
    closed.push({ tree: number, size: held[number].length, root });
  }
  return { batches, closed };
}

const out = JSON.stringify(await generate(), null, 1) + '\n';
if (process.argv.includes('--check')) {
  const committed = readFileSync(OUT_PATH, 'utf8');
  if (committed !== out) fail('test-vectors/railgun.json is stale: run node test-vectors/ts/railgun.mjs');
  console.log('railgun.json is up to date');
} else {
  writeFileSync(OUT_PATH, out);
  console.log(`wrote ${OUT_PATH}`);
}
