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

/// What cbindgen.toml's header text has in place of the crate's version
/// (`CATERVA_VERSION_STRING`), so that the header follows Cargo.toml.
const VERSION_PLACEHOLDER: &str = "@CARGO_PKG_VERSION@";

fn generate() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(manifest.join("cbindgen.toml")).unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    let text = config.after_includes.as_deref().unwrap_or_default();
    assert!(
        text.contains(VERSION_PLACEHOLDER),
        "cbindgen.toml's after_includes lost {VERSION_PLACEHOLDER}, the place of the crate's version"
    );
    config.after_includes = Some(text.replace(VERSION_PLACEHOLDER, env!("CARGO_PKG_VERSION")));
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

/// The value of `#define NAME "value"` in `header`.
fn string_macro<'h>(header: &'h str, name: &str) -> &'h str {
    let start = format!("#define {name} \"");
    let line = header.lines().find_map(|l| l.strip_prefix(&start)).unwrap_or_else(|| panic!("no {start}... line"));
    line.split('"').next().expect("split yields one piece")
}

/// `CATERVA_VERSION_STRING` is the crate's version, and `CATERVA_VERSION_DATE`
/// a date that was set for this version (its comment names the version it
/// dates: a new version without a new date fails here).
#[test]
fn version_macros_follow_the_crate() {
    let version = env!("CARGO_PKG_VERSION");
    let header = generate();
    assert_eq!(string_macro(&header, "CATERVA_VERSION_STRING"), version);
    let date = string_macro(&header, "CATERVA_VERSION_DATE");
    let well_formed = date.len() == 10
        && date.char_indices().all(|(i, c)| if i == 4 || i == 7 { c == '-' } else { c.is_ascii_digit() });
    assert!(well_formed, "CATERVA_VERSION_DATE {date:?} is not YYYY-MM-DD");
    let (month, day): (u32, u32) = (date[5..7].parse().unwrap(), date[8..].parse().unwrap());
    assert!((1..=12).contains(&month) && (1..=31).contains(&day), "CATERVA_VERSION_DATE {date:?} is not a date");
    let line = header.lines().find(|l| l.starts_with("#define CATERVA_VERSION_DATE")).expect("found above");
    assert!(
        line.ends_with(&format!("/* the date of version {version} */")),
        "CATERVA_VERSION_DATE dates another version than {version} (cbindgen.toml: {line}): set this version's date"
    );
}
