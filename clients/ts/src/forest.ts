// A tile store of a database of several trees (docs/spec.md section 13.3):
// one forest checkpoint commits to every tree's head at one block through
// a root of roots (RFC 6962's Merkle tree hash over the trees' entry
// lines, SHA-256), and each tree's own tiles are under `trees/NAME/`.
// `fetchForest` reads the checkpoint (verifying its signature with a key,
// when given), fetches the entries object it names and accepts it only if
// it holds exactly the checkpoint's trees and hashes to its root; a tree's
// entry is then a head to prove against with `proveFromTiles` under the
// tree's folder (`forestTree`). A verifier of one tree that is handed its
// entry line and inclusion proof (not every entry) checks them with
// `verifyForestEntry`. Every parser refuses any text cairn's publisher
// would not write.

import { sha256 as digest } from "@noble/hashes/sha2";
import { equalBytes } from "./bytes.js";
import { decodeBase64, openNote, parseNote, parseVerifierKey, type VerifierKey } from "./checkpoint.js";
import { CairnError, inputError } from "./errors.js";
import { HASH_NAMES, isFieldHash, type Hasher, type HashName } from "./hasher.js";
import { isCanonicalFieldElement } from "./hashes/field.js";
import { getObject, type TileOptions, type TrustedTileHead } from "./tiles.js";

/** The first line of an unsigned forest checkpoint. */
export const FOREST_MAGIC = "cairn forest v1";
/** The extension line of a signed forest checkpoint. */
export const FOREST_EXTENSION = "cairn-forest";
const CHECKPOINT_MAX_BYTES = 64 * 1024;
const ENTRIES_MAX_BYTES = 64 << 20;

/** What a forest checkpoint commits to: every tree's head at one block. */
export interface ForestHead {
  readonly block: bigint;
  readonly blockHash: Uint8Array;
  /** The number of trees. */
  readonly trees: bigint;
  /** The root of roots. */
  readonly root: Uint8Array;
  /** A signed checkpoint's origin (the signer key's name); null for the unsigned form. */
  readonly origin: string | null;
}

/** One tree's head at the checkpoint's block: its entry line, parsed. */
export interface ForestEntry {
  readonly name: string;
  readonly kind: "lean" | "imt" | "indexed";
  readonly arity: number;
  readonly hash: HashName;
  /** An imt's depth and zero value. */
  readonly depth?: number;
  readonly zero?: Uint8Array;
  readonly size: bigint;
  /** Null exactly for the empty lean tree. */
  readonly root: Uint8Array | null;
  /** The line as published, with its newline: what the root of roots hashes. */
  readonly line: string;
}

const decodeErr = (message: string) => new CairnError("decode", "Checkpoint", message);
const refuse = (kind: "RootMismatch" | "Origin" | "NoKnownSignature", message: string) => new CairnError("verify", kind, message);

/** A decimal number without leading zeros that fits 64 bits, or null. */
function decimal(text: string): bigint | null {
  if (!/^(0|[1-9][0-9]*)$/.test(text)) return null;
  const value = BigInt(text);
  return value < 1n << 64n ? value : null;
}

/** `0x` and 64 lowercase hex digits, or null. */
function hash32(text: string): Uint8Array | null {
  return /^0x[0-9a-f]{64}$/.test(text) ? Uint8Array.from(text.slice(2).match(/../g)!, (pair) => parseInt(pair, 16)) : null;
}

/** Refuses a tree name outside section 13.3's rules. */
function checkName(name: string): string | null {
  if (name.length === 0 || name.length > 255) return `the name has ${name.length} bytes, want 1..=255`;
  for (const part of name.split("/")) {
    if (part === "" || part === "." || part === "..") return `the name ${JSON.stringify(name)} has an empty, . or .. part`;
    if (!/^[a-z0-9._-]+$/.test(part)) return `the name ${JSON.stringify(name)} has a character outside a-z 0-9 . _ -`;
  }
  return null;
}

/** Parses one entry line (without its newline), strictly. */
export function parseForestEntry(text: string): ForestEntry {
  if (typeof text !== "string") throw inputError(`entry: want a string, got ${typeof text}`);
  const bad = (why: string) => decodeErr(`forest entry ${JSON.stringify(text.slice(0, 200))}: ${why}`);
  const words = text.split(" ");
  let at = 1;
  const field = (key: string): string => {
    const word = words[at++];
    if (word === undefined || !word.startsWith(`${key}=`)) throw bad(`want ${key}=... at word ${at}`);
    return word.slice(key.length + 1);
  };
  const name = words[0]!;
  const nameProblem = checkName(name);
  if (nameProblem !== null) throw bad(nameProblem);
  const kind = field("kind");
  if (kind !== "lean" && kind !== "imt" && kind !== "indexed") throw bad(`kind ${JSON.stringify(kind)} is not lean, imt or indexed`);
  const arityText = field("arity");
  const arity = Number(decimal(arityText) ?? -1n);
  if (!(arity >= 2 && arity <= 16)) throw bad(`arity ${JSON.stringify(arityText)} is not 2..=16`);
  const hash = field("hash");
  if (!(HASH_NAMES as readonly string[]).includes(hash)) throw bad(`unknown hash ${JSON.stringify(hash)}`);
  const field32 = isFieldHash(hash as HashName);
  let depth: number | undefined;
  let zero: Uint8Array | undefined;
  if (kind === "imt") {
    const depthText = field("depth");
    depth = Number(decimal(depthText) ?? 0n);
    if (!(depth >= 1 && depth <= 64)) throw bad(`depth ${JSON.stringify(depthText)} is not 1..=64`);
    zero = hash32(field("zero")) ?? undefined;
    if (zero === undefined) throw bad("zero is not 0x and 64 lowercase hex digits");
    if (field32 && !isCanonicalFieldElement(zero)) throw bad(`zero is not a canonical ${hash} value`);
  }
  const sizeText = field("size");
  const size = decimal(sizeText);
  if (size === null) throw bad(`size ${JSON.stringify(sizeText)} is not a decimal number without leading zeros`);
  const rootText = field("root");
  const root = rootText === "none" ? null : hash32(rootText);
  if (root === null && rootText !== "none") throw bad("root is not 0x and 64 lowercase hex digits, nor none");
  if (at !== words.length) throw bad("more words than an entry has");
  if (root !== null && field32 && !isCanonicalFieldElement(root)) throw bad(`root is not a canonical ${hash} value`);
  if (kind === "lean" && (size === 0n) !== (root === null)) throw bad("a lean tree has no root exactly when it is empty");
  if (kind !== "lean" && root === null) throw bad(`an ${kind} tree always has a root`);
  if (kind === "imt" && size > BigInt(arity) ** BigInt(depth!)) throw bad(`size ${size} is beyond the tree's capacity`);
  if (kind === "indexed" && size === 0n) throw bad("an indexed tree holds its guard leaf: its size is at least 1");
  return Object.freeze({ name, kind, arity, hash: hash as HashName, ...(kind === "imt" ? { depth: depth!, zero: zero! } : {}), size, root, line: `${text}\n` });
}

/** Parses an entries object (`forest/<root>`): entry lines sorted by name, each ending in a newline. */
export function parseForestEntries(bytes: Uint8Array): ForestEntry[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw decodeErr("forest entries: not UTF-8");
  }
  if (!text.endsWith("\n")) throw decodeErr("forest entries: the object does not end in a newline");
  const entries = text
    .slice(0, -1)
    .split("\n")
    .map((line) => parseForestEntry(line));
  for (let i = 1; i < entries.length; i++) {
    if (!(entries[i - 1]!.name < entries[i]!.name)) {
      throw decodeErr(`forest entries: line ${i + 1} (${entries[i]!.name}) is not after ${entries[i - 1]!.name}: want names sorted, each once`);
    }
  }
  return entries;
}

const ENCODER = new TextEncoder();

function sha256(...parts: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return digest(all);
}

/** An entry's Merkle leaf: SHA-256(0x00 || line). */
export function forestLeaf(line: string): Uint8Array {
  return sha256(Uint8Array.of(0), ENCODER.encode(line));
}

const node = (left: Uint8Array, right: Uint8Array) => sha256(Uint8Array.of(1), left, right);

/** The largest power of two below n (n >= 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function merkleRoot(leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 1) return leaves[0]!;
  const k = split(leaves.length);
  return node(merkleRoot(leaves.slice(0, k)), merkleRoot(leaves.slice(k)));
}

function auditPath(m: number, leaves: Uint8Array[]): Uint8Array[] {
  if (leaves.length <= 1) return [];
  const k = split(leaves.length);
  return m < k ? [...auditPath(m, leaves.slice(0, k)), merkleRoot(leaves.slice(k))] : [...auditPath(m - k, leaves.slice(k)), merkleRoot(leaves.slice(0, k))];
}

/** The root of roots of `entries` (at least one), in their order. */
export function forestRoot(entries: readonly ForestEntry[]): Uint8Array {
  if (entries.length === 0) throw inputError("a forest has at least one tree");
  return merkleRoot(entries.map((e) => forestLeaf(e.line)));
}

/** Tree `name`'s index among `entries` and its inclusion proof (RFC 6962's audit path). */
export function forestInclusion(entries: readonly ForestEntry[], name: string): { index: bigint; path: Uint8Array[] } {
  const index = entries.findIndex((e) => e.name === name);
  if (index < 0) throw inputError(`no tree named ${JSON.stringify(name)}; the forest has ${entries.map((e) => e.name).join(", ")}`);
  return { index: BigInt(index), path: auditPath(index, entries.map((e) => forestLeaf(e.line))) };
}

/**
 * Checks that `entry` is tree `index` of the trees `head` commits to, by
 * its inclusion proof (RFC 9162 section 2.1.3.2). Throws a CairnError of
 * stage "verify" (RootMismatch) otherwise.
 */
export function verifyForestEntry(head: ForestHead, entry: ForestEntry, index: bigint | number, path: readonly Uint8Array[]): void {
  const refused = () => refuse("RootMismatch", `the entry of ${entry.name} at index ${index} and its proof do not hash to the root of roots of the ${head.trees} trees`);
  let f = BigInt(index);
  let s = head.trees - 1n;
  if (f < 0n || f > s) throw refused();
  let r = forestLeaf(entry.line);
  for (const p of path) {
    if (!(p instanceof Uint8Array) || p.length !== 32 || s === 0n) throw refused();
    if ((f & 1n) === 1n || f === s) {
      r = node(p, r);
      while ((f & 1n) === 0n && f !== 0n) {
        f >>= 1n;
        s >>= 1n;
      }
    } else {
      r = node(r, p);
    }
    f >>= 1n;
    s >>= 1n;
  }
  if (s !== 0n || !equalBytes(r, head.root)) throw refused();
}

/** Parses the unsigned four lines or a signed checkpoint's text (already opened). */
function headOfText(text: string, signed: boolean): ForestHead {
  if (!signed) {
    const lines = text.split("\n");
    if (lines.length !== 5 || lines[4] !== "" || lines[0] !== FOREST_MAGIC) throw decodeErr(`forest checkpoint: want the 4 lines of "${FOREST_MAGIC}", each ending in a newline`);
    const [, blockLine, treesLine, rootLine] = lines as [string, string, string, string];
    const blockWords = blockLine.split(" ");
    const block = blockWords.length === 3 && blockWords[0] === "block" ? decimal(blockWords[1]!) : null;
    const blockHash = blockWords.length === 3 ? hash32(blockWords[2]!) : null;
    if (block === null || blockHash === null) throw decodeErr(`forest checkpoint: line 2 ${JSON.stringify(blockLine)}, want "block N 0x<64 lowercase hex>"`);
    const trees = treesLine.startsWith("trees ") ? decimal(treesLine.slice(6)) : null;
    if (trees === null || trees === 0n) throw decodeErr(`forest checkpoint: line 3 ${JSON.stringify(treesLine)}, want "trees T" (T above 0)`);
    const root = rootLine.startsWith("root ") ? hash32(rootLine.slice(5)) : null;
    if (root === null) throw decodeErr(`forest checkpoint: line 4 ${JSON.stringify(rootLine)}, want "root 0x<64 lowercase hex>"`);
    return Object.freeze({ block, blockHash, trees, root, origin: null });
  }
  const lines = text.slice(0, -1).split("\n");
  if (!text.endsWith("\n") || lines.length !== 4) throw decodeErr(`forest checkpoint: ${lines.length} lines, want origin, size, root and one ${FOREST_EXTENSION} line`);
  const [origin, sizeLine, rootLine, extension] = lines as [string, string, string, string];
  if (origin.length === 0) throw decodeErr("forest checkpoint: the origin line is empty");
  const trees = decimal(sizeLine);
  if (trees === null || trees === 0n) throw decodeErr(`forest checkpoint: size line ${JSON.stringify(sizeLine)}, want the number of trees (above 0)`);
  const root = decodeBase64(rootLine);
  if (typeof root === "string" || root.length !== 32) throw decodeErr(`forest checkpoint: root line ${JSON.stringify(rootLine)} is not 32 bytes of base64`);
  const match = /^cairn-forest block=([0-9]+) hash=(0x[0-9a-f]{64})$/.exec(extension);
  const block = match === null ? null : decimal(match[1]!);
  if (match === null || block === null) throw decodeErr(`forest checkpoint: extension line ${JSON.stringify(extension)}, want "${FOREST_EXTENSION} block=N hash=0x.."`);
  return Object.freeze({ block, blockHash: hash32(match[2]!)!, trees, root, origin });
}

/**
 * Parses a forest checkpoint of either form WITHOUT checking a signature
 * (see `verifyForestCheckpoint`).
 */
export function parseForestCheckpoint(text: string): ForestHead {
  if (typeof text !== "string") throw inputError(`checkpoint: want a string, got ${typeof text}`);
  if (text.split("\n", 1)[0] === FOREST_MAGIC) return headOfText(text, false);
  return headOfText(parseNote(text).text, true);
}

/**
 * Verifies a signed forest checkpoint with the verifier key `cairn keygen`
 * printed: it must be signed by the key, and its origin be the key's name.
 */
export function verifyForestCheckpoint(note: string, verifierKey: string | VerifierKey): ForestHead {
  const key = typeof verifierKey === "string" ? parseVerifierKey(verifierKey) : verifierKey;
  if (typeof note !== "string") throw inputError(`checkpoint: want a string, got ${typeof note}`);
  if (note.split("\n", 1)[0] === FOREST_MAGIC) throw refuse("NoKnownSignature", `the forest checkpoint is unsigned, want one signed by ${key.name}`);
  const head = headOfText(openNote(note, key), true);
  if (head.origin !== key.name) throw refuse("Origin", `the checkpoint's origin is ${JSON.stringify(head.origin)}, want ${JSON.stringify(key.name)} (the verifier key's name)`);
  return head;
}

/** A forest store read and checked: its head and every tree's entry. */
export interface Forest {
  readonly baseUrl: string;
  readonly head: ForestHead;
  readonly entries: readonly ForestEntry[];
}

/** Options of `fetchForest`. */
export interface ForestOptions extends TileOptions {
  /** Trust only a checkpoint signed by this key; without one, trust it as far as the place serving it. */
  readonly verifierKey?: string | VerifierKey;
}

/**
 * Reads the forest store at `baseUrl`: its checkpoint (signed by
 * `options.verifierKey` when given) and the entries object it names,
 * accepted only if it holds exactly the checkpoint's trees and hashes to
 * its root of roots.
 */
export async function fetchForest(baseUrl: string, options: ForestOptions = {}): Promise<Forest> {
  const fetcher = options.fetch ?? globalThis.fetch;
  if (typeof fetcher !== "function") throw inputError("no fetch available: pass options.fetch");
  const base = String(baseUrl).replace(/\/+$/, "");
  const attempts = Math.max(1, options.attempts ?? 4);
  const backoff = options.backoffMs ?? 100;
  const body = await getObject(fetcher, `${base}/checkpoint`, CHECKPOINT_MAX_BYTES, attempts, backoff, () => {});
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    throw new CairnError("fetch", "BadCheckpoint", `${base}/checkpoint: not UTF-8`);
  }
  const named = (error: unknown): never => {
    if (error instanceof CairnError) throw new CairnError(error.stage, error.kind, `${base}/checkpoint: ${error.message}`);
    throw error;
  };
  let head: ForestHead;
  try {
    head = options.verifierKey === undefined ? parseForestCheckpoint(text) : verifyForestCheckpoint(text, options.verifierKey);
  } catch (error) {
    return named(error);
  }
  const hex = [...head.root].map((b) => b.toString(16).padStart(2, "0")).join("");
  const path = `${base}/forest/${hex}`;
  const bytes = await getObject(fetcher, path, ENTRIES_MAX_BYTES, attempts, backoff, () => {});
  let entries: ForestEntry[];
  try {
    entries = parseForestEntries(bytes);
  } catch (error) {
    if (error instanceof CairnError) throw new CairnError("fetch", "BadCheckpoint", `${path}: ${error.message}`);
    throw error;
  }
  const root = forestRoot(entries);
  if (BigInt(entries.length) !== head.trees || !equalBytes(root, head.root)) {
    throw new CairnError("fetch", "BadCheckpoint", `${path}: ${entries.length} entries hashing to a root of roots that is not the checkpoint's (${head.trees} trees)`);
  }
  return Object.freeze({ baseUrl: base, head, entries: Object.freeze(entries) });
}

/**
 * Tree `name` of a forest read by `fetchForest`: the base URL of its tiles
 * and its head as a trusted head for `proveFromTiles` / `TileClient`
 * (`hasher` is the tree's hash, e.g. `sha256` from this package). An
 * indexed tree has an entry but no tiles: refused.
 */
export function forestTree(forest: Forest, name: string, hasher: Hasher): { baseUrl: string; head: TrustedTileHead } {
  const entry = forest.entries.find((e) => e.name === name);
  if (entry === undefined) throw inputError(`no tree named ${JSON.stringify(name)}; the forest has ${forest.entries.map((e) => e.name).join(", ")}`);
  if (entry.kind === "indexed") throw inputError(`${name} is an indexed tree: it has an entry but no tiles (its leaves are rewritten as values are inserted)`);
  if (hasher?.name !== entry.hash) throw inputError(`${name} is hashed with ${entry.hash}: pass that hasher, not ${String(hasher?.name)}`);
  const kind = entry.kind === "imt" ? { kind: "imt" as const, depth: entry.depth!, zero: entry.zero! } : { kind: "lean" as const };
  return { baseUrl: `${forest.baseUrl}/trees/${name}`, head: { arity: entry.arity, hash: hasher, ...kind, size: entry.size, root: entry.root } };
}
