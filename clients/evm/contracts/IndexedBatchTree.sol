// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {PoseidonT4} from "poseidon-solidity/PoseidonT4.sol";
import {BatchTree, IBatchVerifier} from "./BatchTree.sol";

/// A binary Poseidon indexed tree kept off-chain (circuits/indexed-batch.circom's
/// IndexedInsertBatch): it starts as cairn's empty indexed tree, the guard
/// leaf alone (root Poseidon(0, 0, 0), size 1), moves by one proof per
/// batch of K inserted values, and emits the values in insertion order, so
/// anyone can rebuild the tree from the events. A value stored already,
/// repeated in the batch, or 0 has no proof: the circuit refuses it.
contract IndexedBatchTree is BatchTree {
    event BatchInserted(uint256 indexed oldSize, uint256 newRoot, uint256[] values);

    constructor(IBatchVerifier verifier_, uint256 batchSize_, uint256 depth)
        BatchTree(verifier_, batchSize_, depth, PoseidonT4.hash([uint256(0), 0, 0]), 1)
    {}

    /// Inserts `values` in order if `proof` shows they move (root, size) to (newRoot, size + K).
    function update(uint256 newRoot, uint256[] calldata values, uint256[8] calldata proof) external {
        emit BatchInserted(advance(newRoot, values, proof), newRoot, values);
    }
}
