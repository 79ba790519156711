// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {BatchTree, IBatchVerifier} from "./BatchTree.sol";

/// A binary Poseidon LeanIMT kept off-chain (circuits/append.circom's
/// LeanIMTAppend): it starts empty (root 0, size 0), moves by one proof
/// per batch of K appended leaves, and emits the leaves, so anyone can
/// rebuild the tree from the events.
contract BatchAppendTree is BatchTree {
    event BatchAppended(uint256 indexed oldSize, uint256 newRoot, uint256[] leaves);

    constructor(IBatchVerifier verifier_, uint256 batchSize_, uint256 depth) BatchTree(verifier_, batchSize_, depth, 0, 0) {}

    /// Appends `leaves` if `proof` shows they move (root, size) to (newRoot, size + K).
    function update(uint256 newRoot, uint256[] calldata leaves, uint256[8] calldata proof) external {
        emit BatchAppended(advance(newRoot, leaves, proof), newRoot, leaves);
    }
}
