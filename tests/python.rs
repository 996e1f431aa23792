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

use std::process::Command;

#[test]
fn pytest_suite() {
    let root = common::manifest_dir();
    let python = common::pycaterva_python();
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .current_dir(&root)
        .status()
        .expect("pytest runs");
    assert!(status.success(), "the Python test suite failed");
}
