// The fast path: cairn's Rust verifier and wallet witness tracker compiled
// to WebAssembly (crates/wasm), loaded from the module's bytes with
// `WebAssembly.instantiate`. The module has no imports and a byte-in,
// byte-out interface (docs/spec.md, "WebAssembly module"), so no generated
// glue is needed: this file is all of it. `verifier(wasm)` gives the same
// verify functions over the module where one loaded and over the pure
// TypeScript verifier otherwise, with identical results: a proof the module
// refuses is verified again in TypeScript, which throws the same CairnError
// the pure path throws.
import { hashArgument, type Hash } from "./bytes.js";
import { CairnError, inputError } from "./errors.js";
import { HASH_IDS } from "./hasher.js";
import { getRange, type BundleRange } from "./range.js";
import { decodeConsistency, decodeMembership, membershipFromBytes, type ConsistencyProof, type MembershipProof, type ProofInput } from "./proof.js";
import { checkTree, verifyConsistency as pureConsistency, verifyMembership as pureMembership, type TreeHead, type TrustedTree } from "./verify.js";
import type { TreeKind } from "./kind.js";

const OP = {
  verifyMembership: 1,
  verifyConsistency: 2,
  trackerNew: 10,
  trackerLoad: 11,
  trackerFree: 12,
  trackerSave: 13,
  trackerInfo: 14,
  mark: 20,
  unmark: 21,
  witness: 22,
  checkpoint: 23,
  rewind: 24,
  plan: 30,
  feed: 31,
  finish: 32,
} as const;

interface Exports {
  memory: WebAssembly.Memory;
  cairn_input(len: number): number;
  cairn_call(op: number, handle: number): number;
  cairn_output_ptr(): number;
  cairn_output_len(): number;
}

/** What can hold the module: its bytes, a compiled module, or a fetch response (streamed where the host can). */
export type WasmSource = BufferSource | WebAssembly.Module | Response | PromiseLike<Response>;

/** A call the module refused: `status` 1 a malformed call, 2 a proof that does not verify, 3 a tracker's refusal. */
function refused(status: number, message: string): CairnError {
  return status === 2 ? new CairnError("verify", "RootMismatch", message) : status === 3 ? new CairnError("verify", "Wallet", message) : inputError(message);
}

/** The tree as the module reads it: arity, hash id, kind id, depth, zero (36 bytes). */
function treeBytes(arity: number, hash: keyof typeof HASH_IDS, kind: TreeKind): Uint8Array {
  const out = new Uint8Array(36);
  out[0] = arity;
  out[1] = HASH_IDS[hash];
  if (kind.kind === "imt") {
    out[2] = 1;
    out[3] = kind.depth;
    out.set(kind.zero, 4);
  } else if (kind.kind === "indexed") {
    out[2] = 2;
  }
  return out;
}

/** A head as the module reads it: size, a root flag and 32 bytes (41 bytes); null if it is malformed (the pure path then says why). */
function headBytes(head: TreeHead): Uint8Array | null {
  try {
    const size = typeof head.size === "bigint" ? head.size : BigInt(head.size);
    if (size < 0n || size >= 1n << 64n) return null;
    const out = new Uint8Array(41);
    writeU64(out, 0, size);
    if (head.root !== null) {
      out[8] = 1;
      out.set(hashArgument(head.root, "root"), 9);
    }
    return out;
  } catch {
    return null;
  }
}

/** The module's integers are little-endian (proofs and state keep their own big-endian encodings). */
function readU64(bytes: Uint8Array, at: number): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(at, true);
}

function writeU64(out: Uint8Array, at: number, value: bigint): void {
  new DataView(out.buffer, out.byteOffset, out.byteLength).setBigUint64(at, value, true);
}

function readHead(bytes: Uint8Array, at: number): { size: bigint; root: Hash | null } {
  const size = readU64(bytes, at);
  return { size, root: bytes[at + 8] === 1 ? bytes.slice(at + 9, at + 41) : null };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function u32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n, true);
  return out;
}

function u64(n: bigint | number): Uint8Array {
  const out = new Uint8Array(8);
  writeU64(out, 0, BigInt(n));
  return out;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The loaded module. */
export class CairnWasm {
  /** @internal */
  constructor(private readonly exports: Exports) {}

  /** @internal Runs one call: its status and output (copied out of the module's memory). */
  call(op: number, handle: number, input: Uint8Array): { status: number; output: Uint8Array } {
    const at = this.exports.cairn_input(input.length);
    new Uint8Array(this.exports.memory.buffer, at, input.length).set(input);
    const status = this.exports.cairn_call(op, handle);
    const ptr = this.exports.cairn_output_ptr();
    const len = this.exports.cairn_output_len();
    return { status, output: new Uint8Array(this.exports.memory.buffer, ptr, len).slice() };
  }

  /** @internal A call that must succeed: its output, or the refusal as a CairnError. */
  must(op: number, handle: number, input: Uint8Array): Uint8Array {
    const { status, output } = this.call(op, handle, input);
    if (status !== 0) throw refused(status, decoder.decode(output));
    return output;
  }

  /** `verifyMembership` (same arguments, result and errors) with the hashing in WebAssembly. */
  verifyMembership(proof: ProofInput | MembershipProof, tree: TrustedTree, head: TreeHead): MembershipProof {
    const decoded = decodeMembership(proof);
    const trusted = checkTree(tree);
    const trustedHead = headBytes(head);
    if (trustedHead !== null) {
      const input = concat([treeBytes(trusted.arity, trusted.hash.name, trusted.kind), trustedHead, decoded.toBytes()]);
      if (this.call(OP.verifyMembership, 0, input).status === 0) return decoded;
    }
    pureMembership(decoded, tree, head);
    throw disagreement("membership");
  }

  /** `verifyConsistency` (same arguments, result and errors) with the hashing in WebAssembly. */
  verifyConsistency(proof: ProofInput | ConsistencyProof, tree: TrustedTree, old: TreeHead, head: TreeHead): ConsistencyProof {
    const decoded = decodeConsistency(proof);
    const trusted = checkTree(tree);
    const oldHead = headBytes(old);
    const newHead = headBytes(head);
    if (oldHead !== null && newHead !== null) {
      const input = concat([treeBytes(trusted.arity, trusted.hash.name, trusted.kind), oldHead, newHead, decoded.toBytes()]);
      if (this.call(OP.verifyConsistency, 0, input).status === 0) return decoded;
    }
    pureConsistency(decoded, tree, old, head);
    throw disagreement("consistency");
  }

  /** A new witness tracker of `tree` (arity, hash and kind) retaining `window` checkpoints (100 by default). */
  tracker(tree: TrustedTree, window = 100): WasmTracker {
    const trusted = checkTree(tree);
    if (!Number.isInteger(window) || window < 0 || window > 0xffff_ffff) throw inputError(`window ${window} is out of range, want 0..2^32`);
    const out = this.must(OP.trackerNew, 0, concat([treeBytes(trusted.arity, trusted.hash.name, trusted.kind), u32(window)]));
    return new WasmTracker(this, new DataView(out.buffer).getUint32(0, true));
  }

  /** A tracker from the bytes `WasmTracker.save` returned (every witness is checked again). */
  loadTracker(state: Uint8Array): WasmTracker {
    const out = this.must(OP.trackerLoad, 0, state);
    return new WasmTracker(this, new DataView(out.buffer).getUint32(0, true));
  }
}

/** The pure path accepted what the module refused: never expected; refused rather than trusted. */
function disagreement(what: string): CairnError {
  return new CairnError("verify", "Disagreement", `the WebAssembly verifier refused a ${what} proof the TypeScript verifier accepts`);
}

/** A sync's plan: the checkpoint's head and the tiles to fetch. */
export interface SyncPlan {
  readonly head: { readonly size: bigint; readonly root: Hash | null };
  /** Each tile's name and exact length; a leaf tile inside a complete bundle also its range of the bundle (read that; the tile's own object when the bundle is missing). */
  readonly tiles: readonly { readonly path: string; readonly maxBytes: bigint; readonly bundle: BundleRange | null }[];
}

/** What a finished sync adopted and read. */
export interface SyncReport {
  readonly head: { readonly size: bigint; readonly root: Hash | null };
  readonly tiles: number;
  readonly bytes: bigint;
  readonly nodes: bigint;
}

/**
 * cairn-wallet's witness tracker in WebAssembly: marked leaves' witnesses
 * kept current from whole tiles. A sync is `plan` (the checkpoint object's
 * bytes; the tiles to fetch), `feed` (each tile's bytes) and `finish`
 * (adopts the head once every witness verifies); `sync` does the three over
 * `fetch`. Call `free` when done: the module holds the tracker.
 */
export class WasmTracker {
  /** @internal */
  constructor(
    private readonly wasm: CairnWasm,
    readonly handle: number,
  ) {}

  mark(index: bigint | number): void {
    this.wasm.must(OP.mark, this.handle, u64(index));
  }

  /** Whether `index` was marked. */
  unmark(index: bigint | number): boolean {
    return this.wasm.must(OP.unmark, this.handle, u64(index))[0] === 1;
  }

  /** The witness of marked leaf `index` at the adopted head, verified against it. */
  witness(index: bigint | number): MembershipProof {
    return membershipFromBytes(this.wasm.must(OP.witness, this.handle, u64(index)));
  }

  /** Retains the adopted head and marks as `block`'s (blocks strictly increase). */
  checkpoint(block: bigint | number): void {
    this.wasm.must(OP.checkpoint, this.handle, u64(block));
  }

  /** Returns to checkpoint `block`'s head and marks, with no network. */
  rewind(block: bigint | number): void {
    this.wasm.must(OP.rewind, this.handle, u64(block));
  }

  /** The adopted head and the marked leaves. */
  info(): { head: { size: bigint; root: Hash | null }; marked: bigint[] } {
    const out = this.wasm.must(OP.trackerInfo, this.handle, new Uint8Array(0));
    const head = readHead(out, 36);
    const view = new DataView(out.buffer);
    const count = view.getUint32(77, true);
    const marked: bigint[] = [];
    for (let i = 0; i < count; i++) marked.push(readU64(out, 81 + 8 * i));
    return { head, marked };
  }

  /** Plans a sync to the checkpoint object `checkpoint` (as fetched), checked against `verifierKeys` (none: unsigned accepted). */
  plan(checkpoint: Uint8Array, verifierKeys: readonly string[] = []): SyncPlan {
    const keys = verifierKeys.map((k) => {
      const bytes = encoder.encode(k);
      return concat([u32(bytes.length), bytes]);
    });
    const out = this.wasm.must(OP.plan, this.handle, concat([u32(keys.length), ...keys, checkpoint]));
    const head = readHead(out, 0);
    const view = new DataView(out.buffer);
    const count = view.getUint32(41, true);
    const tiles: { path: string; maxBytes: bigint; bundle: BundleRange | null }[] = [];
    let at = 45;
    const text = (): string => {
      const len = view.getUint32(at, true);
      const value = decoder.decode(out.subarray(at + 4, at + 4 + len));
      at += 4 + len;
      return value;
    };
    for (let i = 0; i < count; i++) {
      const path = text();
      const maxBytes = readU64(out, at);
      at += 8;
      const bundle = text();
      const offset = readU64(out, at);
      const bundleBytes = readU64(out, at + 8);
      at += 16;
      tiles.push({ path, maxBytes, bundle: bundle === "" ? null : { path: bundle, offset, length: Number(maxBytes), bundleBytes } });
    }
    return { head, tiles };
  }

  /** Feeds the planned tile `path`'s bytes. */
  feed(path: string, bytes: Uint8Array): void {
    const name = encoder.encode(path);
    this.wasm.must(OP.feed, this.handle, concat([u32(name.length), name, bytes]));
  }

  /** Adopts the planned head once every witness verifies against it. */
  finish(): SyncReport {
    const out = this.wasm.must(OP.finish, this.handle, new Uint8Array(0));
    const view = new DataView(out.buffer);
    return { head: readHead(out, 0), tiles: view.getUint32(41, true), bytes: readU64(out, 45), nodes: readU64(out, 53) };
  }

  /** Syncs to the tile store at `baseUrl` (its `checkpoint`, then the planned tiles) with `fetcher`. */
  async sync(baseUrl: string, options: { verifierKeys?: readonly string[]; fetcher?: typeof fetch } = {}): Promise<SyncReport> {
    const get = options.fetcher ?? fetch;
    const base = baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`;
    const fetchBytes = async (path: string): Promise<Uint8Array> => {
      const response = await get(base + path);
      if (!response.ok) throw new CairnError("fetch", "Http", `GET ${base + path}: HTTP ${response.status}`, response.status);
      return new Uint8Array(await response.arrayBuffer());
    };
    const plan = this.plan(await fetchBytes("checkpoint"), options.verifierKeys ?? []);
    // A leaf tile inside a complete bundle is a range of it; a missing
    // bundle (a store of the older layout) sends the read to the tile.
    const tileBytes = async (t: SyncPlan["tiles"][number]): Promise<Uint8Array> => {
      if (t.bundle !== null) {
        try {
          return await getRange(get, base, t.bundle, 1, 0, () => {});
        } catch (error) {
          if (!(error instanceof CairnError && error.status === 404)) throw error;
        }
      }
      return fetchBytes(t.path);
    };
    const tiles = await Promise.all(plan.tiles.map(tileBytes));
    plan.tiles.forEach((t, i) => this.feed(t.path, tiles[i]!));
    return this.finish();
  }

  /** The tracker's state as bytes (versioned, checksummed): keep them anywhere (IndexedDB) and `loadTracker` them. */
  save(): Uint8Array {
    return this.wasm.must(OP.trackerSave, this.handle, new Uint8Array(0));
  }

  /** Frees the tracker in the module. */
  free(): void {
    this.wasm.must(OP.trackerFree, this.handle, new Uint8Array(0));
  }
}

/** Loads the module from `source` (cairn-verify ships it as `cairn-verify/cairn.wasm`). */
export async function loadWasm(source: WasmSource): Promise<CairnWasm> {
  const resolved = await source;
  let instance: WebAssembly.Instance;
  if (resolved instanceof WebAssembly.Module) {
    instance = await WebAssembly.instantiate(resolved, {});
  } else if (typeof Response !== "undefined" && resolved instanceof Response) {
    instance = (await WebAssembly.instantiate(await resolved.arrayBuffer(), {})).instance;
  } else {
    instance = (await WebAssembly.instantiate(resolved as BufferSource, {})).instance;
  }
  return new CairnWasm(instance.exports as unknown as Exports);
}

/** The module from `source`, or null where WebAssembly is unavailable or the module does not load. */
export async function tryLoadWasm(source: WasmSource): Promise<CairnWasm | null> {
  if (typeof WebAssembly === "undefined") return null;
  try {
    return await loadWasm(source);
  } catch {
    return null;
  }
}

/** The verify functions over `wasm` where it loaded, over the pure TypeScript verifier otherwise (identical results). */
export function verifier(wasm: CairnWasm | null): {
  verifyMembership: typeof pureMembership;
  verifyConsistency: typeof pureConsistency;
} {
  if (wasm === null) return { verifyMembership: pureMembership, verifyConsistency: pureConsistency };
  return {
    verifyMembership: (proof, tree, head) => wasm.verifyMembership(proof, tree, head),
    verifyConsistency: (proof, tree, old, head) => wasm.verifyConsistency(proof, tree, old, head),
  };
}

