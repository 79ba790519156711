// The one error type this package throws. Every failure, whatever the
// input, is a CairnError whose `stage` says who is at fault: a malformed
// proof ("decode"), a well-formed proof that does not prove what the caller
// trusts ("verify"), a malformed argument from the caller ("input"), or the
// HTTP exchange ("fetch").

/** Where a rejection happened. */
export type Stage = "decode" | "verify" | "input" | "fetch";

/**
 * Why: the same names as the Rust `DecodeError` / `VerifyError` variants
 * where one exists, so a rejection can be compared across implementations.
 */
export type ErrorKind =
  // decode: the bytes or document are not a well-formed proof
  | "ShortHeader"
  | "UnsupportedVersion"
  | "WrongKind"
  | "BadArity"
  | "UnknownHash"
  | "IndexOutOfRange"
  | "OldSizeAboveNew"
  | "WrongLength"
  | "WrongLevelLength"
  | "WrongLevelCount"
  | "EdgeLeaf"
  | "Hex"
  | "Json"
  | "TreeKind"
  | "BeyondCapacity"
  // verify: a well-formed proof that does not match the trusted values
  | "ArityMismatch"
  | "HashMismatch"
  | "KindMismatch"
  | "NotAppendOnly"
  | "SizeMismatch"
  | "InconsistentHead"
  | "HashCount"
  | "NonCanonical"
  | "RootMismatch"
  | "LeafMismatch"
  // signed checkpoints: decode (a malformed note, checkpoint or tree line),
  // verify (no signature by the key, a signature that fails, another origin)
  | "Note"
  | "Checkpoint"
  | "TreeLine"
  | "NoKnownSignature"
  | "BadSignature"
  | "Origin"
  // verify, indexed trees (docs/spec.md section 12)
  | "ValueMismatch"
  | "GuardValue"
  | "NotBracketed"
  | "BadPointer"
  | "EmptyHead"
  | "GuardIndex"
  | "EmptyWitness"
  | "Step"
  // input: a malformed argument (arity, hasher, head, leaf, verifier key)
  | "InvalidArgument"
  | "VerifierKey"
  // fetch: the server could not be reached or answered an error: 404
  // (NotFound: no such leaf, size or root on the server, or a route its
  // tree kind lacks), 409 (Conflict; Present when an absence proof was
  // asked of a value the tree holds), any other status (Http)
  | "Network"
  | "Http"
  | "NotFound"
  | "Conflict"
  | "Present"
  | "BadResponse"
  // fetch: a tile store's object is not what its name says
  | "BadTile"
  // verify: the WebAssembly wallet tracker refused a call (a sync, witness,
  // rewind or saved state), or it and the TypeScript verifier disagree
  | "Wallet"
  | "Disagreement"
  | "BadCheckpoint";

/** A rejected proof or argument, or a failed request. */
export class CairnError extends Error {
  /** Who is at fault: the proof's encoding, its content, the caller, or the exchange. */
  readonly stage: Stage;
  /** Why, as a stable name. */
  readonly kind: ErrorKind;
  /** The HTTP status of an answer the server refused (`Http`, `NotFound`, `Conflict`, `Present`). */
  readonly status?: number;
  /** The server's stable name for a refusal, when it gives one (the refusals of a mutable tree's changes: `not_mutable`, `index_out_of_range`, `non_canonical`, `zero_leaf`, `duplicate`, `was_removed`, `removed_leaf`). */
  readonly code?: string;

  constructor(stage: Stage, kind: ErrorKind, message: string, status?: number, code?: string) {
    super(message);
    this.name = "CairnError";
    this.stage = stage;
    this.kind = kind;
    if (status !== undefined) this.status = status;
    if (code !== undefined) this.code = code;
  }
}

export function decodeError(kind: ErrorKind, message: string): CairnError {
  return new CairnError("decode", kind, message);
}

export function verifyError(kind: ErrorKind, message: string): CairnError {
  return new CairnError("verify", kind, message);
}

export function inputError(message: string): CairnError {
  return new CairnError("input", "InvalidArgument", message);
}
