//! Helpers shared by the integration tests that build and run C programs.
// Each test crate uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod peers;
#[allow(unused_imports)]
pub use peers::*;

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

pub const STRICT: [&str; 3] = ["-Wall", "-Wextra", "-Werror"];

/// Build the C99 program `sources` at `exe`, strictly, against this crate's
/// header and a current libcaterva.so (found by rpath), with `extra` linker
/// arguments after `-lcaterva -lblosc2`.
pub fn build_c_program(sources: &[PathBuf], exe: &Path, extra: &[&str], what: &str) {
    let lib = profile_dir();
    check_library_is_current(&lib);
    let mut cc = compiler(false);
    cc.arg("-std=c99")
        .args(STRICT)
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg("-I")
        .arg(blosc2_include())
        .args(sources)
        .arg("-o")
        .arg(exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lcaterva", "-lblosc2"])
        .args(extra);
    peers::run(&mut cc, what);
}

/// SplitMix64: a small deterministic generator, good enough to drive a test.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The Python of the venv `.ci/setup` makes (target/interop/pycaterva, or
/// `CATERVA_PYTHON_VENV`), with this tree's package built into it
/// (`maturin develop --release`) and checked to be the one it imports.
pub fn pycaterva_python() -> PathBuf {
    let root = manifest_dir();
    let venv = std::env::var_os("CATERVA_PYTHON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/interop/pycaterva"));
    let python = venv.join("bin/python");
    assert!(python.exists(), "{} is missing: run .ci/setup", python.display());
    // The distribution was named `caterva` before it became `caterva-rs`; a
    // develop install under the old name left a caterva.pth (possibly naming
    // another checkout) that would shadow this one: remove it.
    let old = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; m.distribution('caterva')"])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("python runs");
    if old.success() {
        let status = Command::new(&python)
            .args(["-m", "pip", "uninstall", "-y", "-q", "--disable-pip-version-check", "caterva"])
            .status()
            .expect("pip runs");
        assert!(status.success(), "pip uninstall caterva (the old distribution name) failed");
    }
    let status = Command::new(venv.join("bin/maturin"))
        .args(["develop", "--release", "-q", "-m"])
        .arg(root.join("python/Cargo.toml"))
        .env("VIRTUAL_ENV", &venv)
        .status()
        .expect("maturin runs");
    assert!(status.success(), "maturin develop failed");
    // The suite must test this tree's package, whatever else the venv holds.
    let out = Command::new(&python)
        .args(["-c", "import os, caterva; print(os.path.realpath(caterva.__file__))"])
        .current_dir("/")
        .output()
        .expect("python runs");
    assert!(out.status.success(), "caterva does not import: {}", String::from_utf8_lossy(&out.stderr));
    let imported = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let expected = root.join("python/caterva/__init__.py").canonicalize().expect("python/caterva/__init__.py exists");
    assert_eq!(imported, expected, "the venv imports caterva from elsewhere than this tree");
    python
}
