pragma circom 2.1.5;

// Appending a batch of K leaves to a cairn binary Lean Incremental Merkle
// Tree hashed with Poseidon (arity 2, circomlib's Poseidon, the parameters
// cairn uses), proven from the old tree's right-edge frontier alone.
//
// LeanIMT's shape (docs/spec.md section 4): level 0 holds the leaves; node
// j of level k + 1 is Poseidon(node 2j, node 2j + 1) of level k when both
// exist, and node 2j itself (lifted, not hashed) when it is the last node
// of its level and has no right sibling; the root is the one node of the
// level where one remains, so the depth grows to ceil(log2(size)).
//
// The frontier. Write the old size s in binary. For every bit k of s that
// is set, F[k] is the node of level k with index floor(s / 2^k) - 1: the
// root of the perfect subtree of the 2^k leaves just below the last
// multiple of 2^k that s reaches. For every bit k that is clear, F[k] is 0.
// These are the old tree's perfect subtrees, from the largest on the left
// to the smallest on the right, and they are all that appending needs:
//
// - The old root is a fold of them, smallest first: acc = the F of the
//   lowest set bit, then acc = Poseidon(F[k], acc) at each higher set bit
//   (at a clear bit the partial node to the right has no left partner and
//   is lifted). So R_old and s, both public, bind every F[k]: another
//   frontier with the same fold is a Poseidon collision.
// - After the append (size s + K), a node of level k changes only if it
//   covers a new leaf, i.e. if its index is at least floor(s / 2^k). Its
//   sibling either also covers new leaves (computed here) or lies wholly
//   in the old tree; the latter happens only to the node of index
//   floor(s / 2^k) when that index is odd, i.e. when bit k of s is set,
//   and the sibling is then F[k]. Nodes further left are inside some F of
//   a higher level or never meet a changed node below the root.
//
// So the circuit carries, level by level, the window of nodes from index
// 2 * floor(s / 2^(k+1)) (F[k] if bit k is set, else the first changed
// node) to the level's last node. At level 0 it is F[0] (if set) and the
// K leaves; level k + 1's window is F[k + 1] (if set) followed by the
// window's pairs: Poseidon of a pair whose right member exists, the left
// member lifted when it is the level's last node. Which slots hold a node
// is a prefix mask computed from the bits of s, so the prover chooses no
// shape. The window of level k never holds more than
// 2 + ceil((K - 1) / 2^k) nodes, so the cost is about K + 2 * MAX_DEPTH
// Poseidon(2) hashes, not K * MAX_DEPTH.
//
// Public inputs: oldRoot (0 for the empty tree, as zk-kit's contracts
// report it), newRoot, size (the old size s; the new one is s + K) and the
// batch commitment: c = 0, then c = Poseidon(c, l[4i], ..., l[4i + 3]) for
// each group of four leaves in order (circomlib's Poseidon(5), the
// PoseidonT6 of poseidon-solidity on chain), so a contract recomputes it
// from the leaves in its calldata. K must be a multiple of 4.
//
// Constraints: s < 2^MAX_DEPTH and s + K <= 2^MAX_DEPTH (so the new root
// is the one node left at level MAX_DEPTH), F[k] = 0 where bit k of s is
// clear, the fold of F equals oldRoot, the window's top equals newRoot.

include "poseidon.circom";
include "bitify.circom";

// The most nodes the window of level k can hold: F[k], a node mixing old
// and new leaves, and the nodes over the remaining new leaves.
function windowBound(K, k) {
    var scale = 1;
    for (var i = 0; i < k; i++) {
        scale *= 2;
    }
    return 2 + (K - 1 + scale - 1) \ scale;
}

// The batch commitment: the Poseidon(5) chain over the leaves, four at a time.
template BatchCommitment(K) {
    assert(K >= 4 && K % 4 == 0);
    signal input leaves[K];
    signal output out;

    signal chain[K \ 4 + 1];
    chain[0] <== 0;
    for (var i = 0; i < K \ 4; i++) {
        chain[i + 1] <== Poseidon(5)([chain[i], leaves[4 * i], leaves[4 * i + 1], leaves[4 * i + 2], leaves[4 * i + 3]]);
    }
    out <== chain[K \ 4];
}

// The root of the tree of `size` leaves whose frontier is `frontier`
// (0 for size 0), given the bits of size.
template FrontierRoot(MAX_DEPTH) {
    signal input bits[MAX_DEPTH];
    signal input frontier[MAX_DEPTH];
    signal output root;

    // acc[k]: the root of the leaves of the lowest k bits' subtrees;
    // started[k]: whether any of those bits is set.
    signal acc[MAX_DEPTH + 1];
    signal started[MAX_DEPTH + 1];
    signal hashes[MAX_DEPTH];
    signal joined[MAX_DEPTH];
    signal picked[MAX_DEPTH];
    acc[0] <== 0;
    started[0] <== 0;
    for (var k = 0; k < MAX_DEPTH; k++) {
        hashes[k] <== Poseidon(2)([frontier[k], acc[k]]);
        // At a set bit: F[k] alone if nothing is below it, else its hash with acc.
        joined[k] <== started[k] * (hashes[k] - frontier[k]);
        picked[k] <== bits[k] * (frontier[k] + joined[k] - acc[k]);
        acc[k + 1] <== acc[k] + picked[k];
        started[k + 1] <== started[k] + bits[k] - started[k] * bits[k];
    }
    root <== acc[MAX_DEPTH];
}

// The root after appending `leaves` to the tree of `size` leaves whose
// root is `oldRoot`, from its frontier. Make all four roots and counts public:
//   component main {public [oldRoot, newRoot, size, commitment]} = LeanIMTAppend(K, MAX_DEPTH);
template LeanIMTAppend(K, MAX_DEPTH) {
    assert(K >= 4 && K % 4 == 0);
    assert(MAX_DEPTH >= 1 && MAX_DEPTH <= 64);
    var capacity = 1 << MAX_DEPTH;
    assert(K <= capacity);

    signal input oldRoot;
    signal input newRoot;
    signal input size;
    signal input commitment;
    signal input leaves[K];
    signal input frontier[MAX_DEPTH];

    // s < 2^MAX_DEPTH, and s + K <= 2^MAX_DEPTH.
    signal bits[MAX_DEPTH] <== Num2Bits(MAX_DEPTH)(size);
    signal room[MAX_DEPTH + 1] <== Num2Bits(MAX_DEPTH + 1)(capacity - K - size);

    // No frontier node where s has none.
    for (var k = 0; k < MAX_DEPTH; k++) {
        frontier[k] * (1 - bits[k]) === 0;
    }
    signal computedOld <== FrontierRoot(MAX_DEPTH)(bits, frontier);
    oldRoot === computedOld;
    signal computedCommitment <== BatchCommitment(K)(leaves);
    commitment === computedCommitment;

    // The windows: node values (0 where the mask is 0) and masks. Slot i
    // of level k holds node 2 * floor(s / 2^(k+1)) + i.
    var L0 = windowBound(K, 0);
    signal value[MAX_DEPTH + 1][L0];
    signal mask[MAX_DEPTH + 1][L0];
    // Level 0: F[0] then the leaves if bit 0 is set, else the leaves.
    for (var i = 0; i < L0; i++) {
        var here = i < K ? leaves[i] : 0;
        var shifted = i == 0 ? frontier[0] : leaves[i - 1];
        value[0][i] <== here + bits[0] * (shifted - here);
        mask[0][i] <== i < K ? 1 : bits[0];
    }

    signal hashes[MAX_DEPTH][L0];
    signal lifted[MAX_DEPTH][L0];
    signal pairs[MAX_DEPTH][L0];
    for (var k = 0; k < MAX_DEPTH; k++) {
        var width = windowBound(K, k);
        var next = windowBound(K, k + 1);
        var count = (width + 1) \ 2;
        // Pair j: Poseidon(slot 2j, slot 2j + 1) when slot 2j + 1 holds a
        // node, else slot 2j lifted (0 when it holds none either).
        var out[L0 + 1];
        var present[L0 + 1];
        for (var j = 0; j <= L0; j++) {
            out[j] = 0;
            present[j] = 0;
        }
        for (var j = 0; j < count; j++) {
            if (2 * j + 1 < width) {
                hashes[k][j] <== Poseidon(2)([value[k][2 * j], value[k][2 * j + 1]]);
                lifted[k][j] <== mask[k][2 * j + 1] * (hashes[k][j] - value[k][2 * j]);
                pairs[k][j] <== value[k][2 * j] + lifted[k][j];
            } else {
                pairs[k][j] <== value[k][2 * j];
            }
            out[j] = pairs[k][j];
            present[j] = mask[k][2 * j];
        }
        // Level k + 1: F[k + 1] then the pairs if bit k + 1 is set, else the pairs.
        var bit = k + 1 < MAX_DEPTH ? bits[k + 1] : 0;
        var edge = k + 1 < MAX_DEPTH ? frontier[k + 1] : 0;
        for (var i = 0; i < L0; i++) {
            var before = i == 0 ? edge : out[i - 1];
            var beforeMask = i == 0 ? 1 : present[i - 1];
            if (i < next) {
                value[k + 1][i] <== out[i] + bit * (before - out[i]);
                mask[k + 1][i] <== present[i] + bit * (beforeMask - present[i]);
            } else {
                // Past the bound no node can be: the slots dropped here are empty.
                if (i <= count) {
                    present[i] + bit * (beforeMask - present[i]) === 0;
                }
                value[k + 1][i] <== 0;
                mask[k + 1][i] <== 0;
            }
        }
    }
    // At level MAX_DEPTH one node is left: the root.
    for (var i = 1; i < L0; i++) {
        mask[MAX_DEPTH][i] === 0;
    }
    newRoot === value[MAX_DEPTH][0];
}
