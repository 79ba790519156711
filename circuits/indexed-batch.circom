pragma circom 2.1.5;

// Inserting a batch of K values into a cairn indexed tree hashed with
// Poseidon (binary, docs/spec.md section 12), moving its root from oldRoot
// (size s) to newRoot (size s + K).
//
// One insertion of x into the tree of root r and size n, as cairn makes it:
// the low leaf L = (v, i, w) at index j brackets x (v < x, and x < w or w
// is the end marker 0); L becomes (v, n, x), and the new leaf
// (x, i, w) is appended at index n. The circuit proves the K insertions in
// order, each against the tree the previous one left, so:
//
// - two new values sharing one low leaf: the second's low leaf is the
//   first's new leaf (at index s + first), which the second step finds in
//   its tree like any other leaf;
// - a value above every stored one: its low leaf is the largest value's,
//   whose pointer is the end marker, and the new leaf inherits it
//   (x, 0, 0);
// - a value already stored has no low leaf: in a tree built by insertions
//   its predecessor points to it (x < x fails) and its own leaf has value
//   x (v < x fails), so the circuit is unsatisfiable; a repeated value in
//   the batch likewise, since the first copy is in the tree when the
//   second is inserted;
// - the comparisons are over canonical integers (Num2Bits_strict in
//   CanonicalHalves, indexed.circom), so no value is compared as its
//   integer plus p; 0 (the guard's) fails v < x.
//
// Each step checks: the low leaf's path (LeanIMTRoot, which binds the
// path's shape to its index and the size) gives r; the same path with the
// updated low leaf gives r'; the frontier of r' (its right edge, as in
// append.circom: node floor(n / 2^k) - 1 of level k for each set bit k of
// n, 0 at the clear bits) folds to r', so it is bound by a Poseidon
// collision; and the new leaf at index n with the frontier as its path
// (the siblings of index n in a tree of n + 1 leaves are exactly the
// frontier nodes) gives the next root. About 4 * MAX_DEPTH Poseidon(2),
// three Poseidon(3) and three 254-bit decompositions a value.
//
// Public inputs: oldRoot, newRoot, size (the old size s) and commitment,
// the batch commitment of append.circom over the values in insertion
// order (the Poseidon(5) chain, four values at a time; K a multiple of
// 4), which a contract recomputes from the values in its calldata, as
// BatchAppendTree does for leaves. The values themselves stay out of the
// public inputs for the reason append.circom gives: a verifier whose code
// and calldata do not grow with K.
//
// Inputs a value (index t of the batch): values[t], and lowValue[t],
// lowNextIndex[t], lowNextValue[t] (the low leaf's preimage before the
// update), lowIndex[t], lowSiblings[t] (its path in the tree of size
// s + t, as LeanIMTRoot takes it), frontier[t] (of the tree of size s + t
// after the low leaf's update).

include "poseidon.circom";
include "bitify.circom";
include "leanimt.circom";
include "indexed.circom";
include "append.circom";

// One insertion: the root after inserting `value` into the tree of
// `root` and `size` leaves.
template IndexedInsertStep(MAX_DEPTH) {
    signal input root;
    signal input size;
    signal input value;
    signal input lowValue;
    signal input lowNextIndex;
    signal input lowNextValue;
    signal input lowIndex;
    signal input lowSiblings[MAX_DEPTH][1];
    signal input frontier[MAX_DEPTH];
    signal output newRoot;

    // The low leaf is leaf lowIndex of the tree.
    signal low <== Poseidon(3)([lowValue, lowNextIndex, lowNextValue]);
    signal computed <== LeanIMTRoot(2, MAX_DEPTH)(low, lowIndex, size, lowSiblings);
    root === computed;

    // It brackets value.
    signal x[2];
    signal lv[2];
    signal nv[2];
    (x[0], x[1]) <== CanonicalHalves()(value);
    (lv[0], lv[1]) <== CanonicalHalves()(lowValue);
    (nv[0], nv[1]) <== CanonicalHalves()(lowNextValue);
    signal above <== HalvesLessThan()(lv, x);
    above === 1;
    signal below <== HalvesLessThan()(x, nv);
    (1 - below) * lowNextValue === 0;

    // The low leaf now points to the new leaf, at index size.
    signal updated <== Poseidon(3)([lowValue, size, value]);
    signal middle <== LeanIMTRoot(2, MAX_DEPTH)(updated, lowIndex, size, lowSiblings);

    // The frontier of that tree, bound by its root.
    signal bits[MAX_DEPTH] <== Num2Bits(MAX_DEPTH)(size);
    for (var k = 0; k < MAX_DEPTH; k++) {
        frontier[k] * (1 - bits[k]) === 0;
    }
    signal folded <== FrontierRoot(MAX_DEPTH)(bits, frontier);
    middle === folded;

    // The new leaf appended: its path is the frontier.
    signal leaf <== Poseidon(3)([value, lowNextIndex, lowNextValue]);
    signal path[MAX_DEPTH][1];
    for (var k = 0; k < MAX_DEPTH; k++) {
        path[k][0] <== frontier[k];
    }
    newRoot <== LeanIMTRoot(2, MAX_DEPTH)(leaf, size, size + 1, path);
}

// K insertions in order. Make the roots, the size and the commitment public:
//   component main {public [oldRoot, newRoot, size, commitment]} = IndexedInsertBatch(K, MAX_DEPTH);
template IndexedInsertBatch(K, MAX_DEPTH) {
    assert(K >= 4 && K % 4 == 0);
    assert(MAX_DEPTH >= 1 && MAX_DEPTH <= 64);

    signal input oldRoot;
    signal input newRoot;
    signal input size;
    signal input commitment;
    signal input values[K];
    signal input lowValue[K];
    signal input lowNextIndex[K];
    signal input lowNextValue[K];
    signal input lowIndex[K];
    signal input lowSiblings[K][MAX_DEPTH][1];
    signal input frontier[K][MAX_DEPTH];

    signal computedCommitment <== BatchCommitment(K)(values);
    commitment === computedCommitment;

    signal roots[K + 1];
    roots[0] <== oldRoot;
    for (var t = 0; t < K; t++) {
        roots[t + 1] <== IndexedInsertStep(MAX_DEPTH)(
            roots[t], size + t, values[t],
            lowValue[t], lowNextIndex[t], lowNextValue[t], lowIndex[t], lowSiblings[t], frontier[t]
        );
    }
    newRoot === roots[K];
}
