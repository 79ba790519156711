// Property tests against the Rust CLI on random trees: for random arities,
// hashes, sizes and leaves, `cairn root` equals computeRoot, every proof
// `cairn prove` / `cairn consistency` prints (JSON and binary) verifies
// here, rolling a proof forward gives exactly the proof cairn prints at the
// new size, and tampered proofs and relabelled heads are refused. The same
// for fixed-depth (imt) databases made by `cairn init --kind imt`, whose
// proofs are also refused by a verifier trusting another kind, depth or zero.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CairnError, computeRoot, decodeMembership, rollForward, verifyConsistency, verifyMembership } from "cairn-verify";
import { cairnBinary, random, seed, toHexString, tree } from "./helpers.mjs";

const binary = cairnBinary();
const TREES = Number(process.env.CAIRN_TS_TREES ?? 24);

function mustReject(body, context) {
  try {
    body();
  } catch (error) {
    assert.ok(error instanceof CairnError, `${context}: threw ${error?.constructor?.name}: ${error?.message}`);
    return error;
  }
  assert.fail(`${context}: tampered proof accepted`);
}

test(`random trees agree with the cairn CLI (seed ${seed}, CAIRN_TS_SEED to repeat)`, { skip: binary === null && "no cairn binary" }, () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-"));
  const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });
  try {
    for (let round = 0; round < TREES; round++) {
      const hash = ["blake3", "sha256", "keccak256", "poseidon"][round % 4];
      const arity = rng.int(2, 16);
      const size = rng.int(1, hash === "poseidon" ? 300 : rng.next() < 0.2 ? 5000 : 400);
      // Top three bits cleared: canonical BN254 elements, valid for every hash.
      const leaves = Array.from({ length: size }, () => {
        const leaf = rng.bytes(32);
        leaf[0] &= 0x1f;
        return leaf;
      });
      const file = join(dir, "leaves.bin");
      writeFileSync(file, Buffer.concat(leaves));
      const context = `seed ${seed} round ${round}: ${hash} N=${arity} size ${size}`;
      const common = ["--arity", String(arity), "--hash", hash];
      const t = tree(arity, hash);
      const rootOf = (count) => computeRoot(leaves.slice(0, count), t);

      const reported = JSON.parse(run("root", ...common, "--json", file).toString());
      assert.equal(toHexString(rootOf(size)), reported.root, context);
      assert.equal(reported.size, size);

      for (let sample = 0; sample < 3; sample++) {
        const at = rng.int(1, size);
        const index = rng.int(0, at - 1);
        const args = ["prove", ...common, "--leaves", file, "--index", String(index), "--size", String(at)];
        const json = run(...args).toString();
        const bytes = new Uint8Array(run(...args, "--binary"));
        const head = { size: at, root: rootOf(at) };
        const proof = verifyMembership(json, t, head);
        assert.deepEqual(verifyMembership(bytes, t, head), proof, context);
        assert.equal(toHexString(proof.leaf), toHexString(leaves[index]));

        // Tampered: any single bit flip, a relabelled head, a swapped leaf.
        const flipped = bytes.slice();
        flipped[rng.int(0, flipped.length - 1)] ^= 1 << rng.int(0, 7);
        mustReject(() => verifyMembership(flipped, t, head), `${context} flipped`);
        if (at < size) mustReject(() => verifyMembership(bytes, t, { size: at + 1, root: rootOf(at + 1) }), `${context} relabelled size`);
        const other = leaves[(index + 1) % size];
        if (toHexString(other) !== toHexString(proof.leaf)) {
          const swapped = bytes.slice();
          swapped.set(other, 20);
          mustReject(() => verifyMembership(swapped, t, head), `${context} swapped leaf`);
        }

        // Consistency from `at` to a later size, and roll-forward.
        const to = rng.int(at, size);
        const cargs = ["consistency", ...common, "--leaves", file, "--from", String(at), "--to", String(to)];
        const link = new Uint8Array(run(...cargs, "--binary"));
        const newHead = { size: to, root: rootOf(to) };
        const decoded = verifyConsistency(link, t, head, newHead);
        assert.deepEqual(verifyConsistency(run(...cargs).toString(), t, head, newHead), decoded, context);
        const rolled = rollForward(proof, link, t, head, newHead);
        const fresh = run("prove", ...common, "--leaves", file, "--index", String(index), "--size", String(to), "--binary");
        assert.equal(toHexString(rolled.toBytes()), toHexString(fresh), `${context}: rolled ${index} from ${at} to ${to}`);
        if (link.length > 20) {
          const tampered = link.slice();
          tampered[rng.int(20, tampered.length - 1)] ^= 1 << rng.int(0, 7);
          mustReject(() => verifyConsistency(tampered, t, head, newHead), `${context} tampered consistency`);
        }
        if (to > at) mustReject(() => verifyConsistency(link, t, head, { size: to, root: rootOf(to - 1) }), `${context} wrong new root`);
        assert.equal(decodeMembership(proof.toJson()).toJson(), proof.toJson());
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`fixed-depth (imt) databases built by the cairn CLI agree with this package (seed ${seed}, CAIRN_TS_SEED to repeat)`, { skip: binary === null && "no cairn binary" }, () => {
  const rng = random(seed + 1);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-imt-"));
  const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });
  try {
    const rounds = Math.max(5, Math.ceil(TREES / 3));
    for (let round = 0; round < rounds; round++) {
      const hash = ["keccak256", "poseidon", "blake3", "sha256", "mimcsponge"][round % 5];
      const arity = round % 5 === 4 ? 2 : rng.int(2, 6);
      const size = rng.int(1, hash === "mimcsponge" ? 12 : hash === "poseidon" ? 120 : 300);
      // The smallest depth that holds the leaves, plus up to three levels of padding above them.
      let fits = 1;
      while (BigInt(arity) ** BigInt(fits) < BigInt(size)) fits++;
      const depth = fits + rng.int(0, 3);
      const canonical = () => {
        const value = rng.bytes(32);
        value[0] &= 0x1f;
        return value;
      };
      const zero = rng.next() < 0.3 ? new Uint8Array(32) : canonical();
      const leaves = Array.from({ length: size }, canonical);
      const db = join(dir, `db-${round}`);
      const file = join(dir, `leaves-${round}.bin`);
      writeFileSync(file, Buffer.concat(leaves));
      const context = `seed ${seed} imt round ${round}: ${hash} N=${arity} depth ${depth} size ${size}`;
      run("init", db, "--arity", String(arity), "--hash", hash, "--kind", "imt", "--depth", String(depth), "--zero", toHexString(zero));
      const t = { ...tree(arity, hash), kind: "imt", depth, zero };
      const rootOf = (count) => computeRoot(leaves.slice(0, count), t);

      // The empty database reports zeros[depth] as its root.
      const empty = JSON.parse(run("root", db, "--json").toString());
      assert.equal(empty.root, toHexString(rootOf(0)), context);
      run("ingest", db, file);
      const reported = JSON.parse(run("root", db, "--json").toString());
      assert.equal(reported.size, size, context);
      assert.equal(reported.root, toHexString(rootOf(size)), context);

      for (let sample = 0; sample < 3; sample++) {
        const at = rng.int(1, size);
        const index = rng.int(0, at - 1);
        const args = ["prove", db, "--index", String(index), "--size", String(at)];
        const bytes = new Uint8Array(run(...args, "--binary"));
        const head = { size: at, root: rootOf(at) };
        const proof = verifyMembership(bytes, t, head);
        assert.equal(bytes[0], 2, `${context}: a format version 2 proof`);
        assert.deepEqual(verifyMembership(run(...args).toString(), t, head), proof, context);
        assert.equal(toHexString(proof.toBytes()), toHexString(bytes), context);
        assert.equal(toHexString(proof.leaf), toHexString(leaves[index]), context);

        // Tampered, relabelled, or checked against another tree: refused.
        const flipped = bytes.slice();
        flipped[rng.int(0, flipped.length - 1)] ^= 1 << rng.int(0, 7);
        mustReject(() => verifyMembership(flipped, t, head), `${context} flipped`);
        const leafAt = bytes.length - 32 * proof.siblings.length - 32;
        const swapped = bytes.slice();
        swapped.set(zero, leafAt);
        if (toHexString(zero) !== toHexString(proof.leaf)) mustReject(() => verifyMembership(swapped, t, head), `${context} leaf replaced by the zero`);
        if (at < size) mustReject(() => verifyMembership(bytes, t, { size: at + 1, root: rootOf(at + 1) }), `${context} relabelled size`);
        const kindMismatch = (other, what) => {
          const error = mustReject(() => verifyMembership(bytes, other, head), `${context} ${what}`);
          assert.equal(error.kind, "KindMismatch", `${context} ${what}: ${error.message}`);
        };
        kindMismatch({ ...t, depth: depth + 1 }, "deeper tree");
        kindMismatch(tree(arity, hash), "lean tree");
        kindMismatch({ ...t, zero: leaves[0] }, "another zero");

        // Consistency from `at` to a later size, and roll-forward.
        const to = rng.int(at, size);
        const cargs = ["consistency", db, "--from", String(at), "--to", String(to)];
        const link = new Uint8Array(run(...cargs, "--binary"));
        const newHead = { size: to, root: rootOf(to) };
        const decoded = verifyConsistency(link, t, head, newHead);
        assert.equal(toHexString(decoded.toBytes()), toHexString(link), context);
        assert.deepEqual(verifyConsistency(run(...cargs).toString(), t, head, newHead), decoded, context);
        const rolled = rollForward(proof, link, t, head, newHead);
        const fresh = run("prove", db, "--index", String(index), "--size", String(to), "--binary");
        assert.equal(toHexString(rolled.toBytes()), toHexString(fresh), `${context}: rolled ${index} from ${at} to ${to}`);
        if (decoded.hashes.length > 0) {
          const tampered = link.slice();
          tampered[rng.int(link.length - 32 * decoded.hashes.length, link.length - 1)] ^= 1 << rng.int(0, 7);
          mustReject(() => verifyConsistency(tampered, t, head, newHead), `${context} tampered consistency`);
        }
        if (to > at) mustReject(() => verifyConsistency(link, t, head, { size: to, root: rootOf(to - 1) }), `${context} wrong new root`);
      }
      // From the empty tree: only against the old head (0, zeros[depth]).
      const fromEmpty = new Uint8Array(run("consistency", db, "--from", "0", "--to", String(size), "--binary"));
      verifyConsistency(fromEmpty, t, { size: 0, root: rootOf(0) }, { size, root: rootOf(size) });
      mustReject(() => verifyConsistency(fromEmpty, t, { size: 0, root: zero }, { size, root: rootOf(size) }), `${context} empty head with the zero as root`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
