//! Poseidon against circomlib: generated parameters against light-poseidon's
//! tables, hashes against light-poseidon (1..=12 inputs) and known answers
//! from circomlib / poseidon-lite (up to 16 inputs), the optimised
//! permutation against the textbook one (every width), plus the input rules.

use ark_bn254::Fr;
use ark_ff::AdditiveGroup;
use light_poseidon::parameters::bn254_x5::get_poseidon_parameters;
use light_poseidon::{Poseidon, PoseidonBytesHasher};

use super::params::{self, FULL_ROUNDS, MAX_WIDTH, MIN_WIDTH};
use super::*;

fn from_hex(hex: &str) -> Hash {
    let bytes = hex::decode(hex.trim_start_matches("0x")).expect("valid hex");
    bytes.try_into().expect("32 bytes")
}

fn small(value: u64) -> Hash {
    let mut out = [0u8; 32];
    out[24..].copy_from_slice(&value.to_be_bytes());
    out
}

/// The modulus plus `delta` (no carry out of the low byte for small deltas).
fn modulus_plus(delta: u8) -> Hash {
    let mut value = BN254_MODULUS_BE;
    value[31] += delta;
    value
}

fn modulus_minus_one() -> Hash {
    let mut value = BN254_MODULUS_BE;
    value[31] -= 1;
    value
}

/// A deterministic stream of canonical field elements (splitmix64 bytes,
/// top two bits cleared, values `>= p` redrawn) so failures reproduce.
struct Inputs(u64);

impl Inputs {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn next_element(&mut self) -> Hash {
        loop {
            let mut value = [0u8; 32];
            for chunk in value.chunks_exact_mut(8) {
                chunk.copy_from_slice(&self.next_u64().to_be_bytes());
            }
            value[0] &= 0x3f;
            if is_canonical_field_element(&value) {
                return value;
            }
        }
    }
}

/// The textbook permutation, the reference for the optimised [`permute`]:
/// `R_F / 2` full rounds, `R_P` partial rounds, `R_F / 2` full rounds, each
/// "add the round constants, S-box (every cell, or cell 0 in a partial
/// round), multiply by the dense MDS matrix".
fn textbook_permute<const T: usize>(state: &mut [Fr; T], params: &params::Params) {
    let (round_constants, _) = params.round_constants.as_chunks::<T>();
    let (mds, _) = params.mds.as_chunks::<T>();
    assert_eq!(round_constants.len() * T, params.round_constants.len());
    assert_eq!(mds.len(), T);

    let partial_rounds = round_constants.len() - FULL_ROUNDS;
    let (first_full, rest) = round_constants.split_at(FULL_ROUNDS / 2);
    let (partial, last_full) = rest.split_at(partial_rounds);

    for constants in first_full {
        Fr::add_constants(state, constants);
        state.iter_mut().for_each(Fr::sbox);
        Fr::mix(state, mds);
    }
    for constants in partial {
        Fr::add_constants(state, constants);
        Fr::sbox(&mut state[0]);
        Fr::mix(state, mds);
    }
    for constants in last_full {
        Fr::add_constants(state, constants);
        state.iter_mut().for_each(Fr::sbox);
        Fr::mix(state, mds);
    }
}

/// The optimised permutation of width `T` equals the textbook one on whole
/// random states (cell 0 included, so every cell's path is exercised), and
/// on the all-zero and all-(p - 1) states.
fn check_optimised_width<const T: usize>(stream: &mut Inputs) {
    let element = |bytes: &Hash| field_from_be(bytes).expect("canonical");
    let mut states: Vec<[Fr; T]> = vec![[Fr::ZERO; T], [-Fr::ONE; T]];
    states.extend((0..32).map(|_| std::array::from_fn(|_| element(&stream.next_element()))));
    for start in states {
        let mut ours = start;
        permute(&mut ours, optimised::get(T));
        let mut reference = start;
        textbook_permute(&mut reference, params::get(T));
        assert_eq!(ours, reference, "t = {T}, state {start:?}");
    }
}

#[test]
fn optimised_permutation_equals_textbook_for_every_width() {
    let mut stream = Inputs(0x005b_a55e);
    check_optimised_width::<2>(&mut stream);
    check_optimised_width::<3>(&mut stream);
    check_optimised_width::<4>(&mut stream);
    check_optimised_width::<5>(&mut stream);
    check_optimised_width::<6>(&mut stream);
    check_optimised_width::<7>(&mut stream);
    check_optimised_width::<8>(&mut stream);
    check_optimised_width::<9>(&mut stream);
    check_optimised_width::<10>(&mut stream);
    check_optimised_width::<11>(&mut stream);
    check_optimised_width::<12>(&mut stream);
    check_optimised_width::<13>(&mut stream);
    check_optimised_width::<14>(&mut stream);
    check_optimised_width::<15>(&mut stream);
    check_optimised_width::<16>(&mut stream);
    check_optimised_width::<17>(&mut stream);
}

fn light_poseidon_hash(inputs: &[Hash]) -> Hash {
    let mut hasher = Poseidon::<Fr>::new_circom(inputs.len()).expect("1..=12 inputs");
    let refs: Vec<&[u8]> = inputs.iter().map(|input| input.as_slice()).collect();
    hasher.hash_bytes_be(&refs).expect("canonical inputs")
}

#[test]
fn parameters_equal_light_poseidon_for_widths_2_to_13() {
    for width in 2..=13usize {
        let ours = params::get(width);
        let theirs = get_poseidon_parameters::<Fr>(u8::try_from(width).unwrap())
            .expect("light-poseidon width");
        assert_eq!(theirs.width, width);
        assert_eq!(theirs.full_rounds, FULL_ROUNDS, "t = {width}");
        assert_eq!(
            theirs.partial_rounds,
            params::partial_rounds(width),
            "t = {width}"
        );
        assert_eq!(
            *ours.round_constants, *theirs.ark,
            "round constants, t = {width}"
        );
        let their_mds: Vec<Fr> = theirs.mds.into_iter().flatten().collect();
        assert_eq!(*ours.mds, *their_mds, "MDS matrix, t = {width}");
    }
}

#[test]
fn parameters_have_the_right_shape_for_every_width() {
    for width in MIN_WIDTH..=MAX_WIDTH {
        let ours = params::get(width);
        let rounds = FULL_ROUNDS + params::partial_rounds(width);
        assert_eq!(ours.round_constants.len(), rounds * width, "t = {width}");
        assert_eq!(ours.mds.len(), width * width, "t = {width}");
    }
}

#[test]
fn circomlib_known_answers() {
    // poseidon([1, 2]) is circomlib's test value; the others are
    // poseidon-lite 0.3.0's poseidonK([1, ..., k]), [0; k] and [p - 1; k],
    // which cover the widths light-poseidon has no tables for.
    let sequential = |k: u64| (1..=k).map(small).collect::<Vec<_>>();
    let cases: [(Vec<Hash>, &str); 11] = [
        (
            sequential(1),
            "0x29176100eaa962bdc1fe6c654d6a3c130e96a4d1168b33848b897dc502820133",
        ),
        (
            sequential(2),
            "0x115cc0f5e7d690413df64c6b9662e9cf2a3617f2743245519e19607a4417189a",
        ),
        (
            sequential(12),
            "0x058814945232937db248a01e7cc55b3d681cc08702c8168494e856c1ef7693b5",
        ),
        (
            sequential(13),
            "0x0f918939632fadca6456a2fe6e65a124828d4c3920d379cc744e90a666887806",
        ),
        (
            sequential(14),
            "0x1278779aaafc5ca58bf573151005830cdb4683fb26591c85a7464d4f0e527776",
        ),
        (
            sequential(15),
            "0x094ae33b67a845998abb55e917642d4022d078d96f7c36ea11da4273ecf20f50",
        ),
        (
            sequential(16),
            "0x16159a551cbb66108281a48099fff949ae08afd7f1f2ec06de2ffb96b919b765",
        ),
        (
            vec![[0u8; 32]; 13],
            "0x06531d729193679b88a6ed82a1952d130d95cb5dfce1ddb1078b7eaebb3aa8ee",
        ),
        (
            vec![[0u8; 32]; 16],
            "0x0f63cd0c9fbe679a562469831d8e810c9d33cc2409695b8e6a893e627ea952d1",
        ),
        (
            vec![modulus_minus_one(); 13],
            "0x03d961eee487e13ce02b2cdff2bb635c6de5d36b92cd5d3377016d034899553b",
        ),
        (
            vec![modulus_minus_one(); 16],
            "0x241becd2532d9b17ec7d4e6a44b3d030b53d9ba0fbe2f06f792237f97c3ccebb",
        ),
    ];
    for (inputs, expected) in cases {
        assert_eq!(
            hash(&inputs),
            Ok(from_hex(expected)),
            "{} inputs",
            inputs.len()
        );
    }
}

#[test]
fn hashes_equal_light_poseidon_for_1_to_12_inputs() {
    let mut stream = Inputs(0x00ca_1f7e_5eed);
    for k in 1..=12 {
        for _ in 0..64 {
            let inputs: Vec<Hash> = (0..k).map(|_| stream.next_element()).collect();
            assert_eq!(
                hash(&inputs),
                Ok(light_poseidon_hash(&inputs)),
                "inputs {inputs:02x?}"
            );
        }
        // The edges of the canonical range, mixed with random values.
        let mut edges: Vec<Hash> = (0..k).map(|_| stream.next_element()).collect();
        edges[0] = [0u8; 32];
        edges[k - 1] = modulus_minus_one();
        assert_eq!(
            hash(&edges),
            Ok(light_poseidon_hash(&edges)),
            "{k} edge inputs"
        );
    }
}

#[test]
fn zero_and_modulus_minus_one_are_accepted() {
    for k in 1..=16 {
        assert!(hash(&vec![[0u8; 32]; k]).is_ok(), "{k} zeros");
        assert!(
            hash(&vec![modulus_minus_one(); k]).is_ok(),
            "{k} times p - 1"
        );
    }
    assert!(is_canonical_field_element(&[0u8; 32]));
    assert!(is_canonical_field_element(&modulus_minus_one()));
}

#[test]
fn non_canonical_inputs_are_rejected_with_their_position() {
    let bad_values = [BN254_MODULUS_BE, modulus_plus(1), [0xff; 32]];
    for bad in bad_values {
        assert!(!is_canonical_field_element(&bad));
        for k in 1..=16 {
            for position in 0..k {
                let mut inputs = vec![small(7); k];
                inputs[position] = bad;
                assert_eq!(
                    hash(&inputs),
                    Err(position),
                    "{k} inputs, bad at {position}"
                );
            }
        }
    }
    // With several bad inputs, the first one is reported.
    let inputs = [small(1), [0xff; 32], small(2), BN254_MODULUS_BE];
    assert_eq!(hash(&inputs), Err(1));
}

#[test]
fn output_is_canonical_big_endian() {
    let mut stream = Inputs(42);
    for k in 1..=16 {
        let inputs: Vec<Hash> = (0..k).map(|_| stream.next_element()).collect();
        let out = hash(&inputs).expect("canonical inputs");
        assert!(is_canonical_field_element(&out));
        // Round trip through the field: the bytes are the value, big-endian.
        let as_field = field_from_be(&out).expect("canonical");
        assert_eq!(field_to_be(as_field), out);
    }
    assert_eq!(field_to_be(Fr::from(0x0102_0304u64)), small(0x0102_0304));
}

#[test]
#[should_panic(expected = "poseidon takes 1..=16 inputs, got 0")]
fn no_inputs_panics() {
    let _ = hash(&[]);
}

#[test]
#[should_panic(expected = "poseidon takes 1..=16 inputs, got 17")]
fn seventeen_inputs_panic() {
    let _ = hash(&[[0u8; 32]; 17]);
}
