//! Build script of the extension module: it must find, at run time, the
//! same libblosc2 the core links (blosc2-sys's shared build). The extension
//! gets the rpath `$ORIGIN`, and libblosc2's soname file is copied into the
//! Python package folder (`caterva/`, beside `_caterva.abi3.so` once
//! maturin assembles the wheel), as the root crate's build.rs copies it
//! beside libcaterva.so. It is found as the root crate finds it: through
//! `BLOSC2_INSTALL_PREFIX`, which the repository's .cargo/config.toml sets
//! (and the sdist's, which carries that file).
//!
//! The package folder is the `caterva/` beside pyproject.toml, wherever
//! that is: in the repository beside this manifest (`python/caterva/`),
//! in the sdist at the archive's root, one level up (maturin puts
//! pyproject.toml and the package there, and this manifest in `python/`).
//!
//! The package's copy is stripped (`strip --strip-unneeded`, or `$STRIP`):
//! c-blosc2's Release build has no debug info, but it keeps a symbol table
//! (65 KB of 1.48 MB) that a wheel need not carry; the library beside
//! libcaterva.so, which profiles of C programs read, keeps it.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=BLOSC2_INSTALL_PREFIX");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
    let Some(prefix) = env::var_os("BLOSC2_INSTALL_PREFIX") else {
        panic!(
            "BLOSC2_INSTALL_PREFIX is not set, so libblosc2 cannot be put into the package (build from the \
             repository, whose .cargo/config.toml sets it)"
        );
    };
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // A relative prefix is the repository's (.cargo/config.toml: relative = true gives an absolute one).
    let prefix = manifest.join(prefix);
    let Some(lib_dir) = ["lib64", "lib"].iter().map(|s| prefix.join(s)).find(|d| d.join("libblosc2.so").exists())
    else {
        panic!("no libblosc2.so under {}: blosc2-sys did not install it there", prefix.display());
    };
    println!("cargo:rerun-if-changed={}", lib_dir.display());
    let package = package_folder(&manifest);
    let entries = fs::read_dir(&lib_dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", lib_dir.display()));
    let mut found = false;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // The soname file, libblosc2.so.<major>: what the extension records as needed.
        let Some(major) = name.strip_prefix("libblosc2.so.") else { continue };
        if major.is_empty() || !major.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        found = true;
        let dst = package.join(&name);
        let tmp = package.join(format!(".{name}.tmp"));
        fs::copy(e.path(), &tmp)
            .unwrap_or_else(|err| panic!("cannot copy {} to {}: {err}", e.path().display(), tmp.display()));
        strip(&tmp);
        // Never rewrite in place a library a running interpreter may have mapped.
        let new = fs::read(&tmp).unwrap_or_else(|err| panic!("cannot read {}: {err}", tmp.display()));
        if fs::read(&dst).map(|d| d == new).unwrap_or(false) {
            fs::remove_file(&tmp).unwrap_or_else(|err| panic!("cannot remove {}: {err}", tmp.display()));
            continue;
        }
        fs::rename(&tmp, &dst)
            .unwrap_or_else(|err| panic!("cannot rename {} to {}: {err}", tmp.display(), dst.display()));
    }
    assert!(found, "no libblosc2.so.<major> in {}: nothing to put into the package", lib_dir.display());
}

/// Strips the symbol table from the library `path` (its dynamic symbols,
/// which the extension links against, stay). Without a `strip` tool the
/// copy ships as it is, with a warning: a larger package, not a broken one.
fn strip(path: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=STRIP");
    let tool = env::var_os("STRIP").unwrap_or_else(|| "strip".into());
    match std::process::Command::new(&tool).arg("--strip-unneeded").arg(path).status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{} --strip-unneeded {} failed ({s})", tool.to_string_lossy(), path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => println!(
            "cargo:warning=no '{}' to strip libblosc2 with (binutils; or set STRIP): the package carries it unstripped",
            tool.to_string_lossy()
        ),
        Err(e) => panic!("cannot run {}: {e}", tool.to_string_lossy()),
    }
}

/// The Python package folder: `caterva/` beside the pyproject.toml nearest to
/// `manifest` (this crate's folder, or the one above it in the sdist).
fn package_folder(manifest: &std::path::Path) -> PathBuf {
    let layouts = [manifest, manifest.parent().unwrap_or(manifest)];
    let Some(root) =
        layouts.iter().find(|d| d.join("pyproject.toml").is_file() && d.join("caterva/__init__.py").is_file())
    else {
        panic!(
            "no pyproject.toml with the package caterva/ beside it in {} or the folder above: \
             neither the repository's python/ nor an sdist's layout",
            manifest.display()
        );
    };
    root.join("caterva")
}
