//! Integration tests of cairn-core (one binary).

mod encoding;
mod forgery;
mod properties;
mod support;
mod vectors;
