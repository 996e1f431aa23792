//! `caterva._caterva`: the native half of the Python package `caterva`.
//!
//! A thin layer over the safe Rust API of the core ([`caterva::Array`]):
//! one class, `Array`, whose methods take and return plain Python values
//! (lists of ints, bytes, objects exporting a byte buffer). NumPy, indexing,
//! python-caterva's API and Dask live in the Python half (`caterva/*.py`).
//!
//! - Every call that reads, writes, compresses or decompresses runs with the
//!   GIL released (`Python::allow_threads`): other Python threads run, and
//!   several threads may read one array at once.
//! - The array sits behind a read-write lock: reads share it, changes take
//!   it alone; `close()` drops the array (its files stay).
//! - Changes of a persisted array go through [`caterva::Array::exclusive`]
//!   (slice writes through [`caterva::Array::set_slice_shared`], which
//!   compresses whole chunks before taking the lock): under the array's lock
//!   file, after reloading what other handles (other processes: Dask
//!   workers) committed. So handles in many processes write one array safely.
//! - Errors are Python exceptions carrying the library's message:
//!   `ValueError` (bad arguments, indexes), `FileNotFoundError`/`OSError`
//!   (storage, I/O), `caterva.CatervaError` (a `RuntimeError`: bad format,
//!   corruption, c-blosc2 failures), `caterva.ChangedError` (a
//!   `CatervaError`: another handle changed the array; `refresh()`),
//!   `caterva.UnsupportedError` (a `CatervaError`: data this build cannot
//!   decode, a codec or filter plugin or a newer c-blosc2's format; not
//!   damage).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use caterva::{
    Array as Core, CParams, Codec, Config, Context, Durability, ErrorKind, Filter, Metalayer, Params, StorageParams,
};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(_caterva, CatervaError, PyRuntimeError, "A caterva failure: bad format, corruption, or c-blosc2.");
create_exception!(
    _caterva,
    ChangedError,
    CatervaError,
    "Another handle or process changed the array since this one opened, wrote or refreshed it: \
     nothing was read or written; call refresh() and try again. Never a sign of damage."
);

create_exception!(
    _caterva,
    UnsupportedError,
    CatervaError,
    "The data uses what this build cannot decode: a codec or filter plugin c-blosc2 is built here without \
     (BYTEDELTA, ZFP, ...), or a newer c-blosc2's format. Not damage: another reader may read it."
);

/// The library's error as a Python exception, with its message, by its
/// kind (and an I/O error's own kind): never by its text.
fn to_py(e: caterva::Error) -> PyErr {
    let msg = e.to_string();
    let missing = matches!(e, caterva::Error::Io { kind: std::io::ErrorKind::NotFound, .. });
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::InvalidIndex | ErrorKind::NullPointer => PyValueError::new_err(msg),
        ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
        ErrorKind::Io if missing => PyFileNotFoundError::new_err(msg),
        ErrorKind::InvalidStorage | ErrorKind::Io => PyOSError::new_err(msg),
        ErrorKind::Changed => ChangedError::new_err(msg),
        ErrorKind::Unsupported => UnsupportedError::new_err(msg),
        _ => CatervaError::new_err(msg),
    }
}

type PyRes<T> = PyResult<T>;

/// Compression and threads, as the Python keyword arguments give them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Settings {
    codec: u8,
    clevel: u8,
    filters: [u8; 6],
    filters_meta: [u8; 6],
    nthreads: usize,
    usedict: bool,
    checksums: bool,
    durability: Durability,
}

/// One context per distinct settings, kept for the process's life: a
/// context owns a thread pool, and Python code makes arrays by the thousand.
/// Contexts survive `fork()` (the core starts a child's pool anew).
static CONTEXTS: Mutex<Option<HashMap<Settings, Context>>> = Mutex::new(None);

fn context(s: Settings) -> PyRes<Context> {
    let mut g = CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    let map = g.get_or_insert_with(HashMap::new);
    if let Some(c) = map.get(&s) {
        return Ok(c.clone());
    }
    let cparams = CParams {
        codec: Codec::from_id(s.codec),
        clevel: s.clevel,
        use_dict: s.usedict,
        filters: s.filters.map(Filter::from_id),
        filters_meta: s.filters_meta,
        ..CParams::default()
    };
    let config = Config {
        cparams,
        nthreads: s.nthreads.max(1),
        checksums: s.checksums,
        durability: s.durability,
        ..Config::default()
    };
    let c = Context::new(config).map_err(to_py)?;
    map.insert(s, c.clone());
    Ok(c)
}

/// The settings in `kw` (keys codec, clevel, filters, filtersmeta, nthreads,
/// usedict, checksums, durability; the Python layer fills in defaults).
fn settings(kw: &Bound<'_, PyDict>) -> PyRes<Settings> {
    fn get<'py, T: FromPyObject<'py>>(kw: &Bound<'py, PyDict>, k: &str, d: T) -> PyRes<T> {
        match kw.get_item(k)? {
            Some(v) if !v.is_none() => v.extract(),
            _ => Ok(d),
        }
    }
    // What the caller does not name is the core's proposal (`caterva::propose_cparams`),
    // the same as C's `caterva_propose_config` and the command line's.
    let proposed = caterva::propose_cparams();
    let filters: Vec<u8> = match kw.get_item("filters")? {
        Some(v) if !v.is_none() => v.extract()?,
        _ => proposed.filters.iter().filter(|&&f| f != Filter::NoFilter).map(|f| f.id()).collect(),
    };
    let fmeta: Vec<u8> = get(kw, "filtersmeta", vec![0; filters.len()])?;
    if filters.len() > 6 || fmeta.len() > filters.len() {
        return Err(PyValueError::new_err(format!(
            "at most 6 filters, and no more filtersmeta than filters (got {} and {})",
            filters.len(),
            fmeta.len()
        )));
    }
    // As python-caterva: the pipeline is right-aligned in the 6 slots.
    let mut f = [0u8; 6];
    let mut m = [0u8; 6];
    let off = 6 - filters.len();
    f[off..].copy_from_slice(&filters);
    m[off..off + fmeta.len()].copy_from_slice(&fmeta);
    Ok(Settings {
        codec: get(kw, "codec", proposed.codec.id())?,
        clevel: get(kw, "clevel", proposed.clevel)?,
        filters: f,
        filters_meta: m,
        nthreads: get(kw, "nthreads", 1usize)?,
        usedict: get(kw, "usedict", false)?,
        checksums: get(kw, "checksums", false)?,
        durability: get(kw, "durability", "full".to_owned())?.parse().map_err(to_py)?,
    })
}

/// Chunks, blocks, location and metalayers in `kw`.
fn storage(kw: &Bound<'_, PyDict>) -> PyRes<StorageParams> {
    let chunkshape: Vec<i32> = kw.get_item("chunks")?.map(|v| v.extract()).transpose()?.unwrap_or_default();
    let blockshape: Vec<i32> = kw.get_item("blocks")?.map(|v| v.extract()).transpose()?.unwrap_or_default();
    let urlpath: Option<String> = match kw.get_item("urlpath")? {
        Some(v) if !v.is_none() => Some(v.extract()?),
        _ => None,
    };
    let contiguous: bool = match kw.get_item("contiguous")? {
        Some(v) if !v.is_none() => v.extract()?,
        _ => false,
    };
    let metalayers: Vec<(String, Vec<u8>)> = match kw.get_item("meta")? {
        Some(v) if !v.is_none() => v.extract()?,
        _ => Vec::new(),
    };
    let metalayers = metalayers.into_iter().map(|(name, content)| Metalayer { name, content }).collect();
    Ok(StorageParams { chunkshape, blockshape, contiguous, urlpath, metalayers })
}

/// A byte buffer's address and length, to use with the GIL released: the
/// buffer object (which the caller keeps) pins the memory meanwhile.
#[derive(Clone, Copy)]
struct Raw {
    ptr: usize,
    len: usize,
}

impl Raw {
    /// A read-only view of `buf`, which must be C-contiguous.
    fn of(buf: &PyBuffer<u8>) -> PyRes<Raw> {
        if !buf.is_c_contiguous() {
            return Err(PyValueError::new_err("the buffer is not C-contiguous"));
        }
        Ok(Raw { ptr: buf.buf_ptr() as usize, len: buf.len_bytes() })
    }
    /// As [`Raw::of`], for a buffer to write into.
    fn of_mut(buf: &PyBuffer<u8>) -> PyRes<Raw> {
        if buf.readonly() {
            return Err(PyValueError::new_err("the output buffer is read-only"));
        }
        Raw::of(buf)
    }
    /// # Safety
    /// The buffer must still be exported (its `PyBuffer` alive).
    unsafe fn slice<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller keeps the exported buffer alive; it spans `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
    /// # Safety
    /// As [`Raw::slice`], and the buffer is writable and nothing else uses it.
    unsafe fn slice_mut<'a>(self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as above; `of_mut` checked it is writable.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
    }
}

/// An array of the core, behind a read-write lock. `None` once closed.
#[pyclass(frozen, module = "caterva._caterva", name = "Array")]
struct PyArray {
    inner: RwLock<Option<Core>>,
}

fn closed() -> PyErr {
    PyValueError::new_err("the array is closed")
}

impl PyArray {
    fn new(a: Core) -> PyArray {
        PyArray { inner: RwLock::new(Some(a)) }
    }
    fn read(&self) -> RwLockReadGuard<'_, Option<Core>> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }
    fn write(&self) -> RwLockWriteGuard<'_, Option<Core>> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
    /// `f` on the array, GIL released.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&Core) -> caterva::Result<T> + Send) -> PyRes<T> {
        py.allow_threads(|| {
            let g = self.read();
            let a = g.as_ref().ok_or_else(closed)?;
            f(a).map_err(to_py)
        })
    }
    /// `f` changing the array, GIL released; for a persisted array under
    /// its lock, brought up to date first ([`Core::exclusive`]).
    fn change<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Core) -> caterva::Result<T> + Send) -> PyRes<T> {
        py.allow_threads(|| {
            let mut g = self.write();
            let a = g.as_mut().ok_or_else(closed)?;
            a.exclusive(f).map(|(v, _)| v).map_err(to_py)
        })
    }
}

#[pymethods]
impl PyArray {
    /// Shape, as a list.
    #[getter]
    fn shape(&self) -> PyRes<Vec<i64>> {
        Ok(self.read().as_ref().ok_or_else(closed)?.shape().to_vec())
    }
    /// Chunk shape.
    #[getter]
    fn chunks(&self) -> PyRes<Vec<i32>> {
        Ok(self.read().as_ref().ok_or_else(closed)?.geometry().chunkshape().to_vec())
    }
    /// Block shape.
    #[getter]
    fn blocks(&self) -> PyRes<Vec<i32>> {
        Ok(self.read().as_ref().ok_or_else(closed)?.geometry().blockshape().to_vec())
    }
    /// Bytes per item.
    #[getter]
    fn itemsize(&self) -> PyRes<usize> {
        Ok(self.read().as_ref().ok_or_else(closed)?.itemsize())
    }
    /// The dtype string of the `b2nd` metalayer, or None.
    #[getter]
    fn dtype(&self) -> PyRes<Option<String>> {
        Ok(self.read().as_ref().ok_or_else(closed)?.dtype())
    }
    /// Whether the array was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.read().is_none()
    }

    /// How the array is stored and compressed, as a dict.
    fn info<'py>(&self, py: Python<'py>) -> PyRes<Bound<'py, PyDict>> {
        let i = self.with(py, |a| Ok(a.info()))?;
        let d = PyDict::new(py);
        d.set_item("contiguous", i.contiguous)?;
        d.set_item("urlpath", i.urlpath)?;
        d.set_item("codec", i.cparams.codec.id())?;
        d.set_item("clevel", i.cparams.clevel)?;
        d.set_item("filters", i.cparams.filters.map(Filter::id).to_vec())?;
        d.set_item("filtersmeta", i.cparams.filters_meta.to_vec())?;
        d.set_item("usedict", i.cparams.use_dict)?;
        d.set_item("nbytes", i.nbytes)?;
        d.set_item("cbytes", i.cbytes)?;
        d.set_item("nchunks", i.nchunks)?;
        d.set_item("metalayers", i.metalayers)?;
        d.set_item("vlmetalayers", i.vlmetalayers)?;
        d.set_item("checksums", i.checksums)?;
        d.set_item("nthreads", self.with(py, |a| Ok(a.context().nthreads()))?)?;
        Ok(d)
    }

    /// Read `[start, stop)` into `out`, a C-order byte buffer of the region's size.
    fn get_slice(&self, py: Python<'_>, start: Vec<i64>, stop: Vec<i64>, out: PyBuffer<u8>) -> PyRes<()> {
        let raw = Raw::of_mut(&out)?;
        let shape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
        // SAFETY: `out` stays exported until this returns; the Python layer
        // hands a fresh array nothing else uses.
        self.with(py, move |a| a.get_slice_buffer(&start, &stop, unsafe { raw.slice_mut() }, &shape))?;
        drop(out);
        Ok(())
    }

    /// Write `data` (C order, the region's shape) to `[start, stop)`.
    fn set_slice(&self, py: Python<'_>, start: Vec<i64>, stop: Vec<i64>, data: PyBuffer<u8>) -> PyRes<()> {
        let raw = Raw::of(&data)?;
        let shape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
        // Whole chunks are compressed before the array's lock is taken
        // (`set_slice_shared`); other regions are built under it.
        py.allow_threads(|| {
            let mut g = self.write();
            let a = g.as_mut().ok_or_else(closed)?;
            // SAFETY: `data` stays exported until this returns.
            a.set_slice_shared(&start, &stop, unsafe { raw.slice() }, &shape).map_err(to_py)
        })?;
        drop(data);
        Ok(())
    }

    /// Read the outer product of `selection` (one index list per axis) into `out`.
    fn get_orthogonal(&self, py: Python<'_>, selection: Vec<Vec<i64>>, out: PyBuffer<u8>) -> PyRes<()> {
        let raw = Raw::of_mut(&out)?;
        let shape: Vec<i64> = selection.iter().map(|s| s.len() as i64).collect();
        self.with(py, move |a| {
            let sel: Vec<&[i64]> = selection.iter().map(Vec::as_slice).collect();
            // SAFETY: as in `get_slice`.
            a.get_orthogonal_selection(&sel, unsafe { raw.slice_mut() }, &shape)
        })?;
        drop(out);
        Ok(())
    }

    /// Write `data` to the outer product of `selection`.
    fn set_orthogonal(&self, py: Python<'_>, selection: Vec<Vec<i64>>, data: PyBuffer<u8>) -> PyRes<()> {
        let raw = Raw::of(&data)?;
        let shape: Vec<i64> = selection.iter().map(|s| s.len() as i64).collect();
        self.change(py, move |a| {
            let sel: Vec<&[i64]> = selection.iter().map(Vec::as_slice).collect();
            // SAFETY: as in `set_slice`.
            a.set_orthogonal_selection(&sel, unsafe { raw.slice() }, &shape)
        })?;
        drop(data);
        Ok(())
    }

    /// The whole array, C order, as bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyRes<Bound<'py, PyBytes>> {
        let v = self.with(py, Core::to_vec)?;
        Ok(PyBytes::new(py, &v))
    }

    /// A contiguous frame holding the array.
    fn to_cframe<'py>(&self, py: Python<'py>) -> PyRes<Bound<'py, PyBytes>> {
        let v = self.with(py, Core::to_cframe)?;
        Ok(PyBytes::new(py, &v))
    }

    /// A copy with the storage and compression of `kw`.
    fn copy(&self, py: Python<'_>, kw: &Bound<'_, PyDict>) -> PyRes<PyArray> {
        let (ctx, st) = (context(settings(kw)?)?, storage(kw)?);
        self.with(py, move |a| a.copy(&ctx, &st)).map(PyArray::new)
    }

    /// A new array holding `[start, stop)`, with the storage and compression of `kw`.
    fn get_slice_array(
        &self,
        py: Python<'_>,
        start: Vec<i64>,
        stop: Vec<i64>,
        kw: &Bound<'_, PyDict>,
    ) -> PyRes<PyArray> {
        let (ctx, st) = (context(settings(kw)?)?, storage(kw)?);
        self.with(py, move |a| a.get_slice(&ctx, &start, &stop, &st)).map(PyArray::new)
    }

    /// Write a copy to `urlpath`.
    fn save(&self, py: Python<'_>, urlpath: String) -> PyRes<()> {
        self.with(py, move |a| a.save(&urlpath))
    }

    /// Change the shape; new items are zeros.
    #[pyo3(signature = (shape, start=None))]
    fn resize(&self, py: Python<'_>, shape: Vec<i64>, start: Option<Vec<i64>>) -> PyRes<()> {
        self.change(py, move |a| a.resize(&shape, start.as_deref()))
    }

    /// Append `data` (C order) along `axis`.
    fn append(&self, py: Python<'_>, data: PyBuffer<u8>, axis: i64) -> PyRes<()> {
        let raw = Raw::of(&data)?;
        // SAFETY: `data` stays exported until this returns.
        self.change(py, move |a| a.append(unsafe { raw.slice() }, axis))?;
        drop(data);
        Ok(())
    }

    /// Insert `data` (C order) along `axis` before index `at`.
    fn insert(&self, py: Python<'_>, data: PyBuffer<u8>, axis: i64, at: i64) -> PyRes<()> {
        let raw = Raw::of(&data)?;
        // SAFETY: `data` stays exported until this returns.
        self.change(py, move |a| a.insert(unsafe { raw.slice() }, axis, at))?;
        drop(data);
        Ok(())
    }

    /// Delete `len` items from `start` along `axis`.
    fn delete(&self, py: Python<'_>, axis: i64, start: i64, len: i64) -> PyRes<()> {
        self.change(py, move |a| a.delete(axis, start, len))
    }

    /// Drop the axes of length 1.
    fn squeeze(&self, py: Python<'_>) -> PyRes<()> {
        self.change(py, Core::squeeze)
    }

    /// Record a NumPy dtype string in the `b2nd` metalayer.
    fn set_dtype(&self, py: Python<'_>, dtype: String) -> PyRes<()> {
        self.change(py, move |a| a.set_dtype(&dtype))
    }

    /// Names of the fixed-size metalayers.
    fn meta_names(&self, py: Python<'_>) -> PyRes<Vec<String>> {
        self.with(py, |a| Ok(a.info().metalayers))
    }
    /// Whether a metalayer exists.
    fn meta_exists(&self, py: Python<'_>, name: String) -> PyRes<bool> {
        self.with(py, move |a| Ok(a.meta_exists(&name)))
    }
    /// A metalayer's content.
    fn meta_get<'py>(&self, py: Python<'py>, name: String) -> PyRes<Bound<'py, PyBytes>> {
        let v = self.with(py, move |a| a.meta_get(&name))?;
        Ok(PyBytes::new(py, &v))
    }
    /// Replace a metalayer's content (same length).
    fn meta_update(&self, py: Python<'_>, name: String, content: Vec<u8>) -> PyRes<()> {
        self.change(py, move |a| a.meta_update(&name, &content))
    }
    /// Names of the variable-length metalayers (the checksum table's left out).
    fn vlmeta_names(&self, py: Python<'_>) -> PyRes<Vec<String>> {
        self.with(py, |a| Ok(a.info().vlmetalayers.into_iter().filter(|n| n != "caterva.xxh3").collect()))
    }
    /// Whether a vlmetalayer exists.
    fn vlmeta_exists(&self, py: Python<'_>, name: String) -> PyRes<bool> {
        self.with(py, move |a| a.vlmeta_exists(&name))
    }
    /// A vlmetalayer's content.
    fn vlmeta_get<'py>(&self, py: Python<'py>, name: String) -> PyRes<Bound<'py, PyBytes>> {
        let v = self.with(py, move |a| a.vlmeta_get(&name))?;
        Ok(PyBytes::new(py, &v))
    }
    /// Add or replace a vlmetalayer.
    fn vlmeta_set(&self, py: Python<'_>, name: String, content: Vec<u8>) -> PyRes<()> {
        self.change(py, move |a| {
            if a.vlmeta_exists(&name)? {
                a.vlmeta_update(&name, &content)
            } else {
                a.vlmeta_add(&name, &content)
            }
        })
    }

    /// What this handle's writes survive after a crash: "full", "normal" or "process"
    /// ([`caterva::Durability`]).
    #[getter]
    fn durability(&self) -> PyRes<&'static str> {
        Ok(self.read().as_ref().ok_or_else(closed)?.durability().name())
    }
    /// Set it for this handle's next writes.
    #[setter]
    fn set_durability(&self, py: Python<'_>, level: &str) -> PyRes<()> {
        let level: Durability = level.parse().map_err(to_py)?;
        // Waits for a write of another thread to finish, GIL released.
        py.allow_threads(|| {
            self.write().as_mut().ok_or_else(closed)?.set_durability(level);
            Ok(())
        })
    }

    /// Whether the array keeps per-chunk checksums.
    fn has_checksums(&self) -> PyRes<bool> {
        Ok(self.read().as_ref().ok_or_else(closed)?.has_checksums())
    }
    /// Start keeping per-chunk checksums.
    fn enable_checksums(&self, py: Python<'_>) -> PyRes<()> {
        self.change(py, Core::enable_checksums)
    }
    /// Check every chunk and the checksum table: the problems, as
    /// `(chunk, reason)` pairs (chunk -1: the table).
    fn verify(&self, py: Python<'_>) -> PyRes<Vec<(i64, String)>> {
        let v = self.with(py, |a| a.verify(&mut |_, _| {}))?;
        Ok(v.into_iter().map(|p| (p.nchunk, p.error.to_string())).collect())
    }

    /// Remove the chunk objects of an array on an object store that its
    /// index does not name and that are at least `older_than` seconds old
    /// (what writers killed mid-write left); how many.
    fn remove_orphans(&self, py: Python<'_>, older_than: f64) -> PyRes<usize> {
        let age = std::time::Duration::try_from_secs_f64(older_than).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err("older_than must be a finite number of seconds >= 0")
        })?;
        self.with(py, |a| a.remove_orphans(age))
    }

    /// Reload what other handles committed since; whether anything changed.
    fn refresh(&self, py: Python<'_>) -> PyRes<bool> {
        py.allow_threads(|| {
            let mut g = self.write();
            g.as_mut().ok_or_else(closed)?.refresh().map_err(to_py)
        })
    }

    /// Reduce along `axes` with `op` ("sum", "mean", "nanstd"…; see
    /// `caterva::Reduce`), chunk by chunk in the core: `(shape, dtype, bytes)`
    /// of the result, C order, native byte order.
    #[pyo3(signature = (op, axes, ddof=0.0, max_memory=None))]
    fn reduce<'py>(
        &self,
        py: Python<'py>,
        op: &str,
        axes: Vec<usize>,
        ddof: f64,
        max_memory: Option<usize>,
    ) -> PyRes<(Vec<i64>, String, Bound<'py, PyBytes>)> {
        let op =
            caterva::Reduce::from_name(op).ok_or_else(|| PyValueError::new_err(format!("unknown reduction '{op}'")))?;
        let opts = caterva::ReduceOptions { ddof, keepdims: false, max_memory };
        let r = self.with(py, move |a| a.reduce(op, &axes, &opts))?;
        Ok((r.shape, r.dtype, PyBytes::new(py, &r.data)))
    }

    /// Let the array go (its files stay). Closing twice is allowed.
    fn close(&self, py: Python<'_>) {
        let a = py.allow_threads(|| self.write().take());
        py.allow_threads(move || drop(a));
    }
}

/// A new array: `kind` is "zeros", "uninit", "full" (`data`: one item) or
/// "buffer" (`data`: the items, C order).
#[pyfunction]
#[pyo3(signature = (kind, shape, itemsize, dtype, kw, data=None))]
fn create(
    py: Python<'_>,
    kind: &str,
    shape: Vec<i64>,
    itemsize: usize,
    dtype: Option<String>,
    kw: &Bound<'_, PyDict>,
    data: Option<PyBuffer<u8>>,
) -> PyRes<PyArray> {
    let ctx = context(settings(kw)?)?;
    let st = storage(kw)?;
    let params = Params { itemsize, shape, dtype };
    let raw = data.as_ref().map(Raw::of).transpose()?;
    let kind = kind.to_owned();
    let a = py.allow_threads(move || {
        // SAFETY: `data` stays exported until this returns.
        let bytes = raw.map(|r| unsafe { r.slice() });
        match (kind.as_str(), bytes) {
            ("zeros", None) => Core::zeros(&ctx, &params, &st),
            ("uninit", None) => Core::uninit(&ctx, &params, &st),
            ("full", Some(v)) => Core::full(&ctx, &params, &st, v),
            ("buffer", Some(b)) => Core::from_buffer(&ctx, &params, &st, b),
            _ => Err(caterva::Error::InvalidArgument(format!("unknown way to create an array: {kind}"))),
        }
        .map_err(to_py)
    })?;
    drop(data);
    Ok(PyArray::new(a))
}

/// Open a persisted array with the threads of `kw`.
#[pyfunction]
fn open(py: Python<'_>, urlpath: String, kw: &Bound<'_, PyDict>) -> PyRes<PyArray> {
    let ctx = context(settings(kw)?)?;
    py.allow_threads(move || Core::open(&ctx, &urlpath).map(PyArray::new).map_err(to_py))
}

/// An in-memory array from a contiguous frame.
#[pyfunction]
fn from_cframe(py: Python<'_>, cframe: PyBuffer<u8>, kw: &Bound<'_, PyDict>) -> PyRes<PyArray> {
    let ctx = context(settings(kw)?)?;
    let raw = Raw::of(&cframe)?;
    // SAFETY: `cframe` stays exported until this returns; the core copies it.
    let a = py.allow_threads(move || Core::from_cframe(&ctx, unsafe { raw.slice() }).map_err(to_py))?;
    drop(cframe);
    Ok(PyArray::new(a))
}

/// Remove a persisted array; a path that does not exist is not an error.
#[pyfunction]
fn remove(py: Python<'_>, urlpath: String) -> PyRes<()> {
    py.allow_threads(move || Core::remove(&urlpath).map_err(to_py))
}

/// Use storage options (name, value pairs) for every URL under `prefix`
/// in this process (empty: remove them).
#[pyfunction]
fn set_storage_options(prefix: &str, options: Vec<(String, String)>) -> PyRes<()> {
    let mut o = caterva::StorageOptions::new();
    for (k, v) in &options {
        o = o.set(k, v).map_err(to_py)?;
    }
    caterva::set_storage_options(prefix, o).map_err(to_py)
}

/// The arrays directly under `url`: (url, name, contiguous, bytes) each.
#[pyfunction]
fn list_arrays(py: Python<'_>, url: String) -> PyRes<Vec<(String, String, bool, u64)>> {
    py.allow_threads(move || {
        caterva::list(&url)
            .map(|l| l.into_iter().map(|a| (a.url, a.name, a.contiguous, a.bytes)).collect())
            .map_err(to_py)
    })
}

/// Check a NumPy dtype string against an item size.
#[pyfunction]
fn check_dtype(dtype: &str, itemsize: usize) -> PyRes<()> {
    caterva::check_dtype(dtype, itemsize).map_err(to_py)
}

/// The core's chunk and block shapes (`caterva::propose_partitions`) for an
/// array of `shape` with `itemsize`-byte items: `access` is `balanced`,
/// `small-reads`, `scans` or `planes:AXIS`. Given `chunks`, only blocks are
/// proposed, for a chunk of that shape.
#[pyfunction]
#[pyo3(signature = (itemsize, shape, access="balanced", chunks=None, nthreads=None))]
fn propose_partitions(
    itemsize: usize,
    shape: Vec<i64>,
    access: &str,
    chunks: Option<Vec<i64>>,
    nthreads: Option<usize>,
) -> PyRes<(Vec<i32>, Vec<i32>)> {
    let access = caterva::Access::by_name(access).ok_or_else(|| {
        PyValueError::new_err(format!("access '{access}' is not one of balanced, small-reads, scans, planes:AXIS"))
    })?;
    let mut hints = caterva::PartitionHints { access, threads: nthreads, ..Default::default() };
    let Some(chunks) = chunks else {
        let p = caterva::propose_partitions(itemsize, &shape, &hints).map_err(to_py)?;
        return Ok((p.chunkshape, p.blockshape));
    };
    // Blocks for the given chunk: the chunk is the whole "array", one chunk of it.
    if chunks.len() != shape.len() {
        return Err(PyValueError::new_err(format!("chunks {chunks:?} do not have one entry per axis of {shape:?}")));
    }
    let bytes = chunks.iter().try_fold(itemsize, |n, &c| usize::try_from(c.max(1)).ok().and_then(|c| n.checked_mul(c)));
    hints.chunk_bytes = bytes;
    hints.threads = Some(1);
    let p = caterva::propose_partitions(itemsize, &chunks, &hints).map_err(to_py)?;
    let narrow = |v: &[i64]| v.iter().map(|&c| i32::try_from(c).unwrap_or(i32::MAX)).collect();
    Ok((narrow(&chunks), p.blockshape))
}

/// The core's tuner (`caterva::tune`) over `data` (the array's items in C
/// order) for an array of `shape` with `itemsize`-byte items: a dict with
/// the chosen `chunks`, `blocks`, `codec`, `clevel`, `filters`,
/// `filtersmeta`, and `report` (what was chosen and why; `None` keys
/// nothing: arrays under the tuner's minimum get the default rule and say so).
#[pyfunction]
#[pyo3(signature = (data, itemsize, shape, objective="balanced", nthreads=None))]
fn tune<'py>(
    py: Python<'py>,
    data: PyBuffer<u8>,
    itemsize: usize,
    shape: Vec<i64>,
    objective: &str,
    nthreads: Option<usize>,
) -> PyRes<Bound<'py, PyDict>> {
    let objective = caterva::Objective::by_name(objective)
        .ok_or_else(|| PyValueError::new_err(format!("objective '{objective}' is not one of speed, balanced, size")))?;
    let hints = caterva::PartitionHints { threads: nthreads, ..Default::default() };
    let raw = Raw::of(&data)?;
    let t = py.allow_threads(move || {
        // SAFETY: `data` stays exported until this returns.
        let bytes = unsafe { raw.slice() };
        caterva::tune(bytes, itemsize, &shape, &hints, objective).map_err(to_py)
    })?;
    drop(data);
    let d = PyDict::new(py);
    d.set_item("chunks", t.partitions.chunkshape.clone())?;
    d.set_item("blocks", t.partitions.blockshape.clone())?;
    d.set_item("codec", t.cparams.codec.id())?;
    d.set_item("clevel", t.cparams.clevel)?;
    let filters: Vec<u8> = t.cparams.filters.iter().map(|f| f.id()).filter(|&f| f != 0).collect();
    d.set_item("filtersmeta", vec![0u8; filters.len()])?;
    d.set_item("filters", filters)?;
    d.set_item("tuned", !t.candidates.is_empty())?;
    d.set_item("report", t.report())?;
    Ok(d)
}

/// The c-blosc2 version in use.
#[pyfunction]
fn blosc2_version() -> String {
    caterva::blosc2_version()
}

/// The extension module.
#[pymodule]
fn _caterva(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyArray>()?;
    m.add_function(wrap_pyfunction!(create, m)?)?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(from_cframe, m)?)?;
    m.add_function(wrap_pyfunction!(remove, m)?)?;
    m.add_function(wrap_pyfunction!(set_storage_options, m)?)?;
    m.add_function(wrap_pyfunction!(list_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(check_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(blosc2_version, m)?)?;
    m.add_function(wrap_pyfunction!(propose_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    m.add("TUNING_VLMETA", caterva::REPORT_VLMETA)?;
    m.add("CatervaError", m.py().get_type::<CatervaError>())?;
    m.add("ChangedError", m.py().get_type::<ChangedError>())?;
    m.add("UnsupportedError", m.py().get_type::<UnsupportedError>())?;
    m.add("MAX_ITEMSIZE", caterva::MAX_ITEMSIZE)?;
    Ok(())
}
