//! valgrind's leak gate, as downstream CI runs it, on C programs linked
//! against libcaterva.so: `valgrind --leak-check=full --error-exitcode=1`
//! must exit 0 with no suppression file. Memory the library keeps for the
//! process (lock table, handle registries, thread registrations) must be
//! freed or still reachable at exit, never "possibly" or "definitely" lost.
//!
//! - tests/valgrind/minimal.c: the six calls of issue 26 (ctx_new, remove,
//!   zeros, free, remove, ctx_free);
//! - tests/valgrind/workout.c: four worker threads, the four storages,
//!   parallel reads and writes, save/open, cframes, metalayers, failures
//!   and a second application thread.
//!
//! Skipped (with a note) where valgrind is not installed; `.ci/setup`
//! installs it.

use std::process::Command;

mod common;
use common::{build_c_program, manifest_dir, run, scratch_dir};

fn valgrind_installed() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Compile tests/valgrind/`name`.c and run it under the leak gate in `dir`.
fn leak_gate(name: &str) {
    if !valgrind_installed() {
        eprintln!("valgrind is not installed (.ci/setup installs it): leak gate for {name}.c skipped");
        return;
    }
    let dir = scratch_dir(&format!("valgrind_{name}"));
    let exe = dir.join(name);
    let source = manifest_dir().join("tests").join("valgrind").join(format!("{name}.c"));
    build_c_program(&[source], &exe, &["-pthread"], &format!("compiling {name}.c"));
    // The program alone first: a failure there is not a leak.
    run(Command::new(&exe).current_dir(&dir).env_remove("LD_LIBRARY_PATH"), name);
    let out = Command::new("valgrind")
        .args(["--leak-check=full", "--error-exitcode=1", "--errors-for-leak-kinds=definite,indirect,possible"])
        .arg(&exe)
        .current_dir(&dir)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("valgrind runs");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} under valgrind's leak gate exited {}:\n{report}", out.status);
    // --error-exitcode covers memory errors and these leak kinds; say so plainly too.
    for kind in ["definitely lost", "indirectly lost", "possibly lost"] {
        assert!(
            report.contains("All heap blocks were freed") || report.contains(&format!("{kind}: 0 bytes in 0 blocks")),
            "{name}: valgrind reports memory {kind}:\n{report}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn minimal_program_frees_everything() {
    leak_gate("minimal");
}

#[test]
fn workout_frees_everything() {
    leak_gate("workout");
}
