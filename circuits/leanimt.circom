pragma circom 2.1.5;

// Membership in a cairn n-ary Lean Incremental Merkle Tree hashed with
// Poseidon (circomlib's, the parameters cairn uses), for any arity N from
// 2 to 16, in a circuit of at most MAX_DEPTH levels.
//
// The shape comes from the leaf index and the tree size alone, exactly as
// cairn's verifier derives it (docs/spec.md section 4): at level k the
// path node is a_k = floor(index / N^k), its group is a_{k+1}, the last
// node of the level is b_k = floor((size - 1) / N^k), so the group is
// full unless a_{k+1} = b_{k+1}, in which case it has (b_k mod N) + 1
// members; a group of one is lifted (no hash), a group of w >= 2 members
// is hashed with Poseidon(w) over exactly those members. Above the tree's
// depth every level is a group of one, so the root passes through to the
// top. The prover cannot pick another shape: index and size are
// decomposed into base-N digits that are constrained one-hot (so each is
// below N, and with N^MAX_DEPTH < p the decomposition is unique), and
// index <= size - 1 is constrained, which also refuses size 0.
//
// Inputs:
//   leaf       the leaf
//   index      its index, from 0
//   size       the number of leaves of the tree
//   siblings   one row of N - 1 values per level, bottom-up: at a hashing
//              level the members of the path node's group other than
//              itself, in index order, then zeros; at a lifted level and
//              above the root, zeros. Unused slots are constrained to 0.
// `cairn prove --proof-format circom` prints these inputs (and the root).
//
// A verifier must trust the pair (size, root), not the root alone (see
// docs/spec.md section 9): make both public.

include "poseidon.circom";
include "comparators.circom";

// The D base-N digits of `in`, each as N one-hot bits (digits[k][j] = 1
// exactly when digit k is j). Unsatisfiable unless in < N^D.
template BaseDigits(N, D) {
    signal input in;
    signal output digits[D][N];

    var rest = in;
    var total = 0;
    var scale = 1;
    for (var k = 0; k < D; k++) {
        var digit = rest % N;
        rest = rest \ N;
        var ones = 0;
        var value = 0;
        for (var j = 0; j < N; j++) {
            digits[k][j] <-- digit == j ? 1 : 0;
            digits[k][j] * (digits[k][j] - 1) === 0;
            ones += digits[k][j];
            value += j * digits[k][j];
        }
        ones === 1;
        total += value * scale;
        scale *= N;
    }
    total === in;
}

// The number of bits of N^D (so that values below N^D compare in that many).
function powerBits(N, D) {
    var bound = 1;
    for (var k = 0; k < D; k++) {
        bound *= N;
    }
    var bits = 0;
    while (bound > 0) {
        bound = bound \ 2;
        bits++;
    }
    return bits;
}

// The root of the tree of `size` leaves that holds `leaf` at `index`,
// given the path's siblings.
template LeanIMTRoot(N, MAX_DEPTH) {
    assert(N >= 2 && N <= 16);
    assert(MAX_DEPTH >= 1);
    var BITS = powerBits(N, MAX_DEPTH);
    // Digit decompositions must be unique in the field, and LessEqThan
    // takes at most 252 bits.
    assert(BITS <= 250);

    signal input leaf;
    signal input index;
    signal input size;
    signal input siblings[MAX_DEPTH][N - 1];
    signal output root;

    signal position[MAX_DEPTH][N] <== BaseDigits(N, MAX_DEPTH)(index);
    signal edge[MAX_DEPTH][N] <== BaseDigits(N, MAX_DEPTH)(size - 1);
    signal inTree <== LessEqThan(BITS)([index, size - 1]);
    inTree === 1;

    signal nodes[MAX_DEPTH + 1];
    nodes[0] <== leaf;
    signal isLastGroup[MAX_DEPTH];
    signal lastWidth[MAX_DEPTH][N];
    signal left[MAX_DEPTH][N];
    signal middle[MAX_DEPTH][N];
    signal right[MAX_DEPTH][N];
    signal members[MAX_DEPTH][N];
    signal picked[MAX_DEPTH][N];
    component hashes[MAX_DEPTH][N + 1];

    for (var k = 0; k < MAX_DEPTH; k++) {
        // a_{k+1} and b_{k+1}: the path's group and the level's last group.
        var group = 0;
        var lastGroup = 0;
        var scale = 1;
        for (var j = k + 1; j < MAX_DEPTH; j++) {
            for (var d = 1; d < N; d++) {
                group += d * scale * position[j][d];
                lastGroup += d * scale * edge[j][d];
            }
            scale *= N;
        }
        isLastGroup[k] <== IsZero()(lastGroup - group);

        // The group's width w is N, or (b_k mod N) + 1 in the last group:
        // width[w - 1] = 1 exactly for that w.
        var width[N];
        for (var j = 0; j < N; j++) {
            lastWidth[k][j] <== isLastGroup[k] * edge[k][j];
            width[j] = lastWidth[k][j];
        }
        width[N - 1] += 1 - isLastGroup[k];

        // Sibling slot j is a member when w >= j + 2; the others must be 0.
        for (var j = 0; j < N - 1; j++) {
            var used = 0;
            for (var w = j + 2; w <= N; w++) {
                used += width[w - 1];
            }
            siblings[k][j] * (1 - used) === 0;
        }

        // Member j of the group: sibling slot j left of the path node, the
        // node itself at its position, sibling slot j - 1 right of it.
        for (var j = 0; j < N; j++) {
            var before = 0;
            var after = 0;
            for (var i = 0; i < N; i++) {
                if (i > j) { before += position[k][i]; }
                if (i < j) { after += position[k][i]; }
            }
            if (j < N - 1) {
                left[k][j] <== before * siblings[k][j];
            } else {
                left[k][j] <== 0;
            }
            middle[k][j] <== position[k][j] * nodes[k];
            if (j > 0) {
                right[k][j] <== after * siblings[k][j - 1];
            } else {
                right[k][j] <== 0;
            }
            members[k][j] <== left[k][j] + middle[k][j] + right[k][j];
        }

        // Poseidon over exactly the w members, for the w this level has;
        // a group of one is lifted.
        var next = 0;
        for (var w = 1; w <= N; w++) {
            if (w == 1) {
                picked[k][0] <== width[0] * nodes[k];
            } else {
                hashes[k][w] = Poseidon(w);
                for (var i = 0; i < w; i++) {
                    hashes[k][w].inputs[i] <== members[k][i];
                }
                picked[k][w - 1] <== width[w - 1] * hashes[k][w].out;
            }
            next += picked[k][w - 1];
        }
        nodes[k + 1] <== next;
    }
    root <== nodes[MAX_DEPTH];
}

// Checks that `leaf` is leaf `index` of the tree of `size` leaves whose
// root is `root`. Make root and size public:
//   component main {public [root, size]} = LeanIMTInclusion(N, MAX_DEPTH);
template LeanIMTInclusion(N, MAX_DEPTH) {
    signal input root;
    signal input leaf;
    signal input index;
    signal input size;
    signal input siblings[MAX_DEPTH][N - 1];

    signal computed <== LeanIMTRoot(N, MAX_DEPTH)(leaf, index, size, siblings);
    root === computed;
}
