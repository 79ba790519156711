//! Integration tests of cairn-core (one binary).

mod append_witness;
mod debug_serde;
mod encoding;
mod fixed;
mod forgery;
mod indexed;
mod indexed_vectors;
mod poseidon_lanes;
mod properties;
mod support;
mod vectors;
