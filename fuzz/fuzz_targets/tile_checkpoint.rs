#![no_main]
//! A tile store's `checkpoint` object, as a reader fetches it from the
//! network: decoding never panics, and what decodes is one spelling only.
//! An unsigned object that decodes is exactly what the encoder writes for
//! its head; a signed one decodes to a head whose unsigned form decodes
//! back to it. The first byte steers the input: 0 takes it as is, 1 and 2
//! put the first lines of a v1 (Lean) or v2 (fixed-depth) object before it,
//! so the fields behind the magic are explored.

use cairn_tiles::{Checkpoint, MAGIC, MAGIC_KINDS, signers};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut object = match control % 3 {
        0 => Vec::new(),
        1 => format!("{MAGIC}\narity ").into_bytes(),
        _ => format!("{MAGIC_KINDS}\narity 2\nhash blake3\nkind imt\ndepth ").into_bytes(),
    };
    object.extend_from_slice(rest);
    let signed_by = signers(&object);
    let Ok(checkpoint) = Checkpoint::decode(&object) else {
        return;
    };
    let text = checkpoint.encode();
    let unsigned = object.starts_with(MAGIC.as_bytes()) || object.starts_with(MAGIC_KINDS.as_bytes());
    if unsigned {
        assert_eq!(text.as_bytes(), object.as_slice(), "an unsigned object re-encodes differently");
        assert_eq!(signed_by, None);
    } else {
        assert!(signed_by.is_some(), "a signed object names its signers");
    }
    assert_eq!(Checkpoint::decode(text.as_bytes()), Ok(checkpoint));
});
