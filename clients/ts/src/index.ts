// Everything: the verifier, all five hashes, signed checkpoints and the HTTP client. Import
// `cairn-verify/core` plus one hash (`cairn-verify/blake3`, ...) for a
// smaller bundle.
import { blake3 } from "./hashes/blake3.js";
import { keccak256 } from "./hashes/keccak256.js";
import { mimcsponge } from "./hashes/mimcsponge.js";
import { poseidon } from "./hashes/poseidon.js";
import { sha256 } from "./hashes/sha256.js";
import type { Hasher, HashName } from "./hasher.js";

export * from "./core.js";
export { keyId, MAX_SIGNATURES, openNote, parseVerifierKey, readCheckpointUnverified, verifyCheckpoint, type SignedHead, type VerifierKey } from "./checkpoint.js";
export { CairnClient, type BlockAppended, type CircuitInput, type BlockInput, type ChangeInput, type Changed, type ChangedLeaf, type ClientOptions, type ServerHead, type TreeInfo, type TreesInfo } from "./client.js";
export { IndexedClient } from "./indexed-client.js";
export { familyOf, memberName, placeBlock, ROLLOVER_RULES, type FamilyInfo, type FamilyRule, type LastMember, type Placement, type RolloverRule } from "./family.js";
export { blake3, keccak256, mimcsponge, poseidon, sha256 };

/** Every hash by name. */
export const hashers: Readonly<Record<HashName, Hasher>> = /* @__PURE__ */ Object.freeze({ blake3, sha256, keccak256, poseidon, mimcsponge });
