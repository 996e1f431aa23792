//! A progress bar (or, when the amount of work is unknown, a spinner with
//! the elapsed time) drawn on stderr. Nothing is drawn unless stderr is a
//! terminal, nor for work that ends within [`DELAY`].

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Work that ends sooner than this never shows a bar.
const DELAY: Duration = Duration::from_millis(300);
/// The bar is redrawn at most this often.
const REDRAW: Duration = Duration::from_millis(100);
const WIDTH: usize = 30;

/// Whether file descriptor `fd` is a terminal.
fn isatty(fd: libc::c_int) -> bool {
    // SAFETY: isatty only inspects the descriptor number.
    unsafe { libc::isatty(fd) == 1 }
}

/// Whether standard output is a terminal.
pub fn stdout_is_tty() -> bool {
    isatty(libc::STDOUT_FILENO)
}

/// Whether a progress indicator may be drawn: someone is watching (stdout
/// is a terminal), the bar has a terminal to go to (stderr), and the user
/// did not turn it off.
pub fn wanted(p: &crate::args::Parsed) -> bool {
    drawable(p) && stdout_is_tty()
}

/// Whether a bar could be drawn on stderr (a terminal) and is not turned off.
pub fn drawable(p: &crate::args::Parsed) -> bool {
    !p.flag("no-progress") && isatty(libc::STDERR_FILENO)
}

/// A bar for `total` units of work.
pub struct Bar {
    label: &'static str,
    unit: &'static str,
    total: u64,
    enabled: bool,
    start: Instant,
    drawn: Option<Instant>,
}

impl Bar {
    /// A bar that draws only if `enabled`.
    pub fn new(label: &'static str, unit: &'static str, total: u64, enabled: bool) -> Bar {
        Bar { label, unit, total, enabled, start: Instant::now(), drawn: None }
    }

    /// `done` units of the total are complete.
    pub fn update(&mut self, done: u64) {
        if !self.enabled || self.start.elapsed() < DELAY || self.drawn.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        let frac = if self.total == 0 { 1.0 } else { done.min(self.total) as f64 / self.total as f64 };
        let filled = (frac * WIDTH as f64) as usize;
        let line = format!(
            "\r{} [{}{}] {:3.0}% {done}/{} {}",
            self.label,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            frac * 100.0,
            self.total,
            self.unit
        );
        draw(&line);
        self.drawn = Some(Instant::now());
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if self.drawn.is_some() {
            clear();
        }
    }
}

/// Run `f`, showing a spinner with the elapsed time meanwhile if `enabled`.
pub fn spinner<R>(label: &str, enabled: bool, f: impl FnOnce() -> R) -> R {
    if !enabled {
        return f();
    }
    let (done, wait) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || spin(label, &wait));
        let r = f();
        drop(done);
        r
    })
}

/// Draw the spinner until the sender hangs up.
fn spin(label: &str, wait: &mpsc::Receiver<()>) {
    let start = Instant::now();
    let mut drawn = false;
    for frame in ['|', '/', '-', '\\'].iter().cycle() {
        if wait.recv_timeout(REDRAW) != Err(mpsc::RecvTimeoutError::Timeout) {
            break;
        }
        if start.elapsed() >= DELAY {
            draw(&format!("\r{label} {frame} {:.1} s", start.elapsed().as_secs_f64()));
            drawn = true;
        }
    }
    if drawn {
        clear();
    }
}

fn draw(line: &str) {
    let mut err = std::io::stderr().lock();
    // A progress line that cannot be drawn is not worth failing for.
    let _ = err.write_all(line.as_bytes()).and_then(|()| err.flush());
}

/// Erase the line the indicator used.
fn clear() {
    draw("\r\x1b[K");
}
