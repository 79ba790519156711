// The HTTP client for a cairn server whose database is an indexed tree
// (`cairn init --kind indexed`): membership proofs that carry each leaf's
// value and successor, and absence proofs, both verified against a head
// the caller trusts. Apart from `CairnClient` so that a bundle of the
// lean-tree client does not carry the indexed decoders.

import { hashArgument, toHex, u64Argument } from "./bytes.js";
import { CairnClient, witnessInput, type CircuitInput, type ClientOptions } from "./client.js";
import { CairnError, inputError } from "./errors.js";
import {
  decodeIndexedMembership,
  verifyAbsence,
  verifyIndexedMembership,
  type AbsenceProof,
  type IndexedMembershipProof,
} from "./indexed.js";
import { describeKind } from "./kind.js";
import { checkTree, type TreeHead, type TrustedTree } from "./verify.js";

/**
 * A client for one cairn server holding an indexed tree of the trusted
 * arity and hash. `indexedProof` and `absence` ask for the server's current
 * head, so a head it has moved past is refused (`SizeMismatch` or
 * `RootMismatch`); `indexedProofAt` and `absenceAt` ask for the trusted
 * head's size, which the server answers while that head is in its retained
 * window (the last 4,096 heads by default; an older one is refused with
 * HTTP 404 naming the window).
 */
export class IndexedClient extends CairnClient {
  /** As `CairnClient`'s; `tree.kind` must be "indexed". */
  constructor(baseUrl: string, tree: TrustedTree, options: ClientOptions = {}) {
    super(baseUrl, tree, options);
    const kind = checkTree(tree).kind;
    if (kind.kind !== "indexed") {
      throw inputError(`IndexedClient: the trusted tree is ${describeKind(kind)}, not indexed: use CairnClient`);
    }
  }

  /** The membership proof of leaf `index` (its value and the next value in sorted order), verified against the trusted head. */
  async indexedProof(index: bigint | number, head: TreeHead): Promise<IndexedMembershipProof> {
    const at = u64Argument(index, "leaf index");
    u64Argument(head?.size, "trusted head size");
    const body = (await this.get(`/v1/proofs/${at}`))!;
    const decoded = decodeIndexedMembership(body);
    if (decoded.index !== at) {
      throw new CairnError("verify", "IndexOutOfRange", `asked for leaf ${at}, the server proved leaf ${decoded.index}`);
    }
    return verifyIndexedMembership(decoded, this.tree, head, decoded.leaf.value);
  }

  /**
   * The proof that `value` is not in the tree of the trusted head (the leaf
   * whose value is below it and whose next value is above it), verified. A
   * value the tree holds has no absence proof: the server refuses it (HTTP
   * 409), thrown as a CairnError of kind `Present` (the server's word; ask
   * `indexedProof` for a proof of the leaf).
   */
  async absence(value: Uint8Array | string, head: TreeHead): Promise<AbsenceProof> {
    const asked = hashArgument(value, "value");
    u64Argument(head?.size, "trusted head size");
    let body: string;
    try {
      body = (await this.get(`/v1/absence/${toHex(asked)}`))!;
    } catch (error) {
      if (error instanceof CairnError && error.kind === "Conflict") {
        throw new CairnError("fetch", "Present", `${toHex(asked)} is in the tree, so it has no absence proof: ${error.message}`, error.status);
      }
      throw error;
    }
    return verifyAbsence(body, this.tree, head, asked);
  }

  /** `indexedProof` against the trusted head itself, an earlier one the server retains (`?size=`). */
  async indexedProofAt(index: bigint | number, head: TreeHead): Promise<IndexedMembershipProof> {
    const at = u64Argument(index, "leaf index");
    const size = u64Argument(head?.size, "trusted head size");
    const body = (await this.get(`/v1/proofs/${at}?size=${size}`))!;
    const decoded = decodeIndexedMembership(body);
    if (decoded.index !== at) {
      throw new CairnError("verify", "IndexOutOfRange", `asked for leaf ${at}, the server proved leaf ${decoded.index}`);
    }
    return verifyIndexedMembership(decoded, this.tree, head, decoded.leaf.value);
  }

  /** `absence` against the trusted head itself, an earlier one the server retains (`?size=`). */
  async absenceAt(value: Uint8Array | string, head: TreeHead): Promise<AbsenceProof> {
    const asked = hashArgument(value, "value");
    const size = u64Argument(head?.size, "trusted head size");
    let body: string;
    try {
      body = (await this.get(`/v1/absence/${toHex(asked)}?size=${size}`))!;
    } catch (error) {
      if (error instanceof CairnError && error.kind === "Conflict") {
        throw new CairnError("fetch", "Present", `${toHex(asked)} is in the tree of size ${size}, so it has no absence proof: ${error.message}`, error.status);
      }
      throw error;
    }
    return verifyAbsence(body, this.tree, head, asked);
  }

  /**
   * The inputs of the indexed batch-insert circuit `IndexedInsertBatch(K,
   * D)` for inserting `values` in order at the durable head (`POST
   * /v1/witness/insert`; a binary Poseidon indexed tree, K a positive
   * multiple of 4, D `circuitDepth` or the depth of the tree after the
   * batch): the JSON `cairn prove --insert-witness` prints, which snarkjs
   * takes as is. Nothing is inserted. Its shape is checked, and that it
   * witnesses the values asked; its roots are the server's word (the proof
   * binds them). A value the tree holds or the batch repeats rejects with a
   * CairnError of kind Conflict; a guard (0) or non-canonical value, a bad
   * K or depth with Http (400).
   */
  async insertWitness(values: readonly (Uint8Array | string)[], circuitDepth?: number): Promise<CircuitInput> {
    if (!Array.isArray(values)) throw inputError("values: want a list");
    const hex = values.map((value, position) => toHex(hashArgument(value, `value ${position}`)));
    const request: Record<string, unknown> = { values: hex };
    if (circuitDepth !== undefined) request.circuit_depth = Number(u64Argument(circuitDepth, "circuit depth"));
    const path = this.scoped("/v1/witness/insert");
    const body = (await this.send("POST", path, JSON.stringify(request), false))!;
    return witnessInput(body, `POST ${path}`, "values", BigInt(hex.length), undefined, hex.map((h) => BigInt(h)));
  }
}
