//! Export caterva arrays to bcolz carray and ctable directories that bcolz
//! (bcolz-zipline) opens, and to Bloscpack files that `bloscpack` unpacks.
//!
//! Chunks are compressed by c-blosc2 in its Blosc1-compatible mode
//! (`store::blosc2::compress_blosc1`), since bcolz embeds c-blosc
//! 1.x. A directory is written beside its path and renamed into place; a
//! failure leaves nothing there.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::attrs;
use super::bloscpack::{self, Checksum, Header};
use super::import::Progress;
use super::json::Json;
use crate::array::Array;
use crate::blosc2::compress_blosc1;
use crate::error::{Error, Result};

/// How exported chunks are compressed and cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportOptions {
    /// Codec: `blosclz`, `lz4`, `lz4hc`, `zlib` or `zstd`.
    pub cname: String,
    /// Compression level 0..=9.
    pub clevel: u8,
    /// 0 no shuffle, 1 byte shuffle, 2 bit shuffle.
    pub shuffle: u8,
    /// Rows per chunk (0: the array's chunk length along the first axis).
    pub chunklen: i64,
    /// The checksum after every chunk of a Bloscpack file
    /// ([`export_bloscpack`]); bcolz's chunk files have no room for one.
    pub checksum: Checksum,
}

impl Default for ExportOptions {
    /// bcolz's defaults: blosclz level 5 with shuffle; adler32 in Bloscpack files.
    fn default() -> Self {
        ExportOptions { cname: "blosclz".into(), clevel: 5, shuffle: 1, chunklen: 0, checksum: Checksum::Adler32 }
    }
}

/// The options checked, the chunk length in rows and the dtype to record.
/// A 0-dim array is one row of one item where the format holds it
/// (`zero_dim`: Bloscpack records the shape `()`); a carray has rows.
fn check(array: &Array, opts: &ExportOptions, zero_dim: bool) -> Result<(i64, String)> {
    if array.ndim() == 0 && !zero_dim {
        return Err(Error::InvalidArgument("a 0-dim array has no rows to export to a carray".into()));
    }
    if opts.clevel > 9 || opts.shuffle > 2 {
        return Err(Error::InvalidArgument(format!(
            "clevel {} / shuffle {}: levels are 0..=9, shuffles 0..=2",
            opts.clevel, opts.shuffle
        )));
    }
    if !["blosclz", "lz4", "lz4hc", "zlib", "zstd"].contains(&opts.cname.as_str()) {
        return Err(Error::InvalidArgument(format!("codec '{}' is not one bcolz reads", opts.cname)));
    }
    let chunklen = match array.geometry().chunkshape().first() {
        _ if opts.chunklen > 0 => opts.chunklen,
        Some(&rows) => i64::from(rows.max(1)),
        None => 1,
    };
    let dtype = array.dtype().unwrap_or_else(|| crate::meta::default_dtype(array.itemsize()));
    let dtype = plain_void(&dtype).unwrap_or(dtype);
    let (_, size) = super::carray::numpy_typestr(&dtype)?;
    if size.is_some_and(|s| s != array.itemsize()) {
        return Err(Error::InvalidFormat(format!(
            "dtype '{dtype}' disagrees with items of {} bytes",
            array.itemsize()
        )));
    }
    Ok((chunklen, dtype))
}

/// `|V<n>` for the one-field structured dtype python-blosc2 records a
/// plain void dtype as (`[('f0', 'V8')]` for `V8`; NumPy's own description
/// of `V8` is `[('', '|V8')]`): bcolz and bloscpack read their dtype with
/// `np.dtype(str)`, which takes no structured description.
fn plain_void(dtype: &str) -> Option<String> {
    let d: String = dtype.chars().filter(|c| !c.is_whitespace()).collect();
    let inner = d.strip_prefix("[(")?.strip_suffix(")]")?;
    let (name, ty) = inner.split_once(',')?;
    if !["''", "\"\"", "'f0'", "\"f0\""].contains(&name) {
        return None;
    }
    let ty = ty.strip_prefix(['\'', '"'])?.strip_suffix(['\'', '"'])?;
    let n = ty.strip_prefix('|').unwrap_or(ty).strip_prefix('V')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| format!("|V{n}"))
}

/// The typesize bcolz compresses a dtype with (1 for strings and wide voids, 4 for unicode).
fn blosc_typesize(dtype: &str, itemsize: usize) -> usize {
    match dtype.trim_start_matches(['<', '>', '|', '=']).chars().next() {
        Some('S') => 1,
        Some('U') => 4,
        _ => itemsize,
    }
}

/// The rows `r0..r1` of `array`, C order.
fn rows(array: &Array, r0: i64, r1: i64, buf: &mut Vec<u8>) -> Result<()> {
    if array.ndim() == 0 {
        // The one item of a 0-dim array (its only "row").
        *buf = array.to_vec()?;
        return Ok(());
    }
    let mut start = vec![0i64; array.ndim()];
    start[0] = r0;
    let mut stop = array.shape().to_vec();
    stop[0] = r1;
    let mut shape = stop.clone();
    shape[0] = r1 - r0;
    let n = shape.iter().product::<i64>() as usize * array.itemsize();
    crate::buffer::zeroed(buf, n)?;
    array.get_slice_buffer(&start, &stop, buf, &shape)
}

fn default_dflt(dtype: &str) -> Json {
    match dtype.trim_start_matches(['<', '>', '|', '=']).chars().next() {
        Some('b' | '?') => Json::Bool(false),
        Some('f') => Json::Float(0.0),
        Some('S' | 'U') => Json::Str(String::new()),
        _ => Json::Int(0),
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = std::fs::File::create(path).map_err(|e| Error::io("creating", Some(path), &e))?;
    f.write_all(bytes).map_err(|e| Error::io("writing", Some(path), &e))
}

/// Write `array` as a carray at `dir` (which must not exist).
fn write_carray(array: &Array, dir: &Path, opts: &ExportOptions, progress: Progress<'_>) -> Result<()> {
    let (chunklen, dtype) = check(array, opts, false)?;

    let (attrs, dflt) = attrs::from_vlmeta(array)?;
    let data = dir.join("data");
    let meta = dir.join("meta");
    for d in [dir, &data, &meta] {
        std::fs::create_dir(d).map_err(|e| Error::io("creating", Some(d), &e))?;
    }
    let len = array.shape()[0];
    let typesize = blosc_typesize(&dtype, array.itemsize());
    let mut buf = Vec::new();
    let mut cbytes = 0i64;
    let nchunks = (len + chunklen - 1) / chunklen;
    progress(0, len);
    for n in 0..nchunks {
        let (r0, r1) = (n * chunklen, ((n + 1) * chunklen).min(len));
        rows(array, r0, r1, &mut buf)?;
        let chunk = compress_blosc1(&opts.cname, opts.clevel, opts.shuffle, typesize, &buf)?;
        cbytes += chunk.len() as i64;
        let mut file = Header::v1(1).encode();
        file.extend_from_slice(&chunk);
        write_file(&data.join(format!("__{n}.blp")), &file)?;
        progress(r1, len);
    }
    let nbytes = array.nitems() * array.itemsize() as i64;
    let sizes = json!({"shape": array.shape(), "nbytes": nbytes, "cbytes": cbytes});
    write_file(&meta.join("sizes"), format!("{sizes}\n").as_bytes())?;
    let storage = Json::Object(vec![
        ("dtype".into(), Json::Str(dtype.clone())),
        (
            "cparams".into(),
            Json::from_value(
                &json!({"clevel": opts.clevel, "shuffle": opts.shuffle, "cname": opts.cname, "quantize": 0}),
            ),
        ),
        ("chunklen".into(), Json::Int(i128::from(chunklen))),
        ("expectedlen".into(), Json::Int(i128::from(len))),
        ("dflt".into(), dflt.unwrap_or_else(|| default_dflt(&dtype))),
    ]);
    // bcolz decodes its metadata as ASCII (non-ASCII escaped, as its json.dumps writes).
    write_file(&meta.join("storage"), format!("{}\n", storage.to_ascii()).as_bytes())?;
    write_file(&dir.join("__attrs__"), Json::Object(attrs).to_ascii().as_bytes())
}

/// A directory beside `path` to build in, renamed onto `path` by [`finish`].
fn beside(path: &Path) -> Result<PathBuf> {
    if path.exists() || path.is_symlink() {
        return Err(Error::storage(Some(&path.display().to_string()), "exists; the export does not replace anything"));
    }
    let name =
        path.file_name().ok_or_else(|| Error::InvalidArgument(format!("'{}' names no directory", path.display())))?;
    let mut tmp = name.to_owned();
    tmp.push(format!(".caterva-tmp-{}", std::process::id()));
    Ok(path.with_file_name(tmp))
}

fn finish(tmp: &Path, path: &Path, result: Result<()>) -> Result<()> {
    let result =
        result.and_then(|()| std::fs::rename(tmp, path).map_err(|e| Error::io("renaming into", Some(path), &e)));
    if result.is_err() {
        let _ = std::fs::remove_dir_all(tmp);
    }
    result
}

/// Export `array` (1 to 8 dimensions; chunks cut along the first axis) to
/// a bcolz carray directory at `path`, which must not exist. Its dtype, the
/// user's vlmetalayers (as attributes) and a `dflt` kept by an import go
/// with it.
///
/// # Errors
/// [`Error::InvalidArgument`] for bad options or a 0-dim array;
/// [`Error::InvalidStorage`] if `path` exists; [`Error::InvalidFormat`]
/// for vlmetalayers that are not msgpack; [`Error::Io`] on failed writes.
pub fn export_carray(array: &Array, path: &Path, opts: &ExportOptions, progress: Progress<'_>) -> Result<()> {
    let tmp = beside(path)?;
    let r = write_carray(array, &tmp, opts, progress);
    finish(&tmp, path, r)
}

/// Export 1-d arrays of equal length as the columns of a bcolz ctable at `path`.
///
/// # Errors
/// As [`export_carray`]; [`Error::InvalidArgument`] for no columns,
/// columns that are not 1-d or differ in length, or bad names.
pub fn export_ctable(
    columns: &[(&str, &Array)],
    path: &Path,
    opts: &ExportOptions,
    progress: Progress<'_>,
) -> Result<()> {
    let Some((_, first)) = columns.first() else {
        return Err(Error::InvalidArgument("a ctable needs at least one column".into()));
    };
    for (i, (name, a)) in columns.iter().enumerate() {
        if a.ndim() != 1 || a.shape()[0] != first.shape()[0] {
            return Err(Error::InvalidArgument(format!("column '{name}' is not 1-d with {} rows", first.shape()[0])));
        }
        if name.is_empty()
            || name.contains(['/', '\\', '\0'])
            || *name == "."
            || *name == ".."
            || name.starts_with("__")
        {
            return Err(Error::InvalidArgument(format!("column name '{name}'")));
        }
        if columns[..i].iter().any(|(n, _)| n == name) {
            return Err(Error::InvalidArgument(format!("column '{name}' given twice")));
        }
    }
    let tmp = beside(path)?;
    let total = first.shape()[0] * columns.len() as i64;
    let r = (|| -> Result<()> {
        std::fs::create_dir(&tmp).map_err(|e| Error::io("creating", Some(&tmp), &e))?;
        for (i, (name, a)) in columns.iter().enumerate() {
            let base = first.shape()[0] * i as i64;
            write_carray(a, &tmp.join(name), opts, &mut |d, _| progress(base + d, total))?;
        }
        let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
        let roots = Json::Object(vec![("names".into(), Json::from_value(&json!(names)))]);
        write_file(&tmp.join("__rootdirs__"), format!("{}\n", roots.to_ascii()).as_bytes())?;
        write_file(&tmp.join("__attrs__"), b"{}")
    })();
    finish(&tmp, path, r)
}

/// Export `array` to a Bloscpack file at `path` (must not exist), with an
/// offsets table, `opts.checksum` after every chunk and NumPy metadata
/// (dtype, shape) that `bloscpack.unpack_ndarray_from_file` reads. A
/// 0-dim array is written as bloscpack writes one: its item, shape `()`.
///
/// # Errors
/// As [`export_carray`] (a 0-dim array is accepted here).
pub fn export_bloscpack(array: &Array, path: &Path, opts: &ExportOptions, progress: Progress<'_>) -> Result<()> {
    let (chunklen, dtype) = check(array, opts, true)?;

    if path.exists() || path.is_symlink() {
        return Err(Error::storage(Some(&path.display().to_string()), "exists; the export does not replace anything"));
    }
    // A 0-dim array is one row of one item.
    let len = array.shape().first().copied().unwrap_or(1);
    let row = array.shape().iter().skip(1).product::<i64>() * array.itemsize() as i64;
    let chunk_size = chunklen.saturating_mul(row);
    if chunk_size > i64::from(i32::MAX) - 64 {
        return Err(Error::InvalidArgument(format!("chunks of {chunk_size} bytes are too large for Blosc")));
    }
    let nchunks = (len + chunklen - 1) / chunklen;
    let last = if nchunks == 0 { 0 } else { (len - (nchunks - 1) * chunklen) * row };
    // bloscpack records `repr(dtype.descr)` for a structured dtype, else
    // `repr(dtype.str)`, and reads either with `ast.literal_eval`.
    let dtype_repr = if dtype.starts_with('[') { dtype.clone() } else { format!("'{dtype}'") };
    let meta = json!({"dtype": dtype_repr, "shape": array.shape(), "order": "C", "container": "numpy"});
    let typesize = blosc_typesize(&dtype, array.itemsize());
    let mut buf = Vec::new();
    let mut n = 0i64;
    progress(0, len);
    let mut chunks = std::iter::from_fn(|| {
        if n >= nchunks {
            return None;
        }
        let (r0, r1) = (n * chunklen, ((n + 1) * chunklen).min(len));
        n += 1;
        let c = rows(array, r0, r1, &mut buf)
            .and_then(|()| compress_blosc1(&opts.cname, opts.clevel, opts.shuffle, typesize, &buf));
        progress(r1, len);
        Some(c)
    });
    let header = Header {
        version: 3,
        offsets: true,
        metadata: true,
        checksum: opts.checksum,
        typesize: typesize.min(255) as u8,
        chunk_size: chunk_size as i32,
        last_chunk: last as i32,
        nchunks,
        max_app_chunks: 0,
    };
    bloscpack::write_file(path, &header, Some(&meta), &mut chunks)
}
