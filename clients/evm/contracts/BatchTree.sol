// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {PoseidonT6} from "poseidon-solidity/PoseidonT6.sol";

/// The verifier snarkjs exports for cairn's batch circuits
/// (LeanIMTAppend and IndexedInsertBatch of circuits/): public signals
/// (oldRoot, newRoot, size, commitment).
interface IBatchVerifier {
    function verifyProof(
        uint256[2] calldata a,
        uint256[2][2] calldata b,
        uint256[2] calldata c,
        uint256[4] calldata publicSignals
    ) external view returns (bool);
}

/// A binary Poseidon tree kept off-chain whose (root, size) moves by one
/// Groth16 proof per batch of K values. What the two batch trees share:
/// the head, the batch commitment recomputed from the values in calldata
/// (the Poseidon(5) chain over groups of four both circuits make public,
/// so the proof is about exactly these values), the refusals, and the
/// verifier call. A derived contract fixes the starting head and says
/// what a batch is (appended leaves, inserted values) in its event.
abstract contract BatchTree {
    uint256 internal constant FIELD = 21888242871839275222246405745257275088548364400416034343698204186575808495617;

    IBatchVerifier public immutable verifier;
    uint256 public immutable batchSize;
    uint256 public immutable capacity;

    /// The tree's root and size.
    uint256 public root;
    uint256 public size;

    error WrongBatchSize(uint256 got, uint256 want);
    error TreeFull(uint256 size, uint256 capacity);
    error NotFieldElement(uint256 value);
    error InvalidProof();

    constructor(IBatchVerifier verifier_, uint256 batchSize_, uint256 depth, uint256 root_, uint256 size_) {
        require(batchSize_ > 0 && batchSize_ % 4 == 0, "batch size: a positive multiple of 4");
        verifier = verifier_;
        batchSize = batchSize_;
        capacity = 1 << depth;
        root = root_;
        size = size_;
    }

    /// The commitment the circuits make public: 0, then
    /// Poseidon(c, v[4i], v[4i+1], v[4i+2], v[4i+3]) for each group of four.
    function commitment(uint256[] calldata values) public pure returns (uint256 c) {
        for (uint256 i = 0; i < values.length; i += 4) {
            c = PoseidonT6.hash([c, values[i], values[i + 1], values[i + 2], values[i + 3]]);
        }
    }

    /// Moves (root, size) to (newRoot, size + K) if `proof` shows that
    /// `values` take the tree there; returns the old size.
    function advance(uint256 newRoot, uint256[] calldata values, uint256[8] calldata proof) internal returns (uint256 oldSize) {
        oldSize = size;
        if (values.length != batchSize) revert WrongBatchSize(values.length, batchSize);
        if (oldSize + batchSize > capacity) revert TreeFull(oldSize, capacity);
        // Two calldata values of one field element would be one value to the circuit.
        for (uint256 i = 0; i < values.length; i++) {
            if (values[i] >= FIELD) revert NotFieldElement(values[i]);
        }
        if (newRoot >= FIELD) revert NotFieldElement(newRoot);
        bool valid = verifier.verifyProof(
            [proof[0], proof[1]],
            [[proof[2], proof[3]], [proof[4], proof[5]]],
            [proof[6], proof[7]],
            [root, newRoot, oldSize, commitment(values)]
        );
        if (!valid) revert InvalidProof();
        root = newRoot;
        size = oldSize + batchSize;
    }
}
