//! Build script: generates the C header with cbindgen, and makes the shared
//! libblosc2 that blosc2-sys builds findable beside libcaterva.so.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=CATERVA_REGENERATE_HEADER");
    println!("cargo:rerun-if-env-changed=BLOSC2_INSTALL_PREFIX");

    generate_header(&manifest, &out_dir);
    // The C-suite runner (tests/ctests.rs) compiles for the same target.
    println!("cargo:rustc-env=CATERVA_BUILD_TARGET={}", env::var("TARGET").expect("cargo sets TARGET"));

    // libcaterva.so finds the libblosc2.so copied beside it, wherever both are installed.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
    // (So does the `caterva` command-line tool: cli/build.rs.)
    let soname = set_soname();
    if let Some(profile_dir) = out_dir.ancestors().nth(3) {
        copy_blosc2(&manifest, &out_dir, profile_dir);
        if let Some(soname) = soname {
            link_soname(profile_dir, &soname);
        }
    }
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

/// Generate the header into OUT_DIR (a unit test compares it with the
/// committed include/caterva.h) and, on request, over the committed one.
fn generate_header(manifest: &Path, out_dir: &Path) {
    let config = cbindgen::Config::from_file(manifest.join("cbindgen.toml")).expect("cbindgen.toml is valid");
    let bindings = cbindgen::Builder::new()
        .with_crate(manifest)
        .with_config(config)
        .generate()
        .expect("cbindgen can parse the crate");
    bindings.write_to_file(out_dir.join("caterva.h"));
    if env::var_os("CATERVA_REGENERATE_HEADER").is_some() {
        bindings.write_to_file(manifest.join("include").join("caterva.h"));
    }
}

/// The lib folder of the libblosc2 that blosc2-sys installed.
fn blosc2_lib_dir(manifest: &Path, out_dir: &Path) -> Option<PathBuf> {
    if let Some(prefix) = env::var_os("BLOSC2_INSTALL_PREFIX") {
        let prefix = manifest.join(prefix);
        for sub in ["lib", "lib64"] {
            if prefix.join(sub).join("libblosc2.so").exists() {
                return Some(prefix.join(sub));
            }
        }
    }
    // Without the prefix (the crate used as a dependency), look in blosc2-sys's own OUT_DIR.
    let build_dir = out_dir.parent()?.parent()?;
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = fs::read_dir(build_dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("blosc2-sys-"))
        .flat_map(|e| ["lib", "lib64"].map(|sub| e.path().join("out").join(sub)))
        .filter_map(|d| Some((fs::metadata(d.join("libblosc2.so")).ok()?.modified().ok()?, d)))
        .collect();
    found.sort();
    found.pop().map(|(_, d)| d)
}

/// Copy libblosc2.so* into target/<profile>/, beside libcaterva.so.
fn copy_blosc2(manifest: &Path, out_dir: &Path, profile_dir: &Path) {
    let Some(lib_dir) = blosc2_lib_dir(manifest, out_dir) else {
        println!("cargo:warning=libblosc2.so not found; C programs will need LD_LIBRARY_PATH");
        return;
    };
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    let Ok(entries) = fs::read_dir(&lib_dir) else { return };
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
