//! One registry of the operations of the three surfaces: the Rust API
//! (`Array`'s methods, `Context`'s, the crate's and `caterva::blz`'s free
//! functions), the C ABI (`include/caterva.h`) and the Python package
//! (`python/caterva`). `tests/registry/operations.tsv` has a row per
//! operation naming it on each surface, or `-` with the reason in the note.
//!
//! The test derives the three lists from the source text (no build of the
//! `.so` or of the Python package) and fails, naming the item, when a
//! surface has an operation the registry lacks or the registry names one a
//! surface no longer has. What counts:
//! - Rust: every `pub fn` at the top level of an `impl Array {` or
//!   `impl Context {` block in any `.rs` file under `src/` (so moving a
//!   method to another file changes nothing), and the functions (lower-case
//!   names) `src/lib.rs` and `src/blz/mod.rs` re-export with `pub use`:
//!   `Array::name`, `Context::name`, `caterva::name`, `blz::name`.
//! - C: every `caterva_*` function `include/caterva.h` declares (outside
//!   bodies; the inline `caterva_print_error` included): `caterva_name`.
//! - Python: every method of `NDArray` (`python/caterva/ndarray.py`) and of
//!   its base classes found under `python/caterva/`, without a leading `_`
//!   but with the dunders (`__init__` aside: arrays come from the
//!   constructors): `NDArray.name`; the public functions of
//!   `python/caterva/constructors.py` and the lower-case names of `__all__`
//!   in `python/caterva/__init__.py`: `caterva.name`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The registry, relative to the crate root.
const REGISTRY: &str = "tests/registry/operations.tsv";
/// Rust types whose inherent `pub fn`s are operations.
const RUST_TYPES: [&str; 2] = ["Array", "Context"];
/// Files whose `pub use` of functions are operations, and the prefix they get.
const RUST_REEXPORTS: [(&str, &str); 2] = [("src/lib.rs", "caterva"), ("src/blz/mod.rs", "blz")];
/// The Python class whose methods are operations, and where it is.
const PY_CLASS: (&str, &str) = ("NDArray", "python/caterva/ndarray.py");
/// Dunders that are not operations.
const PY_NOT_OPERATIONS: [&str; 1] = ["__init__"];

/// The text of the sources the lists come from: paths relative to the
/// crate root, `/`-separated.
#[derive(Clone)]
struct Sources {
    rust: BTreeMap<String, String>,
    header: String,
    python: BTreeMap<String, String>,
}

/// The three lists of operations.
#[derive(Debug, Default, PartialEq)]
struct Surfaces {
    rust: BTreeSet<String>,
    c: BTreeSet<String>,
    python: BTreeSet<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` ending in `.ext`, by path relative to the root.
fn read_tree(dir: &str, ext: &str) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, ext: &str, out: &mut BTreeMap<String, String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, ext, out);
            } else if path.extension().is_some_and(|e| e == ext) {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let root = root();
    let mut out = BTreeMap::new();
    walk(&root, &root.join(dir), ext, &mut out);
    out
}

fn sources() -> Sources {
    Sources {
        rust: read_tree("src", "rs"),
        header: std::fs::read_to_string(root().join("include/caterva.h")).unwrap(),
        python: read_tree("python/caterva", "py"),
    }
}

fn registry_text() -> String {
    std::fs::read_to_string(root().join(REGISTRY)).unwrap_or_else(|e| panic!("{REGISTRY}: {e}"))
}

// ---------------------------------------------------------------------------
// Lexing: comments and literals blanked (spaces, newlines kept), so braces
// and names inside them do not count.

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `src` with comments and the contents of string and character literals
/// replaced by spaces. `rust`: raw strings, nested block comments and
/// lifetimes (a `'` that opens no character literal) as Rust has them.
fn blank_c_like(src: &str, rust: bool) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else if rust && b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if rust
            && b[i] == b'r'
            && (i == 0 || !is_ident(b[i - 1]) || (b[i - 1] == b'b' && (i < 2 || !is_ident(b[i - 2]))))
            && {
                let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
                rest.get(1 + hashes) == Some(&b'"')
            }
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            let open = i + 1 + hashes + 1;
            let mut close = Vec::from(&b"\""[..]);
            close.extend(std::iter::repeat(b'#').take(hashes));
            let end = b[open..].windows(close.len()).position(|w| w == close.as_slice()).map_or(b.len(), |p| open + p);
            blank(&mut out, open, end);
            i = (end + close.len()).min(b.len());
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(b.len());
            blank(&mut out, i + 1, end);
            i = end + 1;
        } else if b[i] == b'\'' {
            // A character literal: an escape, or one character then `'`.
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p)
            } else {
                let ch = src[i + 1..].chars().next().map_or(0, char::len_utf8);
                (ch > 0 && b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 1 + ch)
            };
            // `end`: the closing quote.
            match end {
                Some(e) => {
                    blank(&mut out, i + 1, e);
                    i = e + 1;
                }
                _ => i += 1, // a lifetime or label
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only whole characters become spaces")
}

/// Python's `#` comments and string literals (triple-quoted ones
/// included) blanked, newlines kept.
fn blank_python(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
        } else if c == b'"' || c == b'\'' {
            let triple = b[i..].starts_with(&[c, c, c]);
            let q = if triple { 3 } else { 1 };
            let mut j = i + q;
            loop {
                if j >= b.len() || (!triple && b[j] == b'\n') {
                    break;
                }
                if b[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if b[j..].starts_with(&[c, c, c][..q]) {
                    break;
                }
                j += 1;
            }
            let end = j.min(b.len());
            for o in &mut out[i + q..end] {
                if *o != b'\n' {
                    *o = b' ';
                }
            }
            i = (end + q).min(b.len());
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The index just past the `}` closing the `{` at `open` (blanked text).
fn block_end(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// The identifier starting at `i` (empty if none).
fn ident_at(b: &[u8], i: usize) -> &str {
    let n = b[i..].iter().take_while(|&&c| is_ident(c)).count();
    std::str::from_utf8(&b[i..i + n]).unwrap()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------
// Deriving the lists.

/// The `pub fn` names at the top level of the `impl {ty} {` blocks of one
/// Rust file (`pub(crate)` and the like are not `pub fn`).
fn rust_methods(src: &str, ty: &str) -> Vec<String> {
    let text = blank_c_like(src, true);
    let b = text.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(p) = text[i..].find("impl") {
        let at = i + p;
        i = at + 4;
        if (at > 0 && is_ident(b[at - 1])) || b.get(at + 4).map_or(true, |&c| !c.is_ascii_whitespace()) {
            continue;
        }
        let name_at = skip_ws(b, at + 4);
        let open = skip_ws(b, name_at + ident_at(b, name_at).len());
        if ident_at(b, name_at) != ty || b.get(open) != Some(&b'{') {
            continue;
        }
        let end = block_end(b, open);
        let mut depth = 0usize;
        let mut k = open + 1;
        while k < end - 1 {
            match b[k] {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                b'p' if depth == 0 && !is_ident(b[k - 1]) && ident_at(b, k) == "pub" => {
                    let mut w = skip_ws(b, k + 3);
                    while matches!(ident_at(b, w), "const" | "unsafe" | "async") {
                        w = skip_ws(b, w + ident_at(b, w).len());
                    }
                    if ident_at(b, w) == "fn" {
                        let n = skip_ws(b, w + 2);
                        names.push(ident_at(b, n).to_owned());
                    }
                }
                _ => {}
            }
            k += 1;
        }
        i = end;
    }
    names
}

/// The lower-case names (functions, by the naming rules) a file re-exports
/// with `pub use`.
fn rust_reexported_fns(src: &str) -> Vec<String> {
    let text = blank_c_like(src, true);
    let b = text.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(p) = text[i..].find("pub use ") {
        let at = i + p;
        let end = text[at..].find(';').map_or(text.len(), |e| at + e);
        i = end;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        for piece in text[at + 8..end].replace(['{', '}'], ",").split(',') {
            let piece = piece.trim();
            let name = piece.rsplit(" as ").next().unwrap().rsplit("::").next().unwrap().trim();
            if name.starts_with(|c: char| c.is_ascii_lowercase()) && name != "self" {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// The `caterva_*` functions a C header declares: names followed by `(`
/// outside every block but `extern "C" { ... }`, preprocessor lines aside.
fn c_functions(header: &str) -> BTreeSet<String> {
    let text = blank_c_like(header, false);
    let text: String =
        text.lines().map(|l| if l.trim_start().starts_with('#') { "" } else { l }).collect::<Vec<_>>().join("\n");
    let b = text.as_bytes();
    let mut names = BTreeSet::new();
    // Whether each open brace counts (an `extern "C"` one does not).
    let mut stack: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                let before = text[..i].trim_end();
                let linkage = before.ends_with('"') && {
                    let inner = &before[..before.len() - 1];
                    inner.rfind('"').is_some_and(|q| inner[..q].trim_end().ends_with("extern"))
                };
                stack.push(!linkage);
                i += 1;
            }
            b'}' => {
                stack.pop();
                i += 1;
            }
            c if is_ident(c) && (i == 0 || !is_ident(b[i - 1])) => {
                let name = ident_at(b, i);
                let depth = stack.iter().filter(|&&counts| counts).count();
                if depth == 0 && name.starts_with("caterva_") && b.get(skip_ws(b, i + name.len())) == Some(&b'(') {
                    names.insert(name.to_owned());
                }
                i += name.len();
            }
            _ => i += 1,
        }
    }
    names
}

/// Python classes at module level: name -> (bases, method names), from
/// every file.
fn python_classes(files: &BTreeMap<String, String>) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let mut classes = BTreeMap::new();
    for src in files.values() {
        let text = blank_python(src);
        let mut current: Option<String> = None;
        for line in text.lines() {
            if line.trim().is_empty() {
                continue;
            }
            if !line.starts_with([' ', '\t']) {
                current = None;
                if let Some(rest) = line.strip_prefix("class ") {
                    let name: String = rest.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
                    let bases = rest
                        .split_once('(')
                        .and_then(|(_, r)| r.split_once(')'))
                        .map(|(inner, _)| {
                            inner
                                .split(',')
                                .map(|s| s.trim().rsplit('.').next().unwrap().to_owned())
                                .filter(|s| !s.is_empty() && !s.contains('='))
                                .collect()
                        })
                        .unwrap_or_default();
                    classes.insert(name.clone(), (bases, Vec::new()));
                    current = Some(name);
                }
                continue;
            }
            let Some(class) = &current else { continue };
            let def = line.strip_prefix("    ").filter(|l| !l.starts_with([' ', '\t']));
            let def = def.and_then(|l| l.strip_prefix("async ").or(Some(l))).and_then(|l| l.strip_prefix("def "));
            if let Some(def) = def {
                let name: String = def.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
                classes.get_mut(class).unwrap().1.push(name);
            }
        }
    }
    classes
}

/// Whether a Python name is part of the public surface.
fn python_public(name: &str) -> bool {
    let dunder = name.len() > 4 && name.starts_with("__") && name.ends_with("__");
    if dunder {
        !PY_NOT_OPERATIONS.contains(&name)
    } else {
        !name.starts_with('_')
    }
}

/// The names in `__all__ = [...]` (read from the source, strings intact).
fn python_all(src: &str) -> Vec<String> {
    let Some(start) = src.find("__all__") else { return Vec::new() };
    let Some(open) = src[start..].find('[').map(|p| start + p) else { return Vec::new() };
    let close = src[open..].find(']').map_or(src.len(), |p| open + p);
    src[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn derive(src: &Sources) -> Result<Surfaces, String> {
    let mut s = Surfaces::default();
    for text in src.rust.values() {
        for ty in RUST_TYPES {
            s.rust.extend(rust_methods(text, ty).into_iter().map(|m| format!("{ty}::{m}")));
        }
    }
    for ty in RUST_TYPES {
        if !s.rust.iter().any(|n| n.starts_with(&format!("{ty}::"))) {
            return Err(format!("no `impl {ty} {{` block with a `pub fn` under src/: the parser is lost"));
        }
    }
    for (path, prefix) in RUST_REEXPORTS {
        let text = src.rust.get(path).ok_or_else(|| format!("{path} is missing: update RUST_REEXPORTS"))?;
        s.rust.extend(rust_reexported_fns(text).into_iter().map(|f| format!("{prefix}::{f}")));
    }

    s.c = c_functions(&src.header);
    if s.c.is_empty() {
        return Err("no caterva_* function found in include/caterva.h: the parser is lost".into());
    }

    let classes = python_classes(&src.python);
    let (class, file) = PY_CLASS;
    let declared_there =
        src.python.get(file).is_some_and(|t| blank_python(t).lines().any(|l| l.starts_with(&format!("class {class}"))));
    if !declared_there {
        return Err(format!("class {class} is not in {file}: update PY_CLASS"));
    }
    let (mut todo, mut seen) = (vec![class.to_owned()], BTreeSet::new());
    while let Some(c) = todo.pop() {
        if !seen.insert(c.clone()) {
            continue;
        }
        // Bases outside the package (NumPy's mixins) are not ours.
        if let Some((bases, methods)) = classes.get(&c) {
            s.python.extend(methods.iter().filter(|m| python_public(m)).map(|m| format!("{class}.{m}")));
            todo.extend(bases.iter().cloned());
        }
    }
    let constructors =
        src.python.get("python/caterva/constructors.py").ok_or("python/caterva/constructors.py is missing")?;
    for line in blank_python(constructors).lines() {
        if let Some(def) = line.strip_prefix("def ") {
            let name: String = def.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
            if !name.starts_with('_') {
                s.python.insert(format!("caterva.{name}"));
            }
        }
    }
    let init = src.python.get("python/caterva/__init__.py").ok_or("python/caterva/__init__.py is missing")?;
    for name in python_all(init) {
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            s.python.insert(format!("caterva.{name}"));
        }
    }
    Ok(s)
}

// ---------------------------------------------------------------------------
// The registry.

/// The surfaces, in the registry's column order.
const SURFACES: [&str; 3] = ["Rust", "C", "Python"];

/// One row: the names on each surface (`SURFACES`' order; empty: `-`) and the note.
#[derive(Debug)]
struct Row {
    line: usize,
    names: [Vec<String>; 3],
    note: String,
}

/// Whether `name` has the form of a name of surface `k` (`SURFACES`).
fn well_formed(k: usize, name: &str) -> bool {
    let rest_ok = |rest: &str| !rest.is_empty() && rest.bytes().all(is_ident);
    match k {
        0 => name.split_once("::").is_some_and(|(p, rest)| {
            (RUST_TYPES.contains(&p) || RUST_REEXPORTS.iter().any(|&(_, q)| q == p)) && rest_ok(rest)
        }),
        1 => name.strip_prefix("caterva_").is_some_and(rest_ok),
        _ => name.split_once('.').is_some_and(|(p, rest)| (p == PY_CLASS.0 || p == "caterva") && rest_ok(rest)),
    }
}

/// The rows, or the problems of the file's form.
fn parse_registry(text: &str) -> (Vec<Row>, Vec<String>) {
    let (mut rows, mut problems) = (Vec::new(), Vec::new());
    let mut header_seen = false;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if !header_seen {
            header_seen = true;
            if cols != ["rust", "c", "python", "note"] {
                problems.push(format!("{REGISTRY}:{line_no}: the header must be rust<TAB>c<TAB>python<TAB>note"));
            }
            continue;
        }
        if cols.len() != 4 {
            problems.push(format!("{REGISTRY}:{line_no}: {} tab-separated columns, not 4", cols.len()));
            continue;
        }
        let names = |cell: &str| -> Vec<String> {
            if cell.trim() == "-" {
                Vec::new()
            } else {
                cell.split(',').map(|s| s.trim().to_owned()).collect()
            }
        };
        let row = Row {
            line: line_no,
            names: [names(cols[0]), names(cols[1]), names(cols[2])],
            note: cols[3].trim().to_owned(),
        };
        for (k, surface) in SURFACES.iter().enumerate() {
            for name in row.names[k].iter().filter(|n| !well_formed(k, n)) {
                problems.push(format!("{REGISTRY}:{line_no}: `{name}` is not a {surface} name this registry knows"));
            }
        }
        let absent = row.names.iter().filter(|v| v.is_empty()).count();
        if absent == 3 {
            problems.push(format!("{REGISTRY}:{line_no}: a row with no name at all"));
        } else if absent > 0 && row.note.is_empty() {
            problems.push(format!("{REGISTRY}:{line_no}: `-` needs the reason in the note column"));
        }
        rows.push(row);
    }
    if !header_seen {
        problems.push(format!("{REGISTRY}: no header line"));
    }
    (rows, problems)
}

/// Every problem of the registry against the sources: what a surface has
/// and no row names, what a row names and no surface has, and the
/// registry's own form. Empty: they agree.
fn check(src: &Sources, registry: &str) -> Vec<String> {
    let surfaces = match derive(src) {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    let (rows, mut problems) = parse_registry(registry);
    let derived = [&surfaces.rust, &surfaces.c, &surfaces.python];
    let what = [
        "a pub fn of an `impl Array/Context` block under src/, or a function src/lib.rs or src/blz/mod.rs re-exports",
        "a function include/caterva.h declares",
        "a method of NDArray (or its bases) or a public function of the caterva package",
    ];
    for (k, surface) in SURFACES.iter().enumerate() {
        let (derived, what) = (derived[k], what[k]);
        let named: BTreeMap<&str, usize> =
            rows.iter().flat_map(|r| r.names[k].iter().map(move |n| (n.as_str(), r.line))).collect();
        for missing in derived.iter().filter(|n| !named.contains_key(n.as_str())) {
            problems.push(format!(
                "{surface} operation `{missing}` is not in {REGISTRY}: add a row naming it with its other surfaces' names (or `-` and the reason)"
            ));
        }
        for (stale, line) in named.iter().filter(|(n, _)| !derived.contains(**n)) {
            problems.push(format!("{REGISTRY}:{line}: `{stale}` is stale: it is not {what}"));
        }
    }
    problems
}

fn assert_agree(problems: &[String]) {
    assert!(problems.is_empty(), "the registry and the sources disagree:\n  {}", problems.join("\n  "));
}

// ---------------------------------------------------------------------------
// Tests.

#[test]
fn registry_matches_the_three_surfaces() {
    assert_agree(&check(&sources(), &registry_text()));
}

#[test]
fn the_lists_hold_what_is_known_to_be_there() {
    let s = derive(&sources()).unwrap();
    for name in
        ["Array::get_slice", "Array::open", "Array::remove", "Context::new", "caterva::copy_buffer", "blz::import"]
    {
        assert!(s.rust.contains(name), "{name} not derived: {:?}", s.rust);
    }
    for name in ["Array::create_with", "Array::store", "Array::from_store"] {
        assert!(!s.rust.contains(name), "{name} is not pub but was derived");
    }
    for name in ["caterva_get_slice_buffer", "caterva_ctx_new", "caterva_last_error", "caterva_print_error"] {
        assert!(s.c.contains(name), "{name} not derived: {:?}", s.c);
    }
    for name in [
        "NDArray.__getitem__",
        "NDArray.__setitem__",
        "NDArray.sum",
        "NDArray.shape",
        "caterva.open",
        "caterva.to_caterva",
    ] {
        assert!(s.python.contains(name), "{name} not derived: {:?}", s.python);
    }
    for name in ["NDArray.__init__", "NDArray._read", "caterva._prepare"] {
        assert!(!s.python.contains(name), "{name} is not public but was derived");
    }
}

/// The checker fails, naming the item, on an operation added to a surface
/// and not to the registry, and on a row naming what no surface has.
#[test]
fn the_check_fails_on_drift() {
    let real = sources();
    let registry = registry_text();
    assert_agree(&check(&real, &registry));

    let fails_naming = |src: &Sources, registry: &str, name: &str| {
        let problems = check(src, registry);
        assert!(problems.iter().any(|p| p.contains(&format!("`{name}`"))), "no problem names `{name}`: {problems:?}");
    };

    // A new Array method, in a file of its own (the walk finds it).
    let mut src = real.clone();
    src.rust.insert(
        "src/array/fabricated.rs".into(),
        "impl Array {\n    /// x\n    pub fn fabricated_op(&self) -> usize { if true { 1 } else { 2 } }\n    pub(crate) fn hidden(&self) {}\n}\n"
            .into(),
    );
    fails_naming(&src, &registry, "Array::fabricated_op");
    assert!(!check(&src, &registry).iter().any(|p| p.contains("hidden")));

    // A new C function.
    let mut src = real.clone();
    src.header = src.header.replace("int caterva_ctx_free(", "int caterva_fabricated(int x);\nint caterva_ctx_free(");
    fails_naming(&src, &registry, "caterva_fabricated");

    // A new NDArray method and a new constructor.
    let mut src = real.clone();
    let nd = src.python.get_mut(PY_CLASS.1).unwrap();
    *nd = nd.replace(
        "    def resize(self, newshape):",
        "    def fabricated(self):\n        pass\n\n    def resize(self, newshape):",
    );
    let ctor = src.python.get_mut("python/caterva/constructors.py").unwrap();
    ctor.push_str("\n\ndef fabricated_ctor(x):\n    return x\n");
    fails_naming(&src, &registry, "NDArray.fabricated");
    fails_naming(&src, &registry, "caterva.fabricated_ctor");

    // A row dropped: its operations are missing.
    let without: String =
        registry.lines().filter(|l| !l.starts_with("Array::resize\t")).map(|l| format!("{l}\n")).collect();
    assert_ne!(without, registry, "the registry has no Array::resize row");
    fails_naming(&real, &without, "Array::resize");
    fails_naming(&real, &without, "caterva_resize");
    fails_naming(&real, &without, "NDArray.resize");

    // A stale row, and an exemption without its reason.
    let stale = format!("{registry}Array::gone\tcaterva_gone\tNDArray.gone\t\n");
    for name in ["Array::gone", "caterva_gone", "NDArray.gone"] {
        fails_naming(&real, &stale, name);
    }
    let unexplained = format!("{registry}Array::open\t-\t-\t\n");
    assert!(check(&real, &unexplained).iter().any(|p| p.contains("needs the reason")));
}

#[test]
fn the_parsers_see_through_comments_strings_and_bodies() {
    let rust = r##"
// impl Array { pub fn in_comment() }
/* impl Array { pub fn in_block /* nested */ comment() } */
const S: &str = "impl Array { pub fn in_string() }";
const R: &str = r#"impl Array { pub fn in_raw() "# ;
impl std::fmt::Debug for Array { fn fmt() {} }
impl Array {
    pub fn a<'x>(&'x self) -> char { let c = '{'; let _ = "}"; c }
    fn private() { pub fn nested() {} }
    pub(crate) fn crate_only() {}
    pub const fn b() {}
    pub unsafe fn c() {}
}
impl ArrayInfo { pub fn not_array() {} }
"##;
    assert_eq!(rust_methods(rust, "Array"), ["a", "b", "c"]);

    let header = "/* int caterva_in_comment(void); */\n#define X caterva_macro(1)\nextern \"C\" {\nint caterva_a(int x);\nconst char *caterva_b(void);\n}\nstatic inline int caterva_c(int x) {\n  return caterva_d(x);\n}\n";
    assert_eq!(c_functions(header), ["caterva_a", "caterva_b", "caterva_c"].map(String::from).into());

    let py = "class Base:\n    def base_op(self):\n        pass\n\nclass NDArray(Base):\n    \"\"\"Doc.\n    def in_docstring(self):\n    \"\"\"\n\n    @property\n    def shape(self):\n        def inner():\n            pass\n\n    def _private(self):\n        pass\n\n    def __getitem__(self, key):\n        pass\n\ndef after():\n    pass\n";
    let classes = python_classes(&[("x.py".to_owned(), py.to_owned())].into());
    assert_eq!(
        classes["NDArray"],
        (vec!["Base".to_owned()], ["shape", "_private", "__getitem__"].map(String::from).to_vec())
    );
    assert_eq!(classes["Base"].1, ["base_op"]);

    assert_eq!(
        rust_reexported_fns("pub use a::f;\npub use b::{g, Type, c::h as i, CONST};\npub mod m;\n"),
        ["f", "g", "i"]
    );
}

// ---------------------------------------------------------------------------
// The public Rust items.
//
// `src/lib.rs` warns on `unreachable_pub` (an error in CI's clippy), so an
// item written `pub` is one a user of the crate reaches: the list of `pub`
// declarations is the public surface. `tests/registry/public_api.txt` holds
// it, one line per declaration (file, the items it sits in, its head up to
// its signature), so that an item made public by accident fails here, and
// one made public on purpose is added there (`CATERVA_REGENERATE_PUBLIC_API=1
// cargo test --test registry` rewrites the file). The C ABI (`src/ffi/`, held
// by `tests/header.rs`) and the test hooks (`src/testing/`, feature
// `testing`, hidden from the docs) are not part of it.

/// The list of public declarations, relative to the crate root.
const PUBLIC_API: &str = "tests/registry/public_api.txt";
/// Folders under `src/` whose `pub` items are not the Rust API.
const NOT_RUST_API: [&str; 2] = ["src/ffi/", "src/testing/"];

/// The `pub` declarations of one Rust source: `context\thead` for each, where
/// `context` names the items it sits in (`impl Array`, `struct Params`, `mod
/// x`) and `head` is the declaration up to its signature (`pub fn name`,
/// `pub struct Name`, `pub field`, a whole `pub use ...;`). Declarations
/// inside function bodies and `mod tests` are left out.
fn pub_items(src: &str) -> Vec<String> {
    let text = blank_c_like(src, true);
    let b = text.as_bytes();
    let mut out = Vec::new();
    // Each open brace's context: `None` for a body (a function's, a
    // match's), whose contents are no API.
    let mut stack: Vec<Option<String>> = Vec::new();
    // Where the text that heads the next brace starts.
    let mut head_from = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                stack.push(context_of(&text[head_from..i]));
                head_from = i + 1;
            }
            b'}' => {
                stack.pop();
                head_from = i + 1;
            }
            b';' => head_from = i + 1,
            b'p' if text[i..].starts_with("pub")
                && (i == 0 || !is_ident(b[i - 1]))
                && b.get(i + 3).is_some_and(|c| !is_ident(*c)) =>
            {
                let after = skip_ws(b, i + 3);
                if b.get(after) != Some(&b'(') && stack.iter().all(|c| c.as_deref().is_some_and(|c| c != "mod tests")) {
                    let end = if text[after..].starts_with("use") && b.get(after + 3).is_some_and(|c| !is_ident(*c)) {
                        text[i..].find(';').map_or(b.len(), |k| i + k + 1)
                    } else {
                        decl_end(b, after)
                    };
                    let head = text[i..end].split_whitespace().collect::<Vec<_>>().join(" ");
                    let context = stack.iter().flatten().cloned().collect::<Vec<_>>().join(" / ");
                    out.push(format!("{context}\t{head}"));
                }
                i += 3;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Where a declaration's head ends: at its signature (`(`, `<`, `{`, `;`,
/// `=`, or a `:` that is not half of `::`).
fn decl_end(b: &[u8], from: usize) -> usize {
    let mut k = from;
    while k < b.len() {
        match b[k] {
            b'(' | b'<' | b'{' | b';' | b'=' => return k,
            b':' if b.get(k + 1) == Some(&b':') => k += 1,
            b':' => return k,
            _ => {}
        }
        k += 1;
    }
    k
}

/// The context a `{` opens, from the text that heads it: `impl X` (of `impl
/// X`, `impl<T> Trait for X<T>`, without generics), `struct X`, `enum X`,
/// `union X`, `trait X`, `mod x`; `None` for anything else (a body).
fn context_of(head: &str) -> Option<String> {
    let words: Vec<&str> = head.split_whitespace().collect();
    let kw = ["impl", "struct", "enum", "union", "trait", "mod"];
    let at = words.iter().rposition(|w| kw.iter().any(|k| *w == *k || w.starts_with(&format!("{k}<"))))?;
    // A `fn` after the keyword: the brace is that function's body.
    if words[at..].iter().any(|w| *w == "fn" || w.starts_with("fn(")) {
        return None;
    }
    let kind = kw.iter().find(|k| words[at] == **k || words[at].starts_with(&format!("{k}<")))?;
    let rest = words[at + 1..].join(" ");
    let rest = if *kind == "impl" {
        // `impl<T> X<T> where ...`: drop the generics of `impl<..>` (already
        // in words[at]), then take what follows `for` if any.
        let rest = rest.split(" where ").next().unwrap_or_default();
        rest.rsplit(" for ").next().unwrap_or_default().to_owned()
    } else {
        rest
    };
    let name: String = rest.chars().take_while(|c| is_ident(*c as u8) || *c == ':').collect();
    (!name.is_empty()).then(|| format!("{kind} {name}"))
}

/// Every public declaration of the Rust API: `file\tcontext\thead`, sorted.
fn public_api(rust: &BTreeMap<String, String>) -> Vec<String> {
    let mut all = Vec::new();
    for (file, src) in rust {
        if NOT_RUST_API.iter().any(|d| file.starts_with(d)) {
            continue;
        }
        all.extend(pub_items(src).into_iter().map(|item| format!("{file}\t{item}")));
    }
    all.sort();
    all
}

#[test]
fn the_public_rust_items_are_the_listed_api() {
    let now = public_api(&sources().rust).join("\n") + "\n";
    let path = root().join(PUBLIC_API);
    if std::env::var_os("CATERVA_REGENERATE_PUBLIC_API").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let listed = std::fs::read_to_string(&path).unwrap_or_default();
    let (listed, now): (BTreeSet<&str>, BTreeSet<&str>) = (listed.lines().collect(), now.lines().collect());
    let added: Vec<_> = now.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&now).collect();
    assert!(
        added.is_empty() && gone.is_empty(),
        "the public Rust items differ from {PUBLIC_API}:\n  new (made public by accident? else list them): {added:#?}\n  \
         gone (an API change: remove them from the list): {gone:#?}\n\
         (CATERVA_REGENERATE_PUBLIC_API=1 cargo test --test registry rewrites the list)"
    );
}

#[test]
fn the_public_item_scan_sees_what_is_public() {
    let src = r#"
pub struct Params { pub itemsize: usize, pub user: bool, pub(crate) hidden: u8, shape: Vec<i64> }
pub enum Kind { A, B }
impl<T: Clone> std::fmt::Debug for Wrapper<T> { fn fmt() {} }
impl Array {
    /// pub fn in_doc() {}
    pub fn get<'a>(&'a self, s: &str) -> char { let x = "pub fn in_string"; pub fn nested() {} 'c' }
    pub(crate) fn crate_only() {}
    pub(super) fn parent_only() {}
    pub const MAX: usize = 3;
}
pub use a::{b, c as d};
pub mod inner { pub fn f() {} }
#[cfg(test)]
mod tests { pub fn helper() {} }
"#;
    assert_eq!(
        pub_items(src),
        [
            "\tpub struct Params",
            "struct Params\tpub itemsize",
            "struct Params\tpub user",
            "\tpub enum Kind",
            "impl Array\tpub fn get",
            "impl Array\tpub const MAX",
            "\tpub use a::{b, c as d};",
            "\tpub mod inner",
            "mod inner\tpub fn f",
        ]
    );
}
