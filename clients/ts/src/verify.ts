// Verification against what the caller trusts (docs/spec.md sections 5.2,
// 6.2, 6.3): the arity, hash and kind of the tree (lean, indexed, or imt
// with its depth and zero value) and a head (size, root). Every position and width
// comes from those and the proof's index; a field the proof claims is only
// compared with the trusted value, never used first.

import { equalBytes, hashArgument, toHex, u64Argument, type Hash } from "./bytes.js";
import { CairnError, inputError, verifyError } from "./errors.js";
import { HASH_NAMES, type Hasher } from "./hasher.js";
import {
  ConsistencyProof,
  decodeConsistency,
  decodeMembership,
  MembershipProof,
  type ProofInput,
} from "./proof.js";
import { describeKind, fixedDepth, groupParent, imtKind, INDEXED, isAppendOnly, LEAN, MAX_FIXED_DEPTH, sameKind, Zeros, type TreeKind } from "./kind.js";
import {
  consistencyHashCount,
  consistencySteps,
  depth,
  membershipSiblingCount,
  path,
  stepHashes,
  type ConsistencyStep,
} from "./shape.js";

/**
 * What the verifier trusts about the tree: its arity (2..16), its hash and
 * its kind. `kind` is `"lean"` (the default: the LeanIMT) or `"imt"`, a
 * fixed-depth tree padded with zero hashes (zk-kit's IMT), which also
 * needs its `depth` (1..64) and takes its `zero` value (the value of an
 * absent leaf; 32 zero bytes if omitted, as `cairn init --kind imt`), or
 * `"indexed"`, an indexed tree, whose plain membership proofs prove a leaf
 * hash with the LeanIMT's math and which has no consistency proofs (its
 * leaves are updated in place: `NotAppendOnly`). A proof of another kind,
 * depth or zero value is refused (`KindMismatch`).
 */
export interface TrustedTree {
  readonly arity: number;
  readonly hash: Hasher;
  readonly kind?: "lean" | "imt" | "indexed";
  readonly depth?: number;
  readonly zero?: Uint8Array | string;
}

/** A checked TrustedTree. */
export interface Tree {
  readonly arity: number;
  readonly hash: Hasher;
  readonly kind: TreeKind;
}

/**
 * A tree head the caller trusts: a size and the root of the tree of that
 * many leaves (null exactly for the empty tree). Take it from an honest
 * source (a contract, a signed checkpoint), never a root alone.
 */
export interface TreeHead {
  readonly size: bigint | number;
  readonly root: Uint8Array | string | null;
}

interface Head {
  size: bigint;
  root: Hash | null;
}

/** @internal The trusted tree, checked: an input CairnError if it is malformed. */
export function checkTree(tree: TrustedTree): Tree {
  if (typeof tree !== "object" || tree === null) throw inputError("the trusted tree must be an object {arity, hash}");
  const { arity, hash } = tree;
  if (typeof arity !== "number" || !Number.isInteger(arity) || arity < 2 || arity > 16) {
    throw inputError(`trusted arity ${String(arity)} is out of range, want 2..=16`);
  }
  if (typeof hash !== "object" || hash === null || !HASH_NAMES.includes(hash.name) || typeof hash.hashChildren !== "function") {
    throw inputError("trusted hash must be a Hasher (blake3, sha256, keccak256, poseidon or mimcsponge from this package)");
  }
  return { arity, hash, kind: trustedKind(tree) };
}

/** The kind a TrustedTree names, refusing a depth or zero without `kind: "imt"` and a kind that cannot be a tree of its hash. */
function trustedKind(tree: TrustedTree): TreeKind {
  const { kind, depth: levels, zero } = tree;
  if (kind === undefined || kind === "lean" || kind === "indexed") {
    if (levels !== undefined || zero !== undefined) {
      throw inputError(
        `trusted depth and zero are for a fixed-depth tree: add kind: "imt" (the ${kind === "indexed" ? "indexed kind" : 'default kind, "lean",'} has neither)`,
      );
    }
    return kind === "indexed" ? INDEXED : LEAN;
  }
  if (kind !== "imt") throw inputError(`trusted tree kind ${JSON.stringify(String(kind))} is unknown, want "lean", "imt" or "indexed"`);
  if (levels === undefined) throw inputError(`a trusted imt tree needs its depth, 1..=${MAX_FIXED_DEPTH}`);
  if (typeof levels !== "number" || !Number.isInteger(levels) || levels < 1 || levels > MAX_FIXED_DEPTH) {
    throw inputError(`trusted depth ${String(levels)} is out of range for an imt tree, want 1..=${MAX_FIXED_DEPTH}`);
  }
  const value = zero === undefined ? new Uint8Array(32) : hashArgument(zero, "trusted zero value");
  if (!tree.hash.accepts(value)) {
    throw new CairnError(
      "input",
      "NonCanonical",
      `trusted zero value ${toHex(value)} is not a canonical BN254 field element, which a ${tree.hash.name} tree needs`,
    );
  }
  return imtKind(levels, value);
}

/** A trusted head of a tree of `kind`: a lean or indexed tree has a root exactly when it has leaves, an imt always has one. */
function readHead(head: TreeHead, what: string, kind: TreeKind): Head {
  if (typeof head !== "object" || head === null) throw inputError(`${what} must be an object {size, root}`);
  const size = u64Argument(head.size, `${what} size`);
  const root = head.root === null || head.root === undefined ? null : hashArgument(head.root, `${what} root`);
  if ((size > 0n || kind.kind === "imt") !== (root !== null)) {
    throw verifyError(
      "InconsistentHead",
      `trusted head is inconsistent: size ${size} ${root === null ? "without a root" : "with a root (the empty tree has none)"}`,
    );
  }
  return { size, root };
}

function checkParams(proof: { arity: number; hash: string; tree: TreeKind }, tree: Tree): void {
  if (proof.arity !== tree.arity) {
    throw verifyError("ArityMismatch", `proof is for arity ${proof.arity}, the trusted tree has arity ${tree.arity}`);
  }
  if (proof.hash !== tree.hash.name) {
    throw verifyError("HashMismatch", `proof is for hash ${proof.hash}, the trusted tree uses ${tree.hash.name}`);
  }
  if (!sameKind(proof.tree, tree.kind)) {
    throw verifyError(
      "KindMismatch",
      `proof is for a tree of kind ${describeKind(proof.tree)}, the trusted tree is ${describeKind(tree.kind)}`,
    );
  }
}

/** Refuses a consistency proof of a tree that is not append-only (after its parameters, as cairn's Rust verifier does). */
function checkAppendOnly(proof: ConsistencyProof): void {
  if (!isAppendOnly(proof.tree)) {
    throw verifyError(
      "NotAppendOnly",
      `a consistency proof of an ${describeKind(proof.tree)} tree: its leaves change as values are inserted, so it has none`,
    );
  }
}

function checkValue(hasher: Hasher, what: string, value: Hash): void {
  if (!hasher.accepts(value)) {
    throw verifyError("NonCanonical", `proof ${what} ${toHex(value)} is not a canonical BN254 field element`);
  }
}

function checkRoot(which: string, computed: Hash, trusted: Hash | null): void {
  const want = trusted ?? new Uint8Array(32);
  if (!equalBytes(computed, want)) {
    throw verifyError("RootMismatch", `proof computes ${which} ${toHex(computed)}, the trusted ${which} is ${toHex(want)}`);
  }
}

/** Runs `body` so that it throws nothing but a CairnError. */
function guarded<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof CairnError) throw error;
    throw inputError(`unexpected failure (a custom hasher?): ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The root a membership proof implies at its own size, after checking its shape and values. */
function membershipRoot(proof: MembershipProof, hasher: Hasher): Hash {
  if (proof.index >= proof.size) {
    throw verifyError("IndexOutOfRange", `leaf index ${proof.index} is out of range for a tree of size ${proof.size}`);
  }
  const steps = path(proof.index, proof.size, proof.arity, fixedDepth(proof.tree));
  let want = 0;
  for (const step of steps) want += step.groupLen - 1;
  if (proof.siblings.length !== want) {
    throw verifyError("HashCount", `proof has ${proof.siblings.length} hashes, a tree of this shape needs exactly ${want}`);
  }
  checkValue(hasher, "leaf", proof.leaf);
  proof.siblings.forEach((sibling, i) => checkValue(hasher, `sibling ${i}`, sibling));
  // An imt pads every partial group with its level's zero (a lone member too).
  const zeros = Zeros.of(hasher, proof.arity, proof.tree);
  let node = proof.leaf;
  let at = 0;
  for (const step of steps) {
    if (!stepHashes(step)) continue;
    const count = step.groupLen - 1;
    const group = proof.siblings.slice(at, at + count);
    group.splice(step.position, 0, node);
    node = groupParent(hasher, zeros, step.level, group);
    at += count;
  }
  return node;
}

/**
 * The roots around one change of a mutable tree's leaf (an update, or a
 * removal when `next` is null): `before`, the root the old leaf's proof
 * implies, and `after`, the root of the same path with the leaf replaced by
 * `next` (the tree's zero leaf for a removal: 0 in a lean tree, the zero
 * value in an imt). Checks the proof's parameters against the trusted tree
 * and its shape and values; the roots are what the proof implies, to be
 * compared with a trusted root (the answer's first `before` with the root
 * the caller trusts, each `after` with the next change's `before`).
 */
export function changeRoots(
  proof: ProofInput | MembershipProof,
  tree: TrustedTree,
  next: Uint8Array | string | null,
): { before: Hash; after: Hash } {
  return guarded(() => {
    const decoded = decodeMembership(proof);
    const trustedTree = checkTree(tree);
    checkParams(decoded, trustedTree);
    if (trustedTree.kind.kind === "indexed") throw inputError("an indexed tree's leaves are not updated or removed by index");
    const zero = trustedTree.kind.kind === "imt" ? trustedTree.kind.zero : new Uint8Array(32);
    const leaf = next === null ? zero : hashArgument(next, "new value");
    const replaced = new MembershipProof(decoded.arity, decoded.hash, decoded.index, decoded.size, leaf, decoded.siblings, decoded.tree);
    return { before: membershipRoot(decoded, trustedTree.hash), after: membershipRoot(replaced, trustedTree.hash) };
  });
}

/**
 * Verifies a membership proof (decoded, or bytes/JSON to decode) against a
 * trusted tree and head; returns the decoded proof. Throws a CairnError:
 * stage "decode" if it is malformed, "verify" if it does not prove leaf
 * `proof.index` of the trusted head, "input" for a malformed argument.
 */
export function verifyMembership(proof: ProofInput | MembershipProof, tree: TrustedTree, head: TreeHead): MembershipProof {
  return guarded(() => {
    const decoded = decodeMembership(proof);
    const trustedTree = checkTree(tree);
    checkParams(decoded, trustedTree);
    const trusted = readHead(head, "trusted head", trustedTree.kind);
    if (decoded.size !== trusted.size) {
      throw verifyError("SizeMismatch", `proof size is ${decoded.size}, the trusted size is ${trusted.size}`);
    }
    checkRoot("root", membershipRoot(decoded, trustedTree.hash), trusted.root);
    return decoded;
  });
}

interface WalkLevel {
  step: ConsistencyStep;
  offset: number;
  /** The new tree's value of the old edge node at this level. */
  newEdge: Hash;
}

function walk(proof: ConsistencyProof, tree: Tree, old: Head, next: Head): WalkLevel[] {
  checkParams(proof, tree);
  checkAppendOnly(proof);
  for (const [which, claimed, trusted] of [
    ["old size", proof.oldSize, old.size],
    ["new size", proof.newSize, next.size],
  ] as const) {
    if (claimed !== trusted) throw verifyError("SizeMismatch", `proof ${which} is ${claimed}, the trusted size is ${trusted}`);
  }
  if (proof.oldSize > proof.newSize) {
    throw verifyError("OldSizeAboveNew", `old size ${proof.oldSize} is larger than new size ${proof.newSize}`);
  }
  const levelsFixed = fixedDepth(proof.tree);
  const want = consistencyHashCount(proof.oldSize, proof.newSize, proof.arity, levelsFixed);
  if (proof.hashes.length !== want) {
    throw verifyError("HashCount", `proof has ${proof.hashes.length} hashes, a tree of this shape needs exactly ${want}`);
  }
  if ((proof.oldSize === 0n) !== (proof.edgeLeaf === null)) {
    const present = proof.edgeLeaf !== null;
    throw verifyError(
      "EdgeLeaf",
      `proof edge leaf is ${present ? "present" : "absent"}, want ${present ? "none" : "one"} for old size ${proof.oldSize}`,
    );
  }
  const hasher = tree.hash;
  const zeros = Zeros.of(hasher, proof.arity, proof.tree);
  if (proof.edgeLeaf === null) {
    // The empty tree is a prefix of every tree: nothing to recompute, but
    // an imt's trusted old head must still hold its empty root, zeros[depth].
    if (zeros !== null) checkRoot("old root", zeros.at(levelsFixed), old.root);
    return [];
  }
  checkValue(hasher, "edge leaf", proof.edgeLeaf);
  proof.hashes.forEach((value, i) => checkValue(hasher, `hash ${i}`, value));

  let oldNode = proof.edgeLeaf;
  let newNode = proof.edgeLeaf;
  let offset = 0;
  const levels: WalkLevel[] = [];
  for (const step of consistencySteps(proof.oldSize, proof.newSize, proof.arity, levelsFixed)) {
    levels.push({ step, offset, newEdge: newNode });
    const left = proof.hashes.slice(offset, offset + step.left);
    const right = proof.hashes.slice(offset + step.left, offset + step.left + step.right);
    offset += step.left + step.right;
    // A lean tree lifts a group of one member; an imt pads and hashes it.
    if (step.belowOldRoot) oldNode = groupParent(hasher, zeros, step.level, [...left, oldNode]);
    newNode = groupParent(hasher, zeros, step.level, [...left, newNode, ...right]);
  }
  checkRoot("old root", oldNode, old.root);
  checkRoot("new root", newNode, next.root);
  return levels;
}

/**
 * Verifies that `oldHead` and `newHead`, both trusted heads of the tree,
 * are consistent: the old tree is a prefix of the new one. From size 0 a
 * proof says nothing about the new root (the empty tree is a prefix of
 * every tree). Returns the decoded proof; throws like {@link verifyMembership}.
 */
export function verifyConsistency(
  proof: ProofInput | ConsistencyProof,
  tree: TrustedTree,
  oldHead: TreeHead,
  newHead: TreeHead,
): ConsistencyProof {
  return guarded(() => {
    const decoded = decodeConsistency(proof);
    const trustedTree = checkTree(tree);
    checkParams(decoded, trustedTree);
    checkAppendOnly(decoded);
    const old = readHead(oldHead, "trusted old head", trustedTree.kind);
    const next = readHead(newHead, "trusted new head", trustedTree.kind);
    walk(decoded, trustedTree, old, next);
    return decoded;
  });
}

/**
 * Turns a membership proof against `oldHead` into the proof of the same
 * leaf against `newHead`, from a consistency proof between them and no
 * leaves. Both inputs are verified first, and so is the result.
 */
export function rollForward(
  membership: ProofInput | MembershipProof,
  consistency: ProofInput | ConsistencyProof,
  tree: TrustedTree,
  oldHead: TreeHead,
  newHead: TreeHead,
): MembershipProof {
  return guarded(() => {
    const proof = verifyMembership(membership, tree, oldHead);
    const link = decodeConsistency(consistency);
    const trustedTree = checkTree(tree);
    checkParams(link, trustedTree);
    checkAppendOnly(link);
    const old = readHead(oldHead, "trusted old head", trustedTree.kind);
    const next = readHead(newHead, "trusted new head", trustedTree.kind);
    const levels = walk(link, trustedTree, old, next);
    const levelsFixed = fixedDepth(trustedTree.kind);
    // A verified membership proof means old size > 0, so the walk covers
    // every level of the new tree.
    if (levels.length !== depth(link.newSize, tree.arity, levelsFixed)) throw new Error("walk does not cover the new tree");
    const n = BigInt(tree.arity);
    const oldLevels: (readonly Hash[])[] = [];
    let at = 0;
    for (const step of path(proof.index, proof.size, tree.arity, levelsFixed)) {
      oldLevels.push(proof.siblings.slice(at, at + step.groupLen - 1));
      at += step.groupLen - 1;
    }
    const siblings: Hash[] = [];
    for (const step of path(proof.index, link.newSize, tree.arity, levelsFixed)) {
      if (!stepHashes(step)) continue;
      const level = levels[step.level]!;
      const node = step.groupStart + BigInt(step.position);
      if (step.groupStart / n < level.step.edge / n) {
        // A complete group left of the old edge: the same in both trees.
        siblings.push(...oldLevels[step.level]!);
        continue;
      }
      // The old edge node's group: shared left members, the edge node's
      // new value, new-only right members.
      const left = link.hashes.slice(level.offset, level.offset + level.step.left);
      const right = link.hashes.slice(level.offset + level.step.left, level.offset + level.step.left + level.step.right);
      for (let member = step.groupStart; member < step.groupStart + BigInt(step.groupLen); member++) {
        if (member === node) continue;
        if (member < level.step.edge) siblings.push(left[Number(member - step.groupStart)]!);
        else if (member === level.step.edge) siblings.push(level.newEdge);
        else siblings.push(right[Number(member - level.step.edge - 1n)]!);
      }
    }
    if (siblings.length !== membershipSiblingCount(proof.index, link.newSize, tree.arity, levelsFixed)) {
      throw new Error("rolled proof has the wrong sibling count");
    }
    const rolled = new MembershipProof(tree.arity, tree.hash.name, proof.index, link.newSize, proof.leaf, siblings, trustedTree.kind);
    return verifyMembership(rolled, tree, newHead);
  });
}

/**
 * The root of the tree over `leaves` (32-byte values or 0x-hex): for a lean
 * or indexed tree (its leaf hashes) null for no leaves; for an imt, whose empty root is zeros[depth],
 * never null. Every level is kept in memory: for tests and small trees.
 */
export function computeRoot(leaves: readonly (Uint8Array | string)[], tree: TrustedTree): Uint8Array | null {
  return guarded(() => {
    const trusted = checkTree(tree);
    if (!Array.isArray(leaves)) throw inputError("leaves must be an array");
    let level = leaves.map((leaf, i) => {
      const value = hashArgument(leaf, `leaf ${i}`);
      if (!tree.hash.accepts(value)) {
        throw new CairnError("input", "NonCanonical", `leaf ${i} ${toHex(value)} is not a canonical BN254 field element`);
      }
      return value;
    });
    const zeros = Zeros.of(tree.hash, tree.arity, trusted.kind);
    if (zeros !== null && trusted.kind.kind === "imt") {
      const levels = trusted.kind.depth;
      const room = BigInt(tree.arity) ** BigInt(levels);
      if (BigInt(level.length) > room) {
        throw inputError(`${level.length} leaves do not fit an imt of arity ${tree.arity} and depth ${levels}: it holds ${room}`);
      }
      for (let k = 0; k < levels; k++) {
        const next: Hash[] = [];
        for (let start = 0; start < level.length; start += tree.arity) next.push(groupParent(tree.hash, zeros, k, level.slice(start, start + tree.arity)));
        level = next;
      }
      return level.length === 0 ? zeros.at(levels) : level[0]!;
    }
    if (level.length === 0) return null;
    for (let k = 0; level.length > 1; k++) {
      const next: Hash[] = [];
      for (let start = 0; start < level.length; start += tree.arity) next.push(groupParent(tree.hash, null, k, level.slice(start, start + tree.arity)));
      level = next;
    }
    return level[0]!;
  });
}
