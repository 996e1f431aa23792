//! Builds the C test suite in `ctests/` against the real `libcaterva.so` and
//! runs it, and checks that the generated header compiles as C99 and C++
//! with `-Wall -Wextra -Werror`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/<profile>/, where cargo put libcaterva.so and build.rs copied libblosc2.so.
fn profile_dir() -> PathBuf {
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
fn check_library_is_current(lib_dir: &Path) {
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

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn blosc2_include() -> PathBuf {
    let prefix = std::env::var_os("BLOSC2_INSTALL_PREFIX")
        .map_or_else(|| manifest_dir().join("target").join("blosc2"), PathBuf::from);
    manifest_dir().join(prefix).join("include")
}

/// The C (or C++) compiler the cc crate picks for this target.
fn compiler(cpp: bool) -> Command {
    let target = env!("CATERVA_BUILD_TARGET");
    let mut build = cc::Build::new();
    build.cargo_metadata(false).target(target).host(target).opt_level(1).debug(true).cpp(cpp);
    build.get_compiler().to_command()
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed ({}):\n{text}", out.status);
    text
}

/// A fresh directory per process, so concurrent runs of the suite do not collide.
fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

const STRICT: [&str; 3] = ["-Wall", "-Wextra", "-Werror"];

#[test]
fn c_suite() {
    let dir = scratch_dir("ctests");
    let exe = dir.join("ctests");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(manifest_dir().join("ctests"))
        .expect("ctests/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let lib = profile_dir();
    check_library_is_current(&lib);
    let mut cc = compiler(false);
    cc.arg("-std=c99")
        .args(STRICT)
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg("-I")
        .arg(blosc2_include())
        .args(&sources)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lcaterva", "-lblosc2"]);
    run(&mut cc, "compiling the C suite");
    // Run in a scratch directory (persistent cases write files) with no
    // LD_LIBRARY_PATH: the rpath and libcaterva's $ORIGIN must suffice.
    let out = run(Command::new(&exe).current_dir(&dir).env_remove("LD_LIBRARY_PATH"), "the C suite");
    println!("{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn header_compiles_as_cpp() {
    let dir = scratch_dir("cpp_header");
    let src = dir.join("header.cpp");
    std::fs::write(
        &src,
        "#include <caterva.h>\n\
         int main() {\n\
             caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;\n\
             caterva_ctx_t *ctx = nullptr;\n\
             if (caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED) return 1;\n\
             return caterva_ctx_free(&ctx);\n\
         }\n",
    )
    .expect("write");
    let lib = profile_dir();
    check_library_is_current(&lib);
    let mut cxx = compiler(true);
    cxx.arg("-std=c++11")
        .args(STRICT)
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg("-I")
        .arg(blosc2_include())
        .arg(&src)
        .arg("-o")
        .arg(dir.join("header_cpp"))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lcaterva", "-lblosc2"]);
    run(&mut cxx, "compiling the header as C++");
    run(Command::new(dir.join("header_cpp")).env_remove("LD_LIBRARY_PATH"), "the C++ program");
    let _ = std::fs::remove_dir_all(&dir);
}
