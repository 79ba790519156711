//! The ingest progress bar: on stderr, only when stderr is a terminal and
//! the input is large, so that pipes, logs and tests never see it. After
//! the input is read it turns into a spinner naming the phase that follows
//! (appends only copy leaves: the tree is hashed when it is committed, which
//! for a million Poseidon leaves takes seconds).

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs smaller than this (1M binary leaves) finish too fast for a bar.
pub const LARGE_INPUT_BYTES: u64 = 32 << 20;

/// Leaves whose hashing gets a phase spinner even when the input was too
/// small for a bar (Poseidon hashes about 150,000 leaves a second).
pub const PHASE_LEAVES: u64 = 1 << 17;

/// A progress bar, or nothing.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The input's length when known (a file); stdin gets a spinner once
    /// this much has been read.
    total: Option<u64>,
    shown: bool,
    /// Whether stderr is a terminal (whether anything may be drawn).
    wanted: bool,
    /// Where bars draw: stderr, or nowhere in tests.
    target: fn() -> ProgressDrawTarget,
}

impl Progress {
    /// Progress over an input of `total` bytes (`None`: unknown, stdin).
    pub fn new(total: Option<u64>) -> Progress {
        Progress::with(
            total,
            std::io::stderr().is_terminal(),
            ProgressDrawTarget::stderr,
        )
    }

    fn with(total: Option<u64>, wanted: bool, target: fn() -> ProgressDrawTarget) -> Progress {
        Progress {
            bar: None,
            total,
            shown: !wanted,
            wanted,
            target,
        }
        .start_if(wanted && total.is_some_and(|t| t >= LARGE_INPUT_BYTES))
    }

    fn start_if(mut self, start: bool) -> Progress {
        if !start {
            return self;
        }
        let (bar, template) = match self.total {
            Some(total) => (
                ProgressBar::with_draw_target(Some(total), (self.target)()),
                "{elapsed_precise} [{wide_bar}] {binary_bytes}/{binary_total_bytes} \
                 {binary_bytes_per_sec}, ETA {eta} {msg}",
            ),
            None => (
                ProgressBar::with_draw_target(None, (self.target)()),
                "{spinner} {elapsed_precise} {binary_bytes} read, {binary_bytes_per_sec} {msg}",
            ),
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
        self.shown = true;
        self
    }

    /// `bytes` of the input consumed and `leaves` appended so far.
    pub fn update(&mut self, bytes: u64, leaves: u64) {
        if !self.shown && bytes >= LARGE_INPUT_BYTES {
            let progress = std::mem::replace(self, Progress::none(self.target));
            *self = progress.start_if(true);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(bytes);
            bar.set_message(format!("{} leaves", crate::units::group(leaves)));
        }
    }

    fn none(target: fn() -> ProgressDrawTarget) -> Progress {
        Progress {
            bar: None,
            total: None,
            shown: true,
            wanted: true,
            target,
        }
    }

    /// The input is read: what runs now is `message` (a spinner with the
    /// time elapsed), drawn if a bar was, or if `leaves` are many enough to
    /// take a while, and stderr is a terminal.
    pub fn phase(&mut self, message: String, leaves: u64) {
        if self.bar.is_none() && self.wanted && leaves >= PHASE_LEAVES {
            let bar = ProgressBar::with_draw_target(None, (self.target)());
            bar.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}") {
                bar.set_style(style);
            }
            bar.set_message(message);
        }
    }

    /// Removes the bar (before the command prints its report).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(progress: &Progress) -> Option<String> {
        progress.bar.as_ref().map(|bar| bar.message())
    }

    #[test]
    fn a_bar_becomes_a_phase_spinner_once_the_input_is_read() {
        let mut progress =
            Progress::with(Some(LARGE_INPUT_BYTES), true, ProgressDrawTarget::hidden);
        progress.update(LARGE_INPUT_BYTES, 1 << 20);
        assert_eq!(message(&progress).as_deref(), Some("1,048,576 leaves"));
        progress.phase("hashing".into(), 1);
        assert_eq!(message(&progress).as_deref(), Some("hashing"));
        progress.finish();
        assert!(progress.bar.is_none());
    }

    #[test]
    fn a_phase_is_shown_for_many_leaves_on_a_terminal_only() {
        let mut small = Progress::with(Some(1024), true, ProgressDrawTarget::hidden);
        small.phase("hashing".into(), PHASE_LEAVES - 1);
        assert_eq!(message(&small), None, "too few leaves to wait for");
        small.phase("hashing".into(), PHASE_LEAVES);
        assert_eq!(message(&small).as_deref(), Some("hashing"));
        let mut piped = Progress::with(Some(LARGE_INPUT_BYTES), false, ProgressDrawTarget::hidden);
        piped.update(LARGE_INPUT_BYTES, 1 << 20);
        piped.phase("hashing".into(), 1 << 20);
        assert_eq!(
            message(&piped),
            None,
            "never drawn when stderr is not a terminal"
        );
    }
}
