//! Build script of the extension module: it must find, at run time, the
//! same libblosc2 the core links (blosc2-sys's shared build). The extension
//! gets the rpath `$ORIGIN`, and libblosc2's soname file is copied into the
//! Python package folder (`caterva/`, beside `_caterva.abi3.so` once
//! maturin assembles the wheel), as the root crate's build.rs copies it
//! beside libcaterva.so. It is found as the root crate finds it: through
//! `BLOSC2_INSTALL_PREFIX`, which the repository's .cargo/config.toml sets.

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
    let package = manifest.join("caterva");
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
        let src = fs::read(e.path()).expect("libblosc2 is readable");
        let dst = package.join(&name);
        // Never rewrite in place a library a running interpreter may have mapped.
        if fs::read(&dst).map(|d| d == src).unwrap_or(false) {
            continue;
        }
        let tmp = package.join(format!(".{name}.tmp"));
        fs::write(&tmp, &src).expect("the package folder is writable");
        fs::rename(&tmp, &dst).expect("the package folder is writable");
    }
    assert!(found, "no libblosc2.so.<major> in {}: nothing to put into the package", lib_dir.display());
}
