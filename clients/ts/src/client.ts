// A small client for cairn's HTTP API (fetch-based: browsers, node >= 18,
// Deno, Bun). It trusts nothing the server says about the tree: every proof
// it fetches is verified against a head the caller trusts before it is
// returned. The head the server reports (`root()`) is information, not trust.

import { hashArgument, parseHashOrReason, toHex, U64_MAX, u64Argument, type Hash } from "./bytes.js";
import { CairnError, inputError } from "./errors.js";
import { asUnsigned, parseJson, type JsonValue } from "./json.js";
import { ROLLOVER_RULES, type RolloverRule } from "./family.js";
import { describeKind, imtKind, INDEXED, LEAN, sameKind, type TreeKind } from "./kind.js";
import { membershipFromParsed, type ConsistencyProof, type MembershipProof } from "./proof.js";
import { changeRoots, checkTree, rollForward, verifyConsistency, verifyMembership, type TreeHead, type TrustedTree } from "./verify.js";

/** The head a server reports: what it says, to be checked before trusting. */
export interface ServerHead {
  readonly size: bigint;
  readonly root: Uint8Array | null;
  readonly depth: number;
  readonly arity: number;
  readonly hash: string;
  /** The server's tree kind: lean, indexed, or imt with its depth and zero value (checked against the trusted tree). */
  readonly kind: TreeKind;
}

export interface ClientOptions {
  /** The fetch to use; default: the global one. */
  readonly fetch?: typeof fetch;
  /** Extra request headers. */
  readonly headers?: Record<string, string>;
  /** Refuse response bodies above this many bytes; default 1 MiB (a proof is at most tens of KiB). */
  readonly maxResponseBytes?: number;
  /** Ask every tree route of the tree of this name in a database of several (`/v1/trees/{name}/...`); default: the server's default tree. */
  readonly treeName?: string;
}

/** One tree of a server's database, as the server reports it (`GET /v1/trees`): information, not trust. */
export interface TreeInfo {
  readonly name: string;
  readonly kind: string;
  readonly arity: number;
  readonly hash: string;
  /** The durable size. */
  readonly size: bigint;
  readonly root: Uint8Array | null;
  readonly finalized: bigint;
  /** A family member's capacity (`cairn tree add --capacity`); null for a tree without one. */
  readonly capacity: bigint | null;
  /** A family's successor rule (see `placeBlock`); null exactly when `capacity` is. */
  readonly rollover: RolloverRule | null;
}

/** The trees of a server's database (`GET /v1/trees`). */
export interface TreesInfo {
  readonly trees: readonly TreeInfo[];
  /** The tree the routes without a tree name answer for, if any. */
  readonly defaultTree: string | null;
  /** Whether blocks of several trees go through the database's block journal. */
  readonly journaled: boolean;
  readonly lastBlock: bigint | null;
  readonly finalizedBlock: bigint | null;
}

/** One block of values for several trees (`POST /v1/blocks`). */
export interface BlockInput {
  readonly number: bigint | number;
  /** The block hash (32 bytes or 0x-hex); default all zeros. */
  readonly hash?: Uint8Array | string;
  /** Per tree name, its values for the block (possibly none). */
  readonly trees: Readonly<Record<string, ReadonlyArray<Uint8Array | string>>>;
}

/** Where a block's values went, per tree named, as the server reports it. */
export interface BlockAppended {
  readonly block: { readonly number: bigint; readonly hash: Uint8Array };
  readonly trees: ReadonlyArray<{
    readonly name: string;
    readonly firstIndex: bigint;
    readonly count: bigint;
    readonly size: bigint;
    readonly root: Uint8Array | null;
  }>;
}

/** One change of a mutable tree's leaf (`POST /v1/changes`): its new value, or null to remove it. */
export interface ChangeInput {
  readonly index: bigint | number;
  /** The new value (32 bytes or 0x-hex); null removes the leaf (it becomes the zero leaf). */
  readonly value: Uint8Array | string | null;
}

/** One changed leaf, as the server answered it, checked for shape (see {@link CairnClient.change}). */
export interface ChangedLeaf {
  readonly index: bigint;
  /** The leaf's value before the change. */
  readonly old: Uint8Array;
  /** Its new value; null for a removal. */
  readonly value: Uint8Array | null;
  /** The old leaf's membership proof against the root just before the change (what Semaphore's updateMember and removeMember take). */
  readonly proof: MembershipProof;
  /** The root the proof implies: the root just before the change. */
  readonly rootBefore: Uint8Array;
  /** The root with the leaf changed: the root just after the change. */
  readonly rootAfter: Uint8Array;
}

/** A durable batch of changes: each changed leaf in order, and the server's durable head once it was durable (the server's word). */
export interface Changed {
  readonly changes: readonly ChangedLeaf[];
  readonly head: { readonly size: bigint; readonly root: Uint8Array | null };
  readonly block: { readonly number: bigint; readonly hash: Uint8Array | null } | null;
}

/** A tree name as `cairn tree add` takes it: the server's rule, checked before a request names it. */
// A tree's name; member K of a family that rolls over is `NAME/K`.
const TREE_NAME = /^[a-z0-9][a-z0-9._-]{0,63}(\/[1-9][0-9]*)?$/;

function treeName(name: unknown): string {
  if (typeof name !== "string" || !TREE_NAME.test(name)) {
    throw inputError(`tree name ${JSON.stringify(name)}: want 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit (and /K for a family's member K)`);
  }
  return name;
}

function fetchError(kind: "Network" | "Http" | "NotFound" | "Conflict" | "BadResponse", message: string, status?: number, code?: string): CairnError {
  return new CairnError("fetch", kind, message, status, code);
}

/** The inputs of one of cairn's batch circuits as snarkjs reads them: decimal strings, and lists of them. */
export type CircuitInput = Record<string, unknown>;

/**
 * A batch witness answer of `what`, checked for its shape: an object whose
 * roots, size and commitment are decimal strings, whose size is `size`
 * (when known), and whose list `key` holds `values` (or `count` decimals).
 */
export function witnessInput(body: string, what: string, key: string, count: bigint, size?: bigint, values?: readonly bigint[]): CircuitInput {
  const bad = (why: string): never => {
    throw fetchError("BadResponse", `${what}: ${why}`);
  };
  const decimal = (item: unknown): item is string => typeof item === "string" && /^\d+$/.test(item);
  let input: unknown = null;
  try {
    input = JSON.parse(body);
  } catch {
    // refused below
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) return bad("want a JSON object");
  const fields = input as Record<string, unknown>;
  for (const name of ["oldRoot", "newRoot", "size", "commitment"]) if (!decimal(fields[name])) bad(`${name} is not a decimal string`);
  if (size !== undefined && fields.size !== String(size)) bad(`size is ${String(fields.size)}, asked for ${size}`);
  const list = fields[key];
  if (!Array.isArray(list) || BigInt(list.length) !== count) return bad(`${key} is not a list of ${count}`);
  list.forEach((item, i) => {
    if (!decimal(item) || (values !== undefined && BigInt(item) !== values[i])) bad(`${key}[${i}] is not the value asked`);
  });
  return fields;
}

/** The error kind of a refused answer: 404 and 409 by name, the others as Http. */
function statusKind(status: number): "Http" | "NotFound" | "Conflict" {
  if (status === 404) return "NotFound";
  if (status === 409) return "Conflict";
  return "Http";
}

/** A client for one cairn server whose tree has the trusted arity, hash and kind. */
export class CairnClient {
  readonly baseUrl: string;
  readonly tree: TrustedTree;
  /** The tree of the server's database this client asks, or null for the default tree. */
  readonly treeName: string | null;
  private readonly fetcher: typeof fetch;
  private readonly headers: Record<string, string>;
  private readonly maxResponseBytes: number;
  private readonly options: ClientOptions;

  /** `baseUrl` as `http://host:port` (a path prefix is kept); `tree` is what the caller trusts. */
  constructor(baseUrl: string, tree: TrustedTree, options: ClientOptions = {}) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    this.tree = tree;
    const fetcher = options.fetch ?? globalThis.fetch;
    if (typeof fetcher !== "function") throw inputError("no fetch available: pass options.fetch");
    this.fetcher = fetcher;
    this.headers = { accept: "application/json", ...options.headers };
    this.maxResponseBytes = options.maxResponseBytes ?? 1 << 20;
    this.treeName = options.treeName === undefined ? null : treeName(options.treeName);
    this.options = options;
  }

  /**
   * A client of the tree `name` of the same server's database
   * (`/v1/trees/{name}/...`), trusting `tree` (default: this client's
   * trusted tree), of this client's class. (`tree` is the trusted tree's
   * property, so the method is `forTree`.)
   */
  forTree(name: string, tree: TrustedTree = this.tree): this {
    // Of this client's class: an IndexedClient's is an IndexedClient.
    const Class = this.constructor as new (baseUrl: string, tree: TrustedTree, options: ClientOptions) => this;
    return new Class(this.baseUrl, tree, { ...this.options, treeName: treeName(name) });
  }

  /** A tree route's path for this client's tree. */
  protected scoped(path: string): string {
    if (this.treeName === null || !path.startsWith("/v1/")) return path;
    return `/v1/trees/${this.treeName}/${path.slice(4)}`;
  }

  /** GETs a path; resolves to the body text of a 2xx answer, or null for a 404 when `absentOk`. */
  protected async get(path: string, absentOk = false): Promise<string | null> {
    return this.send("GET", this.scoped(path), undefined, absentOk);
  }

  protected async send(method: "GET" | "POST", path: string, json: string | undefined, absentOk: boolean): Promise<string | null> {
    let response: Response;
    try {
      const init: RequestInit =
        json === undefined
          ? { headers: this.headers }
          : { method, headers: { ...this.headers, "content-type": "application/json" }, body: json };
      response = await this.fetcher.call(globalThis, this.baseUrl + path, init);
    } catch (error) {
      throw fetchError("Network", `${method} ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > this.maxResponseBytes) {
      throw fetchError("BadResponse", `${method} ${path}: response of ${declared} bytes exceeds ${this.maxResponseBytes}`, response.status);
    }
    let body: string;
    try {
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (bytes.length > this.maxResponseBytes) {
        throw fetchError("BadResponse", `${method} ${path}: response of ${bytes.length} bytes exceeds ${this.maxResponseBytes}`, response.status);
      }
      body = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (error) {
      if (error instanceof CairnError) throw error;
      throw fetchError("BadResponse", `${method} ${path}: unreadable body: ${error instanceof Error ? error.message : String(error)}`, response.status);
    }
    if (response.status === 404 && absentOk) return null;
    if (!response.ok) {
      let reason = body.slice(0, 500);
      let code: string | undefined;
      try {
        const parsed = parseJson(body);
        const error = parsed instanceof Map ? parsed.get("error") : undefined;
        if (typeof error === "string") reason = error;
        const named = parsed instanceof Map ? parsed.get("code") : undefined;
        if (typeof named === "string") code = named;
      } catch {
        // not JSON: keep the text
      }
      throw fetchError(statusKind(response.status), `${method} ${path}: HTTP ${response.status}: ${reason}`, response.status, code);
    }
    return body;
  }

  /** Parses a JSON object answer of `what`, or fails with BadResponse. */
  private document(body: string, what: string): Map<string, JsonValue> {
    let document: JsonValue;
    try {
      document = parseJson(body);
    } catch {
      throw fetchError("BadResponse", `${what}: body is not JSON`);
    }
    if (!(document instanceof Map)) throw fetchError("BadResponse", `${what}: want an object`);
    return document;
  }

  /** The trees of the server's database and their durable heads (`GET /v1/trees`): the server's word. */
  async trees(): Promise<TreesInfo> {
    const what = "GET /v1/trees";
    const document = this.document((await this.send("GET", "/v1/trees", undefined, false))!, what);
    const bad = (why: string): never => {
      throw fetchError("BadResponse", `${what}: ${why}`);
    };
    const list = document.get("trees");
    if (!Array.isArray(list)) return bad("trees is not a list");
    const trees = list.map((entry): TreeInfo => {
      if (!(entry instanceof Map)) return bad("a tree is not an object");
      const name = entry.get("name");
      const kind = entry.get("kind");
      const hash = entry.get("hash");
      if (typeof name !== "string" || typeof kind !== "string" || typeof hash !== "string") return bad("name, kind or hash is not a string");
      const arity = asUnsigned(entry.get("arity"), 16n) ?? bad(`tree ${name}: arity is not an integer`);
      const size = asUnsigned(entry.get("size"), U64_MAX) ?? bad(`tree ${name}: size is not a u64`);
      const finalized = asUnsigned(entry.get("finalized"), U64_MAX) ?? bad(`tree ${name}: finalized is not a u64`);
      const capacityValue = entry.get("capacity");
      const ruleValue = entry.get("rollover");
      if ((capacityValue === undefined) !== (ruleValue === undefined)) bad(`tree ${name}: capacity and rollover come together`);
      const capacity = capacityValue === undefined ? null : (asUnsigned(capacityValue, U64_MAX) ?? bad(`tree ${name}: capacity is not a u64`));
      if (ruleValue !== undefined && !(ROLLOVER_RULES as readonly unknown[]).includes(ruleValue)) {
        bad(`tree ${name}: rollover ${JSON.stringify(ruleValue)} is not one of ${ROLLOVER_RULES.join(", ")}`);
      }
      const rollover = ruleValue === undefined ? null : (ruleValue as RolloverRule);
      return { name, kind, arity: Number(arity), hash, size, root: this.optionalHash(entry.get("root"), `${what}: tree ${name}: root`), finalized, capacity, rollover };
    });
    const defaultTree = document.get("default");
    if (defaultTree !== null && typeof defaultTree !== "string") return bad("default is neither null nor a string");
    const optional = (key: string): bigint | null => {
      const value = document.get(key);
      return value === null ? null : (asUnsigned(value, U64_MAX) ?? bad(`${key} is neither null nor a u64`));
    };
    return { trees, defaultTree, journaled: document.get("journaled") === true, lastBlock: optional("last_block"), finalizedBlock: optional("finalized_block") };
  }

  /**
   * Writes one block of values for several trees (`POST /v1/blocks`): all
   * or nothing, resolved once durable. A refusal (an unknown tree, a value a
   * tree holds, a block number that does not follow the last) rejects with
   * a CairnError (NotFound, Conflict, Http) and writes nothing. A server
   * with a write token needs it in `options.headers` (`authorization`).
   */
  async appendBlock(block: BlockInput): Promise<BlockAppended> {
    const what = "POST /v1/blocks";
    const number = u64Argument(block?.number, "block number");
    if (block.trees === null || typeof block.trees !== "object") throw inputError("block trees: want an object of tree names to lists of values");
    const trees: Record<string, string[]> = {};
    for (const [name, values] of Object.entries(block.trees)) {
      if (!Array.isArray(values)) throw inputError(`block trees.${name}: want a list of values`);
      trees[treeName(name)] = values.map((value, position) => toHex(hashArgument(value, `tree ${name} value ${position}`)));
    }
    if (number > BigInt(Number.MAX_SAFE_INTEGER)) throw inputError(`block number ${number} is beyond what JSON numbers carry exactly`);
    const request: Record<string, unknown> = { number: Number(number), trees };
    if (block.hash !== undefined) request.hash = toHex(hashArgument(block.hash, "block hash"));
    const document = this.document((await this.send("POST", "/v1/blocks", JSON.stringify(request), false))!, what);
    const bad = (why: string): never => {
      throw fetchError("BadResponse", `${what}: ${why}`);
    };
    const head = document.get("block");
    if (!(head instanceof Map)) return bad("block is not an object");
    const hashText = head.get("hash");
    const hash = typeof hashText === "string" ? parseHashOrReason(hashText) : "block hash is not a string";
    if (typeof hash === "string") return bad(hash);
    const answered = asUnsigned(head.get("number"), U64_MAX) ?? bad("block number is not a u64");
    if (answered !== number) bad(`asked for block ${number}, the server wrote block ${answered}`);
    const list = document.get("trees");
    if (!Array.isArray(list)) return bad("trees is not a list");
    return {
      block: { number: answered, hash },
      trees: list.map((entry) => {
        if (!(entry instanceof Map)) return bad("a tree is not an object");
        const name = entry.get("name");
        if (typeof name !== "string") return bad("a tree's name is not a string");
        const u64 = (key: string): bigint => asUnsigned(entry.get(key), U64_MAX) ?? bad(`tree ${name}: ${key} is not a u64`);
        return { name, firstIndex: u64("first_index"), count: u64("count"), size: u64("size"), root: this.optionalHash(entry.get("root"), `${what}: tree ${name}: root`) };
      }),
    };
  }

  /**
   * Sets leaf `index` of a mutable tree (`cairn init --mutable`) to
   * `value`, durably; resolves to the old leaf with its proof. See
   * {@link change}.
   */
  async update(index: bigint | number, value: Uint8Array | string): Promise<{ old: ChangedLeaf; head: Changed["head"] }> {
    const changed = await this.change([{ index, value: hashArgument(value, "value") }]);
    return { old: changed.changes[0]!, head: changed.head };
  }

  /**
   * Removes leaf `index` of a mutable tree (sets the zero leaf), durably;
   * resolves to the old leaf with its proof. See {@link change}.
   */
  async remove(index: bigint | number): Promise<{ old: ChangedLeaf; head: Changed["head"] }> {
    const changed = await this.change([{ index, value: null }]);
    return { old: changed.changes[0]!, head: changed.head };
  }

  /**
   * Updates and removes leaves of a mutable tree (`POST /v1/changes`), in
   * order, all or nothing (tagged with `block` if given); resolves once
   * durable. Each changed leaf comes with its old value's proof, decoded and
   * checked: of the trusted arity, hash and kind, of the leaf asked, proving
   * the old value; and the proofs chain (each change's root before is the
   * previous change's root after). The first `rootBefore` is the server's
   * word until compared with a root the caller trusts. A refusal rejects
   * with a CairnError (NotFound, Conflict, Http) whose `code` names it
   * (`not_mutable`, `index_out_of_range`, `non_canonical`, `zero_leaf`,
   * `duplicate`, `was_removed`, `removed_leaf`), and nothing changed.
   */
  async change(changes: readonly ChangeInput[], block?: { number: bigint | number; hash?: Uint8Array | string }): Promise<Changed> {
    const what = "POST /v1/changes";
    if (!Array.isArray(changes)) throw inputError("changes: want a list of {index, value}");
    const asked = changes.map((change, position) => {
      const index = u64Argument(change?.index, `change ${position} index`);
      if (index > BigInt(Number.MAX_SAFE_INTEGER)) throw inputError(`change ${position} index ${index} is beyond what JSON numbers carry exactly`);
      const value = change.value === null ? null : hashArgument(change.value, `change ${position} value`);
      return { index, value };
    });
    const request: Record<string, unknown> = { changes: asked.map(({ index, value }) => ({ index: Number(index), value: value === null ? null : toHex(value) })) };
    if (block !== undefined) {
      const number = u64Argument(block.number, "block number");
      if (number > BigInt(Number.MAX_SAFE_INTEGER)) throw inputError(`block number ${number} is beyond what JSON numbers carry exactly`);
      request.block = block.hash === undefined ? { number: Number(number) } : { number: Number(number), hash: toHex(hashArgument(block.hash, "block hash")) };
    }
    const document = this.document((await this.send("POST", this.scoped("/v1/changes"), JSON.stringify(request), false))!, what);
    const bad = (why: string): never => {
      throw fetchError("BadResponse", `${what}: ${why}`);
    };
    const list = document.get("changes");
    if (!Array.isArray(list) || list.length !== asked.length) return bad(`want ${asked.length} changes`);
    let previous: Uint8Array | null = null;
    const changed = list.map((entry, position): ChangedLeaf => {
      if (!(entry instanceof Map)) return bad(`change ${position} is not an object`);
      const want = asked[position]!;
      const index = asUnsigned(entry.get("index"), U64_MAX) ?? bad(`change ${position}: index is not a u64`);
      if (index !== want.index) bad(`change ${position} is of leaf ${index}, asked for leaf ${want.index}`);
      const old = this.optionalHash(entry.get("old") ?? null, `${what}: change ${position}: old`) ?? bad(`change ${position}: no old value`);
      const value = this.optionalHash(entry.get("value") ?? null, `${what}: change ${position}: value`);
      if ((value === null) !== (want.value === null) || (value !== null && toHex(value) !== toHex(want.value!))) {
        bad(`change ${position}: the server changed leaf ${index} to ${value === null ? "the zero leaf" : toHex(value)}, not what was asked`);
      }
      let proof: MembershipProof;
      let roots: { before: Uint8Array; after: Uint8Array };
      try {
        proof = membershipFromParsed(entry.get("proof") ?? null);
        roots = changeRoots(proof, this.tree, want.value);
      } catch (error) {
        return bad(`change ${position}: the old leaf's proof: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (proof.index !== index || toHex(proof.leaf) !== toHex(old)) bad(`change ${position}: the proof is not of leaf ${index} holding ${toHex(old)}`);
      if (previous !== null && toHex(previous) !== toHex(roots.before)) {
        bad(`change ${position} proves against root ${toHex(roots.before)}, the change before it left ${toHex(previous)}`);
      }
      previous = roots.after;
      return { index, old, value, proof, rootBefore: roots.before, rootAfter: roots.after };
    });
    const size = asUnsigned(document.get("size"), U64_MAX) ?? bad("size is not a u64");
    const root = this.optionalHash(document.get("root") ?? null, `${what}: root`);
    const tag = document.get("block");
    let answeredBlock: Changed["block"] = null;
    if (tag instanceof Map) {
      const number = asUnsigned(tag.get("number"), U64_MAX) ?? bad("block number is not a u64");
      answeredBlock = { number, hash: this.optionalHash(tag.get("hash") ?? null, `${what}: block hash`) };
    }
    return { changes: changed, head: { size, root }, block: answeredBlock };
  }

  private optionalHash(value: JsonValue | undefined, what: string): Uint8Array | null {
    if (value === null) return null;
    const parsed = typeof value === "string" ? parseHashOrReason(value) : "not a string";
    if (typeof parsed === "string") throw fetchError("BadResponse", `${what}: ${parsed}`);
    return parsed;
  }

  /**
   * The head the server reports. Checks that its arity and hash are the
   * trusted ones; the size and root are the server's word: compare them
   * with a trusted source, or link them to a trusted head with
   * {@link consistency} / {@link advance}.
   */
  async root(): Promise<ServerHead> {
    const body = (await this.get("/v1/root"))!;
    let document: JsonValue;
    try {
      document = parseJson(body);
    } catch {
      throw fetchError("BadResponse", "GET /v1/root: body is not JSON");
    }
    const bad = (what: string): never => {
      throw fetchError("BadResponse", `GET /v1/root: ${what}`);
    };
    if (!(document instanceof Map)) return bad("want an object");
    const size = asUnsigned(document.get("size"), U64_MAX) ?? bad("size is not a u64");
    const depth = asUnsigned(document.get("depth"), 64n) ?? bad("depth is not an integer");
    const arity = asUnsigned(document.get("arity"), 16n) ?? bad("arity is not an integer");
    const hash = document.get("hash");
    if (typeof hash !== "string") return bad("hash is not a string");
    const rootText = document.get("root");
    let root: Hash | null = null;
    if (rootText !== null) {
      if (typeof rootText !== "string") return bad("root is neither null nor a string");
      const parsed = parseHashOrReason(rootText);
      if (typeof parsed === "string") return bad(parsed);
      root = parsed;
    }
    const kindName = document.get("kind") ?? "lean";
    let kind: TreeKind = LEAN;
    if (kindName === "imt") {
      const zero = document.get("zero");
      const parsed = typeof zero === "string" ? parseHashOrReason(zero) : "zero is not a string";
      if (typeof parsed === "string") return bad(`an imt's ${parsed}`);
      kind = imtKind(Number(depth), parsed);
    } else if (kindName === "indexed") {
      kind = INDEXED;
    } else if (kindName !== "lean") {
      return bad(`kind ${JSON.stringify(kindName)} is not "lean", "imt" or "indexed"`);
    }
    // A lean or indexed tree has a root exactly when it has leaves; an imt always has one.
    if ((size > 0n || kind.kind === "imt") !== (root !== null)) bad(`size ${size} with ${root === null ? "no root" : "a root"}`);
    if (Number(arity) !== this.tree.arity) {
      throw new CairnError("verify", "ArityMismatch", `server tree has arity ${arity}, the trusted tree has arity ${this.tree.arity}`);
    }
    if (hash !== this.tree.hash.name) {
      throw new CairnError("verify", "HashMismatch", `server tree uses hash ${hash}, the trusted tree uses ${this.tree.hash.name}`);
    }
    const trusted = checkTree(this.tree).kind;
    if (!sameKind(kind, trusted)) {
      throw new CairnError("verify", "KindMismatch", `server tree is ${describeKind(kind)}, the trusted tree is ${describeKind(trusted)}`);
    }
    return { size, root, depth: Number(depth), arity: Number(arity), hash, kind };
  }

  /** The membership proof of leaf `index` in the tree of the trusted head, verified against it. */
  async proof(index: bigint | number, head: TreeHead): Promise<MembershipProof> {
    this.notIndexed("proof", "indexedProof");
    const at = u64Argument(index, "leaf index");
    const size = u64Argument(head?.size, "trusted head size");
    const body = (await this.get(`/v1/proofs/${at}?size=${size}`))!;
    const proof = verifyMembership(body, this.tree, head);
    if (proof.index !== at) {
      throw new CairnError("verify", "IndexOutOfRange", `asked for leaf ${at}, the server proved leaf ${proof.index}`);
    }
    return proof;
  }

  /** The consistency proof between two trusted heads, verified. */
  async consistency(oldHead: TreeHead, newHead: TreeHead): Promise<ConsistencyProof> {
    this.notIndexed("consistency", null);
    const from = u64Argument(oldHead?.size, "trusted old head size");
    const to = u64Argument(newHead?.size, "trusted new head size");
    const body = (await this.get(`/v1/consistency?from=${from}&to=${to}`))!;
    return verifyConsistency(body, this.tree, oldHead, newHead);
  }

  /**
   * Whether `value` is a leaf of the tree of the trusted head: its verified
   * membership proof, or null when the server reports it absent or only at
   * an index beyond the trusted size. A proof is checked; an absence is the
   * server's word (a lean or fixed-depth tree has no non-membership proofs;
   * an indexed tree's are `IndexedClient.absence`). Needs a server whose
   * database keeps its uniqueness set.
   */
  async contains(value: Uint8Array | string, head: TreeHead): Promise<MembershipProof | null> {
    this.notIndexed("contains", "indexedProof and absence");
    const leaf = hashArgument(value, "value");
    const size = u64Argument(head?.size, "trusted head size");
    const body = await this.get(`/v1/leaves/${toHex(leaf)}`, true);
    if (body === null) return null;
    let index: bigint | null = null;
    try {
      const document = parseJson(body);
      if (document instanceof Map) index = asUnsigned(document.get("index"), U64_MAX);
    } catch {
      index = null;
    }
    if (index === null) throw fetchError("BadResponse", "GET /v1/leaves: want {index}");
    if (index >= size) return null;
    const proof = await this.proof(index, head);
    if (toHex(proof.leaf) !== toHex(leaf)) {
      throw new CairnError("verify", "LeafMismatch", `leaf ${index} is ${toHex(proof.leaf)}, not ${toHex(leaf)}`);
    }
    return proof;
  }

  /**
   * The inputs of the batch-append circuit `LeanIMTAppend(K, D)` for the
   * leaves `from..to` (`GET /v1/witness/append`; a binary Poseidon lean
   * tree, K = to - from a positive multiple of 4, D `circuitDepth` or the
   * depth of the tree of `to` leaves): the JSON `cairn prove
   * --append-witness` prints, which snarkjs takes as is. Its shape is
   * checked; its roots are the server's word (the proof binds them:
   * compare `oldRoot` and `newRoot` with heads you trust). A refusal
   * rejects with a CairnError: NotFound for a tree without append
   * witnesses or a `to` beyond the durable size, Http (400) for a bad
   * range or depth.
   */
  async appendWitness(from: bigint | number, to: bigint | number, circuitDepth?: number): Promise<CircuitInput> {
    const start = u64Argument(from, "from");
    const end = u64Argument(to, "to");
    if (start > end) throw inputError(`from ${start} is above to ${end}`);
    const depth = circuitDepth === undefined ? "" : `&circuit_depth=${u64Argument(circuitDepth, "circuit depth")}`;
    const body = (await this.get(`/v1/witness/append?from=${start}&to=${end}${depth}`))!;
    return witnessInput(body, "GET /v1/witness/append", "leaves", end - start, start);
  }

  /** Refuses a method of lean and fixed-depth trees when the trusted tree is indexed. */
  private notIndexed(method: string, instead: string | null): void {
    if (checkTree(this.tree).kind.kind === "indexed") {
      const use =
        instead === null
          ? "an indexed tree is not append-only, so no consistency proof links two of its heads"
          : `use IndexedClient's ${instead}`;
      throw inputError(`${method}: the trusted tree is indexed: ${use}`);
    }
  }

  /**
   * Moves trust forward: fetches the server's current head and the
   * consistency proof from `trusted` to it, verifies it, and returns the new
   * head (now trusted as an extension of the old one). With a membership
   * proof against `trusted`, also returns it rolled forward to the new head.
   */
  async advance(
    trusted: TreeHead,
    proof?: MembershipProof,
  ): Promise<{ head: { size: bigint; root: Uint8Array | null }; proof?: MembershipProof }> {
    if (u64Argument(trusted?.size, "trusted head size") === 0n) {
      throw inputError("advance needs a non-empty trusted head: the empty tree is a prefix of every tree");
    }
    const reported = await this.root();
    const head = { size: reported.size, root: reported.root };
    const link = await this.consistency(trusted, head);
    if (proof === undefined) return { head };
    return { head, proof: rollForward(proof, link, this.tree, trusted, head) };
  }
}

export { familyOf, memberName, placeBlock, ROLLOVER_RULES, type FamilyInfo, type FamilyRule, type LastMember, type Placement, type RolloverRule } from "./family.js";
