//! Bad input: one line on stderr, `error: ` first, naming the problem, and
//! the documented exit code; never a panic.

use cairn_core::hex::to_hex;

use crate::support::{Dir, bin, cairn, cairn_stdin, hex, leaves};

const TREE: [&str; 4] = ["--arity", "2", "--hash", "blake3"];

fn root(extra: &[&str]) -> Vec<String> {
    ["root"]
        .iter()
        .chain(TREE.iter())
        .chain(extra.iter())
        .map(|s| s.to_string())
        .collect()
}

fn run(args: &[String]) -> crate::support::Run {
    cairn(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_binary_file_not_a_multiple_of_32_names_its_length_and_remainder() {
    let dir = Dir::new();
    let mut bytes = bin(&leaves(3));
    bytes.extend_from_slice(&[9; 4]);
    let file = dir.file("odd.bin", &bytes);
    run(&root(&[&file])).error(
        4,
        &[
            &file,
            "100 bytes",
            "not a multiple of 32",
            "4 bytes left over",
        ],
    );
    // Through stdin too, and for prove and consistency.
    cairn_stdin(&["root", "--arity", "2", "--hash", "blake3"], &bytes)
        .error(4, &["<stdin>", "100 bytes"]);
    cairn(&[
        "prove", "--arity", "2", "--hash", "blake3", "--leaves", &file, "--index", "0",
    ])
    .error(4, &["100 bytes"]);
    cairn(&[
        "consistency",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--leaves",
        &file,
        "--from",
        "0",
    ])
    .error(4, &["100 bytes"]);
    // Hex given as binary gets a hint.
    let hex_file = dir.file("leaves.hex", hex(&leaves(3)));
    run(&root(&[&hex_file])).error(4, &["201 bytes", "--format hex"]);
}

#[test]
fn a_malformed_hex_line_names_its_line_number_and_why() {
    let dir = Dir::new();
    let good = to_hex(&leaves(1)[0]);
    let cases = [
        (
            format!("{good}\n\n{}\n", &good[2..]),
            "line 3",
            "must start with 0x",
        ),
        (
            format!("{good}\n{}\n", &good[..40]),
            "line 2",
            "has 38 hex digits, want 64",
        ),
        (
            format!("\n\n\n{}z\n", &good[..65]),
            "line 4",
            "non-hex character at position 65",
        ),
        (format!("{good} # a comment\n"), "line 1", "hex digits"),
        (format!("{good}\n{good},{good}\n"), "line 2", "hex digits"),
        (format!("{good}\n\u{ff}\n"), "line 2", "must start with 0x"),
        ("0x\u{e9}\n".to_owned(), "line 1", "hex digits"),
    ];
    for (text, line, why) in cases {
        let file = dir.file("bad.hex", &text);
        run(&root(&["--format", "hex", &file])).error(4, &[&file, line, why]);
    }
    let mut not_utf8 = format!("{good}\n").into_bytes();
    not_utf8.extend_from_slice(b"0x\xff\xfe\n");
    let file = dir.file("binary.hex", &not_utf8);
    run(&root(&["--format", "hex", &file])).error(4, &["line 2", "not UTF-8"]);
}

#[test]
fn unknown_hash_and_out_of_range_arity_are_usage_errors_naming_the_value() {
    let dir = Dir::new();
    let file = dir.file("leaves.bin", bin(&leaves(2)));
    for command in [
        vec!["root", &file],
        vec!["prove", "--leaves", &file, "--index", "0"],
        vec!["consistency", "--leaves", &file, "--from", "0"],
        vec![
            "verify",
            "--root",
            "0x0000000000000000000000000000000000000000000000000000000000000000",
            "--size",
            "1",
            &file,
        ],
    ] {
        let with = |arity: &str, hash: &str| {
            let mut args = command.clone();
            args.extend(["--arity", arity, "--hash", hash]);
            cairn(&args)
        };
        with("2", "sha3").error(
            2,
            &["sha3", "blake3, sha256, keccak256, poseidon, mimcsponge"],
        );
        with("2", "BLAKE3").error(2, &["BLAKE3"]);
        with("1", "blake3").error(2, &["arity 1", "2"]);
        with("17", "blake3").error(2, &["arity 17"]);
        with("0", "blake3").error(2, &["arity 0"]);
        with("four", "blake3").error(2, &["four", "not a whole number"]);
        with("-3", "blake3").error(2, &["-3"]);
    }
}

#[test]
fn missing_and_unreadable_files_are_io_errors_naming_the_path() {
    let dir = Dir::new();
    let missing = dir.path("no-such-leaves.bin");
    run(&root(&[&missing])).error(4, &["no-such-leaves.bin", "cannot read"]);
    cairn(&[
        "prove", "--arity", "2", "--hash", "blake3", "--leaves", &missing, "--index", "0",
    ])
    .error(4, &["no-such-leaves.bin"]);
    let a_dir = dir.path("");
    run(&root(&[&a_dir])).error(4, &["cannot read"]);
    cairn(&[
        "verify",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--root",
        &to_hex(&[0; 32]),
        "--size",
        "1",
        &missing,
    ])
    .error(4, &["no-such-leaves.bin"]);
}

#[test]
fn a_non_canonical_poseidon_leaf_gets_the_core_message_with_its_position() {
    let dir = Dir::new();
    let mut l = leaves(4);
    l[2] = [0xff; 32];
    let args = |file: &str, format: &str| -> Vec<String> {
        [
            "root", "--arity", "3", "--hash", "poseidon", "--format", format, file,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let bin_file = dir.file("leaves.bin", bin(&l));
    run(&args(&bin_file, "bin")).error(
        4,
        &[
            "bytes 64..96",
            "position 2",
            "not a canonical BN254 field element",
            &to_hex(&l[2]),
        ],
    );
    let hex_file = dir.file("leaves.hex", format!("\n{}", hex(&l)));
    run(&args(&hex_file, "hex")).error(
        4,
        &[
            "line 4",
            "position 2",
            "not a canonical BN254 field element",
        ],
    );
    // The same leaves are fine under a byte hash.
    cairn(&["root", "--arity", "3", "--hash", "sha256", &bin_file]).success();
}

#[test]
fn clap_usage_errors_are_one_line_and_exit_2() {
    let dir = Dir::new();
    let file = dir.file("leaves.bin", bin(&leaves(2)));
    cairn(&["root", &file]).error(2, &["--arity", "--hash", "cairn root --help"]);
    cairn(&[
        "root",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--frobnicate",
        &file,
    ])
    .error(2, &["--frobnicate"]);
    cairn(&[
        "root", "--arity", "2", "--hash", "blake3", "--format", "base64", &file,
    ])
    .error(2, &["base64", "bin, hex"]);
    cairn(&[
        "prove", "--arity", "2", "--hash", "blake3", "--leaves", &file,
    ])
    .error(2, &["--index"]);
    cairn(&[
        "prove", "--arity", "2", "--hash", "blake3", "--leaves", &file, "--index", "x",
    ])
    .error(2, &["'x'", "--index"]);
    cairn(&["frobnicate"]).error(2, &["frobnicate"]);
    cairn(&[
        "verify", "--arity", "2", "--hash", "blake3", "--root", "0x00", "--size", "1",
    ])
    .error(2, &["0x00", "hex digits"]);
}
