//! The message of each thread's last failed call (`caterva_last_error`).
//!
//! Each thread has one buffer, written in place by [`record`] when a call
//! fails (from `boundary`, the only way an exported function reports a
//! failure) and read by `caterva_last_error`. Recording never panics and never
//! aborts on a failed allocation: the buffer grows with `try_reserve`, and a
//! message that does not fit is cut short (or, if nothing fits, replaced by a
//! static one). An interior NUL, which would end the C string early, is
//! written as the two characters `\0`.

use std::cell::RefCell;
use std::ffi::c_char;
use std::fmt::{self, Write as _};
use std::io::Write as _;

/// What `caterva_last_error` returns before any failure on a thread.
const EMPTY: &std::ffi::CStr = c"";
/// What it returns when the message could not be stored at all (no memory).
const NO_MEMORY: &std::ffi::CStr = c"caterva: the error message was lost (out of memory)";
/// A buffer grown past this is released before the next message, so that one
/// huge message does not hold memory for the life of the thread.
const KEEP_CAPACITY: usize = 64 * 1024;

/// The last message of one thread.
struct Slot {
    /// The message and its terminating NUL, with no other NUL; empty when
    /// there is none (no failure yet, cleared, or not stored: see `lost`).
    buf: Vec<u8>,
    /// The last failure's message could not be stored (out of memory).
    lost: bool,
}

thread_local! {
    static LAST: RefCell<Slot> = const { RefCell::new(Slot { buf: Vec::new(), lost: false }) };
}

/// Appends to a `Vec` without ever aborting: `try_reserve`, and on failure
/// stop (the formatting machinery then stops too). One byte more than the text
/// is always reserved, so the terminating NUL always fits.
struct Sink<'a> {
    buf: &'a mut Vec<u8>,
}

impl Sink<'_> {
    fn push(&mut self, bytes: &[u8]) -> fmt::Result {
        self.buf.try_reserve(bytes.len() + 1).map_err(|_| fmt::Error)?;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }
}

impl fmt::Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut parts = s.split('\0');
        if let Some(first) = parts.next() {
            self.push(first.as_bytes())?;
        }
        for part in parts {
            self.push(b"\\0")?;
            self.push(part.as_bytes())?;
        }
        Ok(())
    }
}

/// Record `func: msg` as this thread's last error, and print it on stderr
/// as `[error] - func: msg` when `CATERVA_TRACE` is set. Never panics.
pub(crate) fn record(func: &str, msg: fmt::Arguments<'_>) {
    let stored = LAST.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else { return false };
        let slot = &mut *slot;
        if slot.buf.capacity() > KEEP_CAPACITY {
            slot.buf = Vec::new();
        }
        slot.buf.clear();
        // A Display implementation that fails, or a reservation that does,
        // leaves what was written so far: a message cut short.
        let _ = write!(Sink { buf: &mut slot.buf }, "{func}: {msg}");
        // Sink reserved room for the NUL; an empty buffer means that not even
        // the function's name could be stored.
        if !slot.buf.is_empty() && slot.buf.capacity() > slot.buf.len() {
            slot.buf.push(0);
            slot.lost = false;
        } else {
            slot.buf.clear();
            slot.lost = true;
        }
        if super::tracing() {
            let text = if slot.lost { NO_MEMORY.to_bytes() } else { &slot.buf[..slot.buf.len() - 1] };
            trace_line(text);
        }
        true
    });
    // No slot (the thread is exiting, or we are inside `record`): trace anyway.
    if stored != Ok(true) && super::tracing() {
        let _ = writeln!(std::io::stderr().lock(), "[error] - {func}: {msg}");
    }
}

/// Print `[error] - <text>` on stderr, ignoring write errors (never panics).
fn trace_line(text: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"[error] - ").and_then(|()| err.write_all(text)).and_then(|()| err.write_all(b"\n"));
}

/// This thread's last message as a C string: valid until the next `record`
/// or `clear` on this thread, or the thread's exit.
pub(crate) fn get() -> *const c_char {
    LAST.try_with(|cell| match cell.try_borrow() {
        Ok(slot) if slot.lost => NO_MEMORY.as_ptr(),
        Ok(slot) if !slot.buf.is_empty() => slot.buf.as_ptr().cast::<c_char>(),
        _ => EMPTY.as_ptr(),
    })
    .unwrap_or(EMPTY.as_ptr())
}

/// Forget this thread's last message (and release its buffer).
pub(crate) fn clear() {
    let _ = LAST.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = Slot { buf: Vec::new(), lost: false };
        }
    });
}

/// The message of the calling thread's last failed caterva call, for example
/// `"caterva_open: invalid storage: '/x' does not exist"`: the function's
/// name, then the reason (the text `CATERVA_TRACE` prints on stderr, without
/// its `[error] - ` prefix). An extension: the original library had no such
/// function.
///
/// - Never NULL: a NUL-terminated string owned by the library; do not free
///   or modify it. It is `""` when no caterva call has failed on this thread
///   (or since `caterva_clear_last_error`).
/// - Per thread: each thread sees only the failures of its own calls.
/// - Only failures set it, as with `errno`: a call that succeeds leaves it as
///   it was, so look at it only when a call has just returned an error code.
/// - Lifetime: the pointer stays valid, and the text unchanged, until the next
///   caterva call that fails on the same thread, the next
///   `caterva_clear_last_error` on that thread, or the thread's exit; copy the
///   text to keep it longer. Calls that succeed do not invalidate it.
/// - Any length: the text is never cut to a fixed size. Should memory run out
///   while it is recorded, it is cut short, or replaced by a fixed message
///   saying it was lost; the call still returns its error code. A NUL inside
///   a reason is written as the two characters `\0`.
#[no_mangle]
pub extern "C" fn caterva_last_error() -> *const c_char {
    get()
}

/// Forget the calling thread's last error message: `caterva_last_error`
/// returns `""` until the next failure on this thread. The string it returned
/// before is then no longer valid. Never fails. An extension, for callers that
/// want to know whether anything has failed since a given point.
#[no_mangle]
pub extern "C" fn caterva_clear_last_error() {
    clear();
}

#[cfg(test)]
mod tests {
    use super::{clear, get, record};
    use std::ffi::CStr;

    /// This thread's message as a Rust string.
    fn now() -> String {
        // SAFETY: `get` returns a valid NUL-terminated string, never NULL.
        unsafe { CStr::from_ptr(get()) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn empty_until_a_failure_then_kept_until_the_next() {
        std::thread::spawn(|| {
            assert!(!get().is_null());
            assert_eq!(now(), "");
            record("caterva_open", format_args!("invalid storage: '{}' does not exist", "/x"));
            assert_eq!(now(), "caterva_open: invalid storage: '/x' does not exist");
            let p = get();
            assert_eq!(get(), p, "the same pointer until the next failure");
            record("caterva_free", format_args!("short"));
            assert_eq!(now(), "caterva_free: short");
            clear();
            assert_eq!(now(), "");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn interior_nuls_are_escaped() {
        std::thread::spawn(|| {
            record("f", format_args!("a\0b{}", "\0c\0"));
            assert_eq!(now(), "f: a\\0b\\0c\\0");
            // SAFETY: `get` returns a NUL-terminated string.
            let bytes = unsafe { CStr::from_ptr(get()) }.to_bytes().len();
            assert_eq!(bytes, "f: a\\0b\\0c\\0".len(), "no NUL cuts the message short");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn each_thread_has_its_own() {
        let threads: Vec<_> = (0..8)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..200 {
                        record("f", format_args!("thread {t} iteration {i}"));
                        assert_eq!(now(), format!("f: thread {t} iteration {i}"));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn long_messages_and_then_short_ones() {
        std::thread::spawn(|| {
            let long = "x".repeat(200_000);
            record("f", format_args!("{long}"));
            assert_eq!(now().len(), 3 + long.len());
            record("g", format_args!("short"));
            assert_eq!(now(), "g: short");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_failing_display_cuts_the_message_short() {
        struct Bad;
        impl std::fmt::Display for Bad {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("partial")?;
                Err(std::fmt::Error)
            }
        }
        std::thread::spawn(|| {
            record("f", format_args!("{}", Bad));
            assert_eq!(now(), "f: partial");
        })
        .join()
        .unwrap();
    }
}
