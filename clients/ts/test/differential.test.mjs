// Mutated JSON proofs, decided by this package and by `cairn verify`: both
// accept the same documents and reject the rest at the same stage (decode
// or verify). The known differences are pinned separately below.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CairnError, verifyConsistency, verifyMembership } from "cairn-verify";
import { cairnBinary, fromHex, random, seed, toHexString, tree, vectors } from "./helpers.mjs";

const binary = cairnBinary();
const CASES = Number(process.env.CAIRN_TS_DIFF_CASES ?? 300);
const proofs = vectors("proofs.json");

/** "accept", "decode" or "verify", as cairn's CLI decides (`entry.tree`: the trusted imt's {depth, zero}, if any). */
function rustStage(file, entry) {
  const common = ["--arity", String(entry.arity), "--hash", entry.hash];
  if (entry.tree !== undefined) common.push("--kind", "imt", "--depth", String(entry.tree.depth), "--zero", entry.tree.zero);
  const args =
    entry.json.kind === "membership"
      ? ["verify", ...common, "--root", entry.root, "--size", String(entry.size), file]
      : ["verify-consistency", ...common, "--old-size", String(entry.old_size), "--new-size", String(entry.new_size), ...(entry.new_root ? ["--new-root", entry.new_root] : []), ...(entry.old_root ? ["--old-root", entry.old_root] : []), file];
  const run = spawnSync(binary, args, { encoding: "utf8" });
  if (run.status === 0) return "accept";
  assert.equal(run.status, 1, `${args.join(" ")}: ${run.stderr}`);
  return /invalid proof:/.test(run.stderr) ? "decode" : "verify";
}

function tsStage(text, entry) {
  const trusted = entry.tree === undefined ? tree(entry.arity, entry.hash) : { ...tree(entry.arity, entry.hash), kind: "imt", ...entry.tree };
  try {
    if (entry.json.kind === "membership") verifyMembership(text, trusted, { size: entry.size, root: entry.root });
    else verifyConsistency(text, trusted, { size: entry.old_size, root: entry.old_root }, { size: entry.new_size, root: entry.new_root });
    return "accept";
  } catch (error) {
    assert.ok(error instanceof CairnError, String(error));
    return error.stage;
  }
}

/** Text-level mutations that keep JSON mostly well-formed: the interesting edge of the grammar and the schema. */
function mutate(rng, text) {
  const edits = [
    (t) => t.replace(/"version": ?1/, rng.pick(['"version": 1.0', '"version": 01', '"version": 1e0', '"version": -1', '"version": 18446744073709551617', '"version": "1"'])),
    (t) => t.replace(/"arity": ?(\d+)/, (_, n) => `"arity": ${rng.pick([`${n}.0`, `${n}e0`, `0${n}`, `-${n}`, `${n} `, `"${n}"`, "17", "1"])}`),
    (t) => t.replace(/"hash": ?"(\w+)"/, (_, h) => `"hash": ${rng.pick([`"${h.toUpperCase()}"`, `"${h} "`, `"\\u0062lake3"`, `"${h}"`, "null"])}`),
    (t) => t.replace(/"0x([0-9a-f])/, (_, d) => rng.pick([`"0X${d}`, `"0x${d.toUpperCase()}`, `"${d}`, `"0x\\u0030${d}`])),
    (t) => t.replace("{", rng.pick(['{"extra": 1, ', '{"version": 1, ', "{ ", '{"kind": "membership", '])),
    (t) => t.replace(/}$/, rng.pick(["} ", "}\n", "}}", "},", '} "x"', "}\u0000"])),
    (t) => t.replace(/\[\[/, rng.pick(["[ [", "[[ ", "[[]"])),
    (t) => t.replace(/"edge_leaf": ?"[^"]*",?/, rng.pick(["", '"edge_leaf": null,'])),
    (t) => t.replace(/"level": ?(\d+)/, (_, n) => `"level": ${rng.pick([`${n}.0`, `${Number(n) + 1}`, "4294967296", `"${n}"`])}`),
    (t) => t.replace(/"(index|old_size)": ?(\d+)/, (_, k, n) => `"${k}": ${rng.pick([`${Number(n) + 1}`, `${Math.max(0, Number(n) - 1)}`, "0", "18446744073709551615"])}`),
    (t) => t.replace(/"hash": ?"\w+",/, (whole) => whole + rng.pick(['"tree": null,', '"tree": {"kind": "imt", "depth": 3, "zero": "0x' + "00".repeat(32) + '"},'])),
  ];
  let out = text;
  for (let i = rng.int(1, 2); i > 0; i--) out = rng.pick(edits)(out);
  return out;
}

test(`mutated JSON proofs: same decision and stage as cairn verify (seed ${seed})`, { skip: binary === null && "no cairn binary" }, () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-diff-"));
  const entries = [...proofs.membership, ...proofs.consistency].filter((e) => e.hash !== "poseidon" || e.size < 100);
  const seen = { accept: 0, decode: 0, verify: 0 };
  try {
    for (let i = 0; i < CASES; i++) {
      const entry = rng.pick(entries);
      const text = mutate(rng, JSON.stringify(entry.json, null, rng.next() < 0.5 ? 1 : undefined));
      const file = join(dir, `case-${i}.json`);
      writeFileSync(file, text);
      const rust = rustStage(file, entry);
      const ts = tsStage(new TextEncoder().encode(text), entry);
      assert.equal(ts, rust, `case ${i} (seed ${seed}): cairn says ${rust}, this package ${ts}, for\n${text.slice(0, 600)}`);
      seen[rust]++;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.ok(seen.accept > 0 && seen.decode > 0 && seen.verify > 0, JSON.stringify(seen));
});

/** The proofs of imt.json, each with the tree it is of (what the verifier trusts) and its hash and arity. */
const imtEntries = vectors("imt.json").trees.flatMap((t) =>
  [...t.membership, ...t.consistency].map((entry) => ({ ...entry, hash: t.hash, arity: t.arity, tree: { depth: t.depth, zero: t.zero } })),
);

/** Mutations of a version 2 document's tree and version, on top of the generic ones. */
function mutateImt(rng, text) {
  const edits = [
    (t) => t.replace(/"version": ?2/, rng.pick(['"version": 1', '"version": 3', '"version": 2.0', '"version": 02'])),
    (t) => t.replace(/"depth": ?(\d+)/, (_, n) => `"depth": ${rng.pick([`${Number(n) + 1}`, `${Number(n) - 1}`, "0", "65", "4294967296", `"${n}"`, `${n}.0`])}`),
    (t) => t.replace(/"kind": ?"imt"/, rng.pick(['"kind": "lean"', '"kind": "IMT"', '"kind": null', '"kind": "imt", "x": 1'])),
    (t) => t.replace(/"zero": ?"0x([0-9a-f]{2})/, (_, d) => rng.pick([`"zero": "0x${d === "00" ? "01" : "00"}`, '"zero": "0xff', `"zero": "0X${d}`, `"zero": "${d}`])),
    (t) => t.replace(/"tree": ?\{[^}]*\},?/, rng.pick(["", '"tree": null,'])),
    (t) => t.replace(/"hash": ?"(\w+)",/, (whole) => whole + rng.pick(['"tree": {"kind": "imt", "depth": 3, "zero": "0x' + "00".repeat(32) + '"},', '"tree": null,', ""])),
  ];
  let out = text;
  for (let i = rng.int(1, 2); i > 0; i--) out = rng.next() < 0.6 ? rng.pick(edits)(out) : mutate(rng, out);
  return out;
}

test(`mutated imt proofs (JSON and single bit flips of the binary): same decision and stage as cairn verify --kind imt (seed ${seed})`, { skip: binary === null && "no cairn binary" }, () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-diff-imt-"));
  const entries = imtEntries.filter((e) => e.hash !== "mimcsponge" || (e.size ?? e.new_size) < 20);
  const seen = { accept: 0, decode: 0, verify: 0 };
  try {
    for (let i = 0; i < CASES; i++) {
      const entry = rng.pick(entries);
      let input;
      if (i % 2 === 0) {
        input = new TextEncoder().encode(mutateImt(rng, JSON.stringify(entry.json, null, rng.next() < 0.5 ? 1 : undefined)));
      } else {
        input = fromHex(entry.binary);
        input[rng.int(0, input.length - 1)] ^= 1 << rng.int(0, 7);
      }
      const file = join(dir, `case-${i}`);
      writeFileSync(file, input);
      const rust = rustStage(file, entry);
      const ts = tsStage(input, entry);
      const shown = i % 2 === 0 ? new TextDecoder().decode(input).slice(0, 600) : toHexString(input);
      assert.equal(ts, rust, `case ${i} (seed ${seed}): cairn says ${rust}, this package ${ts}, for\n${shown}`);
      seen[rust]++;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.ok(seen.accept > 0 && seen.decode > 0 && seen.verify > 0, JSON.stringify(seen));
});

test("consistency levels written as [level, left, right] arrays are refused (the spec's levels are objects)", () => {
  // cairn's Rust decoder (serde) also reads a struct from a JSON array, so it
  // accepts this positional form; this package keeps to the specified one.
  const entry = proofs.consistency.find((e) => e.json.levels.length > 1);
  const positional = { ...entry.json, levels: entry.json.levels.map((l) => [l.level, l.left, l.right]) };
  assert.throws(
    () => verifyConsistency(JSON.stringify(positional), tree(entry.arity, entry.hash), { size: entry.old_size, root: entry.old_root }, { size: entry.new_size, root: entry.new_root }),
    (error) => error instanceof CairnError && error.stage === "decode" && error.kind === "Json",
  );
});

test("an imt proof's tree written as a [kind, depth, zero] array is refused (the spec's tree is an object)", () => {
  // The same leniency of serde as for consistency levels: cairn reads a
  // struct from an array; this package keeps to the specified object.
  const entry = imtEntries.find((e) => e.json.kind === "membership" && e.size > 1);
  const { kind, depth, zero } = entry.json.tree;
  const positional = { ...entry.json, tree: [kind, depth, zero] };
  const trusted = { ...tree(entry.arity, entry.hash), kind: "imt", ...entry.tree };
  assert.throws(
    () => verifyMembership(JSON.stringify(positional), trusted, { size: entry.size, root: entry.root }),
    (error) => error instanceof CairnError && error.stage === "decode" && error.kind === "Json",
  );
  verifyMembership(JSON.stringify(entry.json), trusted, { size: entry.size, root: entry.root });
});
