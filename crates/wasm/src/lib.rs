//! cairn's verifier and wallet witness tracker as a WebAssembly module
//! (`cargo build -p cairn-wasm --release --target wasm32-unknown-unknown`),
//! for `clients/ts`'s fast path in browsers and Node.
//!
//! The interface is bytes in, bytes out, with four exports and no imports:
//! `cairn_input(len)` makes room for a call's input and returns where to
//! write it; `cairn_call(op, handle)` runs a call on that input and
//! returns a status (0 done, else [`CallError::status`]);
//! `cairn_output_ptr()` and `cairn_output_len()` say where its output
//! is (on a refusal, the message as UTF-8). The calls and their byte
//! formats are in [`ops`] and docs/spec.md ("WebAssembly module").
//!
//! Why not wasm-bindgen: its generated glue must match the
//! `wasm-bindgen-cli` version exactly, so every build (and CI) would
//! install that tool, and the glue adds JavaScript to every bundle. The
//! calls here pass a few byte strings (proofs, tiles, state) each, which
//! a fixed byte layout carries in about a hundred lines of TypeScript
//! (`clients/ts/src/wasm.ts`), loaded with `WebAssembly.instantiate`.
//!
//! The module is single-threaded: its state (the input and output
//! buffers and the trackers) lives in thread-locals, which on
//! `wasm32-unknown-unknown` are plain statics.

mod error;
pub mod ops;
mod wire;

use std::cell::RefCell;

pub use error::CallError;
pub use ops::Module;

thread_local! {
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static MODULE: RefCell<Module> = RefCell::new(Module::default());
}

// The exported symbols. `no_mangle` is an unsafe attribute only because two
// items exporting one name would clash at link time; these four names are
// prefixed `cairn_` and defined once. No code here is unsafe: the host
// writes the input into memory the input buffer owns between calls, and
// reads the output the same way, as it does any exported memory.

/// Makes the input buffer `len` bytes (zeroed) and returns its address,
/// where the host writes the next call's input.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn cairn_input(len: usize) -> *mut u8 {
    INPUT.with_borrow_mut(|input| {
        input.clear();
        input.resize(len, 0);
        input.as_mut_ptr()
    })
}

/// Runs call `op` on tracker `handle` with the input buffer; the output
/// (or the refusal's message) is then in the output buffer. Returns 0, or
/// the refusal's [`CallError::status`].
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn cairn_call(op: u32, handle: u32) -> u32 {
    let result = INPUT.with_borrow(|input| MODULE.with_borrow_mut(|m| m.call(op, handle, input)));
    let (status, bytes) = match result {
        Ok(bytes) => (0, bytes),
        Err(e) => (e.status(), e.to_string().into_bytes()),
    };
    OUTPUT.set(bytes);
    status
}

/// The address of the last call's output.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn cairn_output_ptr() -> *const u8 {
    OUTPUT.with_borrow(|output| output.as_ptr())
}

/// The length of the last call's output.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn cairn_output_len() -> usize {
    OUTPUT.with_borrow(Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exports as a host uses them: write the input where
    /// `cairn_input` says, call, read the output where it says.
    fn host_call(op: u32, handle: u32, input: &[u8]) -> (u32, Vec<u8>) {
        let at = cairn_input(input.len());
        INPUT.with_borrow(|buffer| assert_eq!(buffer.as_ptr(), at.cast_const()));
        INPUT.with_borrow_mut(|buffer| buffer.copy_from_slice(input));
        let status = cairn_call(op, handle);
        let output = OUTPUT.with_borrow(|out| {
            assert_eq!(out.as_ptr(), cairn_output_ptr());
            assert_eq!(out.len(), cairn_output_len());
            out.clone()
        });
        (status, output)
    }

    #[test]
    fn the_exports_carry_a_call_and_its_refusal() {
        let mut tree = vec![2, 1, 0, 0];
        tree.extend([0; 32]);
        let mut input = tree.clone();
        input.extend(5u32.to_le_bytes());
        let (status, handle) = host_call(ops::op::TRACKER_NEW, 0, &input);
        assert_eq!((status, handle.len()), (0, 4));
        let (status, message) = host_call(ops::op::TRACKER_NEW, 0, &tree);
        assert_eq!(status, 1);
        assert_eq!(
            String::from_utf8(message).unwrap(),
            "input ends inside window: want 4 bytes, got 0"
        );
    }
}
