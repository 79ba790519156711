//! cairn-tiles' integration tests: publish trees to a directory, compute
//! proofs from the tiles alone, and refuse tiles that are wrong.

mod proofs;
