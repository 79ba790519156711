//! A database of several trees as one tile store (docs/spec.md, "Tiles of
//! a database of several trees"): each tree's tiles and checkpoint under
//! `trees/NAME/`, exactly a single-tree store there, and one **forest
//! checkpoint** at the top that commits to every tree's head at one block
//! through a root of roots: the RFC 6962 Merkle tree hash over the trees'
//! entry lines sorted by name. The entry lines themselves are the
//! immutable object `forest/<root>` (named by that root), so a reader that
//! trusts the forest checkpoint checks every entry against it, and a
//! verifier of one tree needs only its entry and an inclusion proof of
//! `log2(trees)` hashes.
//!
//! The decoders read bytes from the network: they never panic, and refuse
//! every text the encoders would not write.

#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeHead, TreeKind};
use cairn_note::{NoteError, Signer, Verifier};
use sha2::Digest as _;

use crate::checkpoint::Checkpoint;
use crate::store::{CHECKPOINT_MAX_BYTES, ObjectError, TileSink, TileSource};

/// The first line of an unsigned forest checkpoint.
pub const FOREST_MAGIC: &str = "cairn forest v1";
/// The word that starts the one extension line of a signed forest
/// checkpoint.
pub const FOREST_EXTENSION: &str = "cairn-forest";
/// The folder of a store under which each tree's store is (`trees/NAME/`).
pub const TREES_PREFIX: &str = "trees";
/// The folder of the entry objects (`forest/<root hex>`).
pub const ENTRIES_PREFIX: &str = "forest";
/// The largest entries object read: 1,000 trees of the longest entry
/// lines fit.
pub const ENTRIES_MAX_BYTES: u64 = 1 << 20;

/// One tree's head as a forest checkpoint commits to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForestEntry {
    /// The tree's name in the database.
    pub name: String,
    /// Its arity, hash and kind (any kind, indexed included).
    pub tree: TreeConfig,
    /// Its head at the checkpoint's block.
    pub head: TreeHead,
}

/// The head of a forest: the block, how many trees, and the root of roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForestHead {
    /// The block every entry is at: its number and hash.
    pub block: u64,
    /// The block's hash.
    pub block_hash: Hash,
    /// How many trees (entries).
    pub trees: u64,
    /// The Merkle tree hash of the entries (sorted by name).
    pub root: Hash,
}

/// Why bytes are not a forest checkpoint, an entry or an entries object,
/// or do not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ForestCheckpointError {
    /// The object is not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// The unsigned form, malformed.
    #[error("line {line}: {got:?}, want {want}")]
    Line {
        /// The line's number (1-based).
        line: usize,
        /// The line.
        got: String,
        /// What it must be.
        want: &'static str,
    },
    /// Neither form.
    #[error(
        "neither an unsigned forest checkpoint (first line {FOREST_MAGIC:?}, got {first:?}) nor a signed one: {error}"
    )]
    Neither {
        /// Its first line (at most 80 characters).
        first: String,
        /// Why it is no signed forest checkpoint.
        error: String,
    },
    /// An entry line that is not one.
    #[error("entry {line}: {got:?}: {why}")]
    Entry {
        /// The line's number in the entries object (1-based).
        line: usize,
        /// The line (at most 200 characters).
        got: String,
        /// What is wrong.
        why: String,
    },
    /// Entries out of order or repeated.
    #[error(
        "entry {line}: {name:?} is not after {previous:?}: entries are sorted by name, each once"
    )]
    Order {
        /// The line's number (1-based).
        line: usize,
        /// Its name.
        name: String,
        /// The name before it.
        previous: String,
    },
    /// The entries do not hash to the checkpoint's root, or are not as
    /// many.
    #[error(
        "{got} entries hashing to {}, the checkpoint names {want} trees and root {}",
        to_hex(got_root),
        to_hex(want_root)
    )]
    Root {
        /// Entries read.
        got: u64,
        /// Their root.
        got_root: Hash,
        /// The checkpoint's tree count.
        want: u64,
        /// The checkpoint's root.
        want_root: Hash,
    },
    /// An inclusion proof that does not lead to the root.
    #[error(
        "the entry of {name:?} with its inclusion proof (index {index} of {trees}) does not hash to the root {}",
        to_hex(root)
    )]
    Inclusion {
        /// The tree.
        name: String,
        /// Its index.
        index: u64,
        /// Trees in the forest.
        trees: u64,
        /// The forest's root.
        root: Hash,
    },
    /// No tree of that name.
    #[error("the forest checkpoint names no tree {name:?} (it names {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names it has.
        known: String,
    },
    /// A forest of no tree has no checkpoint.
    #[error("a forest checkpoint names at least one tree")]
    Empty,
    /// The signature does not verify with the trusted keys.
    #[error("signature: {0}")]
    Signature(String),
    /// Signing refused the text.
    #[error("signing: {0}")]
    Sign(NoteError),
}

type Error = ForestCheckpointError;

/// The name of a tree in a forest store: `/`-separated parts, each of
/// `a-z 0-9 . _ -`, none empty, `.` or `..` (so `trees/NAME/` never leaves
/// the store's `trees/`).
pub fn check_tree_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 255 {
        return Err("a tree name has 1 to 255 characters".into());
    }
    for part in name.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(format!("the part {part:?} is empty, . or .."));
        }
        if let Some(c) = part
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(*c)))
        {
            return Err(format!("the character {c:?} is not a-z, 0-9, ., _ or -"));
        }
    }
    Ok(())
}

/// The folder of tree `name` in a forest store: `trees/NAME`.
pub fn tree_prefix(name: &str) -> String {
    format!("{TREES_PREFIX}/{name}")
}

/// The path of the entries object of the forest whose root is `root`.
pub fn entries_path(root: &Hash) -> String {
    format!("{ENTRIES_PREFIX}/{}", hex_digits(root))
}

fn hex_digits(value: &Hash) -> String {
    to_hex(value).trim_start_matches("0x").to_owned()
}

fn sha256(parts: &[&[u8]]) -> Hash {
    let mut hasher = sha2::Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// RFC 6962's node hash: `SHA-256(0x01 || left || right)`.
fn node(left: &Hash, right: &Hash) -> Hash {
    sha256(&[&[1], left, right])
}

impl ForestEntry {
    /// The entry line, ending in `\n`: `NAME kind=K arity=N hash=H
    /// [depth=D zero=Z] size=S root=R`.
    pub fn encode(&self) -> String {
        let mut out = format!(
            "{} kind={} arity={} hash={}",
            self.name,
            self.tree.kind.name(),
            self.tree.arity,
            self.tree.hash.name()
        );
        if let TreeKind::Fixed { depth, zero } = self.tree.kind {
            out.push_str(&format!(" depth={depth} zero={}", to_hex(&zero)));
        }
        let root = self
            .head
            .root
            .map_or_else(|| "none".to_owned(), |r| to_hex(&r));
        out.push_str(&format!(" size={} root={root}\n", self.head.size));
        out
    }

    /// The Merkle leaf of the entry: `SHA-256(0x00 || line)`.
    pub fn leaf_hash(&self) -> Hash {
        sha256(&[&[0], self.encode().as_bytes()])
    }

    /// Parses one entry line (without its `\n`), refusing any text
    /// [`ForestEntry::encode`] would not write.
    pub fn decode_line(line: &str) -> Result<ForestEntry, String> {
        let mut words = line.split(' ');
        let name = words.next().unwrap_or_default();
        check_tree_name(name).map_err(|e| format!("name: {e}"))?;
        let mut field = |want: &'static str| -> Result<&str, String> {
            words
                .next()
                .and_then(|w| w.strip_prefix(want))
                .and_then(|w| w.strip_prefix('='))
                .ok_or_else(|| format!("want {want}=..."))
        };
        let kind = field("kind")?;
        let arity_text = field("arity")?;
        let hash_text = field("hash")?;
        let arity = number(arity_text)
            .and_then(|n| Arity::new(n).ok())
            .ok_or_else(|| format!("arity {arity_text:?} is not 2..=16"))?;
        let hash: HashKind = hash_text
            .parse()
            .map_err(|_| format!("unknown hash {hash_text:?}"))?;
        let kind = match kind {
            "lean" => TreeKind::Lean,
            "imt" => {
                let depth_text = field("depth")?;
                let depth = number(depth_text)
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or_else(|| format!("depth {depth_text:?} is not a decimal number"))?;
                let zero = hex(field("zero")?).ok_or("zero is not 0x and 64 lowercase digits")?;
                TreeKind::Fixed { depth, zero }
            }
            "indexed" => TreeKind::Indexed,
            other => return Err(format!("kind {other:?} is not lean, imt or indexed")),
        };
        kind.check(hash).map_err(|e| e.to_string())?;
        let size_text = field("size")?;
        let size = number(size_text)
            .ok_or_else(|| format!("size {size_text:?} is not a decimal number"))?;
        let root = match field("root")? {
            "none" => None,
            text => Some(hex(text).ok_or("root is not 0x and 64 lowercase digits, nor none")?),
        };
        if words.next().is_some() {
            return Err("more words than an entry has".into());
        }
        let tree = TreeConfig::new(arity, hash).with_kind(kind);
        let entry = ForestEntry {
            name: name.to_owned(),
            tree,
            head: TreeHead { size, root },
        };
        if let Some(root) = root
            && !hash.accepts(&root)
        {
            return Err(format!(
                "root {} is not canonical for {hash}",
                to_hex(&root)
            ));
        }
        if kind.is_append_only() {
            // The checkpoint's own checks: a root exactly where the tree
            // has one, a size within a fixed depth.
            Checkpoint::decode(
                Checkpoint {
                    tree,
                    head: entry.head,
                }
                .encode()
                .as_bytes(),
            )
            .map_err(|e| e.to_string())?;
        } else if root.is_none() {
            return Err("an indexed tree always has a root".into());
        }
        Ok(entry)
    }

    /// The tree's own checkpoint (an append-only tree's), to read its tiles
    /// at this head.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        self.tree.kind.is_append_only().then_some(Checkpoint {
            tree: Checkpoint::tree_of(&self.tree),
            head: self.head,
        })
    }
}

/// Every tree's entry, sorted by name: what a forest checkpoint commits to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForestEntries {
    entries: Vec<ForestEntry>,
}

impl ForestEntries {
    /// The entries of `entries` (in any order; names must differ).
    pub fn new(mut entries: Vec<ForestEntry>) -> Result<ForestEntries, Error> {
        if entries.is_empty() {
            return Err(Error::Empty);
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for (line, pair) in entries.windows(2).enumerate() {
            if let [a, b] = pair
                && a.name == b.name
            {
                return Err(Error::Order {
                    line: line + 2,
                    name: b.name.clone(),
                    previous: a.name.clone(),
                });
            }
        }
        Ok(ForestEntries { entries })
    }

    /// The entries, sorted by name.
    pub fn entries(&self) -> &[ForestEntry] {
        &self.entries
    }

    /// The entry of tree `name`.
    pub fn get(&self, name: &str) -> Result<&ForestEntry, Error> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::Unknown {
                name: name.to_owned(),
                known: self.names(),
            })
    }

    fn names(&self) -> String {
        self.entries
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The entries object: every entry line, in order.
    pub fn encode(&self) -> String {
        self.entries.iter().map(ForestEntry::encode).collect()
    }

    /// Parses an entries object, refusing anything [`ForestEntries::encode`]
    /// would not write (order included).
    pub fn decode(bytes: &[u8]) -> Result<ForestEntries, Error> {
        let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8)?;
        let Some(body) = text.strip_suffix('\n') else {
            return Err(Error::Entry {
                line: text.split('\n').count(),
                got: String::new(),
                why: "the object does not end in a newline".into(),
            });
        };
        let mut entries: Vec<ForestEntry> = Vec::new();
        for (index, line) in body.split('\n').enumerate() {
            let entry = ForestEntry::decode_line(line).map_err(|why| Error::Entry {
                line: index + 1,
                got: line.chars().take(200).collect(),
                why,
            })?;
            if let Some(previous) = entries.last()
                && previous.name >= entry.name
            {
                return Err(Error::Order {
                    line: index + 1,
                    name: entry.name,
                    previous: previous.name.clone(),
                });
            }
            entries.push(entry);
        }
        Ok(ForestEntries { entries })
    }

    fn leaves(&self) -> Vec<Hash> {
        self.entries.iter().map(ForestEntry::leaf_hash).collect()
    }

    /// The root of roots: RFC 6962's Merkle tree hash of the entries'
    /// leaves.
    pub fn root(&self) -> Hash {
        merkle_root(&self.leaves())
    }

    /// Tree `name`'s index and inclusion proof (RFC 6962's audit path).
    pub fn prove(&self, name: &str) -> Result<(u64, Vec<Hash>), Error> {
        let index = self
            .entries
            .iter()
            .position(|e| e.name == name)
            .ok_or_else(|| Error::Unknown {
                name: name.to_owned(),
                known: self.names(),
            })?;
        Ok((index as u64, audit_path(index, &self.leaves())))
    }

    /// Checks that these entries are the ones `head` commits to.
    pub fn check(&self, head: &ForestHead) -> Result<(), Error> {
        let root = self.root();
        if self.entries.len() as u64 != head.trees || root != head.root {
            return Err(Error::Root {
                got: self.entries.len() as u64,
                got_root: root,
                want: head.trees,
                want_root: head.root,
            });
        }
        Ok(())
    }
}

/// RFC 6962 `MTH` of at least one leaf hash.
fn merkle_root(leaves: &[Hash]) -> Hash {
    match leaves {
        [] => sha256(&[]),
        [one] => *one,
        _ => {
            let k = split(leaves.len());
            let (left, right) = leaves.split_at(k);
            node(&merkle_root(left), &merkle_root(right))
        }
    }
}

/// The largest power of two below `n` (`n >= 2`).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// RFC 6962 `PATH(m, D[n])`.
fn audit_path(m: usize, leaves: &[Hash]) -> Vec<Hash> {
    if leaves.len() <= 1 {
        return Vec::new();
    }
    let k = split(leaves.len());
    let (left, right) = leaves.split_at(k);
    if m < k {
        let mut path = audit_path(m, left);
        path.push(merkle_root(right));
        path
    } else {
        let mut path = audit_path(m - k, right);
        path.push(merkle_root(left));
        path
    }
}

/// Checks that `entry` is tree `index` of the `head.trees` trees `head`
/// commits to, by its inclusion proof (RFC 9162 section 2.1.3.2).
pub fn verify_entry(
    head: &ForestHead,
    entry: &ForestEntry,
    index: u64,
    proof: &[Hash],
) -> Result<(), Error> {
    let refused = || Error::Inclusion {
        name: entry.name.clone(),
        index,
        trees: head.trees,
        root: head.root,
    };
    if index >= head.trees {
        return Err(refused());
    }
    let (mut f, mut s) = (index, head.trees - 1);
    let mut r = entry.leaf_hash();
    for p in proof {
        if s == 0 {
            return Err(refused());
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 || r != head.root {
        return Err(refused());
    }
    Ok(())
}

impl ForestHead {
    /// The head of `entries` at block (`number`, `hash`).
    pub fn of(entries: &ForestEntries, block: u64, block_hash: Hash) -> ForestHead {
        ForestHead {
            block,
            block_hash,
            trees: entries.entries.len() as u64,
            root: entries.root(),
        }
    }

    /// The signed checkpoint's extension line: `cairn-forest block=N
    /// hash=0x..`.
    fn extension(&self) -> String {
        format!(
            "{FOREST_EXTENSION} block={} hash={}",
            self.block,
            to_hex(&self.block_hash)
        )
    }

    /// The unsigned form: four lines.
    pub fn encode(&self) -> String {
        format!(
            "{FOREST_MAGIC}\nblock {} {}\ntrees {}\nroot {}\n",
            self.block,
            to_hex(&self.block_hash),
            self.trees,
            to_hex(&self.root)
        )
    }

    /// The signed form: a C2SP checkpoint whose origin is the signer's
    /// name, size the number of trees, root the root of roots, and one
    /// extension line naming the block.
    pub fn encode_signed(&self, signer: &Signer) -> Result<String, Error> {
        cairn_note::Checkpoint {
            origin: signer.name().to_owned(),
            size: self.trees,
            root: self.root,
            extensions: vec![self.extension()],
        }
        .sign(signer)
        .map_err(Error::Sign)
    }

    /// Parses either form, WITHOUT checking a signature.
    pub fn decode(bytes: &[u8]) -> Result<ForestHead, Error> {
        let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8)?;
        if text.split('\n').next() != Some(FOREST_MAGIC) {
            let note = cairn_note::note::read_unverified(text).map_err(|e| neither(text, &e))?;
            return from_note_text(&note.text).map_err(|e| neither(text, &e));
        }
        let lines: Vec<&str> = text.split('\n').collect();
        if lines.len() != 5 || lines.last() != Some(&"") {
            return Err(Error::Line {
                line: lines.len(),
                got: String::new(),
                want: "4 lines, each ending in a newline",
            });
        }
        let line = |n: usize, field: &'static str, want: &'static str| {
            let got = lines.get(n).copied().unwrap_or_default();
            got.strip_prefix(field)
                .and_then(|rest| rest.strip_prefix(' '))
                .ok_or(Error::Line {
                    line: n + 1,
                    got: got.to_owned(),
                    want,
                })
        };
        let bad = |n: usize, want: &'static str| Error::Line {
            line: n + 1,
            got: lines.get(n).copied().unwrap_or_default().to_owned(),
            want,
        };
        const BLOCK: &str = "block N 0x<64 lowercase hex>";
        let (block_text, hash) = line(1, "block", BLOCK)?
            .split_once(' ')
            .ok_or_else(|| bad(1, BLOCK))?;
        let block = number(block_text);
        let block_hash = hex(hash);
        let (Some(block), Some(block_hash)) = (block, block_hash) else {
            return Err(bad(1, BLOCK));
        };
        const TREES: &str = "trees T (a decimal number above 0)";
        let trees_text = line(2, "trees", TREES)?;
        let trees = number(trees_text)
            .filter(|&t| t > 0)
            .ok_or_else(|| bad(2, TREES))?;
        const ROOT: &str = "root 0x<64 lowercase hex>";
        let root = hex(line(3, "root", ROOT)?).ok_or_else(|| bad(3, ROOT))?;
        Ok(ForestHead {
            block,
            block_hash,
            trees,
            root,
        })
    }
}

fn neither(text: &str, error: &dyn std::fmt::Display) -> Error {
    Error::Neither {
        first: text
            .split('\n')
            .next()
            .unwrap_or_default()
            .chars()
            .take(80)
            .collect(),
        error: error.to_string(),
    }
}

/// The forest head a signed checkpoint's text names.
fn from_note_text(text: &str) -> Result<ForestHead, String> {
    let checkpoint = cairn_note::Checkpoint::parse(text).map_err(|e| e.to_string())?;
    let [extension] = checkpoint.extensions.as_slice() else {
        return Err(format!(
            "{} extension lines, want one {FOREST_EXTENSION:?} line",
            checkpoint.extensions.len()
        ));
    };
    let fields = extension
        .strip_prefix(FOREST_EXTENSION)
        .and_then(|rest| rest.strip_prefix(" block="))
        .and_then(|rest| rest.split_once(" hash="))
        .ok_or_else(|| {
            format!("extension line {extension:?}, want \"{FOREST_EXTENSION} block=N hash=0x..\"")
        })?;
    let (block_text, hash) = fields;
    let block = number(block_text)
        .ok_or_else(|| format!("block {block_text:?} is not a decimal number"))?;
    let block_hash = hex(hash)
        .ok_or_else(|| format!("block hash {hash:?} is not 0x and 64 lowercase digits"))?;
    if checkpoint.size == 0 {
        return Err("a forest checkpoint names at least one tree".into());
    }
    Ok(ForestHead {
        block,
        block_hash,
        trees: checkpoint.size,
        root: checkpoint.root,
    })
}

/// Checks a forest checkpoint object against trusted keys: it must be the
/// signed form, signed by one of `keys` whose name is its origin. Returns
/// the head.
pub fn verify_signed(bytes: &[u8], keys: &[Verifier]) -> Result<ForestHead, Error> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8)?;
    if text.split('\n').next() == Some(FOREST_MAGIC) {
        return Err(Error::Signature(
            "the forest checkpoint is unsigned, want one signed by a trusted key".into(),
        ));
    }
    let note = cairn_note::note::open(text, keys).map_err(|e| Error::Signature(e.to_string()))?;
    let head = from_note_text(&note.text).map_err(Error::Signature)?;
    let origin = cairn_note::Checkpoint::parse(&note.text)
        .map_err(|e| Error::Signature(e.to_string()))?
        .origin;
    let signed_by_origin = note
        .verified
        .iter()
        .any(|s| s.name == origin && keys.iter().any(|k| k.name() == s.name && k.id() == s.id));
    if !signed_by_origin {
        return Err(Error::Signature(format!(
            "the origin is {origin:?}, but it is signed by {}: want the origin to be the name of a key that signed it",
            note.verified
                .iter()
                .map(|s| s.key())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(head)
}

/// What a reader of a forest store got: the checkpoint object's bytes, its
/// head (checked against keys when given), and the entries it commits to.
#[derive(Clone, Debug)]
pub struct ForestRead {
    /// The checkpoint object.
    pub object: Vec<u8>,
    /// Its head.
    pub head: ForestHead,
    /// The entries, checked against the head.
    pub entries: ForestEntries,
}

/// Why a forest store could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForestReadError {
    /// An object could not be fetched.
    #[error(transparent)]
    Fetch(#[from] ObjectError),
    /// An object is refused (named `store/path`).
    #[error("refused {object}: {error}")]
    Refused {
        /// `store/path`.
        object: String,
        /// Why.
        error: ForestCheckpointError,
    },
}

/// Reads the forest checkpoint of `source` (checked against `keys` when
/// some are given) and the entries it commits to.
pub fn read_forest(
    source: &dyn TileSource,
    keys: Option<&[Verifier]>,
) -> Result<ForestRead, ForestReadError> {
    let refused = |path: &str, error| ForestReadError::Refused {
        object: format!("{}/{path}", source.location()),
        error,
    };
    let object = source.get(crate::CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    let head = match keys {
        Some(keys) => verify_signed(&object, keys),
        None => ForestHead::decode(&object),
    }
    .map_err(|e| refused(crate::CHECKPOINT, e))?;
    let path = entries_path(&head.root);
    let bytes = source.get(&path, ENTRIES_MAX_BYTES)?;
    let entries = ForestEntries::decode(&bytes).map_err(|e| refused(&path, e))?;
    entries.check(&head).map_err(|e| refused(&path, e))?;
    Ok(ForestRead {
        object,
        head,
        entries,
    })
}

/// Whether a checkpoint object is a forest checkpoint (either form), as
/// opposed to a single tree's.
pub fn is_forest_checkpoint(bytes: &[u8]) -> bool {
    ForestHead::decode(bytes).is_ok()
        || std::str::from_utf8(bytes).is_ok_and(|t| t.starts_with(FOREST_MAGIC))
        || std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| cairn_note::note::read_unverified(t).ok())
            .is_some_and(|n| {
                n.text
                    .split('\n')
                    .any(|l| l.starts_with(&format!("{FOREST_EXTENSION} ")))
            })
}

/// Writes the forest checkpoint: the entries object first (durable), then
/// the checkpoint, signed with `signer` if given. Every tree's tiles must
/// be durable before.
pub fn write_forest(
    sink: &dyn TileSink,
    entries: &ForestEntries,
    head: &ForestHead,
    signer: Option<&Signer>,
) -> Result<u64, WriteForestError> {
    let text = entries.encode();
    sink.put(&entries_path(&head.root), text.as_bytes())?;
    sink.sync()?;
    let checkpoint = match signer {
        Some(signer) => head.encode_signed(signer).map_err(WriteForestError::Sign)?,
        None => head.encode(),
    };
    sink.put(crate::CHECKPOINT, checkpoint.as_bytes())?;
    sink.sync()?;
    Ok((text.len() + checkpoint.len()) as u64)
}

/// Why the forest checkpoint could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteForestError {
    /// A write failed (the old checkpoint stands).
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// The signer refused.
    #[error("{0}")]
    Sign(ForestCheckpointError),
}

/// A store seen under a folder: object `P` of it is object `PREFIX/P` of
/// the inner store (a tree's store inside a forest store).
#[derive(Debug, Clone)]
pub struct Prefixed<S> {
    inner: S,
    prefix: String,
}

impl<S> Prefixed<S> {
    /// `inner` under `prefix` (no leading or trailing `/`).
    pub fn new(inner: S, prefix: impl Into<String>) -> Prefixed<S> {
        Prefixed {
            inner,
            prefix: prefix.into(),
        }
    }

    fn path(&self, path: &str) -> String {
        format!("{}/{path}", self.prefix)
    }
}

impl<S: TileSource> TileSource for Prefixed<S> {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        self.inner.get(&self.path(path), max_bytes)
    }
    fn location(&self) -> String {
        format!("{}/{}", self.inner.location(), self.prefix)
    }
    fn get_many(&self, paths: &[String], max_bytes: u64) -> Vec<Result<Vec<u8>, ObjectError>> {
        let paths: Vec<String> = paths.iter().map(|p| self.path(p)).collect();
        self.inner.get_many(&paths, max_bytes)
    }
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        self.inner.get_range(&self.path(path), offset, len, whole)
    }
}

impl<S: TileSink> TileSink for Prefixed<S> {
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        self.inner.put(&self.path(path), bytes)
    }
    fn put_many(&self, objects: &[(String, Vec<u8>)]) -> Result<(), ObjectError> {
        let objects: Vec<(String, Vec<u8>)> = objects
            .iter()
            .map(|(p, b)| (self.path(p), b.clone()))
            .collect();
        self.inner.put_many(&objects)
    }
    fn sync(&self) -> Result<(), ObjectError> {
        self.inner.sync()
    }
}

/// A decimal number in its one spelling.
fn number(text: &str) -> Option<u64> {
    text.parse::<u64>().ok().filter(|n| n.to_string() == text)
}

/// A 32-byte value in its one spelling: 0x and lowercase digits.
fn hex(text: &str) -> Option<Hash> {
    parse_hash(text).ok().filter(|value| to_hex(value) == text)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
mod tests;
