//! Helpers shared by the integration tests that build and run C programs.
// Each test crate uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/<profile>/, where cargo put libcaterva.so and build.rs copied libblosc2.so.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// Newest modification time of the files that make up libcaterva.so.
fn newest_source(dir: &Path) -> std::time::SystemTime {
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    for e in std::fs::read_dir(dir).expect("readable source dir").flatten() {
        let p = e.path();
        let t = if p.is_dir() { newest_source(&p) } else { e.metadata().and_then(|m| m.modified()).expect("mtime") };
        newest = newest.max(t);
    }
    newest
}

/// `cargo test` builds the rlib, not libcaterva.so: check that `cargo build`
/// made a current one, rather than silently testing an old library.
pub fn check_library_is_current(lib_dir: &Path) {
    let so = lib_dir.join("libcaterva.so");
    let built = std::fs::metadata(&so).and_then(|m| m.modified());
    let Ok(built) = built else {
        panic!("{} is missing: run `cargo build` (same profile) before `cargo test`", so.display());
    };
    let m = manifest_dir();
    // Only inputs whose change always relinks the library (src/ and build.rs).
    let build_rs = std::fs::metadata(m.join("build.rs")).and_then(|x| x.modified()).expect("build.rs mtime");
    let newest = newest_source(&m.join("src")).max(build_rs);
    assert!(
        built >= newest,
        "{} is older than the sources: run `cargo build` (same profile) before `cargo test`",
        so.display()
    );
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn blosc2_include() -> PathBuf {
    let prefix = std::env::var_os("BLOSC2_INSTALL_PREFIX")
        .map_or_else(|| manifest_dir().join("target").join("blosc2"), PathBuf::from);
    manifest_dir().join(prefix).join("include")
}

/// The C (or C++) compiler the cc crate picks for this target.
pub fn compiler(cpp: bool) -> Command {
    let target = env!("CATERVA_BUILD_TARGET");
    let mut build = cc::Build::new();
    build.cargo_metadata(false).target(target).host(target).opt_level(1).debug(true).cpp(cpp);
    build.get_compiler().to_command()
}

pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed ({}):\n{text}", out.status);
    text
}

/// A fresh directory per process, so concurrent runs of the suite do not collide.
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

pub const STRICT: [&str; 3] = ["-Wall", "-Wextra", "-Werror"];
