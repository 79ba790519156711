// The verifier without any hash: decoders, verifiers, roll-forward and
// roots, with the hasher passed in (`cairn-verify/blake3` etc.), so a
// bundle carries only the hashes it imports.
export { CairnError, type ErrorKind, type Stage } from "./errors.js";
export { toHex, type Hash } from "./bytes.js";
export { HASH_IDS, HASH_NAMES, isFieldHash, type Hasher, type HashName } from "./hasher.js";
export {
  ConsistencyProof,
  consistencyFromBytes,
  consistencyFromJson,
  decodeConsistency,
  decodeMembership,
  FORMAT_VERSION,
  FORMAT_VERSION_KINDS,
  MembershipProof,
  membershipFromBytes,
  membershipFromJson,
  type ProofInput,
} from "./proof.js";
export { changeRoots, computeRoot, rollForward, verifyConsistency, verifyMembership, type TreeHead, type TrustedTree } from "./verify.js";
export { isCanonicalFieldElement } from "./hashes/field.js";
export { poseidonHasher, type PoseidonFunction } from "./hashes/poseidon-core.js";
export { groupParent, INDEXED, LEAN, MAX_FIXED_DEPTH, Zeros, type TreeKind } from "./kind.js";
export { consistencySteps, depth, path, stepHashes, type ConsistencyStep, type PathStep } from "./shape.js";
export {
  CHECKPOINT_MAGIC,
  CHECKPOINT_MAGIC_KINDS,
  consistencyFromTiles,
  fetchCheckpoint,
  parseCheckpoint,
  proveFromTiles,
  TileClient,
  tileHeight,
  tilePath,
  type CheckpointOptions,
  type TileCheckpoint,
  type TileOptions,
  type TileStats,
  type TrustedTileHead,
} from "./tiles.js";
export { bundleLeaves, bundlePath, leafTileInBundle, type BundleRange } from "./range.js";
export {
  decodeAbsence,
  decodeIndexedMembership,
  decodeInsertion,
  indexedLeafHash,
  indexedRoot,
  verifyAbsence,
  verifyIndexedMembership,
  verifyInsertion,
  type AbsenceProof,
  type IndexedLeaf,
  type IndexedMembershipProof,
  type InsertionStep,
  type InsertionWitness,
} from "./indexed.js";
export {
  FOREST_EXTENSION,
  FOREST_MAGIC,
  fetchForest,
  forestInclusion,
  forestLeaf,
  forestRoot,
  forestTree,
  parseForestCheckpoint,
  parseForestEntries,
  parseForestEntry,
  verifyForestCheckpoint,
  verifyForestEntry,
  type Forest,
  type ForestEntry,
  type ForestHead,
  type ForestOptions,
} from "./forest.js";
