//! Named points of the store layer where the crate's own tests stop or kill
//! the process (feature `testing`): the slot [`signal_at`] sets (re-exported
//! as `caterva::testing::signal_at`) and the [`hook`] the store passes.

/// A fault to inject at a named point of the library: at the `nth` time the
/// process passes `point`, it prints `HOOK <point>` on stdout and raises
/// `signal` on itself (`SIGKILL` to die as a killed writer does, `SIGSTOP`
/// to stand still there while holding what it holds).
struct Fault {
    point: &'static str,
    nth: u64,
    signal: i32,
}

static FAULT: std::sync::Mutex<Option<Fault>> = std::sync::Mutex::new(None);

/// Raise `signal` at the `nth` (from 1) pass through `point`: `"op"`, before
/// each operation of a store transaction (journaled or filling a new
/// store), `"rename"`, when a copy written beside its target (save,
/// squeeze's relayout) is complete and about to be renamed into place, or
/// `"publish"`, when a write on an object store has made its new chunk
/// objects and is about to replace the frame's index.
pub fn signal_at(point: &'static str, nth: u64, signal: i32) {
    *FAULT.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Fault { point, nth, signal });
}

/// The library passes `point` (see [`signal_at`]).
pub(crate) fn hook(point: &str) {
    let mut fault = FAULT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(f) = fault.as_mut().filter(|f| f.point == point) else { return };
    f.nth = f.nth.saturating_sub(1);
    if f.nth == 0 {
        let signal = f.signal;
        *fault = None;
        drop(fault);
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = writeln!(out, "HOOK {point}");
        let _ = out.flush();
        // SAFETY: raising a signal on this process; no memory is involved.
        unsafe { libc::raise(signal) };
    }
}
