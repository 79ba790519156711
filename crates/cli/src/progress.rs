//! The ingest progress bar: on stderr, only when stderr is a terminal and
//! the input is large, so that pipes, logs and tests never see it.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs smaller than this (1M binary leaves) finish too fast for a bar.
pub const LARGE_INPUT_BYTES: u64 = 32 << 20;

/// A progress bar, or nothing.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The input's length when known (a file); stdin gets a spinner once
    /// this much has been read.
    total: Option<u64>,
    shown: bool,
}

impl Progress {
    /// Progress over an input of `total` bytes (`None`: unknown, stdin).
    pub fn new(total: Option<u64>) -> Progress {
        let wanted = std::io::stderr().is_terminal();
        Progress {
            bar: None,
            total,
            shown: !wanted,
        }
        .start_if(wanted && total.is_some_and(|t| t >= LARGE_INPUT_BYTES))
    }

    fn start_if(mut self, start: bool) -> Progress {
        if !start {
            return self;
        }
        let (bar, template) = match self.total {
            Some(total) => (
                ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
                "{elapsed_precise} [{wide_bar}] {binary_bytes}/{binary_total_bytes} \
                 {binary_bytes_per_sec}, ETA {eta} {msg}",
            ),
            None => (
                ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
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
            let progress = std::mem::replace(self, Progress::none());
            *self = progress.start_if(true);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(bytes);
            bar.set_message(format!("{} leaves", crate::commands::plan::group(leaves)));
        }
    }

    fn none() -> Progress {
        Progress {
            bar: None,
            total: None,
            shown: true,
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
