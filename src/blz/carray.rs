//! bcolz carray and ctable directories, as bcolz (and bcolz-zipline) write them:
//!
//! ```text
//! <carray>/data/__0.blp … __<n>.blp   one Bloscpack (version 1) file per chunk; the last
//!                                      holds the leftover rows when the length is not a
//!                                      multiple of chunklen (the seed's __<n>__.bin names too)
//! <carray>/meta/sizes                  {"shape": [...], "nbytes": N, "cbytes": C}
//! <carray>/meta/storage                {"dtype": "int64", "cparams": {...}, "chunklen": L,
//!                                       "expectedlen": E, "dflt": value}
//! <carray>/__attrs__                   the user's attributes, a JSON object (or meta/attributes)
//! <ctable>/__rootdirs__                {"names": ["a", "b"]}; one carray per column, <ctable>/<name>
//! ```
//!
//! A chunk holds `chunklen` rows (items along the first axis); rows of an
//! n-d carray are its trailing dimensions.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::bloscpack::Reader;
use super::json::{self, Attributes, Json};
use crate::error::{Error, Result};

/// Largest JSON metadata file read (bcolz's are a few hundred bytes).
const MAX_JSON: u64 = 16 << 20;

/// Read and parse a small JSON file as Python's `json` does (bcolz writes
/// `NaN`, `Infinity` and `-Infinity`).
pub(crate) fn read_json(path: &Path) -> Result<Json> {
    let len = std::fs::metadata(path).map_err(|e| Error::io("reading", Some(path), &e))?.len();
    if len > MAX_JSON {
        return Err(Error::InvalidFormat(format!("'{}' is {len} bytes, too large for bcolz metadata", path.display())));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io("reading", Some(path), &e))?;
    json::parse(&bytes)
        .map_err(|e| Error::InvalidFormat(format!("'{}' is not valid JSON: {}", path.display(), e.message())))
}

/// A JSON file's fields as [`Value`]s, for the structural ones (shapes,
/// sizes, names), which are never non-finite.
fn read_value(path: &Path) -> Result<Value> {
    Ok(read_json(path)?.to_value_lossy())
}

/// The user's attributes in `path`, a JSON object.
fn read_attrs(path: &Path) -> Result<Attributes> {
    match read_json(path)? {
        Json::Object(m) => Ok(m),
        _ => Err(Error::InvalidFormat(format!("'{}' is not a JSON object", path.display()))),
    }
}

/// A NumPy dtype as bcolz records it (`str(dtype)`: `int64`, `bool`,
/// `|S5`, `<U3`, `[('a', '<i4'), ('b', 'u1')]`) in the typestr form the
/// `b2nd` metalayer uses, with its item size by NumPy's rules (the byte-order
/// mark optional, as `str(dtype)` leaves it out of 1-byte and byte-string
/// fields: `crate::dtype`).
///
/// # Errors
/// [`Error::InvalidFormat`] for object dtypes and strings that are not dtypes.
pub fn numpy_typestr(dtype: &str) -> Result<(String, Option<usize>)> {
    let named = |s: &str| -> Option<&'static str> {
        Some(match s {
            "bool" | "bool_" | "?" => "|b1",
            "int8" => "|i1",
            "uint8" => "|u1",
            "int16" => "<i2",
            "uint16" => "<u2",
            "int32" => "<i4",
            "uint32" => "<u4",
            "int64" => "<i8",
            "uint64" => "<u8",
            "float16" => "<f2",
            "float32" => "<f4",
            "float64" => "<f8",
            "float128" => "<f16",
            "complex64" => "<c8",
            "complex128" => "<c16",
            "complex256" => "<c32",
            _ => return None,
        })
    };
    let d = dtype.trim();
    let typestr = if let Some(t) = named(d) {
        t.to_owned()
    } else if let Some(unit) = d.strip_prefix("datetime64") {
        format!("<M8{unit}")
    } else if let Some(unit) = d.strip_prefix("timedelta64") {
        format!("<m8{unit}")
    } else {
        d.to_owned()
    };
    if typestr.trim_start_matches(['<', '>', '|', '=']).starts_with('O') {
        return Err(Error::InvalidFormat(format!(
            "dtype '{dtype}' holds Python objects (pickled), which have no fixed-size items"
        )));
    }
    let size = crate::dtype::itemsize(&typestr);
    if size.is_none() && !typestr.starts_with(['[', '{', '(']) {
        return Err(Error::InvalidFormat(format!("dtype '{dtype}' is not a NumPy dtype")));
    }
    if size == Some(0) {
        return Err(Error::InvalidFormat(format!("dtype '{dtype}' has items of 0 bytes")));
    }
    Ok((typestr, size))
}

/// The item size of a structured NumPy dtype written as its description,
/// `repr(dtype.descr)` or `str(dtype)`: `[('a', '<i4'), ('b', '<f8', (3,))]`,
/// fields with or without a byte-order mark (`u1`, `?`, `S3`), nested
/// descriptions, titles and subarray shapes included, or the
/// `{'names': ...}` form. `None` when the text is not such a description
/// or a field's type is not a fixed-size NumPy type.
#[must_use]
pub fn descr_itemsize(descr: &str) -> Option<usize> {
    let d = descr.trim();
    if d.starts_with(['[', '{']) {
        crate::dtype::itemsize(d)
    } else {
        None
    }
}

/// A bcolz carray directory: its metadata, and its chunks on demand.
#[derive(Clone, Debug)]
pub struct CArray {
    /// The directory.
    pub path: PathBuf,
    /// Shape (`meta/sizes`); the first axis is the carray's length.
    pub shape: Vec<i64>,
    /// dtype as bcolz recorded it (`meta/storage`).
    pub bcolz_dtype: String,
    /// The dtype as a NumPy typestr (or structured description) for `b2nd`.
    pub dtype: String,
    /// Bytes of one item of the dtype.
    pub itemsize: usize,
    /// Rows per chunk.
    pub chunklen: i64,
    /// The compression parameters bcolz recorded (`cparams` of `meta/storage`).
    pub cparams: Value,
    /// The default value (`dflt`) for rows added by a resize (`NaN` is common for prices).
    pub dflt: Json,
    /// The expected length bcolz sized its chunks for.
    pub expectedlen: Value,
    /// The user's attributes, in the order of their file.
    pub attrs: Attributes,
}

fn field<'a>(v: &'a Value, key: &str, file: &Path) -> Result<&'a Value> {
    v.get(key).ok_or_else(|| Error::InvalidFormat(format!("'{}' has no \"{key}\"", file.display())))
}

fn as_i64(v: &Value, key: &str, file: &Path) -> Result<i64> {
    field(v, key, file)?
        .as_i64()
        .ok_or_else(|| Error::InvalidFormat(format!("\"{key}\" in '{}' is not an integer", file.display())))
}

impl CArray {
    /// Read the metadata of the carray at `path` and check it for consistency.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `path` is not a carray directory;
    /// [`Error::Io`] for unreadable files; [`Error::InvalidFormat`] for bad
    /// JSON, missing or contradictory fields.
    pub fn open(path: &Path) -> Result<CArray> {
        let meta = path.join("meta");
        if !meta.join("sizes").is_file() || !meta.join("storage").is_file() || !path.join("data").is_dir() {
            return Err(Error::storage(
                Some(&path.display().to_string()),
                "not a bcolz carray directory (no meta/sizes, meta/storage and data/)",
            ));
        }
        let sizes_path = meta.join("sizes");
        let sizes = read_value(&sizes_path)?;
        let storage_path = meta.join("storage");
        let storage_json = read_json(&storage_path)?;
        let storage = storage_json.to_value_lossy();
        let shape: Vec<i64> = match field(&sizes, "shape", &sizes_path)? {
            Value::Array(a) => a.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>(),
            v => v.as_i64().map(|n| vec![n]),
        }
        .filter(|s| !s.is_empty() && s.len() <= crate::MAX_DIM && s.iter().all(|&d| d >= 0))
        .ok_or_else(|| {
            Error::InvalidFormat(format!("\"shape\" in '{}' is not a list of 1 to 8 lengths", sizes_path.display()))
        })?;
        let nbytes = as_i64(&sizes, "nbytes", &sizes_path)?;
        let bcolz_dtype = field(&storage, "dtype", &storage_path)?
            .as_str()
            .ok_or_else(|| Error::InvalidFormat(format!("\"dtype\" in '{}' is not a string", storage_path.display())))?
            .to_owned();
        let (dtype, size) = numpy_typestr(&bcolz_dtype)?;
        let chunklen = as_i64(&storage, "chunklen", &storage_path)?;
        if chunklen <= 0 || chunklen > i64::from(i32::MAX) {
            return Err(Error::InvalidFormat(format!("chunklen {chunklen} in '{}'", storage_path.display())));
        }
        let nitems = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
        let itemsize = match (size, nitems) {
            (Some(s), _) => s,
            (None, Some(n)) if n > 0 && nbytes > 0 && nbytes % n == 0 => (nbytes / n) as usize,
            _ => {
                return Err(Error::InvalidFormat(format!(
                    "the item size of dtype '{bcolz_dtype}' cannot be told ('{}')",
                    storage_path.display()
                )))
            }
        };
        if itemsize == 0 || itemsize > 255 {
            return Err(Error::InvalidFormat(format!(
                "dtype '{bcolz_dtype}' has items of {itemsize} bytes; caterva holds 1 to 255"
            )));
        }
        let want = nitems.and_then(|n| n.checked_mul(itemsize as i64));
        if want != Some(nbytes) {
            return Err(Error::InvalidFormat(format!(
                "'{}' says {nbytes} bytes; shape {shape:?} of {itemsize}-byte items holds {}",
                sizes_path.display(),
                want.map_or("too many".into(), |w| w.to_string())
            )));
        }
        let attrs_file = [path.join("__attrs__"), meta.join("attributes")].into_iter().find(|p| p.is_file());
        let attrs = match attrs_file {
            Some(p) => read_attrs(&p)?,
            None => Vec::new(),
        };
        Ok(CArray {
            path: path.to_owned(),
            shape,
            bcolz_dtype,
            dtype,
            itemsize,
            chunklen,
            cparams: storage.get("cparams").cloned().unwrap_or(Value::Null),
            dflt: storage_json.get("dflt").cloned().unwrap_or(Json::Null),
            expectedlen: storage.get("expectedlen").cloned().unwrap_or(Value::Null),
            attrs,
        })
    }

    /// Bytes of one row (one item along the first axis).
    #[must_use]
    pub fn row_nbytes(&self) -> usize {
        self.shape[1..].iter().map(|&d| d as usize).product::<usize>() * self.itemsize
    }

    /// Number of chunk files: full chunks, plus one for the leftover rows.
    #[must_use]
    pub fn nchunks(&self) -> i64 {
        (self.shape[0] + self.chunklen - 1) / self.chunklen
    }

    /// Rows in chunk `n`.
    #[must_use]
    pub fn chunk_rows(&self, n: i64) -> i64 {
        (self.shape[0] - n * self.chunklen).min(self.chunklen)
    }

    /// The file of chunk `n`: bcolz's `data/__<n>.blp`, or the seed's `data/__<n>__.bin`.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if neither exists.
    pub fn chunk_path(&self, n: i64) -> Result<PathBuf> {
        let data = self.path.join("data");
        let blp = data.join(format!("__{n}.blp"));
        if blp.is_file() {
            return Ok(blp);
        }
        let bin = data.join(format!("__{n}__.bin"));
        if bin.is_file() {
            return Ok(bin);
        }
        Err(Error::InvalidFormat(format!(
            "carray '{}': chunk {n} of {} is missing ('{}')",
            self.path.display(),
            self.nchunks(),
            blp.display()
        )))
    }

    /// The compressed chunk `n` (a Blosc chunk), its size checked against
    /// the rows it must hold.
    ///
    /// # Errors
    /// As [`CArray::chunk_path`] and [`Reader::open`]; [`Error::InvalidFormat`]
    /// if the chunk holds other than `chunk_rows(n)` rows.
    pub fn read_chunk(&self, n: i64) -> Result<Vec<u8>> {
        let path = self.chunk_path(n)?;
        let mut r = Reader::open(&path)?;
        let chunk = r
            .next_chunk()?
            .ok_or_else(|| Error::InvalidFormat(format!("chunk file '{}' holds no chunk", path.display())))?;
        let nbytes = u32::from_le_bytes(chunk[4..8].try_into().unwrap_or([0; 4])) as usize;
        let want = self.chunk_rows(n) as usize * self.row_nbytes();
        if nbytes != want {
            return Err(Error::InvalidFormat(format!(
                "carray '{}': chunk {n} holds {nbytes} bytes; {} rows of {} bytes need {want} (meta/sizes or chunklen lie?)",
                self.path.display(),
                self.chunk_rows(n),
                self.row_nbytes()
            )));
        }
        Ok(chunk)
    }
}

/// A bcolz ctable directory: its columns, in order.
#[derive(Clone, Debug)]
pub struct CTable {
    /// The directory.
    pub path: PathBuf,
    /// Column names and their carrays.
    pub columns: Vec<(String, CArray)>,
    /// The table's own attributes (`__attrs__` beside `__rootdirs__`), in file order.
    pub attrs: Attributes,
}

impl CTable {
    /// Read the ctable at `path`: `__rootdirs__` and every column's metadata.
    ///
    /// # Errors
    /// As [`CArray::open`]; [`Error::InvalidFormat`] if the columns differ in length.
    pub fn open(path: &Path) -> Result<CTable> {
        let roots = path.join("__rootdirs__");
        let v = read_value(&roots)?;
        let names: Vec<String> = field(&v, "names", &roots)?
            .as_array()
            .and_then(|a| a.iter().map(|n| n.as_str().map(str::to_owned)).collect())
            .ok_or_else(|| {
                Error::InvalidFormat(format!("\"names\" in '{}' is not a list of strings", roots.display()))
            })?;
        let mut columns = Vec::with_capacity(names.len());
        for name in names {
            if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
                return Err(Error::InvalidFormat(format!("column name '{name}' in '{}'", roots.display())));
            }
            // A column may be n-d (bcolz keeps rows of a fixed shape): its first
            // axis is the table's.
            let c = CArray::open(&path.join(&name))?;
            if let Some((first, f)) = columns.first() {
                let f: &CArray = f;
                if f.shape[0] != c.shape[0] {
                    return Err(Error::InvalidFormat(format!(
                        "ctable '{}': column '{name}' has {} rows, '{first}' {}",
                        path.display(),
                        c.shape[0],
                        f.shape[0]
                    )));
                }
            }
            columns.push((name, c));
        }
        let attrs = match path.join("__attrs__") {
            p if p.is_file() => read_attrs(&p)?,
            _ => Vec::new(),
        };
        Ok(CTable { path: path.to_owned(), columns, attrs })
    }

    /// Rows of the table.
    #[must_use]
    pub fn len(&self) -> i64 {
        self.columns.first().map_or(0, |(_, c)| c.shape[0])
    }

    /// Whether the table has no rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_item_sizes() {
        for (d, n) in [
            ("[('a', '<i4'), ('b', '<f8')]", Some(12)),
            ("[('a','<i4'),('b','<f8',(3,)),('c','|S3')]", Some(31)),
            ("[('a', '<i4'), ('b', '<f8', (2, 3))]", Some(52)),
            ("[('a', '<i4'), ('b', '<f8', 2)]", Some(20)),
            ("[('p', [('x', '<f4'), ('y', '<f4')]), ('t', '<M8[ns]')]", Some(16)),
            ("[('u', '<U3')]", Some(12)),
            ("[]", Some(0)),
            ("[('a', '<i4'), ('b', '<f8'", None),
            ("[('a', 'i4')]", Some(4)),
            ("[('a', 'u1'), ('b', '?'), ('c', 'S3'), ('d', 'i1')]", Some(6)),
            ("[('a', '|O')]", None),
            ("[(('t', 'a'), '<i4')]", Some(4)),
            ("[('a', '<i4')] x", None),
            ("[('a', '<i4', (2,)]", None),
        ] {
            assert_eq!(descr_itemsize(d), n, "{d}");
        }
        assert_eq!(numpy_typestr("[('a', '<i4'), ('b', '<f8')]").unwrap().1, Some(12));
        // bcolz's str(dtype) of records with 1-byte fields (issue 41).
        assert_eq!(numpy_typestr("[('a', 'u1'), ('b', '<i4')]").unwrap().1, Some(5));
        assert_eq!(numpy_typestr("|S3").unwrap(), ("|S3".into(), Some(3)));
        assert_eq!(numpy_typestr("uint8").unwrap(), ("|u1".into(), Some(1)));
        assert!(numpy_typestr("|O").unwrap_err().to_string().contains("Python objects"));
        assert_eq!(numpy_typestr("[('Open', '<f8'), ('o', 'O')]").unwrap().1, None);
        assert!(numpy_typestr("nonsense").unwrap_err().to_string().contains("is not a NumPy dtype"));
    }
}
