//! An equivalent form of circomlib's Poseidon permutation with cheap partial
//! rounds, derived once per width from the textbook constants of [`params`].
//!
//! The textbook permutation runs `R_F / 2` full rounds, `R_P` partial rounds
//! and `R_F / 2` full rounds, each `s <- M * S(s + c_r)` with `S` the x^5
//! S-box on every cell (full) or on cell 0 only (partial). Two rewrites,
//! both exact identities over the field, make a partial round cost about
//! `2t` multiplications instead of `t^2`:
//!
//! **Constants.** `M * y + c = M * (y + M^-1 c)`, so a round's constants can
//! be moved to just after the previous round's S-box. In a partial round the
//! S-box touches cell 0 only, so the cells `1..t` of a constant vector added
//! after it can be added before it instead, which is after the round before,
//! where they become `M^-1 (0, x_1, ..)`. Walking the partial rounds
//! backwards leaves each with one scalar, added to cell 0 after its S-box,
//! and a vector carried into the last full round of the first half (its
//! constants, after that round's linear layer, are [`Optimised::entry_constants`]).
//! The first full round of the second half ends up with no constants.
//!
//! **Matrices.** Write a matrix in blocks `A = [[a, row], [col, B]]` (`a` a
//! scalar, `B` the lower-right `(t-1) x (t-1)` block). If `B` is invertible,
//! `A = S * P` with `S = [[a, row * B^-1], [col, I]]` (sparse: one row, one
//! column, identity elsewhere) and `P = [[1, 0], [0, B]]`. `P` commutes with a
//! partial round's nonlinear step (x^5 on cell 0, then a scalar added to
//! cell 0), so it can be moved into the linear layer of the round before.
//! Starting from the last partial round (`A = M`), each partial round keeps
//! the sparse `S_j` and hands `P_j * M` to the round before; the first
//! partial round hands `P_0 * M` to the last full round of the first half
//! ([`Optimised::entry_mds`]).
//!
//! Unrolling that recursion gives closed forms with `Mh` the lower-right
//! block of `M` (a Cauchy matrix, so invertible) and `m_row`, `m_col` the
//! rest of `M`'s first row and column: for partial round `j` of `R_P`,
//! `B_j = Mh^(R_P - j)`, so `S_j = [[m_00, m_row * Mh^-(R_P - j)],
//! [Mh^(R_P - 1 - j) * m_col, I]]`, and the entry matrix is
//! `[[m_00, m_row], [Mh^R_P * m_col, Mh^(R_P + 1)]]`.
//!
//! The module's test compares the result against the textbook permutation
//! for every width, on random states.

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, Field};

use super::params::{self, FULL_ROUNDS, MAX_WIDTH, MIN_WIDTH};

/// The optimised constants of one width, as `E`: `ark-ff`'s [`Fr`] (Montgomery
/// form) as derived, or another representation made once by
/// [`Optimised::map`]. Every matrix is row-major `t x t`; every per-round
/// table is round-major, `t` per round.
#[derive(Debug)]
pub(in crate::hash) struct Optimised<E = Fr> {
    /// The original constants of the first `R_F / 2` full rounds, added
    /// before their S-boxes.
    pub(in crate::hash) first_constants: Box<[E]>,
    /// The MDS matrix: the linear layer of every full round but one.
    pub(in crate::hash) mds: Box<[E]>,
    /// The linear layer of the last full round of the first half: `P_0 * M`.
    pub(in crate::hash) entry_mds: Box<[E]>,
    /// Added after [`Optimised::entry_mds`]: every partial-round constant
    /// that could be moved out of the partial rounds.
    pub(in crate::hash) entry_constants: Box<[E]>,
    /// One scalar per partial round, added to cell 0 after its S-box.
    pub(in crate::hash) partial_constants: Box<[E]>,
    /// The first row of each partial round's sparse matrix.
    pub(in crate::hash) sparse_rows: Box<[E]>,
    /// The first column of each partial round's sparse matrix below the
    /// diagonal; slot 0 of each round is unused (zero) so rows and columns
    /// both come in chunks of `t`.
    pub(in crate::hash) sparse_columns: Box<[E]>,
    /// The original constants of the second-half full rounds but the first
    /// (whose constants were moved into the partial rounds), added before
    /// their S-boxes.
    pub(in crate::hash) last_constants: Box<[E]>,
}

impl Optimised {
    /// The same tables with every value converted by `convert`: a
    /// permutation over another representation of the field converts its
    /// constants once per width, not on every use.
    #[cfg(any(target_arch = "wasm32", test))]
    pub(in crate::hash) fn map<E>(&self, convert: impl Fn(&Fr) -> E) -> Optimised<E> {
        let table = |values: &[Fr]| -> Box<[E]> { values.iter().map(&convert).collect() };
        Optimised {
            first_constants: table(&self.first_constants),
            mds: table(&self.mds),
            entry_mds: table(&self.entry_mds),
            entry_constants: table(&self.entry_constants),
            partial_constants: table(&self.partial_constants),
            sparse_rows: table(&self.sparse_rows),
            sparse_columns: table(&self.sparse_columns),
            last_constants: table(&self.last_constants),
        }
    }
}

/// The optimised constants for `width`, derived on the first call for that
/// width (from [`params::get`], which it generates if needed).
///
/// # Panics
/// If `width` is outside 2..=17.
pub(in crate::hash) fn get(width: usize) -> &'static Optimised {
    static CACHE: [OnceLock<Optimised>; MAX_WIDTH - MIN_WIDTH + 1] =
        [const { OnceLock::new() }; MAX_WIDTH - MIN_WIDTH + 1];
    let partial = params::partial_rounds(width);
    CACHE[width - MIN_WIDTH].get_or_init(|| {
        let params = params::get(width);
        derive(width, partial, &params.round_constants, &params.mds)
    })
}

/// Derives the optimised form from the textbook round constants (`(R_F +
/// partial) * t`, round-major) and the MDS matrix (`t x t`, row-major).
fn derive(t: usize, partial: usize, round_constants: &[Fr], mds: &[Fr]) -> Optimised {
    assert_eq!(round_constants.len(), (FULL_ROUNDS + partial) * t);
    assert_eq!(mds.len(), t * t);
    let half = FULL_ROUNDS / 2;
    let constants = |round: usize| &round_constants[round * t..(round + 1) * t];

    // Constants: walk the partial rounds (global rounds half..half+partial)
    // backwards. Round g's constants after its S-box are M^-1 c_{g+1} plus
    // what later rounds carried into it; cell 0 stays, the rest moves before
    // the S-box, i.e. after round g - 1's S-box as M^-1 (0, x_1, ..).
    let mds_inverse = invert(mds, t);
    let mut carry = vec![Fr::ZERO; t];
    let mut partial_constants = vec![Fr::ZERO; partial];
    for g in (half..half + partial).rev() {
        let mut moved = mul_matrix_vector(&mds_inverse, constants(g + 1));
        add_assign(&mut moved, &carry);
        partial_constants[g - half] = moved[0];
        moved[0] = Fr::ZERO;
        carry = mul_matrix_vector(&mds_inverse, &moved);
    }
    // The last first-half round: its constants after the S-box are
    // M^-1 c_half (the first partial round's own) plus the carry.
    let mut entry_after_sbox = mul_matrix_vector(&mds_inverse, constants(half));
    add_assign(&mut entry_after_sbox, &carry);

    // Matrices, in the closed forms of the module doc.
    let n = t - 1;
    let lower: Vec<Fr> = (1..t)
        .flat_map(|i| mds[i * t + 1..(i + 1) * t].iter().copied())
        .collect();
    let lower_inverse = invert(&lower, n);
    let m_row = &mds[1..t];
    let m_col: Vec<Fr> = (1..t).map(|i| mds[i * t]).collect();

    let mut sparse_rows = vec![Fr::ZERO; partial * t];
    let mut sparse_columns = vec![Fr::ZERO; partial * t];
    // For j = partial - 1: row * Mh^-1 and column m_col; each step down
    // multiplies the row by Mh^-1 on the right and the column by Mh.
    let mut row = mul_vector_matrix(m_row, &lower_inverse);
    let mut column = m_col.clone();
    for j in (0..partial).rev() {
        let (row_out, column_out) = (
            &mut sparse_rows[j * t..(j + 1) * t],
            &mut sparse_columns[j * t..(j + 1) * t],
        );
        row_out[0] = mds[0];
        row_out[1..].copy_from_slice(&row);
        column_out[1..].copy_from_slice(&column);
        row = mul_vector_matrix(&row, &lower_inverse);
        column = mul_matrix_vector(&lower, &column);
    }
    // `column` is now Mh^partial * m_col.
    let entry_lower = power(&lower, n, partial + 1);
    let mut entry_mds = vec![Fr::ZERO; t * t];
    entry_mds[..t].copy_from_slice(&mds[..t]);
    for i in 1..t {
        entry_mds[i * t] = column[i - 1];
        entry_mds[i * t + 1..(i + 1) * t].copy_from_slice(&entry_lower[(i - 1) * n..i * n]);
    }
    let entry_constants = mul_matrix_vector(&entry_mds, &entry_after_sbox);

    Optimised {
        first_constants: round_constants[..half * t].into(),
        mds: mds.into(),
        entry_mds: entry_mds.into(),
        entry_constants: entry_constants.into(),
        partial_constants: partial_constants.into(),
        sparse_rows: sparse_rows.into(),
        sparse_columns: sparse_columns.into(),
        last_constants: round_constants[(half + partial + 1) * t..].into(),
    }
}

fn add_assign(into: &mut [Fr], other: &[Fr]) {
    for (a, b) in into.iter_mut().zip(other) {
        *a += b;
    }
}

/// `matrix * vector` for a row-major `n x n` matrix, `n = vector.len()`.
fn mul_matrix_vector(matrix: &[Fr], vector: &[Fr]) -> Vec<Fr> {
    matrix
        .chunks_exact(vector.len())
        .map(|row| row.iter().zip(vector).map(|(a, b)| *a * b).sum())
        .collect()
}

/// `vector * matrix` (a row vector) for a row-major `n x n` matrix.
fn mul_vector_matrix(vector: &[Fr], matrix: &[Fr]) -> Vec<Fr> {
    let n = vector.len();
    (0..n)
        .map(|j| (0..n).map(|i| vector[i] * matrix[i * n + j]).sum())
        .collect()
}

/// The product of two row-major `n x n` matrices.
fn mul_matrices(a: &[Fr], b: &[Fr], n: usize) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; n * n];
    for i in 0..n {
        for k in 0..n {
            let a_ik = a[i * n + k];
            for j in 0..n {
                out[i * n + j] += a_ik * b[k * n + j];
            }
        }
    }
    out
}

/// `matrix^exponent` by square-and-multiply.
fn power(matrix: &[Fr], n: usize, mut exponent: usize) -> Vec<Fr> {
    let mut result: Vec<Fr> = (0..n * n)
        .map(|k| if k / n == k % n { Fr::ONE } else { Fr::ZERO })
        .collect();
    let mut base = matrix.to_vec();
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = mul_matrices(&result, &base, n);
        }
        exponent >>= 1;
        if exponent > 0 {
            base = mul_matrices(&base, &base, n);
        }
    }
    result
}

/// The inverse of a row-major `n x n` matrix by Gauss-Jordan elimination.
///
/// # Panics
/// If the matrix is singular. Only Cauchy matrices (`M` and its lower-right
/// block) are inverted here, and those are always invertible.
fn invert(matrix: &[Fr], n: usize) -> Vec<Fr> {
    let mut a = matrix.to_vec();
    let mut inverse = power(matrix, n, 0);
    for col in 0..n {
        let pivot = (col..n)
            .find(|&r| a[r * n + col] != Fr::ZERO)
            .expect("poseidon MDS matrices and their blocks are invertible");
        if pivot != col {
            for k in 0..n {
                a.swap(pivot * n + k, col * n + k);
                inverse.swap(pivot * n + k, col * n + k);
            }
        }
        let scale = a[col * n + col].inverse().expect("pivot is non-zero");
        for k in 0..n {
            a[col * n + k] *= scale;
            inverse[col * n + k] *= scale;
        }
        for r in (0..n).filter(|&r| r != col) {
            let factor = a[r * n + col];
            if factor == Fr::ZERO {
                continue;
            }
            for k in 0..n {
                let (a_ck, inverse_ck) = (a[col * n + k], inverse[col * n + k]);
                a[r * n + k] -= factor * a_ck;
                inverse[r * n + k] -= factor * inverse_ck;
            }
        }
    }
    inverse
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invert_gives_the_inverse_for_every_mds() {
        for t in MIN_WIDTH..=MAX_WIDTH {
            let mds = &params::get(t).mds;
            let product = mul_matrices(mds, &invert(mds, t), t);
            assert_eq!(product, power(mds, t, 0), "t = {t}");
        }
    }

    #[test]
    fn tables_have_the_right_shape_for_every_width() {
        for t in MIN_WIDTH..=MAX_WIDTH {
            let partial = params::partial_rounds(t);
            let ours = get(t);
            assert_eq!(ours.first_constants.len(), FULL_ROUNDS / 2 * t);
            assert_eq!(ours.mds.len(), t * t);
            assert_eq!(ours.entry_mds.len(), t * t);
            assert_eq!(ours.entry_constants.len(), t);
            assert_eq!(ours.partial_constants.len(), partial);
            assert_eq!(ours.sparse_rows.len(), partial * t);
            assert_eq!(ours.sparse_columns.len(), partial * t);
            assert!(
                ours.sparse_columns
                    .iter()
                    .step_by(t)
                    .all(|c| *c == Fr::ZERO),
                "t = {t}: slot 0 of every sparse column is unused"
            );
            assert_eq!(ours.last_constants.len(), (FULL_ROUNDS / 2 - 1) * t);
        }
    }
}
