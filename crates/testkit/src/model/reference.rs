//! The reference: what the implementation under test must hold, written
//! naively. A list of *lines* of history (the values and block tags as
//! they were appended, and a new line for every rollback), each with the
//! trace boundaries of the file system at which its content was appended
//! and acknowledged, so that a power loss at any boundary can be judged;
//! the finalized size with what was asked and acknowledged of it; and the
//! roots, from the naive transcriptions of the spec in this crate.
//!
//! Sizes are the tree's everywhere: an indexed tree counts its guard leaf
//! 0, so line `values[i]` is leaf `i + 1` there (`Setup::offset`).

use std::collections::{BTreeMap, VecDeque};

use cairn_core::{Hash, TreeHead, TreeKind};

use super::{Kind, Setup};
use crate::{indexed, reference};

/// Roots rolled back, kept for the root-lookup checks.
const KEEP_GONE: usize = 32;

/// A block tag as the reference keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag {
    pub(crate) block: u64,
    pub(crate) hash: Option<Hash>,
    /// The tree size at the end of the tagged append.
    pub(crate) size: u64,
}

/// `(boundary, size, tags)` entries, increasing: what held from a boundary on.
pub(crate) type Marks = Vec<(usize, u64, usize)>;

/// What `list` says at boundary `k`.
pub(crate) fn at_boundary(list: &[(usize, u64, usize)], k: usize) -> (u64, usize) {
    let i = list.partition_point(|&(at, _, _)| at <= k);
    i.checked_sub(1).map_or((0, 0), |i| (list[i].1, list[i].2))
}

/// The values and tags of one line of history, and what is known of them
/// at each trace boundary.
#[derive(Clone, Debug)]
pub(crate) struct Line {
    pub(crate) values: Vec<Hash>,
    pub(crate) tags: Vec<Tag>,
    /// Appended by a boundary.
    pub(crate) grown: Marks,
    /// Acknowledged from a boundary on.
    pub(crate) acks: Marks,
    /// The first and last boundary of the operation that made this line.
    pub(crate) born: (usize, usize),
    /// Reference roots by size.
    roots: BTreeMap<u64, Option<Hash>>,
}

impl Line {
    fn new(values: Vec<Hash>, tags: Vec<Tag>, at: usize, size: u64) -> Line {
        let count = tags.len();
        Line {
            values,
            tags,
            grown: vec![(at, size, count)],
            acks: vec![(at, size, count)],
            born: (at, at),
            roots: BTreeMap::new(),
        }
    }

    pub(crate) fn grow(&mut self, at: usize, size: u64) {
        let entry = (at, size, self.tags.len());
        match self.grown.last_mut() {
            Some(last) if last.0 == at => *last = entry,
            _ => self.grown.push(entry),
        }
    }

    pub(crate) fn acknowledge(&mut self, at: usize, size: u64, tags: usize) {
        let (s, t) = self.acks.last().map_or((0, 0), |&(_, s, t)| (s, t));
        if size > s || tags > t {
            self.acks.push((at, size.max(s), tags.max(t)));
        }
    }

    /// The last tag at or below `block`.
    pub(crate) fn tagged(&self, block: u64) -> Option<Tag> {
        let at = self.tags.partition_point(|t| t.block <= block);
        at.checked_sub(1).map(|i| self.tags[i])
    }

    /// The first block whose tag ends at `size` (what a root lookup names).
    pub(crate) fn first_block_at(&self, size: u64) -> Option<u64> {
        self.tags.iter().find(|t| t.size == size).map(|t| t.block)
    }
}

/// The reference state of one run.
pub(crate) struct Reference {
    pub(crate) setup: Setup,
    pub(crate) lines: Vec<Line>,
    pub(crate) finalized: u64,
    /// `(boundary, finalized, 0)`: acknowledged finalized sizes.
    pub(crate) fin_acks: Marks,
    /// `(boundary, finalized, 0)`: the largest finalized size asked for
    /// by an operation started by then.
    pub(crate) fin_asked: Marks,
    /// Ends of the recent appends, as the store's root window keeps them.
    pub(crate) recent: VecDeque<u64>,
    /// Roots rolled back (they come back only as the root of the same
    /// leaves again).
    pub(crate) gone: Vec<Hash>,
    /// The values the last rollback removed (absent again).
    pub(crate) removed: Vec<Hash>,
}

impl Reference {
    pub(crate) fn new(setup: Setup, at: usize) -> Reference {
        let offset = setup.offset();
        let mut reference = Reference {
            setup,
            lines: vec![Line::new(Vec::new(), Vec::new(), at, offset)],
            finalized: offset,
            fin_acks: vec![(at, offset, 0)],
            fin_asked: vec![(at, offset, 0)],
            recent: VecDeque::new(),
            gone: Vec::new(),
            removed: Vec::new(),
        };
        reference.note_append(offset);
        reference
    }

    pub(crate) fn cur(&self) -> &Line {
        self.lines.last().expect("a line")
    }

    pub(crate) fn line(&mut self) -> &mut Line {
        self.lines.last_mut().expect("a line")
    }

    /// The tree size.
    pub(crate) fn size(&self) -> u64 {
        self.setup.offset() + self.cur().values.len() as u64
    }

    /// The reference root of the first `size` leaves of line `line`.
    pub(crate) fn root_of(&mut self, line: usize, size: u64) -> Option<Hash> {
        let setup = self.setup;
        let l = &mut self.lines[line];
        *l.roots
            .entry(size)
            .or_insert_with(|| setup.root(&l.values[..(size - setup.offset()) as usize]))
    }

    pub(crate) fn root(&mut self, size: u64) -> Option<Hash> {
        self.root_of(self.lines.len() - 1, size)
    }

    pub(crate) fn head(&mut self, size: u64) -> TreeHead {
        TreeHead {
            size,
            root: self.root(size),
        }
    }

    /// The value at tree index `index`.
    pub(crate) fn value(&self, index: u64) -> Hash {
        self.cur().values[(index - self.setup.offset()) as usize]
    }

    pub(crate) fn note_append(&mut self, size: u64) {
        let window = self.setup.root_window;
        if window == 0 || self.recent.back() == Some(&size) {
            return;
        }
        if self.recent.len() == window {
            self.recent.pop_front();
        }
        self.recent.push_back(size);
    }

    /// Appends `values` (tagged with `tag` if given) at boundary `at`.
    pub(crate) fn append(&mut self, values: &[Hash], tag: Option<(u64, Option<Hash>)>, at: usize) {
        let line = self.line();
        line.values.extend_from_slice(values);
        let size = self.size();
        let line = self.line();
        if let Some((block, hash)) = tag {
            line.tags.push(Tag { block, hash, size });
        }
        line.grow(at, size);
        self.note_append(size);
    }

    /// Everything appended is acknowledged at `at` (a flush, a checkpoint...).
    pub(crate) fn acknowledge_all(&mut self, at: usize) {
        let size = self.size();
        let line = self.line();
        let tags = line.tags.len();
        line.acknowledge(at, size, tags);
    }

    pub(crate) fn acknowledge_finalized(&mut self, at: usize, finalized: u64) {
        self.finalized = finalized;
        if self.fin_acks.last().is_none_or(|&(_, f, _)| finalized > f) {
            self.fin_acks.push((at, finalized, 0));
        }
    }

    pub(crate) fn ask_finalized(&mut self, at: usize, finalized: u64) {
        if self.fin_asked.last().is_none_or(|&(_, f, _)| finalized > f) {
            self.fin_asked.push((at, finalized, 0));
        }
    }

    /// A rollback to `to` (with `max_block`: tags of later blocks go too)
    /// that ran over boundaries `start..end`; the index of the first tag
    /// it removed, or `None` if it changed nothing.
    pub(crate) fn roll_back(
        &mut self,
        to: u64,
        max_block: Option<u64>,
        start: usize,
        end: usize,
    ) -> Option<usize> {
        let offset = self.setup.offset();
        let size = self.size();
        let old = self.lines.len() - 1;
        let kept = self.lines[old]
            .tags
            .partition_point(|t| t.size <= to && max_block.is_none_or(|b| t.block <= b));
        if to == size && kept == self.lines[old].tags.len() {
            return None;
        }
        let mut gone: Vec<Hash> = Vec::new();
        for i in kept..self.lines[old].tags.len() {
            let tag_size = self.lines[old].tags[i].size;
            gone.extend(self.root_of(old, tag_size));
        }
        gone.extend(self.root_of(old, size));
        let l = &self.lines[old];
        let cut = (to - offset) as usize;
        let removed = l.values[cut..].to_vec();
        let mut line = Line {
            values: l.values[..cut].to_vec(),
            tags: l.tags[..kept].to_vec(),
            grown: vec![(start, to, kept)],
            acks: l
                .acks
                .iter()
                .map(|&(at, s, tags)| (at, s.min(to), tags.min(kept)))
                .collect(),
            born: (start, end),
            roots: l.roots.range(..=to).map(|(&s, &r)| (s, r)).collect(),
        };
        line.grow(end, to);
        self.lines.push(line);
        if !removed.is_empty() {
            self.removed = removed;
        }
        for root in gone {
            if !self.gone.contains(&root) {
                self.gone.push(root);
            }
        }
        if self.gone.len() > KEEP_GONE {
            let excess = self.gone.len() - KEEP_GONE;
            self.gone.drain(..excess);
        }
        while self.recent.back().is_some_and(|&s| s > to) {
            self.recent.pop_back();
        }
        // The new head joins the window, as an append's does.
        self.note_append(to);
        Some(kept)
    }

    /// Forgets every line: reopened at boundary `at` as line `line` cut
    /// to `size` leaves and `tags` tags, with `finalized` final.
    pub(crate) fn restart(
        &mut self,
        line: usize,
        size: u64,
        tags: usize,
        finalized: u64,
        at: usize,
    ) {
        let offset = self.setup.offset();
        let l = &mut self.lines[line];
        let mut roots = std::mem::take(&mut l.roots);
        roots.retain(|&s, _| s <= size);
        let mut fresh = Line::new(
            l.values[..(size - offset) as usize].to_vec(),
            l.tags[..tags].to_vec(),
            at,
            size,
        );
        fresh.roots = roots;
        self.lines = vec![fresh];
        self.finalized = finalized;
        self.fin_acks = vec![(at, finalized, 0)];
        self.fin_asked = vec![(at, finalized, 0)];
        self.recent.clear();
        self.note_append(size);
        // What a rollback removed may be back (opened before it).
        self.removed.clear();
    }
}

impl Setup {
    /// The naive root of the tree of `values`.
    pub(crate) fn root(&self, values: &[Hash]) -> Option<Hash> {
        let arity = self.arity();
        match (self.kind, self.tree().kind) {
            (Kind::Fixed, TreeKind::Fixed { depth, zero }) => {
                Some(reference::fixed_root(arity, self.hash, depth, zero, values))
            }
            (Kind::Indexed, _) => Some(indexed::root(arity, self.hash, values)),
            _ => reference::root(arity, self.hash, values),
        }
    }
}
