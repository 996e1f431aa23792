//! Builds the C test suite in `ctests/` against the real `libcaterva.so` and
//! runs it, and checks that the generated header compiles as C99 and C++
//! with `-Wall -Wextra -Werror`.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{
    blosc2_include, build_c_program, check_library_is_current, compiler, manifest_dir, profile_dir, run, scratch_dir,
    STRICT,
};

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
    build_c_program(&sources, &exe, &["-lm", "-pthread"], "compiling the C suite");
    // Run in a scratch directory (persistent cases write files) with no
    // LD_LIBRARY_PATH: the rpath and libcaterva's $ORIGIN must suffice. The
    // suites run 4 at a time, each in a process and directory of its own
    // (they wait on fsync and on their children as much as on the CPU).
    let out = run(Command::new(&exe).args(["-j", "4"]).current_dir(&dir).env_remove("LD_LIBRARY_PATH"), "the C suite");
    println!("{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The header as C++11 in two translation units: one that uses the context
/// API only (the header's static helpers unused must not warn), one that
/// uses print_error (caterva's codes and c-blosc2's) and the version macros.
#[test]
fn header_compiles_as_cpp() {
    let dir = scratch_dir("cpp_header");
    let src = dir.join("header.cpp");
    std::fs::write(
        &src,
        "#include <caterva.h>\n\
         int messages();\n\
         int main() {\n\
             caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;\n\
             caterva_ctx_t *ctx = nullptr;\n\
             if (caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED) return 1;\n\
             if (messages() != 0) return 2;\n\
             return caterva_ctx_free(&ctx);\n\
         }\n",
    )
    .expect("write");
    let messages = dir.join("messages.cpp");
    std::fs::write(
        &messages,
        "#include <caterva.h>\n\
         #include <cstring>\n\
         int messages() {\n\
             char *msg = print_error(CATERVA_ERR_INVALID_ARGUMENT);\n\
             if (std::strcmp(msg, \"Invalid argument\") != 0) return 1;\n\
             if (std::strcmp(print_error(BLOSC2_ERROR_DATA), \"Invalid data\") != 0) return 2;\n\
             if (printf(\"%s %s\\n\", CATERVA_VERSION_STRING, CATERVA_VERSION_DATE) < 0) return 3;\n\
             return 0;\n\
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
        .arg(&messages)
        .arg("-o")
        .arg(dir.join("header_cpp"))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lcaterva", "-lblosc2"]);
    run(&mut cxx, "compiling the header as C++");
    let out = run(Command::new(dir.join("header_cpp")).env_remove("LD_LIBRARY_PATH"), "the C++ program");
    let version = env!("CARGO_PKG_VERSION");
    assert!(out.starts_with(&format!("{version} ")), "the C++ program printed {out:?}, not version {version} first");
    let _ = std::fs::remove_dir_all(&dir);
}
