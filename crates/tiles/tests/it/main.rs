//! cairn-tiles' integration tests: publish trees to a directory and to a
//! real S3-protocol server, compute
//! proofs from the tiles alone, and refuse tiles that are wrong.

mod bundle_layout;
mod bundles;
mod mirror;
mod proofs;
mod s3;
mod signed;
