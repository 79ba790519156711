//! A wallet that follows a tile store: loads its state (or starts one for
//! the store's tree), marks leaves, syncs to the store's checkpoint, saves
//! the state, and prints each marked leaf's witness.
//!
//! ```text
//! cargo run -p cairn-wallet --example follow -- STORE [--state FILE]
//!     [--mark INDEX]... [--key VERIFIER_KEY] [--checkpoint BLOCK]
//!     [--rewind BLOCK] [--offline] [--format cairn|zkkit|circom|zkkit-circom]
//! ```
//!
//! STORE is a directory, `file://DIR`, `s3://BUCKET/PREFIX` or an HTTP(S)
//! base URL. With `--key` only checkpoints signed by that key are adopted.
//! `--offline` skips the sync (a rewind, marks and checkpoints need no
//! network); a rewind reports how long the call took.

use std::process::ExitCode;
use std::time::Instant;

use cairn_note::Verifier;
use cairn_tiles::{
    CheckpointSignature, Location, RemoteOptions, SignedBy, Unsigned, open_source, read_checkpoint,
};
use cairn_wallet::{DEFAULT_WINDOW, Tracker, sync};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut store = None;
    let (mut state, mut key, mut format) = (None, None, "cairn".to_owned());
    let (mut marks, mut checkpoint, mut rewind) = (Vec::new(), None, None);
    let mut offline = false;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--state" => state = Some(value()?),
            "--mark" => marks.push(value()?.parse::<u64>()?),
            "--key" => key = Some(Verifier::parse(&value()?)?),
            "--checkpoint" => checkpoint = Some(value()?.parse::<u64>()?),
            "--rewind" => rewind = Some(value()?.parse::<u64>()?),
            "--format" => format = value()?,
            "--offline" => offline = true,
            _ if store.is_none() && !arg.starts_with("--") => store = Some(arg),
            _ => return Err(format!("unexpected argument {arg:?}").into()),
        }
    }
    let store = store.ok_or("usage: follow STORE [--state FILE] [--mark INDEX]...")?;
    let source = open_source(&Location::parse(&store)?, &RemoteOptions::default())?;
    let signature: Box<dyn CheckpointSignature> = match key {
        Some(key) => Box::new(SignedBy::new(vec![key])?),
        None => Box::new(Unsigned),
    };
    let mut tracker = match state.as_deref().map(std::fs::read) {
        Some(Ok(bytes)) => Tracker::from_bytes(&bytes)?,
        Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => Tracker::new(read_checkpoint(source.as_ref())?.tree, DEFAULT_WINDOW)?,
    };
    if let Some(block) = rewind {
        let (from, started) = (tracker.head().size, Instant::now());
        tracker.rewind(block)?;
        let took = started.elapsed();
        eprintln!(
            "rewound to block {block}: {from} -> {} leaves in one call of {} µs, no request",
            tracker.head().size,
            took.as_micros()
        );
    }
    for index in marks {
        tracker.mark(index)?;
    }
    if !offline {
        let report = sync(&mut tracker, source.as_ref(), signature.as_ref())?;
        eprintln!(
            "synced to {} leaves: {} tiles, {} bytes; {} nodes held",
            report.head.size, report.tiles, report.bytes, report.nodes
        );
    }
    if let Some(block) = checkpoint {
        tracker.checkpoint(block)?;
    }
    if let Some(path) = &state {
        // Write whole or not at all: a torn state would be refused on load.
        let tmp = format!("{path}.tmp");
        std::fs::write(&tmp, tracker.to_bytes())?;
        std::fs::rename(&tmp, path)?;
    }
    for index in tracker.marked().filter(|&i| i < tracker.head().size) {
        let proof = tracker.witness(index)?;
        let line = match format.as_str() {
            "cairn" => proof.to_json(),
            "zkkit" => proof.to_zkkit_json()?,
            "circom" => proof.to_circom_json(None)?,
            "zkkit-circom" => proof.to_zkkit_circom_json(None)?,
            other => return Err(format!("unknown format {other:?}").into()),
        };
        println!("{line}");
    }
    Ok(())
}
