// The indexed absence template against cairn: every Poseidon absence proof
// of test-vectors/indexed.json satisfies IndexedAbsence (and the invalid
// one does not); the inputs `cairn prove --absent --proof-format circom`
// prints for random indexed trees, values near p - 1 and values above the
// last leaf included, satisfy it and equal the vectors' conversion of the
// same proof's JSON; and forged inputs (a low leaf that does not bracket
// the value, a stored value, the guard's 0, a changed path, root, size or
// index, a pointer rewritten to the end marker, a stored value written as
// its integer plus p) have no witness. FieldLessThan, the whole-field
// comparison, is checked on the values where a 252-bit comparison breaks,
// and a prover who decomposes a stored value as its integer plus p (to
// pass it off as above the largest leaf) is refused by Num2Bits_strict's
// alias check: the same R1CS with only that witness hint changed has no
// witness, and without the alias check it would.
//
// Default circuits: N = 2 and 4 (vectors and live trees); N = 16 (its
// vectors) compiles for a minute, so it runs with CAIRN_CIRCUIT_DEPTHS=full,
// which also deepens the live circuits.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { absence, compile, root as circuits } from "../scripts/circom.mjs";
import { P, accepts, binary, endCurve, full, load, random, refuses, run, seed, withTree } from "../scripts/harness.mjs";

// The vectors' trees have 18 leaves: depth 5 at N = 2, 3 at N = 4, 2 at N = 16.
const DEPTHS = full ? { 2: 12, 4: 6, 16: 2 } : { 2: 5, 4: 3 };

after(endCurve);

const vectors = JSON.parse(readFileSync(`${circuits}../test-vectors/indexed.json`, "utf8"));
const dec = (hex) => BigInt(hex).toString();

/**
 * The circuit inputs of an absence proof in cairn's JSON (docs/spec.md
 * section 12.4) for a circuit of `depth` levels, written from the spec
 * alone (the shape of section 4), as a check on cairn's own rendering: one
 * row per level, a hashing level's siblings padded with "0"s, a lifted
 * level and the levels above the root all "0"s.
 */
function inputsOf(proof, root, depth) {
  const width = proof.arity - 1;
  const rows = [];
  const hashing = [...proof.siblings];
  let index = BigInt(proof.low_index);
  let size = BigInt(proof.size);
  const n = BigInt(proof.arity);
  while (size > 1n) {
    const last = size - 1n;
    const members = index / n === last / n ? (last % n) + 1n : n;
    const row = members > 1n ? hashing.shift().map(dec) : [];
    rows.push([...row, ...Array(width - row.length).fill("0")]);
    index /= n;
    size = (size + n - 1n) / n;
  }
  assert.equal(hashing.length, 0, "every hashing level has a row");
  while (rows.length < depth) rows.push(Array(width).fill("0"));
  return {
    root: dec(root),
    size: String(proof.size),
    value: dec(proof.value),
    lowValue: dec(proof.low_leaf.value),
    lowNextIndex: String(proof.low_leaf.next_index),
    lowNextValue: dec(proof.low_leaf.next_value),
    lowIndex: String(proof.low_index),
    siblings: rows,
  };
}

const circuitsLoaded = new Map();
async function circuit(arity, depth) {
  const name = `absence_${arity}_${depth}`;
  if (!circuitsLoaded.has(name)) circuitsLoaded.set(name, load(compile(name, absence(arity, depth))));
  return circuitsLoaded.get(name);
}

const bump = (value) => String((BigInt(value) + 1n) % P);
const tampered = (input, change) => {
  const copy = structuredClone(input);
  change(copy);
  return copy;
};

for (const arity of Object.keys(DEPTHS).map(Number)) {
  test(`IndexedAbsence(${arity}, ${DEPTHS[arity]}) accepts the vectors' absence proofs and refuses the invalid one`, async () => {
    const c = await circuit(arity, DEPTHS[arity]);
    const valid = vectors.proofs.filter((v) => v.kind === "absence" && v.hash === "poseidon" && v.arity === arity);
    assert.ok(valid.length >= 3, `the vectors hold Poseidon absence proofs at N = ${arity}`);
    for (const v of valid) {
      assert.equal(v.json.value, v.value);
      await accepts(c, inputsOf(v.json, v.trusted.root, DEPTHS[arity]), v.name, true);
    }
    const invalid = vectors.invalid.filter((v) => v.kind === "absence" && v.hash === "poseidon" && v.arity === arity);
    if (arity === 2) assert.ok(invalid.length >= 1, "the vectors hold an invalid Poseidon absence proof at N = 2");
    for (const v of invalid) {
      assert.ok(v.json, `${v.name}: a JSON proof`);
      await refuses(c, inputsOf(v.json, v.trusted.root, DEPTHS[arity]), v.name);
    }
  });
}

test("FieldLessThan orders the whole field, where LessThan(252) cannot", async () => {
  const c = await load(compile("field_less_than", 'include "../../indexed.circom";\ncomponent main = FieldLessThan();'));
  const top = P - 1n;
  const values = [0n, 1n, 2n, (1n << 127n) - 1n, 1n << 127n, (1n << 127n) + 1n, (1n << 252n) - 1n, 1n << 252n,
    (1n << 253n) - 1n, 1n << 253n, (1n << 253n) + 1n, top - (1n << 127n), top - 1n, top];
  const rng = random(seed + 7);
  for (let i = 0; i < 6; i++) values.push(rng.element());
  for (const a of values) {
    for (const b of values) {
      // Signal 0 is the constant 1, then the output.
      const out = (await accepts(c, { in: [String(a), String(b)] }, `${a} < ${b}`))[1];
      assert.equal(out, a < b ? 1n : 0n, `FieldLessThan(${a}, ${b})`);
    }
  }
});

/** Random values across the field and next to p - 1, without repeats. */
function liveValues(rng, count) {
  const values = new Set([P - 3n, P - 6n, 5n]);
  while (values.size < count) values.add(rng.int(0, 1) ? rng.element() : rng.field());
  return [...values];
}

for (const arity of [2, 4]) {
  const depth = DEPTHS[arity];
  test(`IndexedAbsence(${arity}, ${depth}) accepts cairn's inputs and refuses forged ones (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async () => {
    const c = await circuit(arity, depth);
    const rng = random(seed + 31 * arity);
    await withTree(async (dir) => {
      const db = join(dir, "set");
      run("init", db, "--kind", "indexed", "--arity", String(arity), "--hash", "poseidon");
      // Within the circuit: the guard and the values fill at most N^depth leaves.
      const stored = liveValues(rng, Math.min(arity ** depth - 1, 40));
      writeFileSync(join(dir, "values.dec"), stored.join("\n") + "\n");
      run("ingest", db, join(dir, "values.dec"), "--format", "dec");
      const head = JSON.parse(run("root", db, "--json"));
      const hex = (v) => "0x" + v.toString(16).padStart(64, "0");
      const prove = (value) => JSON.parse(run("prove", db, "--absent", hex(value), "--proof-format", "circom", "--circuit-depth", String(depth)));
      const proofJson = (value) => JSON.parse(run("prove", db, "--absent", hex(value)));

      const storedSet = new Set(stored);
      const sorted = [...stored].sort((a, b) => (a < b ? -1 : 1));
      const absent = new Set([1n, P - 1n, P - 2n, P - 4n, P - 5n, 4n, 6n]);
      while (absent.size < 14) absent.add(rng.int(0, 1) ? rng.element() : rng.field());
      // Just above and below stored values.
      for (const v of sorted.slice(0, 4)) absent.add(v + 1n).add(v - 1n);
      const proofs = new Map();
      let checked = 0;
      for (const x of [...absent].filter((v) => v > 0n && v < P && !storedSet.has(v))) {
        const input = prove(x);
        assert.deepEqual(input, inputsOf(proofJson(x), head.root, depth), `${x}: cairn's inputs are the spec's rendering of its proof`);
        assert.equal(input.value, String(x));
        assert.equal(input.size, String(head.size));
        await accepts(c, input, `absence of ${x}`, checked++ < 2);
        proofs.set(x, input);
      }
      // Above the last leaf (p - 3): the end marker; between p - 6 and p - 3.
      assert.equal(proofs.get(P - 1n).lowValue, String(P - 3n));
      assert.equal(proofs.get(P - 1n).lowNextValue, "0");
      assert.equal(proofs.get(P - 1n).lowNextIndex, "0");
      assert.equal(proofs.get(P - 4n).lowValue, String(P - 6n));
      assert.equal(proofs.get(P - 4n).lowNextValue, String(P - 3n));
      // Below every value: the guard leaf.
      assert.equal(proofs.get(1n).lowIndex, "0");
      assert.equal(proofs.get(1n).lowValue, "0");

      // A low leaf that does not bracket the value: another absent value's.
      const between = proofs.get(P - 4n);
      const last = proofs.get(P - 1n);
      const guard = proofs.get(1n);
      await refuses(c, { ...between, value: String(P - 1n) }, "a value above the low leaf's successor");
      await refuses(c, { ...last, value: String(P - 4n) }, "a value below the low leaf's value");
      await refuses(c, { ...guard, value: String(P - 2n) }, "the guard's bracket for a large value");
      // A stored value: its own leaf (low value = x) and its predecessor's (x = next value).
      await refuses(c, { ...between, value: between.lowValue }, "a stored value against its own leaf");
      await refuses(c, { ...between, value: between.lowNextValue }, "a stored value against its predecessor's leaf");
      await refuses(c, { ...last, value: last.lowValue }, "the largest stored value against its own leaf");
      await refuses(c, { ...guard, value: "0" }, "the guard's value 0");
      // The same stored value given as its integer plus p: the input is
      // the field element it reduces to, which is stored, so it is refused.
      await refuses(c, { ...between, value: String(P - 3n + P) }, "a stored value written as itself plus p");
      await refuses(c, { ...last, value: String(P - 3n + P) }, "a stored value plus p against the last leaf");
      // p itself is the element 0: the guard's value.
      await refuses(c, { ...guard, value: String(P) }, "p, which is 0");
      // The predecessor's pointer rewritten to the end marker (claims to be the last).
      await refuses(c, { ...between, value: String(P - 1n), lowNextValue: "0", lowNextIndex: "0" }, "a pointer rewritten to the end marker");
      await refuses(c, { ...between, lowNextValue: String(P - 2n) }, "a raised next value");
      // The path: a sibling, the root, the size, the index.
      const level = between.siblings.findIndex((row) => row.some((v) => v !== "0"));
      const slot = between.siblings[level].findIndex((v) => v !== "0");
      await refuses(c, tampered(between, (i) => (i.siblings[level][slot] = bump(i.siblings[level][slot]))), "a changed sibling");
      await refuses(c, tampered(between, (i) => (i.root = bump(i.root))), "a changed root");
      // (A size that keeps the path's shape folds to the same root, as in
      // LeanIMTInclusion: the verifier trusts the (size, root) pair.)
      await refuses(c, tampered(between, (i) => (i.size = i.lowIndex)), "a size that does not reach the low leaf");
      await refuses(c, tampered(between, (i) => (i.lowIndex = String((Number(i.lowIndex) + 1) % Number(i.size)))), "another low index");
      await refuses(c, tampered(between, (i) => (i.lowNextIndex = String(Number(i.lowNextIndex) + 1))), "another next index");
      // A stored value's own membership, presented as an absence.
      const member = sorted[sorted.length - 2];
      const memberProof = JSON.parse(run("prove", db, "--leaf", hex(member)));
      const asAbsence = inputsOf(
        { ...memberProof, value: hex(member + 1n), low_index: memberProof.index, low_leaf: memberProof.leaf },
        head.root,
        depth,
      );
      await accepts(c, asAbsence, "the leaf as the low leaf of the value above it");
      await refuses(c, { ...asAbsence, value: String(member) }, "the leaf's own value");
    });
  });
}

/**
 * A prover who decomposes `value` as its integer plus p (the second 254-bit
 * decomposition of every element below 2^254 - p): IndexedAbsence with only
 * that decomposition's witness hint changed, and with `strict` false its
 * alias check left out too, as a circuit on plain Num2Bits(254) would be.
 */
function aliasedAbsence(arity, depth, strict) {
  const source = readFileSync(`${circuits}indexed.circom`, "utf8");
  const template = /template IndexedAbsence\(N, MAX_DEPTH\) \{[\s\S]*?\n\}\n/.exec(source)[0];
  const line = "(x[0], x[1]) <== CanonicalHalves()(value);";
  assert.ok(template.includes(line), "IndexedAbsence decomposes value with CanonicalHalves");
  const forged = template.replace("IndexedAbsence(N, MAX_DEPTH)", "AliasedAbsence(N, MAX_DEPTH)").replace(line, "(x[0], x[1]) <== AliasedHalves()(value);");
  return `include "../../indexed.circom";
// Num2Bits(254) whose hint is the bits of in + p (in + (p - 1) + 1, with
// p - 1 = -1 in the field), a carry rippling through.
template AliasedBits() {
    signal input in;
    signal output out[254];
    var lc = 0;
    var e2 = 1;
    var carry = 1;
    for (var i = 0; i < 254; i++) {
        var s = ((in >> i) & 1) + ((-1 >> i) & 1) + carry;
        out[i] <-- s % 2;
        carry = s \\ 2;
        out[i] * (out[i] - 1) === 0;
        lc += out[i] * e2;
        e2 = e2 + e2;
    }
    lc === in;
}
// Num2Bits_strict's constraints (AliasCheck, then Num2Bits) over the aliased hint.
template AliasedStrict() {
    signal input in;
    signal output out[254];
    component aliasCheck = AliasCheck();
    component n2b = AliasedBits();
    in ==> n2b.in;
    for (var i = 0; i < 254; i++) {
        n2b.out[i] ==> out[i];
        ${strict ? "n2b.out[i] ==> aliasCheck.in[i];" : "0 ==> aliasCheck.in[i];"}
    }
}
template AliasedHalves() {
    signal input in;
    signal output high;
    signal output low;
    signal bits[254] <== AliasedStrict()(in);
    var lowSum = 0;
    var highSum = 0;
    var scale = 1;
    for (var i = 0; i < 127; i++) {
        lowSum += bits[i] * scale;
        highSum += bits[127 + i] * scale;
        scale *= 2;
    }
    low <== lowSum;
    high <== highSum;
}
${forged}
component main {public [root, size, value]} = AliasedAbsence(${arity}, ${depth});`;
}

test("a stored value decomposed as its integer plus p is refused by the alias check alone", { skip: binary === null && "no cairn binary" }, async () => {
  const [arity, depth] = [2, DEPTHS[2]];
  const honest = await circuit(arity, depth);
  const aliased = await load(compile(`aliased_absence_${arity}_${depth}`, aliasedAbsence(arity, depth, true)));
  const unchecked = await load(compile(`unchecked_absence_${arity}_${depth}`, aliasedAbsence(arity, depth, false)));
  // The forging prover's circuit is the honest one: the same R1CS.
  assert.deepEqual(readFileSync(aliased.r1cs), readFileSync(honest.r1cs), "only the witness hint differs");
  await withTree(async (dir) => {
    const db = join(dir, "set");
    run("init", db, "--kind", "indexed", "--arity", String(arity), "--hash", "poseidon");
    const stored = 12345n;
    writeFileSync(join(dir, "values.dec"), `${stored}\n${P - 3n}\n`);
    run("ingest", db, join(dir, "values.dec"), "--format", "dec");
    // The largest leaf, p - 3, with the end marker: it brackets every
    // integer above p - 3, such as the stored value plus p.
    const last = JSON.parse(run("prove", db, "--absent", "0x" + (P - 1n).toString(16), "--proof-format", "circom", "--circuit-depth", String(depth)));
    assert.equal(last.lowNextValue, "0");
    const forged = { ...last, value: String(stored) };
    // Without the alias check the forgery goes through: the stored value "is absent".
    await accepts(unchecked, forged, "the aliased decomposition without an alias check");
    await refuses(aliased, forged, "the aliased decomposition under Num2Bits_strict");
    await refuses(honest, forged, "the stored value, honestly decomposed");
  });
});
