// SPDX-License-Identifier: MIT
pragma solidity >=0.8.23 <0.9.0;

// Semaphore v4's contract, as @semaphore-protocol/contracts@4 publishes it
// (installed under the npm alias semaphore-contracts-v4, beside v3),
// compiled as is: its groups are @zk-kit/lean-imt.sol's LeanIMT with
// poseidon-solidity's PoseidonT3. No harness: createGroup, addMember(s),
// getMerkleTreeRoot and removeMember are Semaphore's own.
import {Semaphore} from "semaphore-contracts-v4/Semaphore.sol";
