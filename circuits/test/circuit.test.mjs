// The circom template against cairn: for arities 2, 3, 4, 8 and 16, the
// inputs `cairn prove --proof-format circom` prints for random Poseidon
// trees give a witness that satisfies every constraint (snarkjs wtns
// check), and tampered inputs (a changed sibling, leaf, root, index or
// size, a relabelled shape, an internal node presented as a leaf, a
// non-zero unused slot, index >= size, size 0) have none. At N = 2 the
// `zkkit-circom` inputs give zk-kit's BinaryMerkleRoot the same root.
//
// Depths are small by default (the circuit compiles in wasm); set
// CAIRN_CIRCUIT_DEPTHS=full for deeper circuits (minutes and gigabytes).
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { binaryMerkleRoot, compile, includes, inclusion, root } from "../scripts/circom.mjs";
import { P, accepts, binary, endCurve, full, load, random, refuses, run, seed, withTree } from "../scripts/harness.mjs";

const DEPTHS = full ? { 2: 16, 3: 8, 4: 6, 8: 4, 16: 3 } : { 2: 4, 3: 3, 4: 3, 8: 2, 16: 2 };

// snarkjs keeps the curve's worker threads alive; end them so node exits.
after(endCurve);

function prover(dir, arity, leaves) {
  const file = join(dir, `leaves-${arity}-${leaves.length}.dec`);
  writeFileSync(file, leaves.map(String).join("\n") + "\n");
  return (format, index, size, depth) =>
    JSON.parse(run("prove", "--arity", String(arity), "--hash", "poseidon", "--format", "dec", "--leaves", file,
      "--index", String(index), "--size", String(size), "--proof-format", format, "--circuit-depth", String(depth)));
}

test("the README compiles with the npm circom2 as these tests do: circomlib's include path relative to the directory it runs in", () => {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const commands = readme.split("\n").filter((line) => line.startsWith("npx circom2 "));
  assert.equal(commands.length, 1, "the README has one circom2 command");
  const paths = [...commands[0].matchAll(/-l (\S+)/g)].map((match) => match[1]);
  // circom2 sees only its current directory: an absolute or parent path is "not found".
  assert.deepEqual(paths, [includes[0]], commands[0]);
  assert.ok(!readme.includes("<circomlib>/circuits"), "no include path outside the project");
});

for (const arity of [2, 3, 4, 8, 16]) {
  const depth = DEPTHS[arity];
  test(`LeanIMTInclusion(${arity}, ${depth}) accepts cairn's inputs and refuses tampered ones (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async () => {
    const circuit = await load(compile(`inclusion_${arity}_${depth}`, inclusion(arity, depth)));
    const rng = random(seed + arity);
    const capacity = arity ** depth;
    const leaves = Array.from({ length: Math.min(capacity, 300) }, () => rng.field());
    await withTree(async (dir) => {
      const prove = prover(dir, arity, leaves);
      const sizes = [...new Set([1, 2, arity - 1, arity, arity + 1, arity * arity + 1, rng.int(1, leaves.length), leaves.length - 1, leaves.length])]
        .filter((s) => s >= 1 && s <= leaves.length);
      for (const size of sizes) {
        for (const index of new Set([0, size - 1, rng.int(0, size - 1)])) {
          const input = prove("circom", index, size, depth);
          assert.equal(input.siblings.length, depth);
          // snarkjs checks the R1CS itself for the largest tree's proofs.
          await accepts(circuit, input, `N=${arity} leaf ${index} of ${size}`, size === leaves.length);
        }
      }

      // One proof with hashing and (where the tree has them) lifted levels.
      const size = Math.min(leaves.length, arity * arity + 1);
      const index = size - 2;
      const good = prove("circom", index, size, depth);
      await accepts(circuit, good, "the untampered proof");
      const bump = (value) => String((BigInt(value) + 1n) % P);
      const tampered = (change) => {
        const input = structuredClone(good);
        change(input);
        return input;
      };
      const level = good.siblings.findIndex((row) => row.some((v) => v !== "0"));
      const slot = good.siblings[level].findIndex((v) => v !== "0");
      await refuses(circuit, tampered((i) => (i.siblings[level][slot] = bump(i.siblings[level][slot]))), "changed sibling");
      await refuses(circuit, tampered((i) => (i.leaf = bump(i.leaf))), "changed leaf");
      await refuses(circuit, tampered((i) => (i.root = bump(i.root))), "changed root");
      await refuses(circuit, tampered((i) => (i.index = String(index + 1))), "relabelled index");
      await refuses(circuit, tampered((i) => (i.index = String(index - 1))), "relabelled index below");
      // Relabelled to another size, against that size's root (against the
      // same root a relabelling that keeps the shape computes the same
      // root: a verifier trusts (size, root) pairs, never a root alone).
      for (const other of [size - 1, size + 1].filter((s) => s > index && s <= leaves.length)) {
        const root = prove("circom", index, other, depth).root;
        await refuses(circuit, tampered((i) => Object.assign(i, { size: String(other), root })), `relabelled to size ${other}`);
      }
      await refuses(circuit, tampered((i) => (i.index = i.size)), "index equal to size");
      await refuses(circuit, tampered((i) => (i.size = "0")), "size 0");
      await refuses(circuit, tampered((i) => (i.size = String(capacity + 1))), "size beyond the circuit");
      // A zero slot made non-zero: a padding slot, a lifted level's row or a level above the root.
      for (const [k, row] of good.siblings.entries()) {
        const free = row.findIndex((v) => v === "0");
        if (free >= 0) {
          await refuses(circuit, tampered((i) => (i.siblings[k][free] = "1")), `non-zero unused slot at level ${k}`);
        }
      }
      // The same siblings moved to another level, as a prover picking a shape would.
      if (level + 1 < depth) {
        await refuses(circuit, tampered((i) => i.siblings.splice(level, 0, i.siblings.pop())), "siblings shifted up a level");
      }
    });
  });
}

test("an internal node presented as a leaf proves nothing about the trusted size", { skip: binary === null && "no cairn binary" }, async () => {
  // [l0, l1, l2, l3] at N = 2 has the root of [l0, l1, H(l2, l3)]: a proof
  // of H(l2, l3) as leaf 2 holds for size 3 only, and size is public.
  const depth = DEPTHS[2];
  const circuit = await load(compile(`inclusion_2_${depth}`, inclusion(2, depth)));
  const rng = random(seed);
  await withTree(async (dir) => {
    const leaves = [rng.field(), rng.field(), rng.field(), rng.field()];
    const pair = join(dir, "pair.dec");
    writeFileSync(pair, `${leaves[2]}\n${leaves[3]}\n`);
    const node = BigInt(JSON.parse(run("root", "--arity", "2", "--hash", "poseidon", "--format", "dec", "--json", pair)).root);
    const honest = prover(dir, 2, leaves)("circom", 2, 4, depth);
    const forged = prover(dir, 2, [leaves[0], leaves[1], node])("circom", 2, 3, depth);
    assert.equal(forged.root, honest.root, "the forgery computes the 4-leaf root");
    await accepts(circuit, forged, "the forgery against its own size");
    await refuses(circuit, { ...forged, size: "4" }, "the forgery against the trusted size 4");
    await refuses(circuit, { ...forged, size: "4", index: "1" }, "the forgery as leaf 1 of 4");
  });
});

test("at N = 2 cairn's zkkit-circom inputs give zk-kit's BinaryMerkleRoot the tree's root", { skip: binary === null && "no cairn binary" }, async () => {
  const depth = DEPTHS[2];
  const circuit = await load(compile(`binary_merkle_root_${depth}`, binaryMerkleRoot(depth)));
  const rng = random(seed + 100);
  const leaves = Array.from({ length: 2 ** depth }, () => rng.field());
  await withTree(async (dir) => {
    const prove = prover(dir, 2, leaves);
    for (let round = 0; round < 12; round++) {
      const size = round === 0 ? 1 : rng.int(1, leaves.length);
      const index = round % 2 === 0 ? size - 1 : rng.int(0, size - 1);
      const ours = prove("circom", index, size, depth);
      const input = prove("zkkit-circom", index, size, depth);
      const values = await accepts(circuit, input, `leaf ${index} of ${size}`, round < 2);
      // Signal 0 is the constant 1, then the outputs: `out`, the root.
      assert.equal(values[1].toString(), ours.root, `leaf ${index} of ${size}: BinaryMerkleRoot's root`);
      const other = structuredClone(input);
      if (other.siblings.length > 0 && Number(other.depth) > 0) {
        other.siblings[0] = String((BigInt(other.siblings[0]) + 1n) % P);
        const changed = await accepts(circuit, other, "a changed sibling still computes a root");
        assert.notEqual(changed[1].toString(), ours.root, "a changed sibling gives another root");
      }
    }
  });
});
