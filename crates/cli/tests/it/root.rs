//! `cairn root`.

use cairn_core::HashKind;
use cairn_core::hex::to_hex;

use crate::support::{Dir, bin, cairn, cairn_stdin, hex, leaves, root_hex, tree};

#[test]
fn root_equals_the_core_for_every_hash_arity_and_size() {
    let dir = Dir::new();
    let all = leaves(40);
    for hash in HashKind::ALL {
        for n in [2, 3, 5, 16] {
            for size in [1, 2, 3, 17, 40] {
                let file = dir.file("leaves.bin", bin(&all[..size]));
                let run = cairn(&[
                    "root",
                    "--arity",
                    &n.to_string(),
                    "--hash",
                    hash.name(),
                    &file,
                ]);
                assert_eq!(
                    run.success(),
                    root_hex(n, hash, &all[..size]) + "\n",
                    "hash {hash} arity {n} size {size}"
                );
            }
        }
    }
}

#[test]
fn root_json_matches_the_typescript_vectors() {
    let vectors = cairn_testkit::vectors::load("typescript.json");
    let all = cairn_testkit::vectors::leaves();
    let dir = Dir::new();
    // Every byte-hash vector; for the field hashes (Poseidon, whose parameters each process
    // regenerates (0.1 to 0.3 s a run), the full 1100-leaf tree at every
    // arity, which reaches every width, and the empty tree.
    let roots: Vec<&serde_json::Value> = vectors["roots"]
        .as_array()
        .expect("roots array")
        .iter()
        .filter(|v| {
            !(v["hash"] == "poseidon" || v["hash"] == "mimcsponge")
                || matches!(v["size"].as_u64(), Some(0 | 1100))
        })
        .collect();
    let mut checked = 0;
    std::thread::scope(|scope| {
        let workers: Vec<_> = roots
            .chunks(roots.len().div_ceil(8))
            .enumerate()
            .map(|(worker, chunk)| {
                let (dir, all) = (&dir, &all);
                scope.spawn(move || {
                    for vector in chunk {
                        let size = vector["size"].as_u64().expect("size") as usize;
                        let hash = vector["hash"].as_str().expect("hash");
                        let n = vector["arity"].as_u64().expect("arity").to_string();
                        let file = dir.file(&format!("prefix-{worker}.bin"), bin(&all[..size]));
                        let run = cairn(&["root", "--json", "--arity", &n, "--hash", hash, &file]);
                        let json: serde_json::Value =
                            serde_json::from_str(&run.success()).expect("root --json is JSON");
                        for key in ["size", "depth", "root", "arity", "hash"] {
                            assert_eq!(json[key], vector[key], "{key} of {vector}");
                        }
                    }
                    chunk.len()
                })
            })
            .collect();
        for worker in workers {
            checked += worker.join().expect("worker");
        }
    });
    assert_eq!(checked, roots.len());
    assert!(checked > 700, "the vectors file has its ~900 roots");
}

#[test]
fn root_json_is_one_line_in_the_documented_key_order() {
    let dir = Dir::new();
    let l = leaves(10);
    let file = dir.file("leaves.bin", bin(&l));
    let out = cairn(&[
        "root",
        "--arity",
        "3",
        "--hash",
        "keccak256",
        "--json",
        &file,
    ])
    .success();
    let root = to_hex(&tree(3, HashKind::Keccak256, &l).root().expect("root"));
    assert_eq!(
        out,
        format!(
            "{{\"size\":10,\"depth\":3,\"root\":\"{root}\",\"arity\":3,\"hash\":\"keccak256\",\"kind\":\"lean\",\"zero\":null}}\n"
        )
    );
}

#[test]
fn hex_and_bin_formats_agree_and_hex_allows_blank_lines_and_whitespace() {
    let dir = Dir::new();
    let l = leaves(9);
    let want = root_hex(4, HashKind::Sha256, &l) + "\n";
    let bin_file = dir.file("leaves.bin", bin(&l));
    let plain = dir.file("plain.hex", hex(&l));
    let mut messy = String::from("\n\n");
    for (i, leaf) in l.iter().enumerate() {
        let text = to_hex(leaf);
        let text = if i % 2 == 0 {
            text.to_uppercase().replacen("0X", "0x", 1)
        } else {
            text
        };
        messy.push_str(&format!("  \t{text} \r\n\n"));
    }
    messy.push_str("   \n\t");
    let messy = dir.file("messy.hex", messy);
    let args = ["root", "--arity", "4", "--hash", "sha256"];
    assert_eq!(
        cairn(&[&args[..], &[bin_file.as_str()]].concat()).success(),
        want
    );
    assert_eq!(
        cairn(&[&args[..], &["--format", "bin", bin_file.as_str()]].concat()).success(),
        want
    );
    for file in [&plain, &messy] {
        assert_eq!(
            cairn(&[&args[..], &["--format", "hex", file.as_str()]].concat()).success(),
            want
        );
    }
}

#[test]
fn stdin_is_read_for_dash_and_for_a_missing_file() {
    let l = leaves(6);
    let want = root_hex(2, HashKind::Blake3, &l) + "\n";
    let base = ["root", "--arity", "2", "--hash", "blake3"];
    assert_eq!(cairn_stdin(&base, &bin(&l)).success(), want);
    assert_eq!(
        cairn_stdin(&[&base[..], &["-"]].concat(), &bin(&l)).success(),
        want
    );
    assert_eq!(
        cairn_stdin(
            &[&base[..], &["--format", "hex", "-"]].concat(),
            hex(&l).as_bytes()
        )
        .success(),
        want
    );
}

#[test]
fn a_large_input_streams_through_stdin() {
    let l = leaves(50_000);
    let run = cairn_stdin(&["root", "--arity", "16", "--hash", "blake3"], &bin(&l));
    assert_eq!(run.success(), root_hex(16, HashKind::Blake3, &l) + "\n");
}

#[test]
fn the_empty_tree_has_no_root_plain_mode_fails_and_json_prints_null() {
    let dir = Dir::new();
    let empty = dir.file("empty.bin", b"");
    let blank = dir.file("blank.hex", "\n  \n\n");
    for (file, format) in [(&empty, "bin"), (&blank, "hex")] {
        let args = [
            "root",
            "--arity",
            "2",
            "--hash",
            "blake3",
            "--format",
            format,
            file.as_str(),
        ];
        let line = cairn(&args).error(1, &["empty tree: no root"]);
        assert!(line.contains(file.as_str()), "{line}");
        let json = cairn(&[&args[..], &["--json"]].concat()).success();
        assert_eq!(
            json,
            "{\"size\":0,\"depth\":0,\"root\":null,\"arity\":2,\"hash\":\"blake3\",\"kind\":\"lean\",\"zero\":null}\n"
        );
    }
    cairn(&["root", "--arity", "2", "--hash", "blake3"])
        .error(1, &["empty tree: no root", "<stdin>"]);
}

#[test]
fn one_leaf_is_its_own_root() {
    let l = leaves(1);
    let out = cairn_stdin(&["root", "--arity", "7", "--hash", "poseidon"], &bin(&l)).success();
    assert_eq!(out, to_hex(&l[0]) + "\n");
}
