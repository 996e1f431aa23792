//! include/caterva.h is cbindgen's output for the `extern "C"` items in
//! src/ffi (configured by cbindgen.toml), committed so that building the
//! library needs no cbindgen. This test generates the header again and fails
//! if the committed one differs. To update it after changing the C API:
//!
//! ```sh
//! CATERVA_REGENERATE_HEADER=1 cargo test --test header
//! ```

use std::path::PathBuf;

const REGENERATE: &str = "CATERVA_REGENERATE_HEADER=1 cargo test --test header";

fn generate() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(manifest.join("cbindgen.toml")).unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_crate(&manifest)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen cannot generate the header: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen writes UTF-8")
}

#[test]
fn header_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include").join("caterva.h");
    let generated = generate();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if generated == committed {
        return;
    }
    if std::env::var_os("CATERVA_REGENERATE_HEADER").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        println!("wrote {}", path.display());
        return;
    }
    let line = generated.lines().zip(committed.lines()).position(|(g, c)| g != c);
    let line = line.unwrap_or_else(|| generated.lines().count().min(committed.lines().count()));
    panic!(
        "{} differs from what cbindgen generates from src/ffi and cbindgen.toml (first at line {}:\n  \
         committed: {:?}\n  generated: {:?})\nRegenerate it with `{REGENERATE}` and commit it.",
        path.display(),
        line + 1,
        committed.lines().nth(line).unwrap_or("<end of file>"),
        generated.lines().nth(line).unwrap_or("<end of file>"),
    );
}
