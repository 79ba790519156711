pragma circom 2.1.5;

// Absence (non-membership) of a value in a cairn indexed tree hashed with
// Poseidon (docs/spec.md section 12), for any arity N from 2 to 16, in a
// circuit of at most MAX_DEPTH levels.
//
// An indexed tree's leaves are triples (value, next_index, next_value)
// linked in value order, leaf 0 the guard (value 0), the largest value's
// pointer the end marker (next_index 0, next_value 0). The leaf hash is
// Poseidon(3)(value, next_index, next_value), next_index as the field
// element it is. A value x is absent when the tree holds the leaf that
// brackets it, its low leaf: value < x, and x < next_value or next_value
// is 0 (the end marker). In the tree a trusted (size, root) commits to,
// exactly one leaf brackets each value the tree lacks and none brackets a
// value it holds (that value's predecessor points to it), so the circuit
// checks the bracket and the low leaf's membership, nothing more: the
// pointer checks of cairn's verifier (next_index < size, next_index 0
// exactly when next_value is 0, next_value > value) hold for every leaf
// of an honest tree and add no soundness once the leaf is proven in it.
//
// The comparisons are over the whole BN254 field: values reach p - 1
// (about 2^253.6), and circomlib's LessThan(n) takes n <= 252 bits, so it
// cannot compare them directly. Each of x, the low value and the next
// value is decomposed with Num2Bits_strict, whose AliasCheck refuses the
// second 254-bit decomposition a small element has (its integer plus p is
// below 2^254): the bits are the canonical integer, so the order compared
// is the order of the values cairn's verifier compares, and no prover can
// make x look larger (or smaller) than it is. The 254 bits are split into
// two 127-bit halves, compared with LessThan(127): a < b exactly when
// high(a) < high(b), or the highs are equal and low(a) < low(b).
//
// x = 0 (the guard's value, refused by the spec) needs no check of its
// own: low value < x with a canonical low value forces x >= 1.
//
// Inputs:
//   root, size    the trusted head: make both public (docs/spec.md section 9)
//   value         x, the value proven absent
//   lowValue, lowNextIndex, lowNextValue   the low leaf's preimage
//   lowIndex      the low leaf's index
//   siblings      the low leaf's path, as LeanIMTInclusion takes it
// `cairn prove DIR --absent 0x.. --proof-format circom` prints these inputs.

include "poseidon.circom";
include "bitify.circom";
include "comparators.circom";
include "leanimt.circom";

// The canonical integer of a field element as two 127-bit halves:
// in = high * 2^127 + low, with in's 254 bits refused unless below p.
template CanonicalHalves() {
    signal input in;
    signal output high;
    signal output low;

    signal bits[254] <== Num2Bits_strict()(in);
    var lowSum = 0;
    var highSum = 0;
    var scale = 1;
    for (var i = 0; i < 127; i++) {
        lowSum += bits[i] * scale;
        highSum += bits[127 + i] * scale;
        scale *= 2;
    }
    low <== lowSum;
    high <== highSum;
}

// 1 when a < b as canonical integers, else 0, from their halves.
template HalvesLessThan() {
    signal input a[2];   // [high, low]
    signal input b[2];
    signal output out;

    signal highLess <== LessThan(127)([a[0], b[0]]);
    signal highEqual <== IsEqual()([a[0], b[0]]);
    signal lowLess <== LessThan(127)([a[1], b[1]]);
    signal tie <== highEqual * lowLess;
    out <== highLess + tie;
}

// 1 when a < b as canonical integers (0 <= a, b < p), else 0.
template FieldLessThan() {
    signal input in[2];
    signal output out;

    signal a[2];
    signal b[2];
    (a[0], a[1]) <== CanonicalHalves()(in[0]);
    (b[0], b[1]) <== CanonicalHalves()(in[1]);
    out <== HalvesLessThan()(a, b);
}

// Checks that `value` is absent from the indexed tree of `size` leaves
// whose root is `root`. Make root and size public:
//   component main {public [root, size]} = IndexedAbsence(N, MAX_DEPTH);
// and `value` too when the verifier names it (a nullifier that must not
// have been spent).
template IndexedAbsence(N, MAX_DEPTH) {
    signal input root;
    signal input size;
    signal input value;
    signal input lowValue;
    signal input lowNextIndex;
    signal input lowNextValue;
    signal input lowIndex;
    signal input siblings[MAX_DEPTH][N - 1];

    // The low leaf is leaf lowIndex of the trusted tree.
    signal leaf <== Poseidon(3)([lowValue, lowNextIndex, lowNextValue]);
    signal computed <== LeanIMTRoot(N, MAX_DEPTH)(leaf, lowIndex, size, siblings);
    root === computed;

    // It brackets value: lowValue < value, and value < lowNextValue unless
    // lowNextValue is the end marker 0.
    signal x[2];
    signal low[2];
    signal next[2];
    (x[0], x[1]) <== CanonicalHalves()(value);
    (low[0], low[1]) <== CanonicalHalves()(lowValue);
    (next[0], next[1]) <== CanonicalHalves()(lowNextValue);
    signal above <== HalvesLessThan()(low, x);
    above === 1;
    signal below <== HalvesLessThan()(x, next);
    (1 - below) * lowNextValue === 0;
}
