//! Integration tests of cairn-core (one binary).
