// Bad input: random bytes, random and mutated JSON, hostile objects and
// garbage arguments never make the package throw anything but a CairnError,
// and whatever decodes re-encodes to the same bytes (one encoding per proof).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CairnError,
  computeRoot,
  decodeConsistency,
  decodeMembership,
  hashers,
  rollForward,
  verifyConsistency,
  verifyMembership,
} from "cairn-verify";
import { fromHex, random, seed, vectors } from "./helpers.mjs";

const ROUNDS = Number(process.env.CAIRN_TS_FUZZ_ROUNDS ?? 20000);
const proofs = vectors("proofs.json");
const imtProofs = vectors("imt.json").trees.flatMap((t) => [...t.membership, ...t.consistency]);
// Plain proofs of indexed trees come as a binary case followed by the same proof's JSON case.
const indexedPlain = vectors("indexed.json").leaf_hash_proofs;
const indexedProofs = indexedPlain.flatMap((entry, i) => (i % 2 === 0 ? [{ binary: entry.binary, json: indexedPlain[i + 1].json }] : []));
const samples = [...proofs.membership.slice(0, 60), ...proofs.consistency.slice(0, 60), ...imtProofs, ...indexedProofs];
const trees = [
  ...[2, 3, 4, 16].flatMap((arity) => Object.values(hashers).map((hash) => ({ arity, hash }))),
  // Fixed-depth trees: the ones of imt.json but MiMCSponge's, and a deep one.
  { arity: 2, hash: hashers.poseidon, kind: "imt", depth: 10 },
  { arity: 5, hash: hashers.poseidon, kind: "imt", depth: 4 },
  { arity: 2, hash: hashers.keccak256, kind: "imt", depth: 10, zero: vectors("imt.json").trees[2].zero },
  { arity: 2, hash: hashers.blake3, kind: "imt", depth: 64 },
  // Indexed trees (plain proofs of their leaf hashes).
  { arity: 4, hash: hashers.blake3, kind: "indexed" },
  { arity: 2, hash: hashers.poseidon, kind: "indexed" },
];

/** Runs body; anything thrown must be a CairnError. Returns whether it returned. */
function onlyCairnErrors(body, context) {
  try {
    body();
    return true;
  } catch (error) {
    if (!(error instanceof CairnError)) {
      assert.fail(`${context}: threw ${error?.constructor?.name}: ${error?.message}\n${error?.stack}`);
    }
    assert.ok(["decode", "verify", "input"].includes(error.stage), context);
    assert.equal(typeof error.kind, "string");
    return false;
  }
}

function randomValue(rng, depth = 0) {
  const choice = rng.int(0, depth > 3 ? 5 : 8);
  switch (choice) {
    case 0:
      return null;
    case 1:
      return rng.next() < 0.5;
    case 2:
      return rng.pick([0, 1, 2, 4, 16, 17, -1, 1.5, 2 ** 53, 2 ** 64, 1e300, Number.NaN, -0]);
    case 3:
      return rng.pick(["", "0x", "0x" + "0".repeat(64), "0X" + "F".repeat(64), "blake3", "membership", "consistency", "\u0000", "0x" + "g".repeat(64)]);
    case 4:
      return BigInt(rng.int(0, 2 ** 31)) * BigInt(rng.int(0, 2 ** 31)) * 8n;
    case 5:
      return "0x" + Buffer.from(rng.bytes(32)).toString("hex");
    case 6:
      return Array.from({ length: rng.int(0, 4) }, () => randomValue(rng, depth + 1));
    default: {
      const keys = ["version", "kind", "arity", "hash", "tree", "depth", "zero", "index", "size", "leaf", "siblings", "old_size", "new_size", "edge_leaf", "levels", "level", "left", "right", "x"];
      return Object.fromEntries(Array.from({ length: rng.int(0, 6) }, () => [rng.pick(keys), randomValue(rng, depth + 1)]));
    }
  }
}

function mutateDocument(rng, document) {
  const copy = structuredClone(document);
  const paths = [];
  const walk = (value, path) => {
    paths.push(path);
    if (value !== null && typeof value === "object") for (const key of Object.keys(value)) walk(value[key], [...path, key]);
  };
  walk(copy, []);
  const path = rng.pick(paths.slice(1));
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key];
  const last = path[path.length - 1];
  const action = rng.int(0, 3);
  if (action === 0) delete parent[last];
  else if (action === 1) parent[last] = randomValue(rng);
  else if (action === 2 && Array.isArray(parent)) parent.push(structuredClone(parent[last]));
  else parent[`${last}_`] = 1;
  return copy;
}

function tryEverything(input, context, rng) {
  const t = rng.pick(trees);
  const head = { size: rng.int(0, 40), root: rng.next() < 0.1 ? null : rng.bytes(32) };
  for (const decode of [decodeMembership, decodeConsistency]) {
    let decoded;
    const ok = onlyCairnErrors(() => {
      decoded = decode(input);
    }, `${context} ${decode.name}`);
    if (ok && input instanceof Uint8Array && (input[0] === 1 || input[0] === 2)) {
      assert.deepEqual(decoded.toBytes(), input, `${context}: a decoded proof must re-encode to its bytes`);
    }
  }
  onlyCairnErrors(() => verifyMembership(input, t, head), `${context} verifyMembership`);
  onlyCairnErrors(() => verifyConsistency(input, t, head, head), `${context} verifyConsistency`);
}

test(`random bytes, random JSON and mutated proofs throw only CairnError (seed ${seed})`, () => {
  const rng = random(seed);
  for (let round = 0; round < ROUNDS; round++) {
    const sample = rng.pick(samples);
    const binary = fromHex(sample.binary);
    const context = `seed ${seed} round ${round}`;
    switch (round % 6) {
      case 0: {
        // Random bytes, sometimes behind a plausible header.
        const bytes = rng.bytes(rng.int(0, 120));
        if (rng.next() < 0.7 && bytes.length >= 4) bytes.set([rng.int(1, 2), rng.int(1, 2), rng.int(0, 18), rng.int(0, 5)]);
        // A version 2 header's tree: kind byte, depth (around the valid 1..64), zero.
        if (bytes[0] === 2 && bytes.length >= 6 && rng.next() < 0.7) bytes.set([rng.int(0, 2), rng.int(0, 66)], 4);
        tryEverything(bytes, context, rng);
        break;
      }
      case 1: {
        // A valid proof with a few bytes changed, cut or extended.
        const bytes = binary.slice(0, rng.next() < 0.2 ? rng.int(0, binary.length) : binary.length);
        for (let i = rng.int(1, 3); i > 0 && bytes.length > 0; i--) bytes[rng.int(0, bytes.length - 1)] = rng.int(0, 255);
        tryEverything(rng.next() < 0.1 ? Uint8Array.from([...bytes, ...rng.bytes(rng.int(1, 40))]) : bytes, context, rng);
        break;
      }
      case 2: {
        // JSON text with characters changed.
        const text = JSON.stringify(sample.json).split("");
        for (let i = rng.int(1, 4); i > 0; i--) text[rng.int(0, text.length - 1)] = String.fromCharCode(rng.int(0, 0x7f));
        tryEverything(text.join(""), context, rng);
        tryEverything(new TextEncoder().encode(text.join("")), context, rng);
        break;
      }
      case 3: {
        // A JSON document with one field removed, replaced, duplicated or added.
        const mutated = mutateDocument(rng, sample.json);
        tryEverything(mutated, context, rng);
        onlyCairnErrors(
          () => tryEverything(JSON.stringify(mutated, (_, v) => (typeof v === "bigint" ? Number(v) : v)), context, rng),
          context,
        );
        break;
      }
      case 4:
        tryEverything(randomValue(rng), context, rng);
        tryEverything(JSON.stringify(randomValue(rng), (_, v) => (typeof v === "bigint" ? v.toString() : v)) ?? "", context, rng);
        break;
      default: {
        // Random UTF-8 bytes that sniff as JSON.
        const bytes = rng.bytes(rng.int(1, 60));
        bytes[0] = 0x7b;
        tryEverything(bytes, context, rng);
      }
    }
  }
});

test("hostile and malformed arguments throw only CairnError", () => {
  const valid = proofs.membership[5];
  const link = proofs.consistency[5];
  const hostile = new Proxy(
    {},
    {
      ownKeys() {
        throw new Error("boom");
      },
    },
  );
  const getter = Object.defineProperty({}, "version", {
    enumerable: true,
    get() {
      throw new TypeError("getter");
    },
  });
  let deep = [];
  for (let i = 0; i < 100000; i++) deep = [deep];
  const deepText = "[".repeat(100000) + "]".repeat(100000);
  const deepObject = '{"a":'.repeat(5000) + "1" + "}".repeat(5000);
  const inputs = [
    undefined,
    null,
    42,
    Symbol("x"),
    () => 1,
    hostile,
    getter,
    deep,
    deepText,
    deepObject,
    new Uint8Array(0),
    new Uint16Array(4),
    new ArrayBuffer(60),
    new Date(),
    [1, "membership"],
    "{" + " ".repeat(10000),
    '{"version": 1e400}',
    '{"version": 1, "version": 1}',
    '"\\ud800"',
    "\ufeff{}",
    new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
    new Uint8Array([0x20, 0x7b, 0xff, 0x7d]),
  ];
  const heads = [undefined, null, {}, { size: -1, root: null }, { size: 1.5, root: null }, { size: 2n ** 64n, root: null }, { size: 1, root: "0x12" }, { size: 1, root: new Uint8Array(31) }, { size: "3", root: null }, hostile];
  const badTrees = [
    undefined,
    null,
    {},
    { arity: 1, hash: hashers.blake3 },
    { arity: 4, hash: "blake3" },
    { arity: 4.5, hash: hashers.blake3 },
    { arity: 4, hash: { name: "md5", hashChildren() {} } },
    { arity: 4, hash: hashers.blake3, kind: "imt" },
    { arity: 4, hash: hashers.blake3, kind: "imt", depth: 2n },
    { arity: 4, hash: hashers.blake3, kind: "imt", depth: 3, zero: 0 },
    { arity: 4, hash: hashers.blake3, kind: "imt", depth: 3, zero: hostile },
    { arity: 4, hash: hashers.blake3, kind: Symbol("imt"), depth: 3 },
    { arity: 4, hash: hashers.blake3, kind: {}, depth: 3 },
    hostile,
  ];
  const t = { arity: valid.arity, hash: hashers[valid.hash] };
  const goodHead = { size: valid.size, root: valid.root };
  for (const [i, input] of inputs.entries()) {
    for (const body of [
      () => decodeMembership(input),
      () => decodeConsistency(input),
      () => verifyMembership(input, t, goodHead),
      () => verifyConsistency(input, t, goodHead, goodHead),
      () => rollForward(input, input, t, goodHead, goodHead),
      () => computeRoot(input, t),
    ]) {
      onlyCairnErrors(body, `input ${i}`);
    }
  }
  for (const [i, head] of heads.entries()) onlyCairnErrors(() => verifyMembership(fromHex(valid.binary), t, head), `head ${i}`);
  for (const [i, bad] of badTrees.entries()) {
    onlyCairnErrors(() => verifyMembership(fromHex(valid.binary), bad, goodHead), `tree ${i}`);
    onlyCairnErrors(() => computeRoot([fromHex(valid.leaf)], bad), `tree ${i}`);
  }
  onlyCairnErrors(() => computeRoot(["0x" + "ff".repeat(32), "0x" + "00".repeat(32)], { arity: 2, hash: hashers.poseidon }), "non-canonical leaf");
  onlyCairnErrors(() => computeRoot([1, 2], { arity: 2, hash: hashers.blake3 }), "numbers as leaves");
  onlyCairnErrors(
    () => rollForward(fromHex(valid.binary), fromHex(link.binary), t, goodHead, goodHead),
    "mismatched roll-forward",
  );
});

test("a huge integer in JSON is refused, not rounded", () => {
  const sample = proofs.membership.find((m) => m.size > 1);
  const text = JSON.stringify(sample.json).replace(`"size":${sample.size}`, `"size":${sample.size}0000000000000000000000`);
  const error = (() => {
    try {
      decodeMembership(text);
    } catch (e) {
      return e;
    }
  })();
  assert.ok(error instanceof CairnError && error.stage === "decode" && error.kind === "Json", String(error));
  const exact = JSON.stringify(sample.json).replace(`"size":${sample.size}`, `"size":18446744073709551615`);
  const decoded = (() => {
    try {
      return decodeMembership(exact);
    } catch (e) {
      return e;
    }
  })();
  // u64::MAX is a valid size: the proof then has the wrong level count (a decode error about shape, not a number).
  assert.ok(decoded instanceof CairnError && decoded.kind === "WrongLevelCount", String(decoded));
});
