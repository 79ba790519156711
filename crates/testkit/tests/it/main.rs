//! cairn-testkit's integration tests: the operation-sequence model run
//! against the store and every database kind.

mod model;
