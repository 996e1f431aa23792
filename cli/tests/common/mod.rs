//! What the command-line tool's tests share: running the tool as a user
//! runs it, and the helpers of tests/common/peers.rs (the Python peers,
//! scratch directories), which the library's own tests use too.
// Each test crate uses a different subset.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use caterva::{Config, Context};

#[path = "../../../tests/common/peers.rs"]
mod peers;
#[allow(unused_imports)]
pub use peers::*;

/// What one run of the tool did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run the tool with `args`. Whatever they are, it exits (a signal is a
/// failure here) and never panics: a user gets a message, not a backtrace.
pub fn caterva(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_caterva")).args(args).output().expect("the binary runs");
    let run = Run {
        code: out.status.code().expect("exited rather than killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    };
    assert!(!run.stderr.contains("panicked"), "caterva {args:?} panicked:\n{}", run.stderr);
    run
}

/// Run the tool, expect success and a silent stderr (no progress bar off a
/// terminal), and return stdout.
pub fn ok(args: &[&str]) -> String {
    let r = caterva(args);
    assert!(r.code == 0 && r.stderr.is_empty(), "caterva {args:?}: exit {}\n{}{}", r.code, r.stdout, r.stderr);
    r.stdout
}

/// A context of 2 threads, for the library's reads and writes beside the tool.
pub fn ctx() -> Context {
    Context::new(Config { nthreads: 2, ..Config::default() }).unwrap()
}

/// A path as the `&str` the tool's arguments are.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
