// The kind of a tree (docs/spec.md section 2.1): a LeanIMT, whose lone
// group members are lifted and whose empty tree has no root; an indexed
// tree, Lean-shaped (the same math) but not append-only; or a
// fixed-depth tree (zk-kit's IMT), whose partial groups are padded with the
// level's zero hash. `groupParent` is the one place that rule is written;
// the zeros are computed only as high as a proof needs, once per tree.

import { equalBytes, toHex, type Hash } from "./bytes.js";
import type { Hasher } from "./hasher.js";

/** The deepest fixed-depth tree (a u64 leaf index has at most 64 binary digits). */
export const MAX_FIXED_DEPTH = 64;

/**
 * The kind of tree a proof is of, or a verifier trusts: `lean`, `indexed`
 * (Lean-shaped, leaves updated in place: no consistency proofs), or `imt`
 * (fixed depth, zero-padded) with its depth (1..64) and zero value (the
 * value of an absent leaf, `zeros[0]`).
 */
export type TreeKind =
  | { readonly kind: "lean" }
  | { readonly kind: "indexed" }
  | { readonly kind: "imt"; readonly depth: number; readonly zero: Hash };

/** The LeanIMT, the kind of every version 1 proof. */
export const LEAN: TreeKind = /* @__PURE__ */ Object.freeze({ kind: "lean" as const });

/** The indexed tree: Lean-shaped math over its leaf hashes; not append-only. */
export const INDEXED: TreeKind = /* @__PURE__ */ Object.freeze({ kind: "indexed" as const });

/** A frozen imt kind. */
export function imtKind(depth: number, zero: Hash): TreeKind {
  return Object.freeze({ kind: "imt" as const, depth, zero: Uint8Array.from(zero) });
}

/** The fixed depth, 0 for a lean or indexed tree (what the shape functions take). */
export function fixedDepth(kind: TreeKind): number {
  return kind.kind === "imt" ? kind.depth : 0;
}

/** A kind as error messages name it: `lean`, `indexed`, or `imt of depth D and zero 0x..` (as cairn's Rust verifier does). */
export function describeKind(kind: TreeKind): string {
  return kind.kind === "imt" ? `imt of depth ${kind.depth} and zero ${toHex(kind.zero)}` : kind.kind;
}

export function sameKind(a: TreeKind, b: TreeKind): boolean {
  if (a.kind !== "imt" || b.kind !== "imt") return a.kind === b.kind;
  return a.depth === b.depth && equalBytes(a.zero, b.zero);
}

/** Whether the tree only grows at its right edge, so that consistency proofs exist: not an indexed tree. */
export function isAppendOnly(kind: TreeKind): boolean {
  return kind.kind !== "indexed";
}

/** N^depth, or null when it exceeds every u64 size. */
export function capacity(arity: number, depth: number): bigint | null {
  const leaves = BigInt(arity) ** BigInt(depth);
  return leaves <= (1n << 64n) - 1n ? leaves : null;
}

/**
 * The zeros of one fixed-depth tree, computed as a verifier climbs:
 * `zeros[0] = zero`, `zeros[k + 1] = H(zeros[k]` N times`)`. The chain of
 * the last tree each hasher verified against is kept, so checking many
 * proofs of one tree hashes its zeros once (MiMCSponge costs about a
 * millisecond a hash in JavaScript).
 */
export class Zeros {
  private readonly chain: Hash[];

  private constructor(
    private readonly hasher: Hasher,
    readonly arity: number,
    chain: Hash[],
  ) {
    this.chain = chain;
  }

  /** The zeros of the tree of `arity`, `hasher` and `kind`; null for a lean or indexed tree. */
  static of(hasher: Hasher, arity: number, kind: TreeKind): Zeros | null {
    if (kind.kind !== "imt") return null;
    const cached = LAST_CHAIN.get(hasher);
    if (cached !== undefined && cached.arity === arity && equalBytes(cached.chain[0]!, kind.zero)) {
      return new Zeros(hasher, arity, cached.chain);
    }
    const chain = [kind.zero];
    LAST_CHAIN.set(hasher, { arity, chain });
    return new Zeros(hasher, arity, chain);
  }

  /** zeros[level], hashing the levels below it that are not known yet. */
  at(level: number): Hash {
    while (this.chain.length <= level) {
      const below = this.chain[this.chain.length - 1]!;
      this.chain.push(this.hasher.hashChildren(new Array<Hash>(this.arity).fill(below)));
    }
    return this.chain[level]!;
  }
}

/**
 * The parent of a group of 1..N `members` of `level`, in index order (an
 * array the call may extend): the partial-group rule, written here only
 * (it mirrors cairn's Rust core, `kind::group_parent`). `zeros` is null
 * for a lean or indexed tree: a lone member is lifted unchanged, any other
 * group hashed over exactly its members. For an imt, a group of fewer
 * than N members is padded to N with zeros[level] and hashed (a lone
 * member too).
 */
export function groupParent(hasher: Hasher, zeros: Zeros | null, level: number, members: Hash[]): Hash {
  if (zeros === null) return members.length === 1 ? members[0]! : hasher.hashChildren(members);
  if (members.length < zeros.arity) {
    const pad = zeros.at(level);
    while (members.length < zeros.arity) members.push(pad);
  }
  return hasher.hashChildren(members);
}

/** Per hasher, the chain of zeros of the last fixed-depth tree verified against (it grows in place). */
const LAST_CHAIN = new WeakMap<Hasher, { arity: number; chain: Hash[] }>();
