// The shape of a tree from (arity, size) alone (docs/spec.md section 4):
// the groups on a leaf's path and the steps of a consistency proof. The
// verifier takes every position and width from here, never from a proof.
// Sizes are u64, so the arithmetic is in bigint. A fixed-depth tree
// (`fixedDepth` > 0) has the same level lengths; its path and steps go on
// to level `fixedDepth`, and every one of its levels hashes.

/** One level of a leaf's path: its group and the path node's place in it. */
export interface PathStep {
  readonly level: number;
  readonly groupStart: bigint;
  /** Members of the group that exist: 1 (lifted in a lean tree, padded in an imt) to N. */
  readonly groupLen: number;
  readonly position: number;
  /** Whether the tree pads a partial group with the level's zero (an imt) rather than lifting a lone member. */
  readonly pads: boolean;
}

/** Whether a path step hashes: a group of two or more, or any group of a tree that pads. */
export function stepHashes(step: PathStep): boolean {
  return step.groupLen > 1 || step.pads;
}

/**
 * The path of leaf `index` (< size) to the root, lifted levels included:
 * `depth(size)` steps, or `fixedDepth` steps for a fixed-depth tree.
 */
export function path(index: bigint, size: bigint, arity: number, fixedDepth = 0): PathStep[] {
  const n = BigInt(arity);
  const steps: PathStep[] = [];
  let at = index;
  let len = size;
  for (let level = 0; len > 1n || level < fixedDepth; level++) {
    const position = at % n;
    const groupStart = at - position;
    const remaining = len - groupStart;
    steps.push({
      level,
      groupStart,
      groupLen: remaining < n ? Number(remaining) : arity,
      position: Number(position),
      pads: fixedDepth > 0,
    });
    at /= n;
    len = (len + n - 1n) / n;
  }
  return steps;
}

/** The siblings a membership proof of `index` at `size` carries. */
export function membershipSiblingCount(index: bigint, size: bigint, arity: number, fixedDepth = 0): number {
  let count = 0;
  for (const step of path(index, size, arity, fixedDepth)) count += step.groupLen - 1;
  return count;
}

/** One level of a consistency proof (spec section 4). */
export interface ConsistencyStep {
  readonly level: number;
  /** Index at this level of the old tree's right-edge node. */
  readonly edge: bigint;
  /** Shared nodes left of the edge node in its group. */
  readonly left: number;
  /** New-only nodes right of the edge node in its group. */
  readonly right: number;
  /** Whether the old tree still hashes or lifts this level into its root (always, in a fixed-depth tree). */
  readonly belowOldRoot: boolean;
}

/**
 * The steps from `oldSize` to `newSize` (0 < oldSize <= newSize), one per
 * level below the new root (`fixedDepth` of them for a fixed-depth tree).
 */
export function consistencySteps(oldSize: bigint, newSize: bigint, arity: number, fixedDepth = 0): ConsistencyStep[] {
  const n = BigInt(arity);
  const steps: ConsistencyStep[] = [];
  let edge = oldSize - 1n;
  let oldLen = oldSize;
  let newLen = newSize;
  for (let level = 0; newLen > 1n || level < fixedDepth; level++) {
    const groupStart = edge - (edge % n);
    const groupEnd = groupStart + n < newLen ? groupStart + n : newLen;
    steps.push({
      level,
      edge,
      left: Number(edge - groupStart),
      right: Number(groupEnd - edge - 1n),
      belowOldRoot: oldLen > 1n || level < fixedDepth,
    });
    edge /= n;
    oldLen = (oldLen + n - 1n) / n;
    newLen = (newLen + n - 1n) / n;
  }
  return steps;
}

/** The hashes (edge leaf excluded) of a consistency proof; 0 from size 0. */
export function consistencyHashCount(oldSize: bigint, newSize: bigint, arity: number, fixedDepth = 0): number {
  if (oldSize === 0n) return 0;
  let count = 0;
  for (const step of consistencySteps(oldSize, newSize, arity, fixedDepth)) count += step.left + step.right;
  return count;
}

/** ceil(log_N(size)), 0 for 0 or 1 leaf; `fixedDepth` itself for a fixed-depth tree. */
export function depth(size: bigint, arity: number, fixedDepth = 0): number {
  if (fixedDepth > 0) return fixedDepth;
  const n = BigInt(arity);
  let levels = 0;
  for (let len = size; len > 1n; len = (len + n - 1n) / n) levels++;
  return levels;
}
