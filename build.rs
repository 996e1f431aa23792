//! Build script: only what has to happen when the library is built.
//!
//! - The soname of libcaterva.so and the `$ORIGIN` rpath of libcaterva.so and
//!   of the `caterva` tool (linker arguments: nothing else can pass them).
//! - `CATERVA_BUILD_TARGET`, the target the C-suite runner compiles for.
//! - `libblosc2.so*` copied beside libcaterva.so in target/<profile>/, and the
//!   soname link `libcaterva.so.<major>` there (see [`stage_beside_cdylib`]).
//!
//! The C header is not generated here: `tests/header.rs` checks the committed
//! include/caterva.h against cbindgen's output, and rewrites it with
//! `CATERVA_REGENERATE_HEADER=1 cargo test --test header`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=BLOSC2_INSTALL_PREFIX");

    // The C-suite runner (tests/ctests.rs) compiles for the same target.
    println!("cargo:rustc-env=CATERVA_BUILD_TARGET={}", env::var("TARGET").expect("cargo sets TARGET"));
    // libcaterva.so finds the libblosc2.so copied beside it, wherever both are installed.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
    // (So does the `caterva` command-line tool: cli/build.rs.)
    let soname = set_soname();
    stage_beside_cdylib(soname.as_deref());
}

/// Give ELF builds of libcaterva.so the soname `libcaterva.so.<major>`, the
/// crate's major version (0: the caterva 0.x C ABI, which this crate keeps;
/// a C ABI break means a new major version, hence a new soname). Returns it.
fn set_soname() -> Option<String> {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    if family != "unix" || matches!(os.as_str(), "macos" | "ios" | "tvos" | "watchos" | "visionos") {
        return None;
    }
    let major = env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets CARGO_PKG_VERSION_MAJOR");
    let soname = format!("libcaterva.so.{major}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    Some(soname)
}

/// Lay out target/<profile>/ for C programs linked against the libcaterva.so
/// cargo puts there (tests/ctests.rs, examples/demo.sh, bench/run.sh, the
/// `caterva` tool's `$ORIGIN` rpath): libblosc2.so* beside it, and the soname
/// link they record. This writes outside OUT_DIR on purpose: cargo has no
/// post-build step, and a cdylib's consumers need its runtime dependencies
/// next to it; the build script is the only hook cargo runs for a build.
/// Both writes are idempotent (nothing is rewritten when already right) and
/// atomic (write beside, then rename). They happen when the script runs:
/// after a change to build.rs, to `BLOSC2_INSTALL_PREFIX` or to libblosc2 in
/// it, not on every build (touch build.rs to restore a deleted copy).
fn stage_beside_cdylib(soname: Option<&str>) {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/[<triple>/]<profile>/build/caterva-<hash>/out.
    let profile_dir = match out_dir.ancestors().nth(3) {
        Some(d) if out_dir.ancestors().nth(2).and_then(Path::file_name) == Some("build".as_ref()) => d,
        _ => {
            println!("cargo:warning=unexpected OUT_DIR layout {}: target dir left as it is", out_dir.display());
            return;
        }
    };
    if let Some(soname) = soname {
        link_soname(profile_dir, soname);
    }
    match blosc2_lib_dir() {
        Ok(lib_dir) => {
            // Copy again when blosc2-sys reinstalls.
            println!("cargo:rerun-if-changed={}", lib_dir.display());
            copy_blosc2(&lib_dir, profile_dir);
        }
        Err(why) => println!("cargo:warning={why}; C programs linked against libcaterva.so will need LD_LIBRARY_PATH"),
    }
}

/// The lib folder of the libblosc2 that blosc2-sys built, and that this build
/// links.
///
/// Why `BLOSC2_INSTALL_PREFIX`, and nothing else: blosc2-sys 0.4.0 declares
/// `links = "blosc2"` but emits no `cargo:KEY=VALUE` metadata (only
/// `rustc-link-search` and `rustc-link-lib`), so no `DEP_BLOSC2_*` variable
/// reaches this script, and the `-L native=` paths it prints go to rustc, not
/// to dependents' build scripts. Its own OUT_DIR,
/// `build/blosc2-sys-<hash>/out`, carries a hash this script cannot compute,
/// and several may exist (profiles, feature sets, old builds): picking one by
/// name or modification time is a guess. But when `BLOSC2_INSTALL_PREFIX` is
/// set, blosc2-sys installs c-blosc2 there (CMAKE_INSTALL_PREFIX; `lib` or
/// `lib64`, as GNUInstallDirs decides) and prints exactly `<prefix>/lib64`,
/// `<prefix>/lib` as its link search paths; cargo gives every build script
/// of one build the same environment, so the variable names the library this
/// build links. The repository's .cargo/config.toml sets it (target/blosc2)
/// for every cargo command run inside the repository, and cmake/ sets it for
/// its own target dir. Without it (caterva built as a dependency elsewhere),
/// libblosc2 stays in blosc2-sys's OUT_DIR, on the library path of `cargo run`
/// and `cargo test`, and nothing is copied.
fn blosc2_lib_dir() -> Result<PathBuf, String> {
    let Some(prefix) = env::var_os("BLOSC2_INSTALL_PREFIX") else {
        return Err("BLOSC2_INSTALL_PREFIX is not set (.cargo/config.toml sets it for cargo commands run inside \
                    the repository): libblosc2.so not copied beside libcaterva.so"
            .into());
    };
    // As tests/common does: a relative prefix is taken from the manifest's folder.
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let prefix = manifest.join(prefix);
    ["lib64", "lib"]
        .iter()
        .map(|sub| prefix.join(sub))
        .find(|d| d.join("libblosc2.so").exists())
        .ok_or_else(|| format!("no libblosc2.so under {}/lib{{,64}} (BLOSC2_INSTALL_PREFIX)", prefix.display()))
}

/// Copy libblosc2.so* from `lib_dir` into target/<profile>/, beside libcaterva.so.
fn copy_blosc2(lib_dir: &Path, profile_dir: &Path) {
    let Ok(entries) = fs::read_dir(lib_dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("libblosc2.so") {
            continue;
        }
        let dst = profile_dir.join(&name);
        let src = fs::read(e.path()).expect("libblosc2 is readable");
        // Never rewrite a library in place that a running process may have mapped.
        if fs::read(&dst).map(|d| d == src).unwrap_or(false) {
            continue;
        }
        let tmp = profile_dir.join(format!(".{}.tmp", name.to_string_lossy()));
        fs::write(&tmp, &src).expect("target dir is writable");
        fs::rename(&tmp, &dst).expect("target dir is writable");
    }
}

/// Programs linked against target/<profile>/libcaterva.so record its soname
/// and look for that name at run time: point it at the library cargo links.
fn link_soname(profile_dir: &Path, soname: &str) {
    let link = profile_dir.join(soname);
    if fs::read_link(&link).is_ok_and(|t| t == Path::new("libcaterva.so")) {
        return;
    }
    #[cfg(unix)]
    {
        let tmp = profile_dir.join(format!(".{soname}.tmp"));
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink("libcaterva.so", &tmp).expect("target dir is writable");
        fs::rename(&tmp, &link).expect("target dir is writable");
    }
}
