// Both proof kinds and both encodings (docs/spec.md section 7): the binary
// one (fixed-width fields, no counts, exact length implied by the header)
// and the JSON one (siblings grouped per level, unknown fields refused).
// A lean tree's proof is format version 1; a fixed-depth (imt) or indexed
// tree's is version 2, which names the tree (an imt's depth and zero value)
// in its header.
// Decoders refuse everything cairn's Rust decoders refuse, with the same
// reason names; a decoded proof re-encodes to the same binary bytes.

import { parseProofHash, readU64, toHex, U64_MAX, writeU64, type Hash } from "./bytes.js";
import { CairnError, decodeError } from "./errors.js";
import { isCanonicalFieldElement } from "./hashes/field.js";
import { HASH_IDS, HASH_NAMES, isFieldHash, type HashName } from "./hasher.js";
import { asUnsigned, describe, fromJsValue, parseJson, type JsonValue } from "./json.js";
import { capacity, fixedDepth, imtKind, INDEXED, LEAN, MAX_FIXED_DEPTH, type TreeKind } from "./kind.js";
import {
  consistencyHashCount,
  consistencySteps,
  membershipSiblingCount,
  path,
  stepHashes,
  type ConsistencyStep,
  type PathStep,
} from "./shape.js";

/** The format version of a lean tree's proofs. */
export const FORMAT_VERSION = 1;
/** The format version of proofs whose header names the tree: proofs of a fixed-depth (imt) or indexed tree. */
export const FORMAT_VERSION_KINDS = 2;
/** The tree-kind byte of an imt in a version 2 header (0 is never written). */
const TREE_KIND_FIXED = 1;
/** The tree-kind byte of an indexed tree in a version 2 header; its depth byte and zero are all 0. */
const TREE_KIND_INDEXED = 2;
const KIND_MEMBERSHIP = 1;
const KIND_CONSISTENCY = 2;
const HEADER_BYTES = 20;
/** The tree part of a version 2 header: tree kind, depth, zero value. */
const TREE_BYTES = 34;

/** A proof that `leaf` is leaf `index` of the tree of `size` leaves. Made by the decoders. */
export class MembershipProof {
  readonly kind = "membership" as const;
  /** @internal Use decodeMembership. */
  constructor(
    readonly arity: number,
    readonly hash: HashName,
    readonly index: bigint,
    readonly size: bigint,
    readonly leaf: Hash,
    /** Siblings of every hashing level, bottom-up, each level's in index order (an imt's: only the members that exist). */
    readonly siblings: readonly Hash[],
    /** The tree the proof is of: lean (format version 1), or indexed, or imt with its depth and zero value (version 2). */
    readonly tree: TreeKind = LEAN,
  ) {
    Object.freeze(siblings);
    Object.freeze(this);
  }

  /** The hashing levels of the path (every level of an imt), each with its siblings. */
  levels(): { step: PathStep; siblings: readonly Hash[] }[] {
    const out: { step: PathStep; siblings: readonly Hash[] }[] = [];
    let at = 0;
    for (const step of path(this.index, this.size, this.arity, fixedDepth(this.tree))) {
      if (!stepHashes(step)) continue;
      out.push({ step, siblings: this.siblings.slice(at, at + step.groupLen - 1) });
      at += step.groupLen - 1;
    }
    return out;
  }

  /** The binary encoding (spec section 7.1). */
  toBytes(): Uint8Array {
    return encode(KIND_MEMBERSHIP, this.arity, this.hash, this.tree, this.index, this.size, [this.leaf, ...this.siblings]);
  }

  /** The JSON encoding (spec section 7.2), compact. */
  toJson(): string {
    const levels = this.levels().map(({ siblings }) => hexList(siblings));
    return (
      `{${jsonHeader("membership", this.arity, this.hash, this.tree)},` +
      `"index":${this.index},"size":${this.size},"leaf":"${toHex(this.leaf)}","siblings":[${levels.join(",")}]}`
    );
  }
}

/** A proof that the tree of `oldSize` leaves is a prefix of the tree of `newSize`. Made by the decoders. */
export class ConsistencyProof {
  readonly kind = "consistency" as const;
  /** @internal Use decodeConsistency. */
  constructor(
    readonly arity: number,
    readonly hash: HashName,
    readonly oldSize: bigint,
    readonly newSize: bigint,
    /** Leaf oldSize - 1; null exactly when oldSize is 0. */
    readonly edgeLeaf: Hash | null,
    /** Per step bottom-up: the left then the right siblings. */
    readonly hashes: readonly Hash[],
    /** The tree the proof is of: lean (format version 1), or indexed, or imt with its depth and zero value (version 2). */
    readonly tree: TreeKind = LEAN,
  ) {
    Object.freeze(hashes);
    Object.freeze(this);
  }

  /** The steps with at least one hash, each with its left and right siblings. */
  levels(): { step: ConsistencyStep; left: readonly Hash[]; right: readonly Hash[] }[] {
    if (this.oldSize === 0n) return [];
    const out: { step: ConsistencyStep; left: readonly Hash[]; right: readonly Hash[] }[] = [];
    let at = 0;
    for (const step of consistencySteps(this.oldSize, this.newSize, this.arity, fixedDepth(this.tree))) {
      if (step.left + step.right === 0) continue;
      out.push({
        step,
        left: this.hashes.slice(at, at + step.left),
        right: this.hashes.slice(at + step.left, at + step.left + step.right),
      });
      at += step.left + step.right;
    }
    return out;
  }

  /** The binary encoding (spec section 7.1). */
  toBytes(): Uint8Array {
    const values = this.edgeLeaf === null ? [...this.hashes] : [this.edgeLeaf, ...this.hashes];
    return encode(KIND_CONSISTENCY, this.arity, this.hash, this.tree, this.oldSize, this.newSize, values);
  }

  /** The JSON encoding (spec section 7.2), compact. */
  toJson(): string {
    const levels = this.levels().map(
      ({ step, left, right }) => `{"level":${step.level},"left":${hexList(left)},"right":${hexList(right)}}`,
    );
    const edge = this.edgeLeaf === null ? "null" : `"${toHex(this.edgeLeaf)}"`;
    return (
      `{${jsonHeader("consistency", this.arity, this.hash, this.tree)},` +
      `"old_size":${this.oldSize},"new_size":${this.newSize},"edge_leaf":${edge},"levels":[${levels.join(",")}]}`
    );
  }
}

function hexList(values: readonly Hash[]): string {
  return "[" + values.map((value) => `"${toHex(value)}"`).join(",") + "]";
}

/** The fields every JSON proof starts with; an imt's proof is version 2 and names its tree. */
function jsonHeader(kind: string, arity: number, hash: HashName, tree: TreeKind): string {
  const common = `"kind":"${kind}","arity":${arity},"hash":"${hash}"`;
  if (tree.kind === "lean") return `"version":${FORMAT_VERSION},${common}`;
  if (tree.kind === "indexed") return `"version":${FORMAT_VERSION_KINDS},${common},"tree":{"kind":"indexed"}`;
  return `"version":${FORMAT_VERSION_KINDS},${common},"tree":{"kind":"imt","depth":${tree.depth},"zero":"${toHex(tree.zero)}"}`;
}

/** The header's length for a proof of `tree`. */
function headerLength(tree: TreeKind): number {
  return tree.kind === "lean" ? HEADER_BYTES : HEADER_BYTES + TREE_BYTES;
}

function encode(kind: number, arity: number, hash: HashName, tree: TreeKind, first: bigint, second: bigint, values: Hash[]): Uint8Array {
  const start = headerLength(tree);
  const out = new Uint8Array(start + 32 * values.length);
  out[0] = tree.kind === "lean" ? FORMAT_VERSION : FORMAT_VERSION_KINDS;
  out[1] = kind;
  out[2] = arity;
  out[3] = HASH_IDS[hash];
  if (tree.kind === "imt") {
    out[4] = TREE_KIND_FIXED;
    out[5] = tree.depth;
    out.set(tree.zero, 6);
  } else if (tree.kind === "indexed") {
    // Depth byte and zero stay 0.
    out[4] = TREE_KIND_INDEXED;
  }
  writeU64(out, start - 16, first);
  writeU64(out, start - 8, second);
  values.forEach((value, i) => out.set(value, start + 32 * i));
  return out;
}

// ---------------------------------------------------------------- binary

function kindName(kind: number): string {
  return kind === KIND_MEMBERSHIP ? "membership" : kind === KIND_CONSISTENCY ? "consistency" : `unknown (${kind})`;
}

interface Header {
  arity: number;
  hash: HashName;
  tree: TreeKind;
  first: bigint;
  second: bigint;
  /** Bytes of the header: where the values start. */
  length: number;
}

function unsupportedVersion(version: bigint | number): CairnError {
  return decodeError(
    "UnsupportedVersion",
    `proof format version ${version} is not supported, want ${FORMAT_VERSION} (a lean tree) or ${FORMAT_VERSION_KINDS} (a tree of another kind)`,
  );
}

const shortHeader = (got: number, want: number): CairnError =>
  decodeError("ShortHeader", `proof is ${got} bytes, shorter than its ${want}-byte header`);

/** Checks in the order cairn's Rust decoder does, so that both name the same reason. */
function decodeHeader(bytes: Uint8Array, wantKind: number): Header {
  if (bytes.length < 4) throw shortHeader(bytes.length, HEADER_BYTES);
  const [version, kind, arity, hashId] = [bytes[0]!, bytes[1]!, bytes[2]!, bytes[3]!];
  let tree: TreeKind;
  if (version === FORMAT_VERSION) {
    tree = LEAN;
  } else if (version === FORMAT_VERSION_KINDS) {
    if (bytes.length < 4 + TREE_BYTES) throw shortHeader(bytes.length, HEADER_BYTES + TREE_BYTES);
    const treeKind = bytes[4]!;
    const treeDepth = bytes[5]!;
    const zero = bytes.subarray(6, 4 + TREE_BYTES);
    if (treeKind === TREE_KIND_FIXED) {
      tree = imtKind(treeDepth, zero);
    } else if (treeKind === TREE_KIND_INDEXED) {
      // One encoding only: what would not re-encode is refused.
      if (treeDepth !== 0 || zero.some((byte) => byte !== 0)) {
        throw decodeError(
          "TreeKind",
          `proof tree is malformed: an indexed tree's depth byte and zero are 0, got depth ${treeDepth} and zero ${toHex(zero)}`,
        );
      }
      tree = INDEXED;
    } else {
      throw decodeError(
        "TreeKind",
        `proof tree is malformed: tree kind byte ${treeKind} is unknown, want ${TREE_KIND_FIXED} (imt) or ${TREE_KIND_INDEXED} (indexed)`,
      );
    }
  } else {
    throw unsupportedVersion(version);
  }
  if (kind !== wantKind) {
    throw decodeError("WrongKind", `proof kind is ${kindName(kind)}, want ${kindName(wantKind)}`);
  }
  if (arity < 2 || arity > 16) throw decodeError("BadArity", `proof arity ${arity} is out of range, want 2..=16`);
  const hash = HASH_NAMES.find((name) => HASH_IDS[name] === hashId);
  if (hash === undefined) {
    throw decodeError("UnknownHash", `proof hash ${hashId} is unknown, want blake3 (1), sha256 (2), keccak256 (3) or poseidon (4)`);
  }
  const length = headerLength(tree);
  if (bytes.length < length) throw shortHeader(bytes.length, length);
  return { arity, hash, tree, first: readU64(bytes, length - 16), second: readU64(bytes, length - 8), length };
}

/**
 * A decoded proof's tree must be a tree of its hash (depth 1..64, a zero
 * value the hash accepts), and its size (new size) must fit it: N^depth.
 */
function checkDecodedKind(arity: number, hash: HashName, tree: TreeKind, size: bigint): void {
  if (tree.kind !== "imt") return;
  if (tree.depth < 1 || tree.depth > MAX_FIXED_DEPTH) {
    throw decodeError("TreeKind", `proof tree is malformed: fixed-depth tree depth ${tree.depth} is out of range, want 1..=${MAX_FIXED_DEPTH}`);
  }
  if (isFieldHash(hash) && !isCanonicalFieldElement(tree.zero)) {
    throw decodeError(
      "TreeKind",
      `proof tree is malformed: zero value ${toHex(tree.zero)} is not a canonical BN254 field element, which a ${hash} tree needs`,
    );
  }
  const leaves = capacity(arity, tree.depth);
  if (leaves !== null && size > leaves) {
    throw decodeError(
      "BeyondCapacity",
      `proof size ${size} exceeds the capacity of its tree: ${leaves} leaves (arity ${arity}, depth ${tree.depth})`,
    );
  }
}

/** The `count` 32-byte values after the header, refusing any other length (before copying anything). */
function readHashes(bytes: Uint8Array, header: Header, count: number): Hash[] {
  const want = header.length + 32 * count;
  if (bytes.length !== want) throw decodeError("WrongLength", `proof is ${bytes.length} bytes, its header implies exactly ${want}`);
  const out: Hash[] = [];
  for (let at = header.length; at < want; at += 32) out.push(bytes.slice(at, at + 32));
  return out;
}

/** Decodes a binary membership proof (spec section 7.1). */
function membershipBinary(bytes: Uint8Array): MembershipProof {
  const header = decodeHeader(bytes, KIND_MEMBERSHIP);
  const { first: index, second: size } = header;
  if (index >= size) throw decodeError("IndexOutOfRange", `proof leaf index ${index} is out of range for its size ${size}`);
  checkDecodedKind(header.arity, header.hash, header.tree, size);
  const values = readHashes(bytes, header, 1 + membershipSiblingCount(index, size, header.arity, fixedDepth(header.tree)));
  return new MembershipProof(header.arity, header.hash, index, size, values[0]!, values.slice(1), header.tree);
}

/** Decodes a binary consistency proof (spec section 7.1). */
function consistencyBinary(bytes: Uint8Array): ConsistencyProof {
  const header = decodeHeader(bytes, KIND_CONSISTENCY);
  const { first: oldSize, second: newSize } = header;
  if (oldSize > newSize) {
    throw decodeError("OldSizeAboveNew", `proof old size ${oldSize} is larger than its new size ${newSize}`);
  }
  checkDecodedKind(header.arity, header.hash, header.tree, newSize);
  const prefix = oldSize > 0n ? 1 : 0;
  const values = readHashes(bytes, header, prefix + consistencyHashCount(oldSize, newSize, header.arity, fixedDepth(header.tree)));
  return new ConsistencyProof(header.arity, header.hash, oldSize, newSize, prefix ? values[0]! : null, values.slice(prefix), header.tree);
}

// ------------------------------------------------------------------ JSON

type FieldType = "u64" | "u32" | "nullable u32" | "string" | "nullable string" | "string list" | "string lists" | "levels" | "tree";

interface Level {
  level: bigint;
  left: string[];
  right: string[];
}

/** A version 2 proof's `tree` object, as written (depth and zero: an imt's, null if absent). */
interface TreeDocument {
  kind: string;
  depth: bigint | null;
  zero: string | null;
}

type FieldValue = bigint | string | null | string[] | string[][] | Level[] | TreeDocument;

function malformed(what: string): CairnError {
  return decodeError("Json", `proof JSON is malformed: ${what}`);
}

function stringList(value: JsonValue, field: string): string[] {
  if (!Array.isArray(value)) throw malformed(`${field}: want an array of strings, got ${describe(value)}`);
  return value.map((item) => {
    if (typeof item !== "string") throw malformed(`${field}: want a string, got ${describe(item)}`);
    return item;
  });
}

function field(value: JsonValue, type: FieldType, name: string): FieldValue {
  switch (type) {
    case "nullable u32":
      // null reads as absent, as serde reads an Option.
      if (value === null) return null;
      return field(value, "u32", name);
    case "u64":
    case "u32": {
      const parsed = asUnsigned(value, type === "u64" ? U64_MAX : 0xffffffffn);
      if (parsed === null) throw malformed(`${name}: want an integer in 0..=${type === "u64" ? "2^64-1" : "2^32-1"}, got ${describe(value)}`);
      return parsed;
    }
    case "string":
      if (typeof value !== "string") throw malformed(`${name}: want a string, got ${describe(value)}`);
      return value;
    case "nullable string":
      if (value !== null && typeof value !== "string") throw malformed(`${name}: want a string or null, got ${describe(value)}`);
      return value;
    case "string list":
      return stringList(value, name);
    case "string lists":
      if (!Array.isArray(value)) throw malformed(`${name}: want an array of arrays, got ${describe(value)}`);
      return value.map((item) => stringList(item, name));
    case "levels":
      if (!Array.isArray(value)) throw malformed(`${name}: want an array of objects, got ${describe(value)}`);
      return value.map((item) => {
        const level = struct(item, { level: "u32", left: "string list", right: "string list" }, [], "level entry");
        return level as unknown as Level;
      });
    case "tree":
      // null reads as no tree, as in cairn's decoder (an optional field).
      if (value === null) return null;
      return struct(value, { kind: "string", depth: "nullable u32", zero: "nullable string" }, ["depth", "zero"], "tree") as unknown as TreeDocument;
  }
}

/** A struct with exactly these fields (`optional` ones may be missing: null), each of its type. */
function struct(value: JsonValue, fields: Record<string, FieldType>, optional: string[], what: string): Record<string, FieldValue> {
  if (!(value instanceof Map)) throw malformed(`${what}: want an object, got ${describe(value)}`);
  const out: Record<string, FieldValue> = {};
  for (const [key, item] of value) {
    const type = Object.prototype.hasOwnProperty.call(fields, key) ? fields[key] : undefined;
    if (type === undefined) throw malformed(`unknown field ${JSON.stringify(key)} in ${what}, want one of ${Object.keys(fields).join(", ")}`);
    out[key] = field(item, type, key);
  }
  for (const key of Object.keys(fields)) {
    if (!(key in out)) {
      if (!optional.includes(key)) throw malformed(`missing field ${JSON.stringify(key)} in ${what}`);
      out[key] = null;
    }
  }
  return out;
}

function checkCommon(version: bigint, kind: string, wantKind: string, arity: bigint, hash: string): { arity: number; hash: HashName } {
  if (version !== BigInt(FORMAT_VERSION) && version !== BigInt(FORMAT_VERSION_KINDS)) throw unsupportedVersion(version);
  if (kind !== wantKind) throw decodeError("WrongKind", `proof kind is ${kind}, want ${wantKind}`);
  if (arity < 2n || arity > 16n) throw decodeError("BadArity", `proof arity ${arity} is out of range, want 2..=16`);
  const name = HASH_NAMES.find((known) => known === hash);
  if (name === undefined) {
    throw decodeError("UnknownHash", `proof hash ${JSON.stringify(hash)} is unknown, want blake3 (1), sha256 (2), keccak256 (3) or poseidon (4)`);
  }
  return { arity: Number(arity), hash: name };
}

/** The tree a version and `tree` object name: version 1 has no `tree` (a lean tree), version 2 must have one. */
function treeOf(version: bigint, tree: TreeDocument | null): TreeKind {
  if (version === BigInt(FORMAT_VERSION)) {
    if (tree !== null) throw decodeError("TreeKind", 'proof tree is malformed: a version 1 proof is of a lean tree and has no "tree" field');
    return LEAN;
  }
  if (tree === null) throw decodeError("TreeKind", 'proof tree is malformed: a version 2 proof needs a "tree" field');
  if (tree.kind === "imt") {
    if (tree.depth === null || tree.zero === null) {
      throw decodeError("TreeKind", `proof tree is malformed: an imt's "tree" needs "depth" and "zero"`);
    }
    // Depths above 64 are refused by checkDecodedKind; the u32 bound keeps Number exact.
    return imtKind(Number(tree.depth), parseProofHash(tree.zero));
  }
  if (tree.kind === "indexed") {
    if (tree.depth !== null || tree.zero !== null) {
      throw decodeError("TreeKind", `proof tree is malformed: an indexed tree's "tree" has no "depth" or "zero"`);
    }
    return INDEXED;
  }
  throw decodeError("TreeKind", `proof tree is malformed: tree kind ${JSON.stringify(tree.kind)} is unknown, want "imt" or "indexed"`);
}

function parseLevel(values: string[], level: number, what: string, want: number, out: Hash[]): void {
  if (values.length !== want) throw decodeError("WrongLevelLength", `proof level ${level} has ${values.length} ${what}, want ${want}`);
  for (const value of values) out.push(parseProofHash(value));
}

const MEMBERSHIP_FIELDS: Record<string, FieldType> = {
  version: "u64",
  kind: "string",
  arity: "u64",
  hash: "string",
  tree: "tree",
  index: "u64",
  size: "u64",
  leaf: "string",
  siblings: "string lists",
};

function membershipFromDocument(document: JsonValue): MembershipProof {
  const doc = struct(document, MEMBERSHIP_FIELDS, ["tree"], "membership proof");
  const { arity, hash } = checkCommon(doc.version as bigint, doc.kind as string, "membership", doc.arity as bigint, doc.hash as string);
  const tree = treeOf(doc.version as bigint, doc.tree as TreeDocument | null);
  const index = doc.index as bigint;
  const size = doc.size as bigint;
  if (index >= size) throw decodeError("IndexOutOfRange", `proof leaf index ${index} is out of range for its size ${size}`);
  checkDecodedKind(arity, hash, tree, size);
  const steps = path(index, size, arity, fixedDepth(tree)).filter(stepHashes);
  const levels = doc.siblings as string[][];
  if (levels.length !== steps.length) throw decodeError("WrongLevelCount", `proof has ${levels.length} levels, want ${steps.length}`);
  const siblings: Hash[] = [];
  steps.forEach((step, position) => parseLevel(levels[position]!, position, "siblings", step.groupLen - 1, siblings));
  return new MembershipProof(arity, hash, index, size, parseProofHash(doc.leaf as string), siblings, tree);
}

const CONSISTENCY_FIELDS: Record<string, FieldType> = {
  version: "u64",
  kind: "string",
  arity: "u64",
  hash: "string",
  tree: "tree",
  old_size: "u64",
  new_size: "u64",
  edge_leaf: "nullable string",
  levels: "levels",
};

function consistencyFromDocument(document: JsonValue): ConsistencyProof {
  // A missing edge_leaf reads as null, as in cairn's decoder.
  const doc = struct(document, CONSISTENCY_FIELDS, ["edge_leaf", "tree"], "consistency proof");
  const { arity, hash } = checkCommon(doc.version as bigint, doc.kind as string, "consistency", doc.arity as bigint, doc.hash as string);
  const tree = treeOf(doc.version as bigint, doc.tree as TreeDocument | null);
  const oldSize = doc.old_size as bigint;
  const newSize = doc.new_size as bigint;
  if (oldSize > newSize) throw decodeError("OldSizeAboveNew", `proof old size ${oldSize} is larger than its new size ${newSize}`);
  checkDecodedKind(arity, hash, tree, newSize);
  const edgeText = doc.edge_leaf as string | null;
  if ((oldSize === 0n) !== (edgeText === null)) {
    throw decodeError(
      "EdgeLeaf",
      `proof edge leaf is ${edgeText === null ? "absent" : "present"}, want ${edgeText === null ? "one" : "none"} for old size ${oldSize}`,
    );
  }
  const edgeLeaf = edgeText === null ? null : parseProofHash(edgeText);
  const steps = oldSize === 0n ? [] : consistencySteps(oldSize, newSize, arity, fixedDepth(tree)).filter((step) => step.left + step.right > 0);
  const levels = doc.levels as Level[];
  if (levels.length !== steps.length) throw decodeError("WrongLevelCount", `proof has ${levels.length} levels, want ${steps.length}`);
  const hashes: Hash[] = [];
  steps.forEach((step, position) => {
    const level = levels[position]!;
    if (level.level !== BigInt(step.level)) {
      throw decodeError("Json", `proof JSON is malformed: level entry ${position} is labelled level ${level.level}, want level ${step.level}`);
    }
    parseLevel(level.left, position, "left hashes", step.left, hashes);
    parseLevel(level.right, position, "right hashes", step.right, hashes);
  });
  return new ConsistencyProof(arity, hash, oldSize, newSize, edgeLeaf, hashes, tree);
}

/** Decodes a binary membership proof (spec section 7.1). */
export function membershipFromBytes(bytes: Uint8Array): MembershipProof {
  return guard(() => {
    if (!(bytes instanceof Uint8Array)) throw decodeError("WrongLength", "a binary proof is a Uint8Array");
    return membershipBinary(bytes);
  });
}

/** Decodes a binary consistency proof (spec section 7.1). */
export function consistencyFromBytes(bytes: Uint8Array): ConsistencyProof {
  return guard(() => {
    if (!(bytes instanceof Uint8Array)) throw decodeError("WrongLength", "a binary proof is a Uint8Array");
    return consistencyBinary(bytes);
  });
}

function jsonText(text: unknown): string {
  if (typeof text !== "string") throw decodeError("Json", "proof JSON text must be a string");
  return text;
}

/** Decodes a JSON membership proof from its text (spec section 7.2). */
export function membershipFromJson(text: string): MembershipProof {
  return guard(() => membershipFromDocument(parseJson(jsonText(text))));
}

/** @internal Decodes a membership proof from an already-parsed JSON document (one embedded in an answer). */
export function membershipFromParsed(document: JsonValue): MembershipProof {
  return guard(() => membershipFromDocument(document));
}

/** Decodes a JSON consistency proof from its text (spec section 7.2). */
export function consistencyFromJson(text: string): ConsistencyProof {
  return guard(() => consistencyFromDocument(parseJson(jsonText(text))));
}

/** Runs a decoder so that it throws nothing but a CairnError, whatever the input. */
function guard<T>(decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof CairnError) throw error;
    // Nothing in the decoders throws anything else on any input; a hostile
    // object (a throwing getter, a Proxy) still gets the documented type.
    throw decodeError("Json", `proof could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// ------------------------------------------------------------- sniffing

/** What a decoder takes: binary or JSON bytes, JSON text, or an already-parsed JSON object. */
export type ProofInput = Uint8Array | string | object;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Whether bytes hold JSON: the first byte after ASCII whitespace is `{`, never a binary proof's first byte. */
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
      let text: string;
      try {
        text = utf8.decode(input);
      } catch {
        throw decodeError("Json", "proof JSON is malformed: not UTF-8");
      }
      return fromDocument(parseJson(text));
    }
    if (typeof input === "string") return fromDocument(parseJson(input));
    if (typeof input === "object" && input !== null) return fromDocument(fromJsValue(input));
    throw decodeError("Json", `a proof is bytes, JSON text or a JSON object, not ${input === null ? "null" : typeof input}`);
  });
}

/**
 * Decodes a membership proof: bytes (JSON if the first non-whitespace byte
 * is `{`, else binary), JSON text, or an already-parsed JSON object.
 * Throws a CairnError with stage "decode" if it is not a well-formed proof.
 */
export function decodeMembership(input: ProofInput): MembershipProof {
  if (input instanceof MembershipProof) return input;
  return decodeAny(input, membershipBinary, membershipFromDocument);
}

/** Decodes a consistency proof; the inputs and errors of {@link decodeMembership}. */
export function decodeConsistency(input: ProofInput): ConsistencyProof {
  if (input instanceof ConsistencyProof) return input;
  return decodeAny(input, consistencyBinary, consistencyFromDocument);
}

