#!/usr/bin/env node
// Generates test-vectors/typescript.json: LeanIMT roots, zk-kit IMT (fixed-depth) roots
// and proofs, roots after each step of update/remove sequences on both, and Poseidon and MiMCSponge hash vectors computed with independent
// JavaScript implementations, for cairn's Rust tests to compare against.
//
//   cd test-vectors/ts && npm ci        # once; installs the exact pinned versions
//   node test-vectors/ts/generate.mjs           # (re)write test-vectors/typescript.json
//   node test-vectors/ts/generate.mjs --check   # exit 1 if the committed file is stale
//
// Sources of truth:
//   - arity 2: @zk-kit/lean-imt's LeanIMT (the reference binary LeanIMT), cross-checked
//     against the n-ary reference below, which must agree with it exactly;
//   - arity 3..16: the plain n-ary reference in this file (`naryTree`), written straight
//     from the definition (no library implements an n-ary LeanIMT);
//   - fixed-depth trees (`imt`): @zk-kit/imt's IMT (the shape of zk-kit's BinaryIMT.sol and
//     QuinaryIMT.sol and of Tornado Cash's tree), grown by insert() and cross-checked
//     against its constructor, with its createProof() proofs checked by its verifyProof();
//   - Poseidon: poseidon-lite (circomlib-compatible constants), checked against a
//     circomlib known answer; MiMCSponge: circomlibjs's `multiHash(inputs, 0, 1)`, checked
//     against Tornado Cash's published zeros(1); blake3/sha256/keccak256: @noble/hashes,
//     checked against known answers.
// Only package.json, package-lock.json and this script are committed (node_modules is
// git-ignored).

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IMT } from '@zk-kit/imt';
import { LeanIMT } from '@zk-kit/lean-imt';
import poseidonLite from 'poseidon-lite'; // CommonJS: take the whole exports object
import { blake3 } from '@noble/hashes/blake3.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { buildMimcSponge } from 'circomlibjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const LEAVES_PATH = join(HERE, '..', 'leaves.json');
const OUT_PATH = join(HERE, '..', 'typescript.json');
const PACKAGES = ['@noble/hashes', '@zk-kit/imt', '@zk-kit/lean-imt', 'circomlibjs', 'poseidon-lite'];
const ARITIES = Array.from({ length: 15 }, (_, i) => i + 2); // 2..=16
const HASHES = ['blake3', 'sha256', 'keccak256', 'poseidon', 'mimcsponge'];
const BN254_P = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const TORNADO_ZERO = 0x2fe54c60d3acabf3343a35b6eba15db4821b340f76e741e2249685ed4899af6cn;

function fail(msg) {
  console.error(`generate.mjs: ${msg}`);
  process.exit(1);
}

// ---- 32-byte big-endian <-> hex / BigInt ----------------------------------------------

const toHex = (bytes) => '0x' + Buffer.from(bytes).toString('hex');
const bigToHex = (x) => '0x' + x.toString(16).padStart(64, '0');
const hexToBytes = (hex) => Uint8Array.from(Buffer.from(hex.slice(2), 'hex'));
const bytesToBig = (bytes) => BigInt(toHex(bytes));
function bigToBytes(x) {
  if (x < 0n || x >= 1n << 256n) fail(`value does not fit in 32 bytes: ${x}`);
  return hexToBytes(bigToHex(x));
}
function concat(parts) {
  const out = new Uint8Array(32 * parts.length);
  parts.forEach((p, i) => out.set(p, 32 * i));
  return out;
}

// ---- H over a group of 2..16 children (Uint8Array(32) each) ---------------------------

const poseidonK = (k) => poseidonLite[`poseidon${k}`];
// circomlibjs builds its field asynchronously: main() sets this before anything hashes.
let mimcSponge = null;
const mimcMultiHash = (inputs) => mimcSponge.F.toObject(mimcSponge.multiHash(inputs, 0, 1));
const HASH_FNS = {
  blake3: (children) => blake3(concat(children)),
  sha256: (children) => sha256(concat(children)),
  keccak256: (children) => keccak_256(concat(children)),
  poseidon: (children) => bigToBytes(poseidonK(children.length)(children.map(bytesToBig))),
  mimcsponge: (children) => bigToBytes(mimcMultiHash(children.map(bytesToBig))),
};

// Known answers, so a wrong hash (e.g. SHA3-256 instead of Keccak) cannot slip through.
function checkKnownAnswers() {
  const kat = [
    ['blake3("")', toHex(blake3(new Uint8Array())),
      '0xaf1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262'],
    ['sha256("abc")', toHex(sha256(new TextEncoder().encode('abc'))),
      '0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['keccak256("")', toHex(keccak_256(new Uint8Array())),
      '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470'],
    // circomlib's poseidon([1, 2]) test vector.
    ['poseidon2([1,2])', bigToHex(poseidonLite.poseidon2([1n, 2n])),
      '0x115cc0f5e7d690413df64c6b9662e9cf2a3617f2743245519e19607a4417189a'],
    // Tornado Cash's MerkleTreeWithHistory: zeros(0) = keccak256("tornado") mod p and
    // zeros(1) = MiMCSponge(zeros(0), zeros(0)), both published in the contract.
    ['mimcsponge(z, z)', bigToHex(mimcMultiHash([TORNADO_ZERO, TORNADO_ZERO])),
      '0x256a6135777eee2fd26f54b8b7037a25439d5235caee224154186d2b8a52e31d'],
    ['keccak256("tornado") mod p', bigToHex(bytesToBig(keccak_256(new TextEncoder().encode('tornado'))) % BN254_P),
      bigToHex(TORNADO_ZERO)],
  ];
  for (const [name, got, want] of kat) {
    if (got !== want) fail(`known answer ${name} mismatch: got ${got}, want ${want}`);
  }
}

// ---- n-ary reference, straight from the definition ------------------------------------

// Returns { root: Uint8Array | null, depth }. `hashGroup` must only be called on groups
// of 2..N members; a group of exactly 1 member is lifted unchanged.
function naryTree(leaves, arity, hashGroup) {
  if (leaves.length === 0) return { root: null, depth: 0 };
  let level = leaves;
  let depth = 0;
  while (level.length > 1) {
    const next = [];
    for (let j = 0; j * arity < level.length; j++) {
      const group = level.slice(j * arity, Math.min(j * arity + arity, level.length));
      next.push(group.length === 1 ? group[0] : hashGroup(group));
    }
    level = next;
    depth++;
  }
  return { root: level[0], depth };
}

// Memoise H by its input so that the trees over different prefixes of the same leaves
// (which share every complete subtree) cost only the hashes that actually differ. This
// keeps Poseidon fast without complicating naryTree itself.
function memoised(hashFn) {
  const cache = new Map();
  return (children) => {
    const key = children.map(toHex).join('');
    let out = cache.get(key);
    if (out === undefined) cache.set(key, (out = hashFn(children)));
    return out;
  };
}

// ---- case sizes --------------------------------------------------------------------------

function caseSizes(arity, maxSize) {
  const sizes = new Set([0, 1, 2, 3, arity - 1, arity, arity + 1, maxSize]);
  for (let p = arity * arity; p + 1 <= maxSize; p *= arity) {
    sizes.add(p - 1).add(p).add(p + 1);
  }
  return [...sizes].sort((a, b) => a - b);
}

// ---- roots ---------------------------------------------------------------------------------

function computeRoots(leafBytes, versions) {
  const zkKitName = `@zk-kit/lean-imt@${versions['@zk-kit/lean-imt']}`;
  const leafBigs = leafBytes.map(bytesToBig);
  const roots = [];
  for (const hash of HASHES) {
    const hashGroup = memoised(HASH_FNS[hash]);
    // zk-kit works on bigints and calls hash(left, right). It shares the memoised H:
    // H is a pure function, and what zk-kit is checked on is the tree shape (which
    // pairs get hashed, which nodes get lifted), not the hash itself.
    const zkHash = (a, b) => bytesToBig(hashGroup([bigToBytes(a), bigToBytes(b)]));
    for (const arity of ARITIES) {
      for (const size of caseSizes(arity, leafBytes.length)) {
        const ref = naryTree(leafBytes.slice(0, size), arity, hashGroup);
        const refRoot = ref.root === null ? null : toHex(ref.root);
        let implementation = 'generate.mjs n-ary reference';
        if (arity === 2) {
          // zk-kit's insertMany throws on an empty list, so pass no leaves for size 0;
          // its root is then `undefined`.
          const tree = size === 0 ? new LeanIMT(zkHash) : new LeanIMT(zkHash, leafBigs.slice(0, size));
          const zkRoot = tree.root === undefined ? null : bigToHex(tree.root);
          if (zkRoot !== refRoot || tree.depth !== ref.depth) {
            fail(`${hash} arity 2 size ${size}: zk-kit (root ${zkRoot}, depth ${tree.depth}) ` +
              `!= n-ary reference (root ${refRoot}, depth ${ref.depth})`);
          }
          implementation = zkKitName;
        }
        roots.push({ hash, arity, size, depth: ref.depth, root: refRoot, implementation });
      }
    }
    // zk-kit's one-at-a-time insert() is a separate code path from insertMany(); it
    // must reach the same roots.
    const incremental = new LeanIMT(zkHash);
    const want = new Map(roots.filter((r) => r.hash === hash && r.arity === 2).map((r) => [r.size, r]));
    for (let i = 0; i < leafBigs.length; i++) {
      incremental.insert(leafBigs[i]);
      const r = want.get(i + 1);
      if (r && (bigToHex(incremental.root) !== r.root || incremental.depth !== r.depth)) {
        fail(`${hash} arity 2 size ${i + 1}: zk-kit insert() disagrees with insertMany()`);
      }
    }
  }
  return roots;
}

// ---- zk-kit IMT: fixed depth, zero-padded ----------------------------------------------------

// The fixed-depth trees: binary and quinary Poseidon with zero value 0 (the defaults of
// zk-kit's BinaryIMT.sol and the zero of QuinaryIMT.sol's tests), a byte hash with a
// zero value that is not 0, and Tornado Cash's (MiMCSponge, depth 20, its zero value).
const IMT_ZERO_KECCAK = bytesToBig(keccak_256(new TextEncoder().encode('cairn/test-vector-imt-zero')));
const IMT_TREES = [
  { hash: 'poseidon', arity: 2, depth: 10, zero: 0n },
  { hash: 'poseidon', arity: 5, depth: 4, zero: 0n },
  { hash: 'keccak256', arity: 2, depth: 10, zero: IMT_ZERO_KECCAK },
  { hash: 'mimcsponge', arity: 2, depth: 20, zero: TORNADO_ZERO },
];

// The sizes of a fixed-depth tree's cases: those of `caseSizes` that fit it (at most
// N^depth leaves), and its capacity when the leaves reach it.
function imtSizes(arity, depth, leafCount) {
  const capacity = arity ** depth;
  const max = Math.min(capacity, leafCount);
  return caseSizes(arity, max).filter((size) => size <= max);
}

// Where proofs are taken: sizes, and the first, middle and last leaf at each.
function imtProofPositions(arity, sizes) {
  const max = sizes[sizes.length - 1];
  const picked = [1, arity + 1, Math.floor(max / 2) + 1, max].filter((s) => s <= max);
  const out = [];
  for (const size of [...new Set(picked)].sort((a, b) => a - b)) {
    for (const index of [...new Set([0, Math.floor(size / 2), size - 1])]) out.push([size, index]);
  }
  return out;
}

function computeImt(leafBytes, versions) {
  const implementation = `@zk-kit/imt@${versions['@zk-kit/imt']}`;
  const leafBigs = leafBytes.map(bytesToBig);
  const out = [];
  for (const spec of IMT_TREES) {
    const { hash, arity, depth, zero } = spec;
    const hashGroup = memoised(HASH_FNS[hash]);
    // zk-kit's IMT calls hash(children) with the N children as one array.
    const imtHash = (children) => bytesToBig(hashGroup(children.map(bigToBytes)));
    const sizes = imtSizes(arity, depth, leafBigs.length);
    const positions = imtProofPositions(arity, sizes);
    const proofSizes = new Set(positions.map(([size]) => size));
    const tree = new IMT(imtHash, depth, zero, arity);
    const zeros = [...tree.zeroes, tree.root].map(bigToHex);
    const roots = [];
    const proofs = [];
    const wanted = [...new Set([...sizes, ...proofSizes])].sort((a, b) => a - b);
    let inserted = 0;
    for (const size of wanted) {
      while (inserted < size) tree.insert(leafBigs[inserted++]);
      // The constructor fills the levels another way: it must agree.
      const built = new IMT(imtHash, depth, zero, arity, leafBigs.slice(0, size));
      if (built.root !== tree.root) {
        fail(`imt ${hash} arity ${arity} depth ${depth} size ${size}: insert() and the constructor disagree`);
      }
      if (sizes.includes(size)) roots.push({ size, root: bigToHex(tree.root) });
      for (const [at, index] of positions) {
        if (at !== size) continue;
        const proof = tree.createProof(index);
        if (!IMT.verifyProof(proof, imtHash)) {
          fail(`imt ${hash} arity ${arity} size ${size}: verifyProof refuses createProof(${index})`);
        }
        proofs.push({
          size,
          leafIndex: proof.leafIndex,
          leaf: bigToHex(proof.leaf),
          root: bigToHex(proof.root),
          pathIndices: proof.pathIndices,
          siblings: proof.siblings.map((level) => level.map(bigToHex)),
        });
      }
    }
    out.push({ hash, arity, depth, zero: bigToHex(zero), zeros, implementation, roots, proofs });
  }
  return out;
}

// ---- mutations: updates and removals ---------------------------------------------------------

// Seeded sequences of inserts, updates and removals applied to @zk-kit/lean-imt's LeanIMT
// (a removal is update(i, 0n), what LeanIMT.sol's remove and Semaphore v4's removeMember
// write) and to @zk-kit/imt's IMT (update, and delete, which writes zeros[0]), with the
// root after every step. Every value is a leaf of leaves.json used once, so a tree that
// never takes a removed value back accepts the whole sequence. Each root is checked
// against a tree built afresh from the leaves as changed (the n-ary reference, or the
// IMT constructor).
const MUTATION_STEPS = 60;
const MUTATION_TREES = [
  { kind: 'lean', hash: 'poseidon', arity: 2 },
  { kind: 'lean', hash: 'keccak256', arity: 2 },
  { kind: 'imt', hash: 'poseidon', arity: 2, depth: 6, zero: 0n },
  { kind: 'imt', hash: 'poseidon', arity: 5, depth: 3, zero: 0n },
  { kind: 'imt', hash: 'keccak256', arity: 2, depth: 6, zero: IMT_ZERO_KECCAK },
];

// A small seeded generator (xorshift32): the sequences are part of the committed file.
function xorshift(seed) {
  let state = seed >>> 0 || 1;
  return (bound) => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state % bound;
  };
}

function computeMutations(leafBytes, versions) {
  const leafBigs = leafBytes.map(bytesToBig);
  const out = [];
  for (const [number, spec] of MUTATION_TREES.entries()) {
    const { kind, hash, arity } = spec;
    const hashGroup = memoised(HASH_FNS[hash]);
    const zero = kind === 'lean' ? 0n : spec.zero;
    const capacity = kind === 'lean' ? Infinity : arity ** spec.depth;
    let tree;
    let implementation;
    if (kind === 'lean') {
      tree = new LeanIMT((a, b) => bytesToBig(hashGroup([bigToBytes(a), bigToBytes(b)])));
      implementation = `@zk-kit/lean-imt@${versions['@zk-kit/lean-imt']}`;
    } else {
      tree = new IMT((children) => bytesToBig(hashGroup(children.map(bigToBytes))), spec.depth, zero, arity);
      implementation = `@zk-kit/imt@${versions['@zk-kit/imt']}`;
    }
    const afresh = (leaves) => {
      if (kind === 'lean') return bytesToBig(naryTree(leaves.map(bigToBytes), arity, hashGroup).root);
      const built = new IMT((children) => bytesToBig(hashGroup(children.map(bigToBytes))), spec.depth, zero, arity, leaves);
      return built.root;
    };
    const draw = xorshift(0x6d757461 + number);
    const leaves = [];
    const steps = [];
    let next = number * 100;
    for (let i = 0; i < MUTATION_STEPS; i++) {
      const live = leaves.flatMap((leaf, index) => (leaf === zero ? [] : [index]));
      const roll = draw(100);
      let step;
      if (live.length === 0 || (roll < 35 && leaves.length < capacity)) {
        if (leaves.length >= capacity) break;
        const value = leafBigs[next++];
        tree.insert(value);
        leaves.push(value);
        step = { op: 'insert', value: bigToHex(value) };
      } else if (roll < 75) {
        const index = live[draw(live.length)];
        const value = leafBigs[next++];
        tree.update(index, value);
        leaves[index] = value;
        step = { op: 'update', index, value: bigToHex(value) };
      } else {
        const index = live[draw(live.length)];
        if (kind === 'lean') tree.update(index, 0n);
        else tree.delete(index);
        leaves[index] = zero;
        step = { op: 'remove', index };
      }
      const root = BigInt(tree.root);
      const want = afresh(leaves);
      if (root !== want) {
        fail(`mutations ${kind} ${hash} arity ${arity} step ${i} (${step.op}): zk-kit's root ${bigToHex(root)} != a tree built afresh ${bigToHex(want)}`);
      }
      steps.push({ ...step, root: bigToHex(root) });
    }
    if (next > leafBigs.length) fail(`mutations: leaves.json has ${leafBigs.length} leaves, the sequences take ${next}`);
    const shape = kind === 'lean' ? {} : { depth: spec.depth, zero: bigToHex(zero) };
    out.push({ kind, hash, arity, ...shape, implementation, steps });
  }
  return out;
}

// ---- direct Poseidon vectors ----------------------------------------------------------------

function computePoseidonVectors(leafBigs) {
  const vectors = [];
  for (let k = 1; k <= 16; k++) {
    const tuples = [
      Array.from({ length: k }, (_, i) => BigInt(i + 1)), // [1, 2, ..., k]
      Array(k).fill(0n),
      Array(k).fill(BN254_P - 1n), // largest canonical field element
      leafBigs.slice(0, k),
      leafBigs.slice(leafBigs.length - k),
    ];
    for (const inputs of tuples) {
      vectors.push({
        inputs: inputs.map(bigToHex),
        output: bigToHex(poseidonK(k)(inputs)),
        function: `poseidon${k}`,
      });
    }
  }
  return vectors;
}

// ---- direct MiMCSponge vectors ----------------------------------------------------------------

// The same input tuples as the Poseidon vectors, through circomlibjs's sponge (key 0, one
// output), for every group size a tree hashes and for a single input.
function computeMimcSpongeVectors(leafBigs) {
  const vectors = [];
  for (let k = 1; k <= 16; k++) {
    const tuples = [
      Array.from({ length: k }, (_, i) => BigInt(i + 1)),
      Array(k).fill(0n),
      Array(k).fill(BN254_P - 1n),
      leafBigs.slice(0, k),
      leafBigs.slice(leafBigs.length - k),
    ];
    for (const inputs of tuples) {
      vectors.push({
        inputs: inputs.map(bigToHex),
        output: bigToHex(mimcMultiHash(inputs)),
        function: 'multiHash(inputs, 0, 1)',
      });
    }
  }
  return vectors;
}

// ---- main ---------------------------------------------------------------------------------

function installedVersions() {
  const versions = {};
  for (const pkg of PACKAGES) {
    // Read the file directly: not every package exports ./package.json.
    const file = join(HERE, 'node_modules', ...pkg.split('/'), 'package.json');
    versions[pkg] = JSON.parse(readFileSync(file, 'utf8')).version;
  }
  return versions;
}

function loadLeaves() {
  const { leaves } = JSON.parse(readFileSync(LEAVES_PATH, 'utf8'));
  for (const [i, leaf] of leaves.entries()) {
    if (!/^0x[0-9a-f]{64}$/.test(leaf)) fail(`leaves.json: leaf ${i} is not 32-byte lowercase hex`);
    if (BigInt(leaf) >= BN254_P) fail(`leaves.json: leaf ${i} is not a canonical BN254 element`);
  }
  return leaves.map(hexToBytes);
}

// Path and values of the first difference between two parsed JSON values, or null.
function firstDifference(a, b, path = '') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) {
    return `${path || '(top)'}: committed ${JSON.stringify(a)} != computed ${JSON.stringify(b)}`;
  }
  if (typeof a !== 'object' || a === null) {
    return a === b ? null : `${path}: committed ${JSON.stringify(a)} != computed ${JSON.stringify(b)}`;
  }
  const keys = Array.isArray(a)
    ? Array.from({ length: Math.max(a.length, b.length) }, (_, i) => i)
    : [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const key of keys) {
    const sub = Array.isArray(a) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (!(key in a)) return `${sub}: missing from committed file`;
    if (!(key in b)) return `${sub}: in committed file but no longer generated`;
    const d = firstDifference(a[key], b[key], sub);
    if (d) return d;
  }
  return null;
}

async function main() {
  const check = process.argv.includes('--check');
  const start = performance.now();
  mimcSponge = await buildMimcSponge();
  checkKnownAnswers();
  const leaves = loadLeaves();
  const versions = installedVersions();
  const output = {
    description: 'Roots of n-ary LeanIMTs (arity 2..16) over prefixes of leaves.json under ' +
      'blake3/sha256/keccak256/poseidon/mimcsponge, roots and proofs of zk-kit IMTs (fixed ' +
      'depth, zero-padded), roots after every step of insert/update/remove sequences on ' +
      'both, plus direct poseidon-lite and circomlibjs mimcsponge hash ' +
      'vectors, from independent JavaScript implementations.',
    generator: 'test-vectors/ts/generate.mjs',
    implementations: versions,
    leaves: 'leaves.json',
    roots: computeRoots(leaves, versions),
    imt: computeImt(leaves, versions),
    mutations: computeMutations(leaves, versions),
    poseidon: computePoseidonVectors(leaves.map(bytesToBig)),
    mimcsponge: computeMimcSpongeVectors(leaves.map(bytesToBig)),
  };
  const text = JSON.stringify(output, null, 1) + '\n';
  const secs = ((performance.now() - start) / 1000).toFixed(1);

  if (check) {
    let committed;
    try {
      committed = readFileSync(OUT_PATH, 'utf8');
    } catch {
      fail(`--check: ${OUT_PATH} is missing; run node test-vectors/ts/generate.mjs`);
    }
    if (committed !== text) {
      let diff;
      try {
        diff = firstDifference(JSON.parse(committed), output);
      } catch (e) {
        diff = `committed file is not valid JSON (${e.message})`;
      }
      if (!diff) {
        const a = committed.split('\n');
        const b = text.split('\n');
        const line = Array.from({ length: Math.max(a.length, b.length) }, (_, i) => i)
          .find((i) => a[i] !== b[i]);
        diff = `formatting only, at line ${line + 1}`;
      }
      fail(`--check: typescript.json is stale; first difference: ${diff}`);
    }
    console.log(`typescript.json is up to date (${output.roots.length} roots, ${secs}s)`);
  } else {
    writeFileSync(OUT_PATH, text);
    console.log(`wrote ${OUT_PATH} (${output.roots.length} roots, ` +
      `${output.poseidon.length} poseidon vectors, ${output.mimcsponge.length} mimcsponge vectors, ${secs}s)`);
  }
}

await main();
