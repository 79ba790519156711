//! The top-level parser, its help text, and one-line usage errors.

use std::ffi::OsString;

use clap::CommandFactory as _;
use clap::error::ErrorKind;

use crate::commands::Command;

const ABOUT: &str = "Build n-ary Lean Incremental Merkle Trees (LeanIMT), keep them in durable databases, and prove and verify membership and consistency";

const LONG_ABOUT: &str = "\
Build n-ary Lean Incremental Merkle Trees (LeanIMT), keep them in durable append-only databases, \
and prove and verify membership and consistency.

A tree has an arity N (2 to 16 children per node) and a node hash (blake3, sha256, keccak256,
poseidon or mimcsponge), and is a LeanIMT unless created with --kind imt --depth D: zk-kit's
fixed-depth IMT, padded with zero hashes (Tornado Cash's shape). Leaves are 32-byte values. A leaf file is raw 32-byte leaves back to back
(--format bin, the default) or one 0x-prefixed 64-digit hex leaf per line (--format hex; blank
lines and surrounding whitespace are allowed). A file argument of - or an omitted one means stdin.
Poseidon and mimcsponge leaves must be canonical BN254 field elements.

Two ways to work:
  leaf files: root, prove, consistency take --arity and --hash and build the tree in memory;
  databases:  `cairn init DIR --arity N --hash H` creates one (it stores its arity and hash),
              `cairn ingest DIR FILE` appends durably (refusing duplicates, exit 3), and root,
              stats, prove, consistency, contains, checkpoint, check and export read it;
              verify and verify-consistency take --db DIR for the trusted head.
Commands that only read a database (root, stats, contains, prove, consistency, export, check,
heads, verify --db, backup, signed-checkpoint) open it read-only, also while `cairn serve` or an ingest runs on it,
and see what was durable when they started; commands that write lock it while they run: a
second writer gets a \"locked\" error.
`cairn demo` runs the whole job on a temporary database and prints each step's figures.

The empty tree (0 leaves) has no root: `cairn root` of it prints nothing on stdout, says
\"empty tree: no root\" on stderr and exits 1; with --json it prints \"root\":null and exits 0.
An imt's empty tree has one, its top zero hash, printed as any root.

Proofs are printed as JSON, or with --binary in the compact binary encoding (never to a
terminal). verify and verify-consistency read either; a proof whose first non-blank byte is '{'
is JSON. Every command that reports something takes --json: one line of JSON with the fields its
--help lists (and the README's \"CLI JSON fields\").

Numbers: in text, counts are grouped by thousands with commas (1,048,576 leaves); indices and
sizes, which you may pass back as arguments (--index, --size, --from, --to), are plain digits; in
JSON every number is a plain integer.

Errors are one line on stderr starting with 'error: '; a proof that does not verify is one line
starting with 'invalid: ', a value that is not there one starting with 'absent: '.

Exit status:
  0  success; for verify and verify-consistency, the proof is valid; for contains, present
  1  the proof is invalid or malformed, or a check failed: the root of an empty tree, a value
     absent (contains, prove --leaf), or `cairn check` finding a wrong node or set entry
  2  usage: bad or missing arguments, an --index/--size/--from/--to the tree does not reach,
     init on a non-empty directory, a lookup by value in a database without a nullifier set
  3  duplicate leaves: ingest refused a block holding values the database already has (or
     repeating within the block); earlier blocks stay appended, the error says how many
  4  I/O or corruption: an input file or database is missing, unreadable, locked by another
     writer or corrupt, a write or sync failed, or the input holds what the tree refuses (a
     leaf the hash refuses, more leaves than --max-depth allows)
  5  serve cannot listen on its address: it is in use by another process, not an address of
     this host, or a port that needs privileges

Examples:
  cairn init db --arity 4 --hash blake3
  cairn ingest db leaves.bin
  cairn root db
  cairn prove db --index 4 > proof.json
  cairn verify --db db proof.json
  cairn demo
  cairn completions bash > ~/.local/share/bash-completion/completions/cairn";

/// What `cairn -V` prints after the name: the release and the on-disk
/// format it reads and writes (a test keeps the two in step with
/// `cairn_db::STORE_FORMAT`).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (on-disk format 2)");

/// What `cairn --version` prints after the name: [`VERSION`], then the
/// build (git commit, target, CPU features) on lines of their own, as
/// `/metrics` exports them in `cairn_build_info`.
pub fn long_version() -> &'static str {
    static LINE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let build = cairn_server::BUILD;
        format!(
            "{VERSION}\ncommit: {}\ntarget: {}\nfeatures: {}",
            build.commit, build.target, build.features
        )
    });
    &LINE
}

/// The `cairn` command line.
#[derive(clap::Parser, Debug)]
#[command(name = "cairn", version = VERSION, long_version = long_version(), about = ABOUT, long_about = LONG_ABOUT, arg_required_else_help = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The one line to print for a clap error, or `None` when clap should print
/// its own output (help and version requests, which are not errors).
///
/// Clap renders errors over several lines (the problem, indented details, a
/// usage line, a pointer to `--help`); cairn reports every error on one line,
/// so this keeps the problem, its details and any tip, and names the command
/// whose `--help` to read (found in clap's usage line, or else the first of
/// `args`, the command line without the program name, that is a subcommand).
pub fn usage_error_line(error: &clap::Error, args: &[OsString]) -> Option<String> {
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    // `StyledStr`'s `Display` is plain text, without terminal styling.
    let rendered = error.render().to_string();
    let mut lines = rendered.lines();
    let mut out = lines
        .next()
        .unwrap_or("error: invalid arguments")
        .trim_end()
        .to_owned();
    if !out.starts_with("error:") {
        out.insert_str(0, "error: ");
    }
    let mut details = Vec::new();
    let mut tips = Vec::new();
    let mut command = None;
    let mut in_details = true;
    for line in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            in_details = false;
        } else if let Some(tip) = trimmed.strip_prefix("tip: ") {
            tips.push(tip.to_owned());
        } else if let Some(usage) = trimmed.strip_prefix("Usage: ") {
            // "cairn root --arity <N> ...": the words before the first option.
            let words: Vec<&str> = usage
                .split_whitespace()
                .take_while(|word| !word.starts_with(['-', '[', '<']))
                .collect();
            command = Some(words.join(" "));
        } else if in_details {
            details.push(trimmed.to_owned());
        }
    }
    if !details.is_empty() {
        out.push(' ');
        out.push_str(&details.join(", "));
    }
    for tip in tips {
        out.push_str(&format!(" (tip: {tip})"));
    }
    let command = command
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| command_path(args));
    out.push_str(&format!("; see '{command} --help'"));
    Some(crate::failure::one_line(&out))
}

/// `cairn` and the subcommand `args` name, if any.
fn command_path(args: &[OsString]) -> String {
    let cli = Cli::command();
    let subcommand = args.iter().filter_map(|arg| arg.to_str()).find_map(|arg| {
        cli.find_subcommand(arg)
            .map(|sub| sub.get_name().to_owned())
    });
    match subcommand {
        Some(name) => format!("cairn {name}"),
        None => "cairn".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_names_the_on_disk_format_the_store_writes() {
        let format = format!("(on-disk format {})", cairn_db::STORE_FORMAT);
        assert!(super::VERSION.ends_with(&format), "{}", super::VERSION);
    }
}
