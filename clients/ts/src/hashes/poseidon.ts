// circomlib Poseidon over BN254 with every width (2..16 children): the
// hasher for any arity. poseidonHasher (cairn-verify/core) builds a smaller
// one from only the widths an arity needs.
import { poseidon2 } from "poseidon-lite/poseidon2";
import { poseidon3 } from "poseidon-lite/poseidon3";
import { poseidon4 } from "poseidon-lite/poseidon4";
import { poseidon5 } from "poseidon-lite/poseidon5";
import { poseidon6 } from "poseidon-lite/poseidon6";
import { poseidon7 } from "poseidon-lite/poseidon7";
import { poseidon8 } from "poseidon-lite/poseidon8";
import { poseidon9 } from "poseidon-lite/poseidon9";
import { poseidon10 } from "poseidon-lite/poseidon10";
import { poseidon11 } from "poseidon-lite/poseidon11";
import { poseidon12 } from "poseidon-lite/poseidon12";
import { poseidon13 } from "poseidon-lite/poseidon13";
import { poseidon14 } from "poseidon-lite/poseidon14";
import { poseidon15 } from "poseidon-lite/poseidon15";
import { poseidon16 } from "poseidon-lite/poseidon16";
import type { Hasher } from "../hasher.js";
import { poseidonHasher } from "./poseidon-core.js";

/** circomlib Poseidon over BN254 (poseidon-lite), 2..16 children. */
export const poseidon: Hasher = /* @__PURE__ */ poseidonHasher({
  2: poseidon2,
  3: poseidon3,
  4: poseidon4,
  5: poseidon5,
  6: poseidon6,
  7: poseidon7,
  8: poseidon8,
  9: poseidon9,
  10: poseidon10,
  11: poseidon11,
  12: poseidon12,
  13: poseidon13,
  14: poseidon14,
  15: poseidon15,
  16: poseidon16,
});
