// Indexed trees (docs/spec.md section 12): leaves (value, next_index,
// next_value) sorted as a linked list under the LeanIMT, with a guard leaf
// 0. Decoders of the absence proof, the indexed membership proof and the
// insertion witness (binary kinds 3..5 and their JSON), their verifiers,
// and the root of an indexed tree from its values in insertion order,
// written from the spec alone (a second implementation beside the Rust
// one, compared through test-vectors/indexed.json).

import { equalBytes, hashArgument, parseProofHash, readU64, toHex, U64_MAX, u64Argument, type Hash } from "./bytes.js";
import { CairnError, decodeError, inputError, verifyError } from "./errors.js";
import { HASH_IDS, HASH_NAMES, type Hasher, type HashName } from "./hasher.js";
import { groupParent } from "./kind.js";
import { asUnsigned, describe, fromJsValue, parseJson, type JsonValue } from "./json.js";
import { FORMAT_VERSION } from "./proof.js";
import { membershipSiblingCount, path } from "./shape.js";
import type { TreeHead, TrustedTree } from "./verify.js";

const KIND_ABSENCE = 3;
const KIND_INDEXED_MEMBERSHIP = 4;
const KIND_INSERTION = 5;
const KIND_NAMES: Record<number, string> = {
  1: "membership",
  2: "consistency",
  3: "absence",
  4: "indexed_membership",
  5: "insertion",
};
const LEAF_BYTES = 72;
const STEP_FIXED_BYTES = 32 + 8 + LEAF_BYTES;

/** A leaf of an indexed tree before hashing. */
export interface IndexedLeaf {
  readonly value: Hash;
  readonly nextIndex: bigint;
  readonly nextValue: Hash;
}

/** A proof that `value` is not in the indexed tree of `size` leaves. */
export interface AbsenceProof {
  readonly kind: "absence";
  readonly arity: number;
  readonly hash: HashName;
  readonly value: Hash;
  readonly size: bigint;
  readonly lowIndex: bigint;
  readonly low: IndexedLeaf;
  readonly siblings: readonly Hash[];
}

/** A proof that leaf `index` of the indexed tree of `size` leaves is `leaf`. */
export interface IndexedMembershipProof {
  readonly kind: "indexed_membership";
  readonly arity: number;
  readonly hash: HashName;
  readonly index: bigint;
  readonly size: bigint;
  readonly leaf: IndexedLeaf;
  readonly siblings: readonly Hash[];
}

/** One insertion of a witness, into the tree of `oldSize + position` leaves. */
export interface InsertionStep {
  readonly value: Hash;
  readonly lowIndex: bigint;
  readonly low: IndexedLeaf;
  readonly lowSiblings: readonly Hash[];
  readonly newSiblings: readonly Hash[];
}

/** Witnesses of inserting values one after another into the tree of `oldSize` leaves. */
export interface InsertionWitness {
  readonly kind: "insertion";
  readonly arity: number;
  readonly hash: HashName;
  readonly oldSize: bigint;
  readonly steps: readonly InsertionStep[];
}

const ZERO = new Uint8Array(32);

/** `index` as a 32-byte big-endian word. */
function indexWord(index: bigint): Hash {
  const word = new Uint8Array(32);
  let rest = index;
  for (let i = 31; i >= 24; i--) {
    word[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return word;
}

/** The leaf hash: H over the three words (value, next index, next value). */
export function indexedLeafHash(hasher: Hasher, leaf: IndexedLeaf): Hash {
  return hasher.hashChildren([leaf.value, indexWord(leaf.nextIndex), leaf.nextValue]);
}

/** -1, 0 or 1 as big-endian unsigned integers compare. */
function compare(a: Hash, b: Hash): number {
  for (let i = 0; i < 32; i++) {
    if (a[i]! !== b[i]!) return a[i]! < b[i]! ? -1 : 1;
  }
  return 0;
}

function isZero(value: Hash): boolean {
  return equalBytes(value, ZERO);
}

/** The root of a LeanIMT over `leaves` (spec section 2). */
function leanRoot(leaves: Hash[], arity: number, hasher: Hasher): Hash {
  let level = leaves;
  for (let k = 0; level.length > 1; k++) {
    const next: Hash[] = [];
    for (let start = 0; start < level.length; start += arity) next.push(groupParent(hasher, null, k, level.slice(start, start + arity)));
    level = next;
  }
  return level[0]!;
}

/**
 * The root of the indexed tree holding `values` (inserted in that order:
 * nonzero, distinct, canonical for field hashes), computed from the
 * definition: the guard, then each value's leaf pointing to its successor.
 */
export function indexedRoot(values: readonly (Uint8Array | string)[], tree: TrustedTree): Hash {
  const all = [ZERO, ...values.map((v, i) => hashArgument(v, `value ${i}`))];
  const order = all.map((_, i) => i).sort((a, b) => compare(all[a]!, all[b]!) || a - b);
  for (let rank = 1; rank < order.length; rank++) {
    if (compare(all[order[rank - 1]!]!, all[order[rank]!]!) === 0) {
      throw inputError(`value ${toHex(all[order[rank]!]!)} is 0 or repeated: an indexed tree holds each nonzero value once`);
    }
  }
  const leaves: Hash[] = new Array(all.length);
  order.forEach((index, rank) => {
    const next = order[rank + 1];
    const leaf: IndexedLeaf =
      next === undefined
        ? { value: all[index]!, nextIndex: 0n, nextValue: ZERO }
        : { value: all[index]!, nextIndex: BigInt(next), nextValue: all[next]! };
    leaves[index] = indexedLeafHash(tree.hash, leaf);
  });
  return leanRoot(leaves, tree.arity, tree.hash);
}

// ------------------------------------------------------------- decoding

function guard<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof CairnError) throw error;
    throw decodeError("Json", `proof could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function header(bytes: Uint8Array, wantKind: number): { arity: number; hash: HashName; first: bigint; second: bigint } {
  if (!(bytes instanceof Uint8Array)) throw decodeError("WrongLength", "a binary proof is a Uint8Array");
  if (bytes.length < 20) throw decodeError("ShortHeader", `proof is ${bytes.length} bytes, shorter than its 20-byte header`);
  if (bytes[0] !== FORMAT_VERSION) {
    throw decodeError("UnsupportedVersion", `proof format version ${bytes[0]} is not supported, want ${FORMAT_VERSION}`);
  }
  if (bytes[1] !== wantKind) {
    throw decodeError("WrongKind", `proof kind is ${KIND_NAMES[bytes[1]!] ?? `unknown (${bytes[1]})`}, want ${KIND_NAMES[wantKind]}`);
  }
  const arity = bytes[2]!;
  if (arity < 2 || arity > 16) throw decodeError("BadArity", `proof arity ${arity} is out of range, want 2..=16`);
  const hash = HASH_NAMES.find((name) => HASH_IDS[name] === bytes[3]);
  if (hash === undefined) throw decodeError("UnknownHash", `proof hash ${bytes[3]} is unknown`);
  return { arity, hash, first: readU64(bytes, 4), second: readU64(bytes, 12) };
}

class Cursor {
  at: number;
  constructor(
    readonly bytes: Uint8Array,
    at: number,
  ) {
    this.at = at;
  }
  take(count: number): Uint8Array {
    if (this.at + count > this.bytes.length) {
      throw decodeError("WrongLength", `proof is ${this.bytes.length} bytes, its header implies at least ${this.at + count}`);
    }
    const out = this.bytes.slice(this.at, this.at + count);
    this.at += count;
    return out;
  }
  u64(): bigint {
    return readU64(this.take(8), 0);
  }
  hashes(count: number): Hash[] {
    const out: Hash[] = [];
    for (let i = 0; i < count; i++) out.push(this.take(32));
    return out;
  }
  leaf(): IndexedLeaf {
    return { value: this.take(32), nextIndex: this.u64(), nextValue: this.take(32) };
  }
  finish(): void {
    if (this.at !== this.bytes.length) {
      throw decodeError("WrongLength", `proof is ${this.bytes.length} bytes, its header implies exactly ${this.at}`);
    }
  }
}

function checkIndex(index: bigint, size: bigint): void {
  if (index >= size) throw decodeError("IndexOutOfRange", `proof leaf index ${index} is out of range for its size ${size}`);
}

function absenceBinary(bytes: Uint8Array): AbsenceProof {
  const { arity, hash, first: lowIndex, second: size } = header(bytes, KIND_ABSENCE);
  checkIndex(lowIndex, size);
  const count = membershipSiblingCount(lowIndex, size, arity);
  const want = 20 + 32 + LEAF_BYTES + 32 * count;
  if (bytes.length !== want) throw decodeError("WrongLength", `proof is ${bytes.length} bytes, its header implies exactly ${want}`);
  const cursor = new Cursor(bytes, 20);
  const value = cursor.take(32);
  const low = cursor.leaf();
  const siblings = cursor.hashes(count);
  cursor.finish();
  return { kind: "absence", arity, hash, value, size, lowIndex, low, siblings };
}

function membershipBinary(bytes: Uint8Array): IndexedMembershipProof {
  const { arity, hash, first: index, second: size } = header(bytes, KIND_INDEXED_MEMBERSHIP);
  checkIndex(index, size);
  const count = membershipSiblingCount(index, size, arity);
  const want = 20 + LEAF_BYTES + 32 * count;
  if (bytes.length !== want) throw decodeError("WrongLength", `proof is ${bytes.length} bytes, its header implies exactly ${want}`);
  const cursor = new Cursor(bytes, 20);
  const leaf = cursor.leaf();
  const siblings = cursor.hashes(count);
  cursor.finish();
  return { kind: "indexed_membership", arity, hash, index, size, leaf, siblings };
}

function insertionBinary(bytes: Uint8Array): InsertionWitness {
  const { arity, hash, first: oldSize, second: count } = header(bytes, KIND_INSERTION);
  if (count > BigInt(Math.floor((bytes.length - 20) / STEP_FIXED_BYTES))) {
    throw decodeError("WrongLength", `proof is ${bytes.length} bytes, too short for its ${count} insertions`);
  }
  if (oldSize + count >= U64_MAX) throw decodeError("IndexOutOfRange", `proof old size ${oldSize} leaves no room for ${count} insertions`);
  const cursor = new Cursor(bytes, 20);
  const steps: InsertionStep[] = [];
  for (let j = 0n; j < count; j++) {
    const size = oldSize + j;
    const value = cursor.take(32);
    const lowIndex = cursor.u64();
    checkIndex(lowIndex, size);
    const low = cursor.leaf();
    const lowSiblings = cursor.hashes(membershipSiblingCount(lowIndex, size, arity));
    const newSiblings = cursor.hashes(membershipSiblingCount(size, size + 1n, arity));
    steps.push({ value, lowIndex, low, lowSiblings, newSiblings });
  }
  cursor.finish();
  return { kind: "insertion", arity, hash, oldSize, steps };
}

function malformed(what: string): CairnError {
  return decodeError("Json", `proof JSON is malformed: ${what}`);
}

/** An object with exactly `fields`, as a plain record. */
function object(value: JsonValue, fields: readonly string[], what: string): Record<string, JsonValue> {
  if (!(value instanceof Map)) throw malformed(`${what}: want an object, got ${describe(value)}`);
  const out: Record<string, JsonValue> = {};
  for (const [key, item] of value) {
    if (!fields.includes(key)) throw malformed(`unknown field ${JSON.stringify(key)} in ${what}, want one of ${fields.join(", ")}`);
    out[key] = item;
  }
  for (const key of fields) if (!(key in out)) throw malformed(`missing field ${JSON.stringify(key)} in ${what}`);
  return out;
}

function u64(value: JsonValue | undefined, name: string): bigint {
  const parsed = asUnsigned(value, U64_MAX);
  if (parsed === null) throw malformed(`${name}: want an integer in 0..=2^64-1, got ${describe(value)}`);
  return parsed;
}

function text(value: JsonValue | undefined, name: string): string {
  if (typeof value !== "string") throw malformed(`${name}: want a string, got ${describe(value)}`);
  return value;
}

function common(doc: Record<string, JsonValue>, wantKind: string): { arity: number; hash: HashName } {
  const version = u64(doc.version, "version");
  if (version !== BigInt(FORMAT_VERSION)) {
    throw decodeError("UnsupportedVersion", `proof format version ${version} is not supported, want ${FORMAT_VERSION}`);
  }
  const kind = text(doc.kind, "kind");
  if (kind !== wantKind) throw decodeError("WrongKind", `proof kind is ${kind}, want ${wantKind}`);
  const arity = u64(doc.arity, "arity");
  if (arity < 2n || arity > 16n) throw decodeError("BadArity", `proof arity ${arity} is out of range, want 2..=16`);
  const name = text(doc.hash, "hash");
  const hash = HASH_NAMES.find((known) => known === name);
  if (hash === undefined) throw decodeError("UnknownHash", `proof hash ${JSON.stringify(name)} is unknown`);
  return { arity: Number(arity), hash };
}

function leafFrom(value: JsonValue | undefined, what: string): IndexedLeaf {
  const doc = object(value ?? null, ["value", "next_index", "next_value"], what);
  return {
    value: parseProofHash(text(doc.value, "value")),
    nextIndex: u64(doc.next_index, "next_index"),
    nextValue: parseProofHash(text(doc.next_value, "next_value")),
  };
}

/** Siblings given per hashing level of the path of `index` at `size`, each checked. */
function levelsFrom(value: JsonValue | undefined, index: bigint, size: bigint, arity: number, name: string): Hash[] {
  checkIndex(index, size);
  if (!Array.isArray(value)) throw malformed(`${name}: want an array of arrays, got ${describe(value)}`);
  const steps = path(index, size, arity).filter((step) => step.groupLen > 1);
  if (value.length !== steps.length) throw decodeError("WrongLevelCount", `proof has ${value.length} levels, want ${steps.length}`);
  const out: Hash[] = [];
  steps.forEach((step, position) => {
    const level = value[position];
    if (!Array.isArray(level)) throw malformed(`${name}: want an array of strings, got ${describe(level)}`);
    if (level.length !== step.groupLen - 1) {
      throw decodeError("WrongLevelLength", `proof level ${position} has ${level.length} siblings, want ${step.groupLen - 1}`);
    }
    for (const item of level) out.push(parseProofHash(text(item, name)));
  });
  return out;
}

const ABSENCE_FIELDS = ["version", "kind", "arity", "hash", "value", "size", "low_index", "low_leaf", "siblings"];
const MEMBERSHIP_FIELDS = ["version", "kind", "arity", "hash", "index", "size", "leaf", "siblings"];
const INSERTION_FIELDS = ["version", "kind", "arity", "hash", "old_size", "insertions"];
const STEP_FIELDS = ["value", "low_index", "low_leaf", "low_siblings", "new_siblings"];

/** The kind a JSON document names, checked first so that the error names it. */
function kindFirst(document: JsonValue, want: string): void {
  if (document instanceof Map) {
    const kind = document.get("kind");
    if (typeof kind === "string" && kind !== want) throw decodeError("WrongKind", `proof kind is ${kind}, want ${want}`);
  }
}

function absenceDocument(document: JsonValue): AbsenceProof {
  kindFirst(document, "absence");
  const doc = object(document, ABSENCE_FIELDS, "absence proof");
  const { arity, hash } = common(doc, "absence");
  const size = u64(doc.size, "size");
  const lowIndex = u64(doc.low_index, "low_index");
  return {
    kind: "absence",
    arity,
    hash,
    value: parseProofHash(text(doc.value, "value")),
    size,
    lowIndex,
    low: leafFrom(doc.low_leaf, "low_leaf"),
    siblings: levelsFrom(doc.siblings, lowIndex, size, arity, "siblings"),
  };
}

function membershipDocument(document: JsonValue): IndexedMembershipProof {
  kindFirst(document, "indexed_membership");
  const doc = object(document, MEMBERSHIP_FIELDS, "indexed membership proof");
  const { arity, hash } = common(doc, "indexed_membership");
  const size = u64(doc.size, "size");
  const index = u64(doc.index, "index");
  return {
    kind: "indexed_membership",
    arity,
    hash,
    index,
    size,
    leaf: leafFrom(doc.leaf, "leaf"),
    siblings: levelsFrom(doc.siblings, index, size, arity, "siblings"),
  };
}

function insertionDocument(document: JsonValue): InsertionWitness {
  kindFirst(document, "insertion");
  const doc = object(document, INSERTION_FIELDS, "insertion witness");
  const { arity, hash } = common(doc, "insertion");
  const oldSize = u64(doc.old_size, "old_size");
  const insertions = doc.insertions;
  if (!Array.isArray(insertions)) throw malformed(`insertions: want an array, got ${describe(insertions)}`);
  if (oldSize + BigInt(insertions.length) >= U64_MAX) {
    throw decodeError("IndexOutOfRange", `proof old size ${oldSize} leaves no room for ${insertions.length} insertions`);
  }
  const steps = insertions.map((item, j): InsertionStep => {
    const size = oldSize + BigInt(j);
    const step = object(item, STEP_FIELDS, `insertion ${j}`);
    const lowIndex = u64(step.low_index, "low_index");
    return {
      value: parseProofHash(text(step.value, "value")),
      lowIndex,
      low: leafFrom(step.low_leaf, "low_leaf"),
      lowSiblings: levelsFrom(step.low_siblings, lowIndex, size, arity, "low_siblings"),
      newSiblings: levelsFrom(step.new_siblings, size, size + 1n, arity, "new_siblings"),
    };
  });
  return { kind: "insertion", arity, hash, oldSize, steps };
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function isJson(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d) continue;
    return byte === 0x7b;
  }
  return false;
}

function decodeAny<T>(input: unknown, fromBytes: (bytes: Uint8Array) => T, fromDocument: (document: JsonValue) => T): T {
  return guard(() => {
    if (input instanceof Uint8Array) {
      if (!isJson(input)) return fromBytes(input);
      let decoded: string;
      try {
        decoded = utf8.decode(input);
      } catch {
        throw decodeError("Json", "proof JSON is malformed: not UTF-8");
      }
      return fromDocument(parseJson(decoded));
    }
    if (typeof input === "string") return fromDocument(parseJson(input));
    if (typeof input === "object" && input !== null) return fromDocument(fromJsValue(input));
    throw decodeError("Json", `a proof is bytes, JSON text or a JSON object, not ${input === null ? "null" : typeof input}`);
  });
}

/** Decodes an absence proof: binary or JSON bytes, JSON text or a parsed object. */
export function decodeAbsence(input: Uint8Array | string | object): AbsenceProof {
  return decodeAny(input, absenceBinary, absenceDocument);
}

/** Decodes an indexed membership proof; the inputs of {@link decodeAbsence}. */
export function decodeIndexedMembership(input: Uint8Array | string | object): IndexedMembershipProof {
  return decodeAny(input, membershipBinary, membershipDocument);
}

/** Decodes an insertion witness; the inputs of {@link decodeAbsence}. */
export function decodeInsertion(input: Uint8Array | string | object): InsertionWitness {
  return decodeAny(input, insertionBinary, insertionDocument);
}

// ------------------------------------------------------------- verifying

function run<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof CairnError) throw error;
    throw inputError(`unexpected failure (a custom hasher?): ${error instanceof Error ? error.message : String(error)}`);
  }
}

function trustedHead(tree: TrustedTree, proof: { arity: number; hash: string }, head: TreeHead): { size: bigint; root: Hash } {
  if (typeof tree !== "object" || tree === null || typeof tree.hash?.hashChildren !== "function") {
    throw inputError("the trusted tree must be {arity, hash} with a Hasher from this package");
  }
  if (proof.arity !== tree.arity) throw verifyError("ArityMismatch", `proof is for arity ${proof.arity}, the trusted tree has arity ${tree.arity}`);
  if (proof.hash !== tree.hash.name) throw verifyError("HashMismatch", `proof is for hash ${proof.hash}, the trusted tree uses ${tree.hash.name}`);
  if (typeof head !== "object" || head === null) throw inputError("the trusted head must be an object {size, root}");
  const size = u64Argument(head.size, "trusted head size");
  const root = head.root === null || head.root === undefined ? null : hashArgument(head.root, "trusted head root");
  if ((size === 0n) !== (root === null)) {
    throw verifyError("InconsistentHead", `trusted head is inconsistent: size ${size} ${root === null ? "without a root" : "with a root"}`);
  }
  if (root === null) throw verifyError("EmptyHead", "trusted head has size 0: an indexed tree always holds its guard leaf");
  return { size, root };
}

function checkCanonical(hasher: Hasher, what: string, value: Hash): void {
  if (!hasher.accepts(value)) throw verifyError("NonCanonical", `proof ${what} ${toHex(value)} is not a canonical BN254 field element`);
}

function checkAsked(hasher: Hasher, value: Hash): void {
  if (isZero(value)) throw verifyError("GuardValue", "value 0 is the guard leaf's value: no absence proof or insertion is about it");
  checkCanonical(hasher, "value", value);
}

function checkLeaf(hasher: Hasher, what: string, leaf: IndexedLeaf, size: bigint): void {
  checkCanonical(hasher, `${what} value`, leaf.value);
  checkCanonical(hasher, `${what} next value`, leaf.nextValue);
  const end = isZero(leaf.nextValue);
  if (leaf.nextIndex >= size || end !== (leaf.nextIndex === 0n)) {
    throw verifyError("BadPointer", `leaf points to index ${leaf.nextIndex} with next value ${toHex(leaf.nextValue)}, impossible in a tree of ${size} leaves`);
  }
  if (!end && compare(leaf.nextValue, leaf.value) <= 0) {
    throw verifyError("NotBracketed", `${what} ${toHex(leaf.value)} points to a smaller value ${toHex(leaf.nextValue)}`);
  }
}

/** The guard (value 0) is leaf 0 and only leaf 0. */
function checkGuardIndex(index: bigint, leaf: IndexedLeaf): void {
  if ((index === 0n) !== isZero(leaf.value)) {
    throw verifyError("GuardIndex", `leaf ${index} has value ${toHex(leaf.value)}: the guard (value 0) is leaf 0 and only leaf 0`);
  }
}

function checkBrackets(low: IndexedLeaf, value: Hash): void {
  const below = compare(low.value, value) < 0;
  const above = isZero(low.nextValue) || compare(value, low.nextValue) < 0;
  if (!below || !above) {
    throw verifyError(
      "NotBracketed",
      `low leaf ${toHex(low.value)} (next ${toHex(low.nextValue)}) does not bracket value ${toHex(value)}: want low < value and (value < next or next = 0)`,
    );
  }
}

/** The root of the tree of `size` leaves whose leaf `index` is `leaf`, from its siblings. */
function fold(hasher: Hasher, arity: number, index: bigint, size: bigint, leaf: Hash, siblings: readonly Hash[]): Hash {
  if (index >= size) throw verifyError("IndexOutOfRange", `leaf index ${index} is out of range for a tree of size ${size}`);
  const steps = path(index, size, arity).filter((step) => step.groupLen > 1);
  const want = steps.reduce((sum, step) => sum + step.groupLen - 1, 0);
  if (siblings.length !== want) throw verifyError("HashCount", `proof has ${siblings.length} hashes, a tree of this shape needs exactly ${want}`);
  siblings.forEach((sibling, i) => checkCanonical(hasher, `sibling ${i}`, sibling));
  let node = leaf;
  let at = 0;
  for (const step of steps) {
    const group = siblings.slice(at, at + step.groupLen - 1);
    group.splice(step.position, 0, node);
    node = groupParent(hasher, null, step.level, group);
    at += step.groupLen - 1;
  }
  return node;
}

function checkRoot(which: string, computed: Hash, trusted: Hash): void {
  if (!equalBytes(computed, trusted)) {
    throw verifyError("RootMismatch", `proof computes ${which} ${toHex(computed)}, the trusted ${which} is ${toHex(trusted)}`);
  }
}

/**
 * Verifies that `value` is absent from the indexed tree the caller trusts
 * (arity, hash, head): the proof is about `value`, its low leaf brackets
 * it and hashes with its siblings to the trusted root. Returns the proof.
 */
export function verifyAbsence(
  proof: AbsenceProof | Uint8Array | string | object,
  tree: TrustedTree,
  head: TreeHead,
  value: Uint8Array | string,
): AbsenceProof {
  return run(() => {
    const decoded = isDecoded(proof, "absence") ? (proof as AbsenceProof) : decodeAbsence(proof);
    const asked = hashArgument(value, "value");
    const trusted = trustedHead(tree, decoded, head);
    if (!equalBytes(decoded.value, asked)) {
      throw verifyError("ValueMismatch", `proof is about value ${toHex(decoded.value)}, the verifier asked about ${toHex(asked)}`);
    }
    checkAsked(tree.hash, asked);
    if (decoded.size !== trusted.size) throw verifyError("SizeMismatch", `proof size is ${decoded.size}, the trusted size is ${trusted.size}`);
    checkLeaf(tree.hash, "low leaf", decoded.low, decoded.size);
    checkGuardIndex(decoded.lowIndex, decoded.low);
    checkBrackets(decoded.low, asked);
    const root = fold(tree.hash, tree.arity, decoded.lowIndex, decoded.size, indexedLeafHash(tree.hash, decoded.low), decoded.siblings);
    checkRoot("root", root, trusted.root);
    return decoded;
  });
}

/** Verifies that the trusted indexed tree holds `value` at the proof's index. Returns the proof. */
export function verifyIndexedMembership(
  proof: IndexedMembershipProof | Uint8Array | string | object,
  tree: TrustedTree,
  head: TreeHead,
  value: Uint8Array | string,
): IndexedMembershipProof {
  return run(() => {
    const decoded = isDecoded(proof, "indexed_membership") ? (proof as IndexedMembershipProof) : decodeIndexedMembership(proof);
    const asked = hashArgument(value, "value");
    const trusted = trustedHead(tree, decoded, head);
    if (!equalBytes(decoded.leaf.value, asked)) {
      throw verifyError("ValueMismatch", `proof is about value ${toHex(decoded.leaf.value)}, the verifier asked about ${toHex(asked)}`);
    }
    if (decoded.size !== trusted.size) throw verifyError("SizeMismatch", `proof size is ${decoded.size}, the trusted size is ${trusted.size}`);
    checkLeaf(tree.hash, "leaf", decoded.leaf, decoded.size);
    checkGuardIndex(decoded.index, decoded.leaf);
    const root = fold(tree.hash, tree.arity, decoded.index, decoded.size, indexedLeafHash(tree.hash, decoded.leaf), decoded.siblings);
    checkRoot("root", root, trusted.root);
    return decoded;
  });
}

/** The roots without and with the last leaf `index` of the tree of `index + 1` leaves (spec 11.3, the append fold). */
function foldAppend(hasher: Hasher, arity: number, index: bigint, leaf: Hash, siblings: readonly Hash[]): { without: Hash | null; withLeaf: Hash } {
  const steps = path(index, index + 1n, arity).filter((step) => step.groupLen > 1);
  const want = steps.reduce((sum, step) => sum + step.groupLen - 1, 0);
  if (siblings.length !== want) throw verifyError("HashCount", `proof has ${siblings.length} hashes, a tree of this shape needs exactly ${want}`);
  siblings.forEach((sibling, i) => checkCanonical(hasher, `new leaf sibling ${i}`, sibling));
  let withLeaf = leaf;
  let without: Hash | null = null;
  let at = 0;
  for (const step of steps) {
    const left = siblings.slice(at, at + step.groupLen - 1);
    at += step.groupLen - 1;
    withLeaf = groupParent(hasher, null, step.level, [...left, withLeaf]);
    // Without the new leaf, its group is `left` alone until the path
    // covers an old node, then that node with `left`.
    without = groupParent(hasher, null, step.level, without !== null ? [...left, without] : [...left]);
  }
  return { without, withLeaf };
}

/**
 * Verifies an insertion witness against the trusted head before it and
 * returns the head after it ({size, root}). Throws a CairnError; a failed
 * insertion is reported as kind "Step" naming it and its reason.
 */
export function verifyInsertion(
  witness: InsertionWitness | Uint8Array | string | object,
  tree: TrustedTree,
  oldHead: TreeHead,
): { size: bigint; root: Hash } {
  return run(() => {
    const decoded = isDecoded(witness, "insertion") ? (witness as InsertionWitness) : decodeInsertion(witness);
    let head = trustedHead(tree, decoded, oldHead);
    if (decoded.oldSize !== head.size) throw verifyError("SizeMismatch", `proof size is ${decoded.oldSize}, the trusted size is ${head.size}`);
    if (decoded.steps.length === 0) throw verifyError("EmptyWitness", "the witness holds no insertion: an empty batch is refused, so none is ever produced");
    decoded.steps.forEach((step, j) => {
      try {
        const size = head.size;
        checkAsked(tree.hash, step.value);
        checkLeaf(tree.hash, "low leaf", step.low, size);
        checkGuardIndex(step.lowIndex, step.low);
        checkBrackets(step.low, step.value);
        const old = fold(tree.hash, tree.arity, step.lowIndex, size, indexedLeafHash(tree.hash, step.low), step.lowSiblings);
        checkRoot("old root", old, head.root);
        const updated = { value: step.low.value, nextIndex: size, nextValue: step.value };
        const middle = fold(tree.hash, tree.arity, step.lowIndex, size, indexedLeafHash(tree.hash, updated), step.lowSiblings);
        const added = { value: step.value, nextIndex: step.low.nextIndex, nextValue: step.low.nextValue };
        const { without, withLeaf } = foldAppend(tree.hash, tree.arity, size, indexedLeafHash(tree.hash, added), step.newSiblings);
        checkRoot("root before the new leaf", without ?? ZERO, middle);
        head = { size: size + 1n, root: withLeaf };
      } catch (error) {
        if (error instanceof CairnError && error.stage === "verify") {
          throw verifyError("Step", `insertion ${j} of the witness: ${error.message} (${error.kind})`);
        }
        throw error;
      }
    });
    return head;
  });
}

/** Whether `value` came from this module's decoders (their sizes are bigints; parsed JSON has none). */
function isDecoded(value: unknown, kind: string): boolean {
  if (typeof value !== "object" || value === null || value instanceof Uint8Array) return false;
  const fields = value as { kind?: unknown; size?: unknown; oldSize?: unknown };
  return fields.kind === kind && (typeof fields.size === "bigint" || typeof fields.oldSize === "bigint");
}
