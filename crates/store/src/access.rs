//! What an open may do to the directory: the one fact the log's recovery
//! and the store's open share (kept apart so neither imports the other).

/// What an open may do to the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// A writer: holds the directory lock, repairs what recovery finds.
    Write,
    /// A read-only open: changes nothing; `writer_live` when a writer held
    /// the directory as it began (files may grow while it reads).
    ReadOnly { writer_live: bool },
}

impl Access {
    pub(crate) fn is_read_only(self) -> bool {
        matches!(self, Access::ReadOnly { .. })
    }

    /// Whether recovery judges what it finds past the log's end: not
    /// beside a live writer, whose commits may race the scan.
    pub(crate) fn judges_tail(self) -> bool {
        !matches!(self, Access::ReadOnly { writer_live: true })
    }
}
