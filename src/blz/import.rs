//! Import BLZ data into caterva arrays, streamed: rows flow from the
//! source's chunks into a slab of target chunk-rows, which is compressed
//! (in parallel, by the engine) and appended inside the creating
//! transaction. Memory holds one compressed and one decompressed source
//! chunk, one slab (at most [`SLAB_BYTES`], or one target chunk-row when
//! that is larger) and its compressed chunks, whatever the size of the
//! data; a failure leaves nothing at the target path.

use std::path::Path;

use serde_json::Value;

use super::attrs;
use super::bloscpack::Reader;
use super::carray::{numpy_typestr, CArray, CTable};
use super::json::Json;
use crate::array::{Array, Params, StorageParams};
use crate::blosc2;
use crate::blosc2::DCtx;
use crate::buffer;
use crate::context::Context;
use crate::engine;
use crate::error::{Error, Result};
use crate::geometry::Geometry;
use crate::partition::{propose_partitions, Access, PartitionHints};
use crate::store::Tx;

/// Also here, where it was first defined (`caterva::blz::import::DFLT_VLMETA`).
pub use super::attrs::DFLT_VLMETA;

/// The bytes of rows the import's slab holds: as many target chunk-rows as
/// fit (up to one round of the engine's workers), never fewer than one.
/// Small chunks keep every worker busy (16 chunks of the default 2 MiB fill
/// it); huge chunks cost a few chunks of memory (the slab, the source chunk,
/// a worker's chunk and its compressed copy), not 16 of them.
pub const SLAB_BYTES: usize = 32 << 20;

/// Progress of a long import or export: `(done, total)` rows.
pub type Progress<'a> = &'a mut dyn FnMut(i64, i64);

/// A stream of decompressed bytes in the source's chunk order.
trait Source {
    /// Decompress the next chunk into `out` (resized to its size); `false`
    /// once there are no more.
    fn next(&mut self, dctx: &mut DCtx, out: &mut Vec<u8>) -> Result<bool>;
}

fn decompress(dctx: &mut DCtx, chunk: &[u8], out: &mut Vec<u8>, what: &dyn Fn() -> String) -> Result<()> {
    let nbytes = u32::from_le_bytes(chunk[4..8].try_into().unwrap_or([0; 4])) as usize;
    buffer::zeroed(out, nbytes)?;
    blosc2::decompress_into(dctx, chunk, out).map_err(|e| match e {
        Error::Blosc { op, code } => Error::Blosc { op: format!("{op} of {}", what()), code },
        Error::InvalidFormat(m) => Error::InvalidFormat(format!("{}: {m}", what())),
        Error::Unsupported { feature, reason } => {
            Error::Unsupported { feature, reason: format!("{}: {reason}", what()) }
        }
        e => e,
    })
}

struct CArraySource<'a> {
    carray: &'a CArray,
    next: i64,
}

impl Source for CArraySource<'_> {
    fn next(&mut self, dctx: &mut DCtx, out: &mut Vec<u8>) -> Result<bool> {
        if self.next >= self.carray.nchunks() {
            return Ok(false);
        }
        let n = self.next;
        let chunk = self.carray.read_chunk(n)?;
        decompress(dctx, &chunk, out, &|| format!("chunk {n} of carray '{}'", self.carray.path.display()))?;
        self.next += 1;
        Ok(true)
    }
}

impl Source for Reader {
    fn next(&mut self, dctx: &mut DCtx, out: &mut Vec<u8>) -> Result<bool> {
        let n = self.chunks_read();
        match self.next_chunk()? {
            Some(chunk) => {
                let path = self.path().display().to_string();
                decompress(dctx, &chunk, out, &|| format!("chunk {n} of Bloscpack file '{path}'"))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// Default chunk and block shapes for an imported array of `shape`: the
/// library's [`propose_partitions`] for a balanced access (chunks of about
/// 2 MiB, enough of them for `threads`, and blocks of about 16 KiB: for 3 or more axes, a stack along the first),
/// whatever the source's chunks (a bcolz chunk of 4 rows would otherwise
/// make blocks of 4 items, which do not compress).
///
/// # Errors
/// As [`propose_partitions`] (an array too large for any partition).
pub fn default_partitions(shape: &[i64], itemsize: usize, threads: usize) -> Result<(Vec<i32>, Vec<i32>)> {
    let hints = PartitionHints { access: Access::Balanced, threads: Some(threads.max(1)), ..Default::default() };
    let p = propose_partitions(itemsize, shape, &hints)?;
    Ok((p.chunkshape, p.blockshape))
}

/// The default block shape inside a chunk of `chunkshape` given alone:
/// [`propose_partitions`]' blocks for one chunk of that shape.
fn default_blocks(chunkshape: &[i32], itemsize: usize) -> Result<Vec<i32>> {
    let chunk: Vec<i64> = chunkshape.iter().map(|&c| i64::from(c.max(1))).collect();
    let bytes = chunk.iter().try_fold(itemsize, |n, &c| n.checked_mul(c as usize));
    let hints = PartitionHints { access: Access::Balanced, chunk_bytes: bytes, threads: Some(1), ..Default::default() };
    Ok(propose_partitions(itemsize, &chunk, &hints)?.blockshape)
}

/// Rows of the slab: whole chunk-rows of the target (`chunklen` rows of
/// `chunkrow_nbytes` bytes), as many as [`SLAB_BYTES`] holds but at least
/// one and at most `batch`, and no more than the array's `rows`.
pub(crate) fn slab_rows(rows: i64, chunklen: i64, chunkrow_nbytes: usize, batch: usize) -> i64 {
    let k = (SLAB_BYTES / chunkrow_nbytes.max(1)).clamp(1, batch.max(1));
    chunklen.max(1).saturating_mul(k as i64).min(rows.max(1))
}

/// Stream `rows` rows of `row_nbytes` bytes from `src` into the chunks of `g`.
fn fill(
    ctx: &Context,
    tx: &mut Tx<'_>,
    g: &Geometry,
    src: &mut dyn Source,
    what: &str,
    progress: Progress<'_>,
) -> Result<()> {
    let shape = g.shape().to_vec();
    // A 0-dim array is one row of one item.
    let nd = !shape.is_empty();
    let rows = if nd { shape[0] } else { 1 };
    let row_nbytes = shape.iter().skip(1).map(|&d| d as usize).product::<usize>() * g.itemsize();
    let cl = if nd { i64::from(g.chunkshape()[0]) } else { 1 };
    let slab_rows = slab_rows(rows, cl, (cl as usize).saturating_mul(row_nbytes), engine::batch_len(ctx));
    // Filled by appending, so that a header promising more than the data
    // holds costs no more memory than the data.
    let mut slab: Vec<u8> = Vec::new();
    let mut dctx = DCtx::new(ctx.nthreads())?;
    let (mut pending, mut at) = (Vec::new(), 0usize);
    let mut r0 = 0i64;
    progress(0, rows);
    while r0 < rows && row_nbytes > 0 {
        let r1 = (r0 + slab_rows).min(rows);
        let want = (r1 - r0) as usize * row_nbytes;
        slab.clear();
        let mut filled = 0usize;
        while filled < want {
            if at == pending.len() {
                at = 0;
                if !src.next(&mut dctx, &mut pending)? {
                    return Err(Error::InvalidFormat(format!(
                        "{what}: the data ends after {} of {rows} rows (the metadata promises more)",
                        r0 + (filled / row_nbytes) as i64
                    )));
                }
                continue;
            }
            let n = (want - filled).min(pending.len() - at);
            if slab.capacity() - slab.len() < n {
                // Grown as rows arrive (doubling, up to the slab): a header
                // promising more rows than the data holds costs no memory.
                let grow = n.max(slab.len()).min(want - slab.len());
                buffer::reserve(&mut slab, grow, || format!("a slab of {want} bytes of rows"))?;
            }
            slab.extend_from_slice(&pending[at..at + n]);
            filled += n;
            at += n;
        }
        let mut start = vec![0i64; shape.len()];
        let mut stop = shape.clone();
        let mut slab_shape = shape.clone();
        if nd {
            start[0] = r0;
            stop[0] = r1;
            slab_shape[0] = r1 - r0;
        }
        let region = g.region(&start, &stop)?;
        let parts = engine::plan(g, &region)?;
        for group in parts.chunks(engine::batch_len(ctx)) {
            for (n, chunk) in engine::build_chunks(ctx, None, g, &region, group, &slab[..want], &slab_shape, None)? {
                if n != tx.nchunks() {
                    return Err(Error::InvalidArgument(format!(
                        "chunk shape {:?} does not cut rows in whole chunks",
                        g.chunkshape()
                    )));
                }
                tx.append_chunk(&chunk)?;
            }
        }
        r0 = r1;
        progress(r0, rows);
    }
    // Chunks of no bytes may follow: bloscpack packs an empty array as one.
    let mut extra = pending.len() > at;
    while !extra && src.next(&mut dctx, &mut pending)? {
        extra = !pending.is_empty();
    }
    if extra {
        let rows = if nd { format!("the {rows} rows") } else { "the one item".into() };
        return Err(Error::InvalidFormat(format!("{what}: the data holds more than {rows} its metadata gives")));
    }
    Ok(())
}

/// The storage with default partitions where the caller gave none: both
/// from [`default_partitions`]; blocks given alone get the default chunks
/// (grown to hold them), chunks given alone blocks proposed inside them.
fn with_defaults(ctx: &Context, storage: &StorageParams, shape: &[i64], itemsize: usize) -> Result<StorageParams> {
    let mut st = storage.clone();
    if st.chunkshape.is_empty() {
        let (c, b) = default_partitions(shape, itemsize, ctx.nthreads())?;
        st.chunkshape = if st.blockshape.len() == c.len() {
            c.iter().zip(&st.blockshape).map(|(&c, &b)| c.max(b)).collect()
        } else {
            c
        };
        if st.blockshape.is_empty() {
            st.blockshape = b;
        }
    } else if st.blockshape.is_empty() && st.chunkshape.len() == shape.len() {
        st.blockshape = default_blocks(&st.chunkshape, itemsize)?;
    }
    Ok(st)
}

/// The vlmetalayers of a carray: its attributes and `dflt` (see [`attrs`]).
fn carray_vlmeta(c: &CArray) -> Result<Vec<(String, Vec<u8>)>> {
    attrs::to_vlmeta(&c.attrs, &c.dflt, &format!("'{}'", c.path.display()))
}

/// Import the bcolz carray at `path` into a new array with `storage`
/// (empty chunk or block shapes take [`default_partitions`], whatever the
/// carray's chunks).
/// The dtype goes into the `b2nd` metalayer, the attributes and `dflt`
/// into vlmetalayers (msgpack).
///
/// # Errors
/// As [`CArray::open`]; [`Error::InvalidFormat`], [`Error::Corrupt`] or
/// [`Error::Blosc`] for damaged chunks; the errors of array creation.
pub fn import_carray(ctx: &Context, path: &Path, storage: &StorageParams, progress: Progress<'_>) -> Result<Array> {
    let c = CArray::open(path)?;
    import_opened(ctx, &c, storage, progress)
}

fn import_opened(ctx: &Context, c: &CArray, storage: &StorageParams, progress: Progress<'_>) -> Result<Array> {
    let st = with_defaults(ctx, storage, &c.shape, c.itemsize)?;
    let params = Params { itemsize: c.itemsize, shape: c.shape.clone(), dtype: Some(c.dtype.clone()) };
    let vlmeta = carray_vlmeta(c)?;
    let cp = ctx.config().cparams;
    let what = format!("carray '{}'", c.path.display());
    Array::create_streamed(ctx, &params, &st, |tx, g| {
        for (k, v) in &vlmeta {
            tx.vlmeta_put(k, v, false, &cp)?;
        }
        fill(ctx, tx, g, &mut CArraySource { carray: c, next: 0 }, &what, progress)
    })
}

/// Import every column of the bcolz ctable at `path`, each into the
/// storage `storage_for(name)` gives. Returns the columns in order.
///
/// # Errors
/// As [`import_carray`]; a failure removes the columns already imported.
pub fn import_ctable(
    ctx: &Context,
    path: &Path,
    storage_for: &mut dyn FnMut(&str) -> StorageParams,
    progress: Progress<'_>,
) -> Result<Vec<(String, Array)>> {
    let t = CTable::open(path)?;
    let mut out: Vec<(String, Array)> = Vec::with_capacity(t.columns.len());
    let total = t.len() * t.columns.len() as i64;
    for (i, (name, c)) in t.columns.iter().enumerate() {
        let st = storage_for(name);
        let base = t.len() * i as i64;
        match import_opened(ctx, c, &st, &mut |done, _| progress(base + done, total)) {
            Ok(a) => out.push((name.clone(), a)),
            Err(e) => {
                for (_, a) in out.drain(..) {
                    if let Some(p) = a.store().storage().urlpath {
                        drop(a);
                        let _ = Array::remove(&p);
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// Import the Bloscpack file at `path`. A file packed from a NumPy array
/// (`bloscpack.pack_ndarray_file`) keeps its dtype (structured ones too)
/// and shape (0-dim and empty ones too); any other becomes a 1-d array of
/// items of its typesize, or of its bytes (`|u1`, what
/// `bloscpack.unpack_bytes_file` returns) when the typesize is not
/// recorded or the length is not a whole number of them.
///
/// # Errors
/// As [`Reader::open`] and [`Reader::next_chunk`] (a checksum mismatch is
/// [`Error::Corrupt`] naming the chunk); the errors of array creation.
pub fn import_bloscpack(ctx: &Context, path: &Path, storage: &StorageParams, progress: Progress<'_>) -> Result<Array> {
    let mut r = Reader::open(path)?;
    let (shape, itemsize, dtype) = bloscpack_layout(&r)?;
    let st = with_defaults(ctx, storage, &shape, itemsize)?;
    let params = Params { itemsize, shape, dtype };
    let mut user = Vec::new();
    if let Some(Json::Object(m)) = r.metadata_json() {
        for (k, v) in m {
            if !["dtype", "shape", "order", "container"].contains(&k.as_str()) {
                user.push((k.clone(), v.clone()));
            }
        }
    }
    let vlmeta = attrs::to_vlmeta(&user, &Json::Null, &format!("'{}'", path.display()))?;
    let cp = ctx.config().cparams;
    let what = format!("Bloscpack file '{}'", path.display());
    Array::create_streamed(ctx, &params, &st, |tx, g| {
        for (k, v) in &vlmeta {
            tx.vlmeta_put(k, v, false, &cp)?;
        }
        fill(ctx, tx, g, &mut r, &what, progress)
    })
}

/// Shape, item size and dtype of a Bloscpack file's data.
fn bloscpack_layout(r: &Reader) -> Result<(Vec<i64>, usize, Option<String>)> {
    let h = r.header();
    let bad = |m: String| Error::InvalidFormat(format!("Bloscpack file '{}': {m}", r.path().display()));
    if h.version == 1 || h.nchunks < 0 || (h.nchunks > 0 && (h.chunk_size < 0 || h.last_chunk < 0)) {
        return Err(bad("the header does not record the chunk count and sizes".into()));
    }
    let total = if h.nchunks == 0 {
        0
    } else {
        i64::from(h.chunk_size)
            .checked_mul(h.nchunks - 1)
            .and_then(|t| t.checked_add(i64::from(h.last_chunk)))
            .ok_or_else(|| bad("sizes overflow".into()))?
    };
    let meta = r.metadata().filter(|m| m.get("container").and_then(Value::as_str) == Some("numpy"));
    if let Some(m) = meta {
        let dtype = match m.get("dtype") {
            // bloscpack records `repr(dtype.str)`: "'<f8'".
            Some(Value::String(s)) => s.trim_matches(['\'', '"']).to_owned(),
            _ => return Err(bad("only NumPy metadata with a simple dtype string is supported".into())),
        };
        let (typestr, size) = numpy_typestr(&dtype)?;
        let itemsize = size.ok_or_else(|| bad(format!("the item size of dtype '{dtype}' cannot be told")))?;
        let shape: Vec<i64> = m
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
            .filter(|s| s.len() <= crate::MAX_DIM && s.iter().all(|&d| d >= 0))
            .ok_or_else(|| bad("\"shape\" in the metadata is not a list of lengths".into()))?;
        let order = m.get("order").and_then(Value::as_str).unwrap_or("C");
        if order != "C" && shape.iter().filter(|&&d| d > 1).count() > 1 {
            return Err(bad(format!("order '{order}': only C-ordered arrays are imported")));
        }
        let n = shape.iter().try_fold(itemsize as i64, |a, &d| a.checked_mul(d));
        if n != Some(total) {
            return Err(bad(format!("shape {shape:?} of dtype '{dtype}' does not hold the file's {total} bytes")));
        }
        return Ok((shape, itemsize, Some(typestr)));
    }
    let itemsize = usize::from(h.typesize.max(1));
    if total % itemsize as i64 != 0 || itemsize == 1 {
        return Ok((vec![total], 1, Some("|u1".into())));
    }
    Ok((vec![total / itemsize as i64], itemsize, None))
}

/// What a path holds: a carray, a ctable or a Bloscpack file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bcolz carray directory.
    CArray,
    /// A bcolz ctable directory.
    CTable,
    /// A Bloscpack file.
    Bloscpack,
}

/// Tell what `path` holds.
///
/// # Errors
/// [`Error::InvalidStorage`] if it is none of them.
pub fn detect(path: &Path) -> Result<Kind> {
    if path.is_dir() {
        if path.join("__rootdirs__").is_file() {
            return Ok(Kind::CTable);
        }
        if path.join("meta").join("storage").is_file() {
            return Ok(Kind::CArray);
        }
    } else if path.is_file() {
        let mut head = [0u8; 4];
        let ok = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok();
        if ok && &head == super::bloscpack::MAGIC {
            return Ok(Kind::Bloscpack);
        }
    }
    Err(Error::storage(
        Some(&path.display().to_string()),
        "neither a bcolz carray or ctable directory nor a Bloscpack file",
    ))
}

/// Import a carray directory or a Bloscpack file (see [`detect`]).
///
/// # Errors
/// [`Error::InvalidStorage`] for a ctable (use [`import_ctable`]) or
/// anything else; as [`import_carray`] and [`import_bloscpack`].
pub fn import(ctx: &Context, path: &Path, storage: &StorageParams, progress: Progress<'_>) -> Result<Array> {
    match detect(path)? {
        Kind::CArray => import_carray(ctx, path, storage, progress),
        Kind::Bloscpack => import_bloscpack(ctx, path, storage, progress),
        Kind::CTable => Err(Error::storage(
            Some(&path.display().to_string()),
            "a ctable has one array per column: import it with import_ctable (or a column's directory)",
        )),
    }
}

/// The shape the array imported from `path` (a carray directory or a
/// Bloscpack file) will have, read from its metadata alone.
///
/// # Errors
/// As [`detect`], [`CArray::open`] and [`Reader::open`].
pub fn source_shape(path: &Path) -> Result<Vec<i64>> {
    match detect(path)? {
        Kind::CArray => Ok(CArray::open(path)?.shape),
        Kind::Bloscpack => Ok(bloscpack_layout(&Reader::open(path)?)?.0),
        Kind::CTable => {
            Err(Error::storage(Some(&path.display().to_string()), "a ctable has one array per column: give a column"))
        }
    }
}

/// Import column `column` of the bcolz ctable at `path` (see [`import_carray`]).
///
/// # Errors
/// As [`import_carray`]; [`Error::InvalidArgument`] if the table has no such column.
pub fn import_column(
    ctx: &Context,
    path: &Path,
    column: &str,
    storage: &StorageParams,
    progress: Progress<'_>,
) -> Result<Array> {
    let t = CTable::open(path)?;
    let Some((_, c)) = t.columns.iter().find(|(n, _)| n == column) else {
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Error::InvalidArgument(format!(
            "ctable '{}' has no column '{column}' (it has {names:?})",
            path.display()
        )));
    };
    import_opened(ctx, c, storage, progress)
}

/// The rows of a ctable's columns interleaved into records (a structured
/// item: the columns' items side by side, in column order).
struct RecordSource<'a> {
    columns: Vec<(CArraySource<'a>, Vec<u8>, usize, usize)>,
    rows_per_call: usize,
}

impl Source for RecordSource<'_> {
    fn next(&mut self, dctx: &mut DCtx, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut rows = usize::MAX;
        for (src, buf, at, size) in &mut self.columns {
            if *at == buf.len() {
                *at = 0;
                if !src.next(dctx, buf)? {
                    buf.clear();
                }
            }
            rows = rows.min((buf.len() - *at) / *size);
        }
        if rows == 0 || rows == usize::MAX {
            return Ok(false);
        }
        let rows = rows.min(self.rows_per_call);
        let record: usize = self.columns.iter().map(|c| c.3).sum();
        buffer::reserve(out, rows * record, || format!("{rows} records"))?;
        for r in 0..rows {
            for (_, buf, at, size) in &self.columns {
                out.extend_from_slice(&buf[*at + r * size..*at + (r + 1) * size]);
            }
        }
        for (_, _, at, size) in &mut self.columns {
            *at += rows * *size;
        }
        Ok(true)
    }
}

/// Import the bcolz ctable at `path` as one 1-d array of records: a
/// structured dtype (`[('name', '<i8'), ...]`, NumPy's description) whose
/// fields are the columns, packed in order; an n-d column is a subarray
/// field (`('xyz','<f8',(3,))`, a row of the column). The table's
/// attributes become vlmetalayers.
///
/// # Errors
/// As [`import_carray`]; [`Error::InvalidArgument`] if a record would
/// exceed 255 bytes or a column's rows have no bytes.
pub fn import_ctable_records(
    ctx: &Context,
    path: &Path,
    storage: &StorageParams,
    progress: Progress<'_>,
) -> Result<Array> {
    let t = CTable::open(path)?;
    if t.columns.is_empty() {
        return Err(Error::InvalidFormat(format!("ctable '{}' has no columns", path.display())));
    }
    if let Some((n, _)) = t.columns.iter().find(|(_, c)| c.row_nbytes() == 0) {
        return Err(Error::InvalidArgument(format!("column '{n}' has rows of no bytes, which no record field holds")));
    }
    let record: usize = t.columns.iter().map(|(_, c)| c.row_nbytes()).sum();
    if record > 255 {
        return Err(Error::InvalidArgument(format!(
            "ctable '{}': a record of its {} columns takes {record} bytes; caterva items take at most 255",
            path.display(),
            t.columns.len()
        )));
    }
    // NumPy's description, compact: python-blosc2 reads it with
    // `ast.literal_eval`, so each name is a Python string literal (any
    // Unicode name: NumPy's field names are `str`).
    let fields: Vec<String> = t
        .columns
        .iter()
        .map(|(n, c)| {
            let n = py_str(n);
            // A structured column nests its description; a typestr is quoted.
            let ty = if c.dtype.starts_with('[') { c.dtype.clone() } else { format!("'{}'", c.dtype) };
            match &c.shape[1..] {
                [] => format!("({n},{ty})"),
                [d] => format!("({n},{ty},({d},))"),
                dims => {
                    let dims: Vec<String> = dims.iter().map(i64::to_string).collect();
                    format!("({n},{ty},({}))", dims.join(","))
                }
            }
        })
        .collect();
    let dtype = format!("[{}]", fields.join(","));
    let shape = vec![t.len()];
    let st = with_defaults(ctx, storage, &shape, record)?;
    let params = Params { itemsize: record, shape, dtype: Some(dtype) };
    let vlmeta = attrs::to_vlmeta(&t.attrs, &Json::Null, &format!("ctable '{}'", path.display()))?;
    let cp = ctx.config().cparams;
    let what = format!("ctable '{}'", path.display());
    let mut src = RecordSource {
        columns: t
            .columns
            .iter()
            .map(|(_, c)| (CArraySource { carray: c, next: 0 }, Vec::new(), 0, c.row_nbytes()))
            .collect(),
        // A quarter of the slab's bytes of records at a time, whatever the chunk length.
        rows_per_call: (SLAB_BYTES / 4 / record).max(1),
    };
    Array::create_streamed(ctx, &params, &st, |tx, g| {
        for (k, v) in &vlmeta {
            tx.vlmeta_put(k, v, false, &cp)?;
        }
        fill(ctx, tx, g, &mut src, &what, progress)
    })
}

/// `s` as a Python string literal (`'...'`): quotes, backslashes and
/// control characters escaped, other characters as they are.
fn py_str(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\U{:08x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slab is bounded by bytes (issue 26: 16 chunk-rows of 64 MiB
    /// chunks held 1 GiB), keeps a full batch of small chunks, and always
    /// holds one whole chunk-row.
    #[test]
    fn slab_rows_are_bounded_by_bytes() {
        let mib = 1usize << 20;
        // 64 MiB chunks of f8 (8 Mi rows): one chunk-row, whatever the batch.
        let cl = (64 * mib / 8) as i64;
        assert_eq!(slab_rows(1 << 40, cl, 64 * mib, 16), cl);
        assert_eq!(slab_rows(1 << 40, cl, 64 * mib, 64), cl);
        // 2 MiB chunks: a full batch of 16 (32 MiB); of 64, what 32 MiB holds.
        let cl = (2 * mib / 8) as i64;
        assert_eq!(slab_rows(1 << 40, cl, 2 * mib, 16), 16 * cl);
        assert_eq!(slab_rows(1 << 40, cl, 2 * mib, 64), 16 * cl);
        // 1 MiB chunks: a full batch of 16, or 32 of a batch of 64.
        assert_eq!(slab_rows(1 << 40, cl / 2, mib, 16), 8 * cl);
        assert_eq!(slab_rows(1 << 40, cl / 2, mib, 64), 16 * cl);
        // A chunk-row larger than the budget is still one chunk-row.
        assert_eq!(slab_rows(1 << 40, 3, 200 * mib, 16), 3);
        // Never more than the array; at least one row.
        assert_eq!(slab_rows(10, 1000, 8000, 16), 10);
        assert_eq!(slab_rows(0, 1000, 8000, 16), 1);
        for (cl, row) in [(1i64, 1usize), (7, 3), (4096, 8), (1 << 20, 24), (1 << 23, 8)] {
            let rows = slab_rows(i64::MAX, cl, cl as usize * row, 16);
            assert_eq!(rows % cl, 0, "whole chunk-rows");
            assert!(rows as usize * row <= SLAB_BYTES.max(cl as usize * row), "{cl} x {row}");
        }
    }
}
