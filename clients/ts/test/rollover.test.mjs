// Rollover families against a real `cairn serve` (started here): the
// rule of each family as `GET /v1/trees` lists it, and `placeBlock`'s
// prediction of where each random block's values go compared with the
// server's answer, block by block, under the whole-batch rule (a block
// that does not fit starts the next member whole, leaving the last one
// short) and the split rule; each member's root checked against the
// values predicted for it; a block larger than one member refused by both;
// and `familyOf` after a restart agreeing with the members tracked.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CairnClient, CairnError, computeRoot, familyOf, hashers, placeBlock, toHex } from "cairn-verify";
import { cairnBinary, random, seed, serveCairn } from "./helpers.mjs";

const binary = cairnBinary();
const CAPACITY = 5;

test("placeBlock predicts the server's rollover under the whole-batch and split rules", { skip: binary === null && "no cairn binary" }, async () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-rollover-"));
  const db = join(dir, "db");
  const treeOf = { arity: 2, hash: hashers.blake3 };
  execFileSync(binary, ["init", db]);
  execFileSync(binary, ["tree", "add", db, "whole", "--arity", "2", "--hash", "blake3", "--capacity", String(CAPACITY), "--rollover", "whole-batch"]);
  execFileSync(binary, ["tree", "add", db, "split", "--arity", "2", "--hash", "blake3", "--capacity", String(CAPACITY), "--rollover", "split"]);
  execFileSync(binary, ["tree", "add", db, "plain", "--arity", "2", "--hash", "blake3"]);
  let server = await serveCairn(binary, db);
  try {
    let client = new CairnClient(server.url, treeOf);
    const listed = await client.trees();
    const byName = Object.fromEntries(listed.trees.map((t) => [t.name, t]));
    assert.equal(byName.whole.capacity, BigInt(CAPACITY));
    assert.equal(byName.whole.rollover, "whole-batch");
    assert.equal(byName.split.rollover, "split");
    assert.equal(byName.plain.capacity, null);
    assert.equal(byName.plain.rollover, null);
    assert.throws(() => familyOf(listed, "plain"), (e) => e instanceof CairnError && e.kind === "InvalidArgument");

    const families = { whole: familyOf(listed, "whole"), split: familyOf(listed, "split") };
    const last = { whole: families.whole.last, split: families.split.last };
    assert.deepEqual(last.whole, { member: 0, size: 0n });
    // The values of each member, as predicted: their roots are checked.
    const held = { whole: [[]], split: [[]] };
    let rolledWhole = 0;
    for (let number = 1; number <= 14; number++) {
      // Blocks 1 and 2 of 3 values each: the second does not fit in the 2
      // left, and starts member 1 whole. Random counts after.
      const counts = { whole: number <= 2 ? 3 : rng.int(0, CAPACITY), split: rng.int(0, 2 * CAPACITY) };
      const values = Object.fromEntries(Object.entries(counts).map(([name, count]) => [name, Array.from({ length: count }, () => rng.bytes(32))]));
      const predicted = Object.fromEntries(Object.keys(counts).map((name) => [name, placeBlock(name, families[name], last[name], counts[name])]));
      const answer = await client.appendBlock({ number, trees: values });
      for (const name of Object.keys(counts)) {
        const got = answer.trees.filter((t) => t.name === name || t.name.startsWith(`${name}/`)).map((t) => [t.name, t.firstIndex, t.count]);
        const want = predicted[name].map((p) => [p.name, p.firstIndex, p.count]);
        assert.deepEqual(got, want, `block ${number}, family ${name}, ${counts[name]} values from ${JSON.stringify(last[name], (_, v) => (typeof v === "bigint" ? String(v) : v))} (seed ${seed})`);
        let at = 0;
        for (const part of predicted[name]) {
          const share = values[name].slice(at, at + Number(part.count));
          at += share.length;
          (held[name][part.member] ??= []).push(...share);
          const reported = answer.trees.find((t) => t.name === part.name);
          assert.equal(reported.size, part.firstIndex + part.count);
          if (reported.size > 0n) assert.equal(toHex(reported.root), toHex(computeRoot(held[name][part.member], treeOf)), `block ${number}: ${part.name}'s root`);
        }
        const end = predicted[name][predicted[name].length - 1];
        if (name === "whole" && predicted[name].length > 1 && last.whole.size < BigInt(CAPACITY)) rolledWhole++;
        last[name] = { member: end.member, size: end.firstIndex + end.count };
      }
    }
    assert.ok(rolledWhole > 0, `no whole-batch rollover left a member short (seed ${seed})`);
    // The members the blocks made are served at once, with no restart:
    // listed, and each answering under its own name (NAME/K).
    const live = await client.trees();
    for (const name of ["whole", "split"]) {
      const family = familyOf(live, name);
      assert.deepEqual(family.last, last[name], `${name}, served live`);
      for (const member of family.members) {
        const k = member.name === name ? 0 : Number(member.name.split("/")[1]);
        const head = await client.forTree(member.name).root();
        assert.equal(toHex(head.root), toHex(computeRoot(held[name][k], treeOf)), `${member.name}, served live`);
      }
    }
    // The whole-batch rule never splits a block: more than a member holds
    // is refused by the prediction and by the server, which writes nothing.
    const tooMany = CAPACITY + 1;
    assert.throws(() => placeBlock("whole", families.whole, last.whole, tooMany), (e) => e instanceof CairnError && /at most 5/.test(e.message));
    await assert.rejects(
      client.appendBlock({ number: 15, trees: { whole: Array.from({ length: tooMany }, () => rng.bytes(32)) } }),
      (e) => e instanceof CairnError && e.status === 400 && /at most 5/.test(e.message),
    );
    // After a restart the server lists every member: familyOf finds the
    // last one where the blocks left it.
    await server.stop();
    server = await serveCairn(binary, db);
    client = new CairnClient(server.url, treeOf);
    const again = await client.trees();
    for (const name of ["whole", "split"]) {
      const family = familyOf(again, name);
      assert.deepEqual(family.last, last[name], name);
      assert.equal(family.members.length, last[name].member + 1);
      for (const member of family.members) {
        const k = member.name === name ? 0 : Number(member.name.split("/")[1]);
        assert.equal(toHex(member.root), toHex(computeRoot(held[name][k], treeOf)), member.name);
      }
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("placeBlock: each rule by hand, and refusals", () => {
  const rule = (rollover) => ({ capacity: 4n, rollover, emptySize: 0n });
  const parts = (placed) => placed.map((p) => [p.name, p.member, p.firstIndex, p.count]);
  // 3 of 4 held, 2 more: split fills member 0 and starts member 1 ...
  assert.deepEqual(parts(placeBlock("rg", rule("split"), { member: 0, size: 3n }, 2)), [
    ["rg", 0, 3n, 1n],
    ["rg/1", 1, 0n, 1n],
  ]);
  // ... whole-batch leaves member 0 short and puts both in member 1.
  assert.deepEqual(parts(placeBlock("rg", rule("whole-batch"), { member: 0, size: 3n }, 2)), [
    ["rg", 0, 3n, 0n],
    ["rg/1", 1, 0n, 2n],
  ]);
  // A block that fits stays whole in the last member under every rule.
  for (const rollover of ["none", "split", "whole-batch"]) {
    assert.deepEqual(parts(placeBlock("rg", rule(rollover), { member: 2, size: 1n }, 3)), [["rg/2", 2, 1n, 3n]]);
  }
  // Split spans as many members as the values need.
  assert.deepEqual(parts(placeBlock("rg", rule("split"), { member: 0, size: 4n }, 9)), [
    ["rg", 0, 4n, 0n],
    ["rg/1", 1, 0n, 4n],
    ["rg/2", 2, 0n, 4n],
    ["rg/3", 3, 0n, 1n],
  ]);
  // An indexed family's members start after their guard leaf.
  assert.deepEqual(parts(placeBlock("nf", { capacity: 4n, rollover: "whole-batch", emptySize: 1n }, { member: 0, size: 3n }, 3)), [
    ["nf", 0, 3n, 0n],
    ["nf/1", 1, 1n, 3n],
  ]);
  const refusal = (body, pattern) => assert.throws(body, (e) => e instanceof CairnError && e.stage === "input" && pattern.test(e.message));
  refusal(() => placeBlock("rg", rule("none"), { member: 0, size: 3n }, 2), /holds at most 4/);
  refusal(() => placeBlock("rg", rule("whole-batch"), { member: 0, size: 0n }, 5), /at most 4/);
  refusal(() => placeBlock("rg", rule("sideways"), { member: 0, size: 0n }, 1), /rollover/);
  refusal(() => placeBlock("rg", rule("split"), { member: 0, size: 5n }, 1), /last member size/);
});
