// Proofs from a published tile store (docs/spec.md section 8): for a head
// the caller trusts, fetch only the tiles a proof needs over HTTP(S) GET,
// recompute the levels between tile-levels, build the proof, and verify it
// against the head before returning it. A tile of the wrong length, an
// oversized or missing one is refused naming it; tiles that do not hash to
// the head fail verification, naming every tile read. The cache keeps
// only tiles of verified proofs. A store's checkpoint is either the
// unsigned lines (five for a lean tree, eight for an imt, which names its
// depth and zero) or cairn's signed checkpoint; given a verifier key, only
// a signed one that verifies is trusted (verifyCheckpoint). Lean and imt
// trees alike: the levels between tile-levels are recomputed by the one
// group rule (kind.ts, `groupParent`). Given the WebAssembly module
// (`options.wasm`), a membership proof is computed by its wallet tracker
// from the same whole tiles and the hashing runs there; anything it refuses
// is done again by the TypeScript path, so results and errors are the same.
// A leaf tile inside a complete bundle is read as its byte range of the
// bundle (range.ts), and from its own object in a store of the older layout.

import { u64Argument, type Hash } from "./bytes.js";
import { parseVerifierKey, readCheckpointUnverified, verifyCheckpoint, type SignedHead, type VerifierKey } from "./checkpoint.js";
import { CairnError, inputError } from "./errors.js";
import { HASH_NAMES, isFieldHash, type Hasher, type HashName } from "./hasher.js";
import { isCanonicalFieldElement } from "./hashes/field.js";
import { fixedDepth, groupParent, Zeros } from "./kind.js";
import { ConsistencyProof, MembershipProof } from "./proof.js";
import { consistencySteps, path, stepHashes } from "./shape.js";
import { checkTree, verifyConsistency, verifyMembership, type Tree, type TreeHead, type TrustedTree } from "./verify.js";
import { describeRange, fetchRetrying, getRange, indexPath, leafTileInBundle, type BundleRange } from "./range.js";
import type { CairnWasm } from "./wasm.js";

/** The first line of a lean tree's checkpoint object. */
export const CHECKPOINT_MAGIC = "cairn tiles v1";
/** The first line of an imt's checkpoint object (it names the kind, depth and zero). */
export const CHECKPOINT_MAGIC_KINDS = "cairn tiles v2";
const MAX_TILE_NODES = 256n;
const CHECKPOINT_MAX_BYTES = 64 * 1024;

/** A tile store's checkpoint: the head its tiles belong to. */
export interface TileCheckpoint {
  readonly arity: number;
  readonly hash: HashName;
  /** "lean", or "imt" with its depth and zero value. */
  readonly kind: "lean" | "imt";
  /** An imt's depth; absent for a lean tree. */
  readonly depth?: number;
  /** An imt's zero value; absent for a lean tree. */
  readonly zero?: Uint8Array;
  readonly size: bigint;
  readonly root: Uint8Array | null;
  /** A signed checkpoint's origin (the signer key's name); null for the unsigned form. Verified only if a verifier key was given. */
  readonly origin: string | null;
}

/** A head the caller trusts, with the tree's arity and hash. */
export type TrustedTileHead = TrustedTree & TreeHead;

export interface TileOptions {
  /** The fetch to use; default: the global one. */
  readonly fetch?: typeof fetch;
  /** Tiles kept between proofs (8 KiB each at most); default 64. */
  readonly cacheTiles?: number;
  /** Tries of a GET that fails to connect or answers 5xx; default 4 (backoff from 100 ms, doubling). */
  readonly attempts?: number;
  /** The first backoff in milliseconds; default 100. */
  readonly backoffMs?: number;
  /**
   * The WebAssembly module (`tryLoadWasm` of "cairn-verify/wasm"): proofs are
   * then computed and verified there, from the same whole tiles. Null or
   * absent: TypeScript alone. The proofs and errors are the same either way.
   */
  readonly wasm?: CairnWasm | null;
}

function tileError(message: string, status?: number): CairnError {
  return new CairnError("fetch", "BadTile", message, status);
}

/** A signed head as a tile checkpoint. */
function fromSigned(head: SignedHead): TileCheckpoint {
  if (isFieldHash(head.hash) && !isCanonicalFieldElement(head.root)) {
    throw new CairnError("fetch", "BadCheckpoint", `checkpoint: the root is not a canonical ${head.hash} value`);
  }
  const kind = head.kind === "imt" ? { kind: "imt" as const, depth: head.depth!, zero: head.zero! } : { kind: "lean" as const };
  checkCapacity(head.arity, kind, head.size, (why) => new CairnError("fetch", "BadCheckpoint", `checkpoint: ${why}`));
  return Object.freeze({ arity: head.arity, hash: head.hash, ...kind, size: head.size, root: head.root, origin: head.origin });
}

/** Refuses a size beyond an imt's N^depth. */
function checkCapacity(arity: number, kind: { kind: string; depth?: number }, size: bigint, bad: (why: string) => CairnError): void {
  if (kind.kind === "imt") {
    const capacity = BigInt(arity) ** BigInt(kind.depth!);
    if (size > capacity) throw bad(`size ${size} is beyond the tree's capacity of ${capacity} leaves`);
  }
}

/**
 * Parses a checkpoint object of either form, refusing anything cairn's
 * publisher would not write: the unsigned five lines (strictly: decimal
 * without leading zeros, 0x and lowercase hex) or a signed checkpoint,
 * whose signature is NOT checked here (see `fetchCheckpoint` with a
 * verifier key).
 */
export function parseCheckpoint(text: string): TileCheckpoint {
  const bad = (why: string) => new CairnError("fetch", "BadCheckpoint", `checkpoint: ${why}`);
  const magic = text.split("\n", 1)[0];
  if (magic !== CHECKPOINT_MAGIC && magic !== CHECKPOINT_MAGIC_KINDS) {
    try {
      return fromSigned(readCheckpointUnverified(text));
    } catch (error) {
      if (!(error instanceof CairnError)) throw error;
      throw bad(
        `neither an unsigned checkpoint (first line ${JSON.stringify(CHECKPOINT_MAGIC)} or ${JSON.stringify(CHECKPOINT_MAGIC_KINDS)}) nor a signed one: ${error.message}`,
      );
    }
  }
  const names = magic === CHECKPOINT_MAGIC ? ["arity", "hash", "size", "root"] : ["arity", "hash", "kind", "depth", "zero", "size", "root"];
  const lines = text.split("\n");
  if (lines.length !== names.length + 2 || lines[lines.length - 1] !== "") {
    throw bad(`${Math.max(lines.length - 1, 0)} lines, want ${names.length + 1} each ending in a newline`);
  }
  const values = new Map(
    names.map((name, i) => {
      const line = lines[i + 1]!;
      if (!line.startsWith(`${name} `)) throw bad(`line ${JSON.stringify(line)}, want "${name} ..."`);
      return [name, line.slice(name.length + 1)] as const;
    }),
  );
  const decimal = /^(0|[1-9][0-9]*)$/;
  const hex = (name: string): Uint8Array => {
    const value = values.get(name)!;
    if (!/^0x[0-9a-f]{64}$/.test(value)) throw bad(`${name} ${JSON.stringify(value)} is not 0x and 64 lowercase hex digits`);
    return Uint8Array.from(value.slice(2).match(/../g)!, (pair) => parseInt(pair, 16));
  };
  const arityText = values.get("arity")!;
  const arity = Number(arityText);
  if (!decimal.test(arityText) || arity < 2 || arity > 16) throw bad(`arity ${JSON.stringify(arityText)} is not 2..=16`);
  const hash = values.get("hash")!;
  if (!HASH_NAMES.includes(hash as HashName)) throw bad(`unknown hash ${JSON.stringify(hash)}`);
  let kind: { kind: "lean" } | { kind: "imt"; depth: number; zero: Uint8Array } = { kind: "lean" };
  if (magic === CHECKPOINT_MAGIC_KINDS) {
    const name = values.get("kind")!;
    if (name !== "imt") throw bad(`tree: tree kind ${JSON.stringify(name)} is unknown, want "imt"`);
    const depthText = values.get("depth")!;
    const depth = Number(depthText);
    if (!decimal.test(depthText)) throw bad(`depth ${JSON.stringify(depthText)} is not a decimal number without sign or leading zeros`);
    if (depth < 1 || depth > 64) throw bad(`tree: fixed-depth tree depth ${depthText} is out of range, want 1..=64`);
    const zero = hex("zero");
    if (isFieldHash(hash as HashName) && !isCanonicalFieldElement(zero)) throw bad(`tree: zero value is not a canonical BN254 field element, which a ${hash} tree needs`);
    kind = { kind: "imt", depth, zero };
  }
  const sizeText = values.get("size")!;
  if (!decimal.test(sizeText) || BigInt(sizeText) >= 1n << 64n) throw bad(`size ${JSON.stringify(sizeText)} is not a decimal count`);
  const size = BigInt(sizeText);
  let root: Uint8Array | null = null;
  if (values.get("root") !== "none") {
    root = hex("root");
    if (isFieldHash(hash as HashName) && !isCanonicalFieldElement(root)) throw bad(`root ${values.get("root")} is not a canonical ${hash} value`);
  }
  // An imt's empty tree has a root (zeros[depth]), a lean tree's none.
  if ((root !== null) !== (size > 0n || kind.kind === "imt")) throw bad(`size ${size} with ${root === null ? "no" : "a"} root`);
  checkCapacity(arity, kind, size, bad);
  return Object.freeze({ arity, hash: hash as HashName, ...kind, size, root, origin: null });
}

/** Tree levels per tile-level: the largest h with N^h <= 256. */
export function tileHeight(arity: number): number {
  let height = 1;
  while (BigInt(arity) ** BigInt(height + 1) <= MAX_TILE_NODES) height++;
  return height;
}

/** The object path of tile `index` of tile-level `level` holding `width` nodes (spec section 8). */
export function tilePath(arity: number, level: number, index: bigint, width: bigint): string {
  const full = BigInt(arity) ** BigInt(tileHeight(arity));
  return `tile/${level}/${indexPath(index)}${width < full ? `.p/${width}` : ""}`;
}

/** What a [`TileClient`] fetched: GETs answered, body bytes, tiles cached now; and the membership proofs the WebAssembly module computed. */
export interface TileStats {
  readonly requests: number;
  readonly bytes: number;
  readonly cachedTiles: number;
  readonly wasmProofs: number;
}

/** A tree read through tiles at one trusted head. */
export class TileClient {
  readonly baseUrl: string;
  readonly head: { readonly size: bigint; readonly root: Uint8Array | null };
  /** The trusted tree as given (what the proofs are verified against). */
  private readonly trusted: TrustedTree;
  /** The trusted tree, checked. */
  private readonly tree: Tree;
  /** An imt's zeros (null for a lean tree). */
  private readonly zeros: Zeros | null;
  private readonly fetcher: typeof fetch;
  private readonly capacity: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly height: number;
  private readonly width: bigint;
  private readonly wasm: CairnWasm | null;
  /** Verified tiles by path, oldest first (a Map keeps insertion order). */
  private readonly cache = new Map<string, Uint8Array>();
  /** Tiles fetched by the proof being computed: cached only once it verifies. */
  private pending = new Map<string, Uint8Array>();
  /** Bundles found missing (a store of leaf tiles everywhere): not asked again. */
  private readonly noBundle = new Set<string>();
  private requests = 0;
  private bytes = 0;
  private wasmProofs = 0;

  /** `baseUrl` serves what `cairn publish` wrote; `head` and its tree (arity, hash and kind) are trusted. */
  constructor(baseUrl: string, head: TrustedTileHead, options: TileOptions = {}) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    // The trusted tree alone (the head is kept apart), with only the fields given.
    const { size: _size, root: _root, ...tree } = head;
    this.trusted = tree;
    this.tree = checkTree(this.trusted);
    if (this.tree.kind.kind === "indexed") throw inputError("tiles describe append-only trees: an indexed tree rewrites earlier leaves");
    this.zeros = Zeros.of(this.tree.hash, this.tree.arity, this.tree.kind);
    const size = u64Argument(head.size, "trusted head size");
    const root = head.root === null || head.root === undefined ? null : typeof head.root === "string" ? fromHex(head.root) : head.root;
    this.head = Object.freeze({ size, root });
    const fetcher = options.fetch ?? globalThis.fetch;
    if (typeof fetcher !== "function") throw inputError("no fetch available: pass options.fetch");
    this.fetcher = fetcher;
    this.capacity = options.cacheTiles ?? 64;
    this.attempts = Math.max(1, options.attempts ?? 4);
    this.backoffMs = options.backoffMs ?? 100;
    if (!Number.isInteger(head.arity) || head.arity < 2 || head.arity > 16) throw inputError(`trusted arity ${String(head.arity)} is out of range, want 2..=16`);
    this.height = tileHeight(head.arity);
    this.width = BigInt(head.arity) ** BigInt(this.height);
    this.wasm = options.wasm ?? null;
  }

  /** What this client fetched so far. */
  stats(): TileStats {
    return { requests: this.requests, bytes: this.bytes, cachedTiles: this.cache.size, wasmProofs: this.wasmProofs };
  }

  /** The membership proof of leaf `index` at the trusted head, verified against it. */
  async prove(index: bigint | number): Promise<MembershipProof> {
    const i = u64Argument(index, "leaf index");
    const { size } = this.head;
    if (i >= size) throw inputError(`leaf index ${i} is out of range for a tree of size ${size}`);
    if (this.wasm !== null) {
      try {
        return await this.proveInWasm(this.wasm, i);
      } catch {
        // The TypeScript path below gives the same proof, or the error.
      }
    }
    return this.settle(async (node) => {
      const siblings: Hash[] = [];
      for (const step of path(i, size, this.tree.arity, fixedDepth(this.tree.kind))) {
        if (!stepHashes(step)) continue;
        for (let member = 0; member < step.groupLen; member++) {
          if (member !== step.position) siblings.push(await node(step.level, step.groupStart + BigInt(member)));
        }
      }
      const proof = new MembershipProof(this.tree.arity, this.tree.hash.name, i, size, await node(0, i), siblings, this.tree.kind);
      return (this.wasm ?? { verifyMembership }).verifyMembership(proof.toBytes(), this.trusted, this.head);
    });
  }

  /**
   * Leaf `i`'s proof by the module's wallet tracker: a tracker of the
   * trusted tree marks the leaf, plans a sync to the trusted head (given as
   * the unsigned checkpoint that names it), is fed the whole tiles it asks
   * for (through this client's cache: the leaf's path and the right edge)
   * and gives the witness, verified against the head in the module.
   */
  private async proveInWasm(wasm: CairnWasm, i: bigint): Promise<MembershipProof> {
    const tracker = wasm.tracker(this.trusted, 1);
    try {
      tracker.mark(i);
      return await this.settle(async (_node, tile) => {
        const plan = tracker.plan(new TextEncoder().encode(this.checkpointText()));
        for (const t of plan.tiles) tracker.feed(t.path, await tile(t.path, Number(t.maxBytes), t.bundle));
        tracker.finish();
        const proof = tracker.witness(i);
        this.wasmProofs++;
        return proof;
      });
    } finally {
      tracker.free();
    }
  }

  /** The trusted head as the unsigned checkpoint object (spec section 8). */
  private checkpointText(): string {
    const { arity, hash, kind } = this.tree;
    const hex = (bytes: Uint8Array) => `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
    const tree = kind.kind === "imt" ? `${CHECKPOINT_MAGIC_KINDS}\narity ${arity}\nhash ${hash.name}\nkind imt\ndepth ${kind.depth}\nzero ${hex(kind.zero)}\n` : `${CHECKPOINT_MAGIC}\narity ${arity}\nhash ${hash.name}\n`;
    return `${tree}size ${this.head.size}\nroot ${this.head.root === null ? "none" : hex(this.head.root)}\n`;
  }

  /** The consistency proof from `old` (a head the caller trusts too) to the trusted head, verified against both. */
  async proveConsistency(old: TreeHead): Promise<ConsistencyProof> {
    const oldSize = u64Argument(old.size, "old head size");
    const { size } = this.head;
    if (oldSize > size) throw inputError(`old size ${oldSize} is above the trusted size ${size}`);
    return this.settle(async (node) => {
      const hashes: Hash[] = [];
      let edgeLeaf: Hash | null = null;
      if (oldSize > 0n) {
        edgeLeaf = await node(0, oldSize - 1n);
        for (const step of consistencySteps(oldSize, size, this.tree.arity, fixedDepth(this.tree.kind))) {
          for (let k = step.edge - BigInt(step.left); k < step.edge; k++) hashes.push(await node(step.level, k));
          for (let k = 1n; k <= BigInt(step.right); k++) hashes.push(await node(step.level, step.edge + k));
        }
      }
      const proof = new ConsistencyProof(this.tree.arity, this.tree.hash.name, oldSize, size, edgeLeaf, hashes, this.tree.kind);
      return (this.wasm ?? { verifyConsistency }).verifyConsistency(proof.toBytes(), this.trusted, old, this.head);
    });
  }

  /**
   * Runs `build` with a node reader; on success the tiles it fetched join
   * the cache (the oldest beyond the capacity leave it); on failure they
   * are dropped, and a verification failure names every tile read.
   */
  private async settle<T>(
    build: (node: (level: number, index: bigint) => Promise<Hash>, tile: (path: string, bytes: number, range: BundleRange | null) => Promise<Uint8Array>) => Promise<T>,
  ): Promise<T> {
    this.pending = new Map();
    const read: string[] = [];
    const memo = new Map<string, Hash>();
    const node = async (level: number, index: bigint): Promise<Hash> => {
      const key = `${level}/${index}`;
      const known = memo.get(key);
      if (known !== undefined) return known;
      const value = await this.node(level, index, node, read);
      memo.set(key, value);
      return value;
    };
    try {
      const out = await build(node, (path, bytes, range) => this.tileAt(path, bytes, read, range));
      for (const [path, tile] of this.pending) {
        this.cache.delete(path);
        this.cache.set(path, tile);
      }
      while (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value!);
      return out;
    } catch (error) {
      if (error instanceof CairnError && error.stage === "verify") {
        throw new CairnError("verify", error.kind, `${error.message}; tiles read: ${read.join(", ")}`);
      }
      throw error;
    } finally {
      this.pending = new Map();
    }
  }

  /** Node `index` of tree `level` (spec section 8, "Proofs from tiles"). */
  private async node(
    level: number,
    index: bigint,
    node: (level: number, index: bigint) => Promise<Hash>,
    read: string[],
  ): Promise<Hash> {
    const n = BigInt(this.tree.arity);
    const size = this.head.size;
    const span = n ** BigInt(level);
    const finals = size / span;
    if (level % this.height === 0 && index < finals) {
      const tileIndex = index / this.width;
      const width = finals - tileIndex * this.width < this.width ? finals - tileIndex * this.width : this.width;
      const tile = await this.tile(level / this.height, tileIndex, width, read);
      const at = Number(index - tileIndex * this.width) * 32;
      return tile.slice(at, at + 32);
    }
    if (level === 0) throw inputError(`leaf ${index} is out of range for a tree of size ${size}`);
    const below = levelLen(size, n, level - 1);
    const first = index * n;
    const end = first + n < below ? first + n : below;
    if (first >= end) throw inputError(`node ${index} of level ${level} is out of range for a tree of size ${size}`);
    const children: Hash[] = [];
    for (let child = first; child < end; child++) children.push(await node(level - 1, child));
    return groupParent(this.tree.hash, this.zeros, level - 1, children);
  }

  private async tile(level: number, index: bigint, width: bigint, read: string[]): Promise<Uint8Array> {
    const range = level === 0 ? leafTileInBundle(this.tree.arity, this.width, this.head.size, index) : null;
    return this.tileAt(tilePath(this.tree.arity, level, index, width), Number(width) * 32, read, range);
  }

  /**
   * Tile `path` of `want` bytes: cached, or fetched (as its `range` of a
   * bundle when it has one and the bundle exists) and held until the proof
   * reading it verifies.
   */
  private async tileAt(path: string, want: number, read: string[], range: BundleRange | null): Promise<Uint8Array> {
    const cached = this.cache.get(path) ?? this.pending.get(path);
    if (cached !== undefined) return cached;
    let body: Uint8Array | null = null;
    let name = path;
    if (range !== null && !this.noBundle.has(range.path)) {
      try {
        body = await getRange(this.fetcher, `${this.baseUrl}/`, range, this.attempts, this.backoffMs, (bytes) => this.count(bytes));
        name = describeRange(range);
      } catch (error) {
        if (!(error instanceof CairnError && error.status === 404)) throw error;
        this.noBundle.add(range.path);
      }
    }
    body ??= await this.get(path, want);
    if (body.length !== want) throw tileError(`${this.baseUrl}/${name}: ${body.length} bytes, a tile of ${want / 32} nodes has ${want}`);
    read.push(name);
    this.pending.set(path, body);
    return body;
  }

  private count(bytes: number): void {
    this.requests++;
    this.bytes += bytes;
  }

  /** GETs `path`, refusing bodies over `maxBytes`; retries connection failures and 5xx with backoff. */
  async get(path: string, maxBytes: number): Promise<Uint8Array> {
    return getObject(this.fetcher, `${this.baseUrl}/${path}`, maxBytes, this.attempts, this.backoffMs, (bytes) => this.count(bytes));
  }
}

function levelLen(size: bigint, n: bigint, level: number): bigint {
  let len = size;
  for (let l = 0; l < level; l++) len = (len + n - 1n) / n;
  return len;
}

function fromHex(text: string): Uint8Array {
  if (!/^0x[0-9a-fA-F]{64}$/.test(text)) throw inputError(`root ${text} is not 0x and 64 hex digits`);
  return Uint8Array.from(text.slice(2).match(/../g)!, (pair) => parseInt(pair, 16));
}

/** GET of one object of a store, with the retries and the size bound of tiles. */
export async function getObject(
  fetcher: typeof fetch,
  url: string,
  maxBytes: number,
  attempts: number,
  backoffMs: number,
  count: (bytes: number) => void,
): Promise<Uint8Array> {
  const response = await fetchRetrying(fetcher, url, undefined, attempts, backoffMs);
  if (response.status === 404) {
    await response.body?.cancel();
    count(0);
    throw tileError(`${url}: missing (404)`, 404);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw tileError(`${url}: status ${response.status}`, response.status);
  }
  const declared = Number(response.headers.get("content-length") ?? "-1");
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw tileError(`${url}: the object has ${declared} bytes, at most ${maxBytes} are accepted here`, response.status);
  }
  const body = new Uint8Array(await response.arrayBuffer());
  count(body.length);
  if (body.length > maxBytes) throw tileError(`${url}: the object has ${body.length} bytes, at most ${maxBytes} are accepted here`, response.status);
  return body;
}

/** Options of the functions that read a store's checkpoint. */
export interface CheckpointOptions extends TileOptions {
  /**
   * Trust only a checkpoint signed by this key (the text `cairn keygen`
   * prints, or a parsed key): it must be cairn's signed checkpoint, its
   * signature by the key must verify and its origin be the key's name.
   * Without one, the checkpoint is trusted as far as the place serving it.
   */
  readonly verifierKey?: string | VerifierKey;
  /**
   * With `verifierKey` and no head: the hashers to pick the checkpoint's
   * hash from (the `hashers` export of "cairn-verify", or `{ blake3 }`).
   */
  readonly hashers?: Readonly<Partial<Record<HashName, Hasher>>>;
}

/**
 * Fetches and parses the checkpoint of the tile store at `baseUrl`. With
 * `options.verifierKey` it must be signed by that key (a CairnError of
 * stage "verify" otherwise, stage "decode" for a malformed note); without
 * one, trust it only as far as you trust that place.
 */
export async function fetchCheckpoint(baseUrl: string, options: CheckpointOptions = {}): Promise<TileCheckpoint> {
  const fetcher = options.fetch ?? globalThis.fetch;
  const base = String(baseUrl).replace(/\/+$/, "");
  const key = options.verifierKey === undefined ? undefined : typeof options.verifierKey === "string" ? parseVerifierKey(options.verifierKey) : options.verifierKey;
  const body = await getObject(fetcher, `${base}/checkpoint`, CHECKPOINT_MAX_BYTES, Math.max(1, options.attempts ?? 4), options.backoffMs ?? 100, () => {});
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    throw new CairnError("fetch", "BadCheckpoint", `${base}/checkpoint: not UTF-8`);
  }
  if (key !== undefined) {
    const name = `${key.name}+${key.id.toString(16).padStart(8, "0")}`;
    const magic = text.split("\n", 1)[0];
    if (magic === CHECKPOINT_MAGIC || magic === CHECKPOINT_MAGIC_KINDS) {
      throw new CairnError("verify", "NoKnownSignature", `${base}/checkpoint: the checkpoint is unsigned, want one signed by ${name}`);
    }
    try {
      return fromSigned(verifyCheckpoint(text, key));
    } catch (error) {
      if (error instanceof CairnError) throw new CairnError(error.stage, error.kind, `${base}/checkpoint: ${error.message}`);
      throw error;
    }
  }
  try {
    return parseCheckpoint(text);
  } catch (error) {
    if (error instanceof CairnError) throw new CairnError("fetch", "BadCheckpoint", `${base}/${error.message}`);
    throw error;
  }
}

/**
 * The head to prove against: `head` as given, or, with a verifier key, the
 * store's signed head (which `head`, when given too, must equal).
 */
async function trustedHead(baseUrl: string, head: TrustedTileHead | null, options: CheckpointOptions & { client?: TileClient }): Promise<TrustedTileHead | null> {
  if (options.verifierKey === undefined) {
    if (head === null && options.client === undefined) throw inputError("no trusted head: pass one, or options.verifierKey to trust the store's signed checkpoint");
    return head;
  }
  const signed = await fetchCheckpoint(baseUrl, options);
  const signedKind = signed.kind === "imt" ? { kind: "imt" as const, depth: signed.depth!, zero: signed.zero! } : {};
  const given = head ?? (options.client ? { arity: signed.arity, hash: { name: signed.hash }, ...signedKind, size: options.client.head.size, root: options.client.head.root } : null);
  if (given !== null) {
    const root = given.root === null || given.root === undefined ? null : typeof given.root === "string" ? fromHex(given.root) : given.root;
    const givenZero = given.zero === undefined ? new Uint8Array(32) : typeof given.zero === "string" ? fromHex(given.zero) : given.zero;
    const sameKind =
      (given.kind ?? "lean") === signed.kind &&
      (signed.kind !== "imt" || (given.depth === signed.depth && givenZero.every((byte, i) => byte === signed.zero![i])));
    const same =
      given.arity === signed.arity &&
      given.hash.name === signed.hash &&
      sameKind &&
      BigInt(given.size) === signed.size &&
      root !== null &&
      signed.root !== null &&
      root.every((byte, i) => byte === signed.root![i]);
    if (!same) {
      throw new CairnError("verify", "InconsistentHead", `${String(baseUrl).replace(/\/+$/, "")}/checkpoint: the store's signed head (${signed.size} leaves) is not the head given (${String(given.size)} leaves)`);
    }
    if (head !== null) return head;
    // The client proves at its own head, the signed one.
    if (options.client !== undefined) return null;
  }
  const hasher = options.hashers?.[signed.hash];
  if (hasher === undefined) throw inputError(`the store's signed checkpoint names the hash ${signed.hash}: pass its hasher in options.hashers (or a head)`);
  return { arity: signed.arity, hash: hasher, ...signedKind, size: signed.size, root: signed.root };
}

/**
 * The membership proof of leaf `index` at the trusted `head` (its arity and
 * hash too), computed from the tiles at `baseUrl` and verified against the
 * head. Pass a [`TileClient`] as `options.client` to share its tile cache
 * across proofs. With `options.verifierKey` the store's checkpoint must be
 * signed by that key, and the proof is at its head: `head` may then be
 * null, and must otherwise be that head.
 */
export async function proveFromTiles(
  baseUrl: string,
  head: TrustedTileHead | null,
  index: bigint | number,
  options: CheckpointOptions & { client?: TileClient } = {},
): Promise<MembershipProof> {
  const trusted = await trustedHead(baseUrl, head, options);
  return (options.client ?? new TileClient(baseUrl, trusted!, options)).prove(index);
}

/**
 * The consistency proof from `old` to `head`, computed from the tiles at
 * `baseUrl` and verified against both. With `options.verifierKey`, `head`
 * is the store's signed head (pass null, or that head).
 */
export async function consistencyFromTiles(
  baseUrl: string,
  head: TrustedTileHead | null,
  old: TreeHead,
  options: CheckpointOptions & { client?: TileClient } = {},
): Promise<ConsistencyProof> {
  const trusted = await trustedHead(baseUrl, head, options);
  return (options.client ?? new TileClient(baseUrl, trusted!, options)).proveConsistency(old);
}
