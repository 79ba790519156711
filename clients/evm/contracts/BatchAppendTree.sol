// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {PoseidonT6} from "poseidon-solidity/PoseidonT6.sol";

/// The verifier snarkjs exports for cairn's LeanIMTAppend(K, D) circuit:
/// public signals (oldRoot, newRoot, size, commitment).
interface IAppendVerifier {
    function verifyProof(
        uint256[2] calldata a,
        uint256[2][2] calldata b,
        uint256[2] calldata c,
        uint256[4] calldata publicSignals
    ) external view returns (bool);
}

/// A binary Poseidon LeanIMT kept off-chain: the contract holds its root
/// and size, and moves them by one Groth16 proof per batch of K leaves
/// that the leaves appended to the tree of (root, size) give newRoot. It
/// recomputes the batch commitment from the leaves in calldata (the
/// Poseidon(5) chain over groups of four the circuit makes public) and
/// emits the leaves, so anyone can rebuild the tree from the events.
contract BatchAppendTree {
    uint256 internal constant FIELD = 21888242871839275222246405745257275088548364400416034343698204186575808495617;

    IAppendVerifier public immutable verifier;
    uint256 public immutable batchSize;
    uint256 public immutable capacity;

    /// The tree's root (0 while it is empty) and size.
    uint256 public root;
    uint256 public size;

    event BatchAppended(uint256 indexed oldSize, uint256 newRoot, uint256[] leaves);

    error WrongBatchSize(uint256 got, uint256 want);
    error TreeFull(uint256 size, uint256 capacity);
    error NotFieldElement(uint256 value);
    error InvalidProof();

    constructor(IAppendVerifier verifier_, uint256 batchSize_, uint256 depth) {
        require(batchSize_ > 0 && batchSize_ % 4 == 0, "batch size: a positive multiple of 4");
        verifier = verifier_;
        batchSize = batchSize_;
        capacity = 1 << depth;
    }

    /// The commitment the circuit makes public: 0, then
    /// Poseidon(c, l[4i], l[4i+1], l[4i+2], l[4i+3]) for each group of four.
    function commitment(uint256[] calldata leaves) public pure returns (uint256 c) {
        for (uint256 i = 0; i < leaves.length; i += 4) {
            c = PoseidonT6.hash([c, leaves[i], leaves[i + 1], leaves[i + 2], leaves[i + 3]]);
        }
    }

    /// Appends `leaves` if `proof` shows they move (root, size) to (newRoot, size + K).
    function update(uint256 newRoot, uint256[] calldata leaves, uint256[8] calldata proof) external {
        if (leaves.length != batchSize) revert WrongBatchSize(leaves.length, batchSize);
        if (size + batchSize > capacity) revert TreeFull(size, capacity);
        // Two calldata values of one field element would be one leaf to the circuit.
        for (uint256 i = 0; i < leaves.length; i++) {
            if (leaves[i] >= FIELD) revert NotFieldElement(leaves[i]);
        }
        if (newRoot >= FIELD) revert NotFieldElement(newRoot);
        bool valid = verifier.verifyProof(
            [proof[0], proof[1]],
            [[proof[2], proof[3]], [proof[4], proof[5]]],
            [proof[6], proof[7]],
            [root, newRoot, size, commitment(leaves)]
        );
        if (!valid) revert InvalidProof();
        emit BatchAppended(size, newRoot, leaves);
        root = newRoot;
        size += batchSize;
    }
}
