#![no_main]
//! `cairn.trees`, the manifest of a database of several trees. Byte 0
//! picks the input's shape: raw bytes (bit 0 clear), or (bit 0 set) a
//! manifest built from the input's names and directories with its
//! checksum made right, so that the decoder's field checks are reached.
//! Decoding never panics, and a manifest it accepts is exactly the
//! encoding of what it decoded to (one valid encoding per content).

use cairn_db::decoders::{self, ManifestTree};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let bytes = if control & 1 == 0 {
        rest.to_vec()
    } else {
        // Records of: name length, name, directory length, directory.
        let mut body = Vec::new();
        body.extend_from_slice(b"CAIRNTRS");
        let version: u32 = if control & 2 == 0 { 1 } else { u32::from(control) };
        body.extend_from_slice(&version.to_le_bytes());
        let mut records = Vec::new();
        let mut input = rest;
        while let Some((&name_len, tail)) = input.split_first() {
            let name_len = usize::from(name_len % 70).min(tail.len());
            let (name, tail) = tail.split_at(name_len);
            let Some((&dir_len, tail)) = tail.split_first() else {
                break;
            };
            let dir_len = usize::from(dir_len % 40).min(tail.len());
            let (dir, tail) = tail.split_at(dir_len);
            records.push((name.to_vec(), dir.to_vec()));
            input = tail;
        }
        let count = records.len() as u32 + u32::from(control & 4 != 0);
        body.extend_from_slice(&count.to_le_bytes());
        for (name, dir) in &records {
            body.push(name.len() as u8);
            body.extend_from_slice(name);
            body.extend_from_slice(&(dir.len() as u16).to_le_bytes());
            body.extend_from_slice(dir);
        }
        let crc = crc32c::crc32c(&body) ^ u32::from(control & 8 != 0);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    };
    if let Ok(trees) = decoders::forest_manifest(&bytes) {
        assert_eq!(
            decoders::encode_forest_manifest(&trees),
            bytes,
            "an accepted manifest is the encoding of what it holds"
        );
        for (i, tree) in trees.iter().enumerate() {
            assert!(
                trees[..i]
                    .iter()
                    .all(|t: &ManifestTree| (t.name != tree.name
                        || t.family.map(|f| f.member) != tree.family.map(|f| f.member))
                        && t.dir != tree.dir),
                "a tree (name and member) or directory twice"
            );
        }
    }
});
