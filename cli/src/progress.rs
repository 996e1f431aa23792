//! Progress on stderr with indicatif: a bar for a known amount of work, a
//! spinner with the elapsed time for an operation that reports none. Neither
//! shows for work that ends within [`DELAY`], nor unless the caller says
//! someone is watching (see [`RunOpts::wanted`] and [`RunOpts::drawable`]).

use std::io::IsTerminal;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::RunOpts;

/// Work that ends sooner than this never shows a bar.
const DELAY: Duration = Duration::from_millis(300);
/// Redraws per second, at most.
const REFRESH_HZ: u8 = 10;

/// Whether standard output is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

impl RunOpts {
    /// Whether a progress indicator may be drawn for work whose output is
    /// short (copy, verify): someone is watching (stdout is a terminal), the
    /// bar has a terminal to go to (stderr), and the user did not turn it off.
    pub fn wanted(&self) -> bool {
        self.drawable() && stdout_is_terminal()
    }

    /// Whether a bar could be drawn on stderr (a terminal) and is not turned
    /// off by `--no-progress` or `--quiet`.
    pub fn drawable(&self) -> bool {
        !self.no_progress && !self.quiet && std::io::stderr().is_terminal()
    }
}

/// A bar for `total` units of work; cleared when dropped.
pub struct Bar {
    bar: ProgressBar,
    enabled: bool,
    shown: bool,
    start: Instant,
}

impl Bar {
    /// A bar (`label [####....]  40% 4/10 unit`) that draws only if `enabled`.
    pub fn new(label: &'static str, unit: &'static str, total: u64, enabled: bool) -> Bar {
        let style = ProgressStyle::with_template("{prefix} [{bar:30}] {percent:>3}% {pos}/{len} {msg} (eta {eta})")
            .expect("the template is valid")
            .progress_chars("#>.");
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
            .with_style(style)
            .with_prefix(label)
            .with_message(unit);
        Bar { bar, enabled, shown: false, start: Instant::now() }
    }

    /// `done` units of the total are complete.
    pub fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if !self.shown && self.start.elapsed() >= DELAY {
            self.bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(REFRESH_HZ));
            self.shown = true;
        }
        self.bar.set_position(done);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// Run `f`, showing a spinner with the elapsed time meanwhile if `enabled`.
pub fn spinner<R>(label: &'static str, enabled: bool, f: impl FnOnce() -> R) -> R {
    if !enabled {
        return f();
    }
    let (done, wait) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            // Nothing shows for work that ends within DELAY.
            if wait.recv_timeout(DELAY) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            let style = ProgressStyle::with_template("{prefix} {spinner} {elapsed}").expect("the template is valid");
            let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(REFRESH_HZ))
                .with_style(style)
                .with_prefix(label)
                .with_elapsed(DELAY);
            spinner.enable_steady_tick(Duration::from_millis(100));
            // Until the work is done (the sender hangs up).
            let _ = wait.recv();
            spinner.finish_and_clear();
        });
        let r = f();
        drop(done);
        r
    })
}
