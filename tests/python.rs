//! The Python package (python/): builds it into the virtual environment
//! `.ci/setup` makes (target/interop/pycaterva: maturin, NumPy 2, pytest,
//! Dask) with `maturin develop --release`, then runs its pytest suite
//! (python/tests/), so the README's `cargo test` covers it. The suite
//! exchanges files with python-caterva 0.7.3 and python-blosc2 through their
//! own venvs (target/interop/caterva, target/interop/blosc2).
//!
//! `CATERVA_PYTHON_VENV` overrides the venv; `CATERVA_DASK_BYTES` sets the
//! size of the Dask multi-process write (default 64 MiB; 1 GiB by hand).

mod common;

use std::path::PathBuf;
use std::process::Command;

#[test]
fn pytest_suite() {
    let root = common::manifest_dir();
    let venv = std::env::var_os("CATERVA_PYTHON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/interop/pycaterva"));
    let python = venv.join("bin/python");
    assert!(python.exists(), "{} is missing: run .ci/setup", python.display());
    // The distribution was named `caterva` before it became `caterva-rs`; a
    // develop install under the old name left a caterva.pth (possibly naming
    // another checkout) that would shadow this one: remove it.
    let old = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; m.distribution('caterva')"])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("python runs");
    if old.success() {
        let status = Command::new(&python)
            .args(["-m", "pip", "uninstall", "-y", "-q", "--disable-pip-version-check", "caterva"])
            .status()
            .expect("pip runs");
        assert!(status.success(), "pip uninstall caterva (the old distribution name) failed");
    }
    let status = Command::new(venv.join("bin/maturin"))
        .args(["develop", "--release", "-q", "-m"])
        .arg(root.join("python/Cargo.toml"))
        .env("VIRTUAL_ENV", &venv)
        .status()
        .expect("maturin runs");
    assert!(status.success(), "maturin develop failed");
    // The suite must test this tree's package, whatever else the venv holds.
    let out = Command::new(&python)
        .args(["-c", "import os, caterva; print(os.path.realpath(caterva.__file__))"])
        .current_dir("/")
        .output()
        .expect("python runs");
    assert!(out.status.success(), "caterva does not import: {}", String::from_utf8_lossy(&out.stderr));
    let imported = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let expected = root.join("python/caterva/__init__.py").canonicalize().expect("python/caterva/__init__.py exists");
    assert_eq!(imported, expected, "the venv imports caterva from elsewhere than this tree");
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .current_dir(&root)
        .status()
        .expect("pytest runs");
    assert!(status.success(), "the Python test suite failed");
}
