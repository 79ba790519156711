//! Integration tests of cairn-core (one binary).

mod debug_serde;
mod encoding;
mod fixed;
mod forgery;
mod properties;
mod support;
mod vectors;
