//! Builds the C test suite in `ctests/` against the real `libcaterva.so` and
//! runs it, and checks that the generated header compiles as C99 and C++
//! with `-Wall -Wextra -Werror`.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{blosc2_include, check_library_is_current, compiler, manifest_dir, profile_dir, run, scratch_dir, STRICT};

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
        .args(["-lcaterva", "-lblosc2", "-lm", "-pthread"]);
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
