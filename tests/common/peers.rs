//! Helpers for the tests that exchange arrays with the Python peers
//! (python-caterva, python-blosc2) through `tests/interop/peer.py`. Plain
//! std: the command-line tool's tests include this file too (through
//! cli/tests/common/mod.rs), from another package of the workspace.
// Each test crate uses a different subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root (the library's manifest directory), from the
/// tests of any package of the workspace.
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().find(|d| d.join("tests").join("interop").join("peer.py").is_file()).unwrap_or(here).to_path_buf()
}

/// A fresh directory per process, so concurrent runs of the suite do not collide.
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed ({}):\n{text}", out.status);
    text
}

/// The Python of the virtual environment holding `kind` ("caterva" or
/// "blosc2"), which `.ci/setup` creates under `target/interop/` (override
/// with `CATERVA_INTEROP_CATERVA_PYTHON` / `CATERVA_INTEROP_BLOSC2_PYTHON`).
pub fn python(kind: &str) -> PathBuf {
    let var = format!("CATERVA_INTEROP_{}_PYTHON", kind.to_uppercase());
    let p = std::env::var_os(&var).map_or_else(
        || repo_root().join("target").join("interop").join(kind).join("bin").join("python"),
        PathBuf::from,
    );
    assert!(p.exists(), "{} is missing: run `bash .ci/setup` (or set {var})", p.display());
    p
}

/// Run `tests/interop/peer.py KIND MODE DIR` with that peer's Python
/// (`mode` "write": it writes arrays and their specs into `dir`; "check":
/// it reads the ones described there) and return its output.
pub fn peer(kind: &str, mode: &str, dir: &Path) -> String {
    let script = repo_root().join("tests").join("interop").join("peer.py");
    let out = run(Command::new(python(kind)).arg(script).args([kind, mode]).arg(dir), &format!("{kind} {mode}"));
    println!("{out}");
    out
}

/// What `peer.py` calls a spec: an array's description beside its bytes.
#[derive(Debug, Default)]
pub struct Spec {
    pub path: String,
    pub contiguous: bool,
    pub shape: Vec<i64>,
    pub chunks: Vec<i32>,
    pub blocks: Vec<i32>,
    pub itemsize: usize,
    pub dtype: Option<String>,
    pub meta: Vec<(String, Vec<u8>)>,
    pub vlmeta: Vec<(String, Vec<u8>)>,
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes of a lowercase hex string.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// `key v0 v1 ...`, a spec line.
pub fn join<T: ToString>(key: &str, v: &[T]) -> String {
    std::iter::once(key.to_string()).chain(v.iter().map(ToString::to_string)).collect::<Vec<_>>().join(" ")
}

/// Describe an array for peer.py: `NAME.spec` and its C-order bytes `NAME.bin` in `dir`.
pub fn write_spec(dir: &Path, name: &str, s: &Spec, data: &[u8]) {
    let mut t = format!("path {}\ncontiguous {}\n", s.path, u8::from(s.contiguous));
    t += &format!("{}\n{}\n{}\n", join("shape", &s.shape), join("chunks", &s.chunks), join("blocks", &s.blocks));
    t += &format!("itemsize {}\n", s.itemsize);
    if let Some(d) = &s.dtype {
        t += &format!("dtype {d}\n");
    }
    for (k, v) in &s.meta {
        t += &format!("meta {k} {}\n", hex(v));
    }
    for (k, v) in &s.vlmeta {
        t += &format!("vlmeta {k} {}\n", hex(v));
    }
    std::fs::write(dir.join(format!("{name}.spec")), t).unwrap();
    std::fs::write(dir.join(format!("{name}.bin")), data).unwrap();
}

/// Every array described in `dir` (by peer.py or [`write_spec`]): name, spec and bytes, by name.
pub fn read_specs(dir: &Path) -> Vec<(String, Spec, Vec<u8>)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().strip_suffix(".spec").map(str::to_owned))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(format!("{name}.spec"))).unwrap();
            let mut s = Spec::default();
            for line in text.lines() {
                let parts: Vec<&str> = line.split_whitespace().collect();
                let nums = |v: &[&str]| -> Vec<i64> { v.iter().map(|x| x.parse().unwrap()).collect() };
                match parts.as_slice() {
                    ["path", p] => s.path = (*p).to_owned(),
                    ["contiguous", c] => s.contiguous = *c == "1",
                    ["shape", rest @ ..] => s.shape = nums(rest),
                    ["chunks", rest @ ..] => s.chunks = nums(rest).into_iter().map(|x| x as i32).collect(),
                    ["blocks", rest @ ..] => s.blocks = nums(rest).into_iter().map(|x| x as i32).collect(),
                    ["itemsize", n] => s.itemsize = n.parse().unwrap(),
                    ["dtype", d] => s.dtype = Some((*d).to_owned()),
                    ["meta", k, v] => s.meta.push(((*k).to_owned(), unhex(v))),
                    ["vlmeta", k, v] => s.vlmeta.push(((*k).to_owned(), unhex(v))),
                    other => panic!("{name}.spec: cannot parse {other:?}"),
                }
            }
            let data = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
            (name, s, data)
        })
        .collect()
}

/// A `.npy` file: its dtype description (as NumPy writes it, spaces
/// removed), shape and data bytes.
pub fn npy(path: &Path) -> (String, Vec<i64>, Vec<u8>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY");
    let (hlen, at) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize, 12)
    };
    let h = std::str::from_utf8(&b[at..at + hlen]).unwrap();
    let descr = h.split("'descr': ").nth(1).unwrap().split(", 'fortran_order'").next().unwrap();
    let descr = descr.strip_prefix('\'').and_then(|d| d.strip_suffix('\'')).unwrap_or(descr);
    assert!(h.contains("'fortran_order': False"));
    let shape_s = h.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
    let shape = shape_s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    (descr.replace(' ', ""), shape, b[at + hlen..].to_vec())
}

/// Run `tests/blz/<script>` with the Python of venv `venv` on `args` and
/// then `dir`; print and return its output (a failure panics).
pub fn blz_peer(venv: &str, script: &str, args: &[&str], dir: &Path) -> String {
    let path = repo_root().join("tests").join("blz").join(script);
    let out = run(Command::new(python(venv)).arg(path).args(args).arg(dir), &format!("{script} {args:?}"));
    println!("{out}");
    out
}
