//! The leaf-parsing module, in process: exact errors, and properties over
//! arbitrary input (never a panic; parse or error).

use cairn_cli::leaves::{
    BlockReader, Format, LeafError, LineError, ReadError, encode, locate, parse, parse_bin,
    parse_hex,
};
use cairn_core::Hash;
use cairn_core::hex::HexError;
use proptest::prelude::*;

#[test]
fn binary_leaves_are_borrowed_and_lengths_are_checked() {
    let bytes: Vec<u8> = (0..96u8).collect();
    let parsed = parse(&bytes, Format::Bin).expect("96 bytes are 3 leaves");
    assert!(
        matches!(parsed, std::borrow::Cow::Borrowed(_)),
        "binary input is not copied"
    );
    assert_eq!(parsed.len(), 3);
    assert_eq!(parsed[1][0], 32);
    assert_eq!(parse_bin(&[]).map(<[Hash]>::len), Ok(0));
    let err = parse_bin(&bytes[..95]).unwrap_err();
    assert_eq!(
        err,
        LeafError::Length {
            len: 95,
            looks_like_hex: false
        }
    );
    assert_eq!(
        err.to_string(),
        "95 bytes is not a multiple of 32: 2 whole leaves and 31 bytes left over"
    );
}

#[test]
fn hex_errors_carry_the_line_number() {
    let leaf = format!("0x{}", "ab".repeat(32));
    assert_eq!(
        parse_hex(format!("\r\n {leaf}\t\r\n\n{leaf}").as_bytes()).map(|l| l.len()),
        Ok(2)
    );
    let err = parse_hex(format!("{leaf}\n\n0xabc\n").as_bytes()).unwrap_err();
    assert!(
        matches!(
            err,
            LeafError::Line {
                line: 3,
                reason: LineError::Hex(HexError::WrongLength { got: 3, .. })
            }
        ),
        "{err:?}"
    );
    let err = parse_hex(b"\n\n\n\xff").unwrap_err();
    assert_eq!(
        err,
        LeafError::Line {
            line: 4,
            reason: LineError::NotUtf8
        }
    );
    assert_eq!(
        locate(format!("\n{leaf}\n\n{leaf}\n").as_bytes(), Format::Hex, 1),
        "line 4"
    );
    assert_eq!(locate(&[], Format::Bin, 2), "bytes 64..96");
}

fn any_leaves() -> impl Strategy<Value = Vec<Hash>> {
    prop::collection::vec(prop::array::uniform32(any::<u8>()), 0..20)
}

/// Text that is mostly hex lines with occasional damage, to reach deep
/// into the hex parser rather than failing on the first byte.
fn hexish_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[ \t]{0,2}0[xX][0-9a-fA-F]{64}[ \t\r]{0,2}",
        1 => "0x[0-9a-fA-F]{0,70}",
        1 => "[ \t\r]*",
        1 => "\\PC{0,80}",
    ];
    prop::collection::vec(line, 0..12).prop_map(|lines| lines.join("\n"))
}

/// Lines that are mostly decimal field elements, with values at and above
/// the modulus, leading zeros, signs and junk mixed in.
fn decish_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[ \t]{0,2}(0|[1-9][0-9]{0,75})[ \t\r]{0,2}",
        1 => "2188824287183927522224640574525727508854836440041603434369820418657580849561[6-9]",
        1 => "[0-9]{77,80}",
        1 => "[-+]?0[0-9]{1,3}",
        1 => "[ \t\r]*",
        1 => "\\PC{0,80}",
    ];
    prop::collection::vec(line, 0..12).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_parse_or_err(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        match parse(&bytes, Format::Bin) {
            Ok(leaves) => {
                prop_assert_eq!(bytes.len() % 32, 0);
                prop_assert_eq!(leaves.as_flattened(), &bytes[..]);
            }
            Err(LeafError::Length { len, .. }) => {
                prop_assert_eq!(len, bytes.len());
                prop_assert_ne!(len % 32, 0);
            }
            Err(other) => prop_assert!(false, "binary parse gave a line error: {other}"),
        }
        if let Err(err) = parse(&bytes, Format::Hex) {
            let message = err.to_string();
            prop_assert!(!message.contains('\n'), "{}", message);
            prop_assert!(message.starts_with("line "), "{}", message);
        }
        for position in [0, 1, 7, usize::MAX] {
            let _ = locate(&bytes, Format::Hex, position);
            let _ = locate(&bytes, Format::Bin, position);
        }
    }

    #[test]
    fn arbitrary_strings_never_panic_and_parse_or_err(text in prop_oneof![hexish_text(), "\\PC*"]) {
        match parse_hex(text.as_bytes()) {
            Ok(leaves) => {
                let lines = text.lines().filter(|line| !line.trim().is_empty()).count();
                prop_assert_eq!(leaves.len(), lines);
            }
            Err(LeafError::Line { line, .. }) => {
                prop_assert!(line >= 1 && line <= text.split('\n').count());
            }
            Err(other) => prop_assert!(false, "hex parse gave a length error: {other}"),
        }
    }

    #[test]
    fn encoded_leaves_parse_back_in_both_formats(leaves in any_leaves()) {
        for format in [Format::Bin, Format::Hex] {
            let encoded = encode(&leaves, format);
            let parsed = parse(&encoded, format);
            prop_assert_eq!(parsed.as_deref(), Ok(&leaves[..]));
        }
    }

    #[test]
    fn streamed_blocks_agree_with_parsing_the_whole_input(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        text in hexish_text(),
        decimals in decish_text(),
        block in 1usize..6,
        buffer in 1usize..70,
    ) {
        for (input, format) in [
            (&bytes[..], Format::Bin),
            (text.as_bytes(), Format::Hex),
            (decimals.as_bytes(), Format::Dec),
        ] {
            // A small buffer splits lines and leaves across reads.
            let stream = std::io::BufReader::with_capacity(buffer, input);
            let mut reader = BlockReader::new(stream, format);
            let (mut leaves, mut lines) = (Vec::new(), Vec::new());
            let mut streamed = Vec::new();
            let mut streamed_lines = Vec::new();
            let outcome = loop {
                match reader.next_block(block, &mut leaves, &mut lines) {
                    Ok(()) if leaves.is_empty() => break Ok(()),
                    Ok(()) => {
                        prop_assert!(leaves.len() <= block);
                        streamed.extend_from_slice(&leaves);
                        streamed_lines.extend_from_slice(&lines);
                    }
                    Err(ReadError::Leaf(error)) => break Err(error),
                    Err(ReadError::Io(error)) => prop_assert!(false, "I/O error from memory: {error}"),
                }
            };
            match (parse(input, format), outcome) {
                (Ok(whole), Ok(())) => {
                    prop_assert_eq!(&streamed[..], &whole[..]);
                    prop_assert_eq!(reader.bytes(), input.len() as u64);
                    if format != Format::Bin {
                        for (position, line) in streamed_lines.iter().enumerate() {
                            prop_assert_eq!(locate(input, format, position), format!("line {line}"));
                        }
                    }
                }
                (Err(whole), Err(streaming)) => {
                    prop_assert_eq!(whole, streaming);
                    // What came before the error is a prefix of the input's leaves.
                    let prefix = match format {
                        Format::Bin => parse_bin(&input[..streamed.len() * 32]).map(<[Hash]>::to_vec),
                        Format::Hex | Format::Dec => Ok(streamed.clone()),
                    };
                    prop_assert_eq!(prefix, Ok(streamed.clone()));
                }
                (whole, streaming) => prop_assert!(false, "whole {whole:?}, streamed {streaming:?}"),
            }
        }
    }
}
