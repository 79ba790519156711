//! cairn-note's integration tests: keys, notes, checkpoints and heads.

mod checkpoints;
mod files;
mod heads;
mod keys;
mod notes;
mod support;
