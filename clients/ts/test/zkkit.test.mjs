// `cairn prove --proof-format zkkit` prints exactly what @zk-kit/lean-imt's
// generateProof returns for the same tree (JSON.stringify with bigints as
// decimal strings), for every hash, on random binary trees built by the
// Rust CLI; zk-kit's verifyProof accepts it and refuses it tampered.
//
// For BLAKE3, SHA-256 and Keccak-256 the zk-kit tree holds each 32-byte
// node as the bigint it reads as big-endian, and hashes (a, b) as
// H(be32(a) ‖ be32(b)) read the same way: the mapping cairn documents.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { LeanIMT } from "@zk-kit/lean-imt";
import { blake3 } from "@noble/hashes/blake3";
import { sha256 } from "@noble/hashes/sha2";
import { keccak_256 } from "@noble/hashes/sha3";
import { poseidon2 } from "poseidon-lite/poseidon2";
import { cairnBinary, random, seed } from "./helpers.mjs";

const binary = cairnBinary();
const TREES = Number(process.env.CAIRN_TS_TREES ?? 24);

const toBigInt = (bytes) => BigInt("0x" + (Buffer.from(bytes).toString("hex") || "0"));
const be32 = (value) => Buffer.from(value.toString(16).padStart(64, "0"), "hex");
const bytesHash = (digest) => (a, b) => toBigInt(digest(Buffer.concat([be32(a), be32(b)])));
const hashes = {
  poseidon: (a, b) => poseidon2([a, b]),
  blake3: bytesHash(blake3),
  sha256: bytesHash(sha256),
  keccak256: bytesHash(keccak_256),
};
const stringify = (proof) => JSON.stringify(proof, (_, v) => (typeof v === "bigint" ? v.toString() : v));
const parse = (text) => {
  const proof = JSON.parse(text);
  return { ...proof, root: BigInt(proof.root), leaf: BigInt(proof.leaf), siblings: proof.siblings.map(BigInt) };
};

test(`cairn's zkkit proofs are zk-kit's generateProof, byte for byte (seed ${seed}, CAIRN_TS_SEED to repeat)`, { skip: binary === null && "no cairn binary" }, () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-zkkit-"));
  const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 }).toString();
  try {
    for (let round = 0; round < TREES; round++) {
      const name = ["poseidon", "blake3", "sha256", "keccak256"][round % 4];
      const hash = hashes[name];
      const size = round < 4 ? round + 1 : rng.int(1, name === "poseidon" ? 200 : 600);
      // Top three bits cleared: canonical BN254 elements, valid for every hash.
      const leaves = Array.from({ length: size }, () => {
        const leaf = rng.bytes(32);
        leaf[0] &= 0x1f;
        return toBigInt(leaf);
      });
      // Poseidon trees read the decimal leaf file zk-kit users have.
      const file = join(dir, "leaves");
      const format = name === "poseidon" ? "dec" : "hex";
      writeFileSync(
        file,
        leaves.map((l) => (format === "dec" ? l.toString() : "0x" + l.toString(16).padStart(64, "0"))).join("\n") + "\n",
      );
      const context = `seed ${seed} round ${round}: ${name} size ${size}`;
      for (let sample = 0; sample < 4; sample++) {
        const at = rng.int(1, size);
        const index = sample === 0 ? at - 1 : rng.int(0, at - 1);
        const printed = run("prove", "--arity", "2", "--hash", name, "--format", format, "--leaves", file,
          "--index", String(index), "--size", String(at), "--proof-format", "zkkit");
        const zkkit = new LeanIMT(hash, leaves.slice(0, at));
        const expected = zkkit.generateProof(index);
        assert.equal(printed, stringify(expected) + "\n", `${context}: leaf ${index} of ${at}`);
        const proof = parse(printed);
        assert.ok(LeanIMT.verifyProof(proof, hash), `${context}: zk-kit refuses leaf ${index} of ${at}`);
        assert.equal(proof.root, zkkit.root);
        if (proof.siblings.length > 0) {
          const tampered = { ...proof, siblings: [...proof.siblings] };
          const at = rng.int(0, tampered.siblings.length - 1);
          tampered.siblings[at] ^= 1n;
          assert.ok(!LeanIMT.verifyProof(tampered, hash), `${context}: tampered sibling accepted`);
          assert.ok(!LeanIMT.verifyProof({ ...proof, index: proof.index ^ 1 }, hash), `${context}: flipped path accepted`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the zkkit format is refused for other arities, with a usage error", { skip: binary === null && "no cairn binary" }, () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-zkkit-"));
  try {
    const file = join(dir, "leaves.dec");
    writeFileSync(file, "1\n2\n3\n");
    let failure;
    try {
      execFileSync(binary, ["prove", "--arity", "3", "--hash", "poseidon", "--format", "dec", "--leaves", file,
        "--index", "0", "--proof-format", "zkkit"], { stdio: "pipe" });
    } catch (error) {
      failure = error;
    }
    assert.ok(failure, "arity 3 accepted");
    assert.equal(failure.status, 2);
    assert.match(failure.stderr.toString(), /zkkit format is for binary trees \(arity 2\), this tree has arity 3/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
