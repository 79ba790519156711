//! Multi-lane node hashers: many independent parents of one tree level
//! hashed at once, one parent per SIMD lane.

pub mod blake3;
pub mod keccak;
pub mod poseidon;
pub mod sha256;

#[cfg(test)]
pub(crate) mod testing;

/// The arguments every kernel's `hash_groups` takes, checked: `group` is
/// 2..=16 children and `children` fills `out.len()` groups exactly.
///
/// # Panics
/// If not, naming what was given.
pub(crate) fn check_level(children: &[[u8; 32]], group: usize, out: &[[u8; 32]]) {
    assert!(
        (2..=crate::hash::MAX_GROUP).contains(&group),
        "a group has 2..=16 children, got {group}"
    );
    assert!(
        out.len().checked_mul(group) == Some(children.len()),
        "{} children do not make {} groups of {group}",
        children.len(),
        out.len()
    );
}
