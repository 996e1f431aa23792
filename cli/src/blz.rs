//! `caterva import`, `caterva export`, and `caterva info` on BLZ data:
//! bcolz carray and ctable directories and Bloscpack (`.blp`) files.

use std::path::Path;

use caterva::blz::{self, Checksum, ExportOptions, Kind};
use caterva::{codec, Array, CParams, Codec, ErrorKind, StorageParams};
use serde_json::{json, Value};

use crate::progress::Bar;
use crate::{Failure, Outcome, RunOpts};

/// The arguments of `caterva import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// A bcolz carray or ctable directory, or a Bloscpack (.blp) file
    #[arg(value_name = "SRC")]
    src: String,
    /// The new array (for a ctable: a new directory, one array per column)
    #[arg(value_name = "DST")]
    dst: String,
    /// Import only this column of a ctable, into DST
    #[arg(long, value_name = "NAME", conflicts_with = "records")]
    column: Option<String>,
    /// Import a ctable as one array of records (a structured dtype of its columns), into DST
    #[arg(long)]
    records: bool,
    /// Chunk shape (default: proposed for the array's shape, about 2 MiB,
    /// as `caterva copy --access balanced`; never the source's chunk length)
    #[arg(long, value_name = "a,b,...", value_parser = parse_shape)]
    chunks: Option<Shape>,
    /// Block shape (default: proposed inside the chunks, about 16 KiB)
    #[arg(long, value_name = "a,b,...", value_parser = parse_shape)]
    blocks: Option<Shape>,
    /// Codec: zstd, lz4, lz4hc, blosclz or zlib (default lz4, the library's
    /// proposal: `caterva::propose_cparams`)
    #[arg(long, value_name = "NAME")]
    codec: Option<String>,
    /// Compression level, 0 to 9 (default 5)
    #[arg(long, value_name = "N")]
    clevel: Option<u8>,
    /// Write a sparse-frame directory (one file per chunk) instead of one frame file
    #[arg(long)]
    sparse: bool,
    /// Keep per-chunk checksums
    #[arg(long)]
    checksums: bool,
    #[command(flatten)]
    run: RunOpts,
}

/// The arguments of `caterva export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The array(s) to export, then DST: the new carray or ctable directory, or
    /// .blp file (must not exist). Several 1-d arrays of equal length make a
    /// ctable whose columns are named after the files (or --names)
    #[arg(value_name = "SRC... DST", required = true, num_args = 2..)]
    paths: Vec<String>,
    /// Column names of a ctable, comma-separated
    #[arg(long, value_name = "a,b,...")]
    names: Option<String>,
    /// Write a Bloscpack file instead of a bcolz carray directory
    #[arg(long)]
    bloscpack: bool,
    /// Checksum after every chunk of a Bloscpack file: none, adler32, crc32,
    /// md5, sha1, sha224, sha256, sha384, sha512
    #[arg(long, value_name = "NAME", default_value = "adler32", value_parser = parse_checksum)]
    checksum: Checksum,
    /// Codec: blosclz, lz4, lz4hc, zlib or zstd
    #[arg(long, value_name = "NAME", default_value = "blosclz")]
    codec: String,
    /// Compression level, 0 to 9
    #[arg(long, value_name = "N", default_value_t = 5)]
    clevel: u8,
    /// Shuffle: 0 none, 1 byte, 2 bit
    #[arg(long, value_name = "N", default_value_t = 1)]
    shuffle: u8,
    /// Rows per chunk (default: the array's chunk length along the first axis)
    #[arg(long, value_name = "N", default_value_t = 0)]
    chunklen: i64,
    #[command(flatten)]
    run: RunOpts,
}

/// A chunk or block shape given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape(Vec<i32>);

fn parse_shape(s: &str) -> Result<Shape, String> {
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| format!("'{x}' is not a valid number")))
        .collect::<Result<_, _>>()
        .map(Shape)
}

fn parse_checksum(s: &str) -> Result<Checksum, String> {
    Checksum::from_name(s).ok_or_else(|| format!("unknown checksum '{s}'"))
}

/// A progress bar made on the first report, when the total is known.
fn reporter(label: &'static str, enabled: bool) -> impl FnMut(i64, i64) {
    let mut bar: Option<Bar> = None;
    move |done, total| {
        let b = bar.get_or_insert_with(|| Bar::new(label, "rows", total.max(0) as u64, enabled));
        b.update(done.max(0) as u64);
    }
}

fn failure(what: &str, path: &str, e: &caterva::Error) -> Failure {
    match e.kind() {
        ErrorKind::InvalidStorage | ErrorKind::NotFound | ErrorKind::Io => {
            Failure::Open(format!("cannot {what} '{path}': {e}"))
        }
        _ => Failure::Failed(format!("cannot {what} '{path}': {e}")),
    }
}

/// `caterva import`.
pub fn import(a: &ImportArgs) -> Outcome {
    let mut cp = caterva::propose_cparams();
    if let Some(name) = &a.codec {
        cp.codec = codec::by_name(name)
            .map(Codec::from_id)
            .ok_or_else(|| Failure::Usage(format!("unknown codec '{name}'")))?;
    }
    if let Some(l) = a.clevel {
        cp.clevel = l;
    }
    let ctx = crate::context(&a.run, cp, a.checksums)?;
    if std::fs::symlink_metadata(&a.dst).is_ok() {
        return Err(Failure::Open(format!("'{}' exists; import writes a new array", a.dst)));
    }
    let src = Path::new(&a.src);
    let kind = blz::detect(src).map_err(|e| failure("import", &a.src, &e))?;
    let storage = |urlpath: String| StorageParams {
        chunkshape: a.chunks.clone().map(|s| s.0).unwrap_or_default(),
        blockshape: a.blocks.clone().map(|s| s.0).unwrap_or_default(),
        contiguous: !a.sparse,
        urlpath: Some(urlpath),
        metalayers: Vec::new(),
    };
    let mut progress = reporter("import", a.run.wanted());
    let arrays: Vec<(String, Array)> = match (kind, &a.column) {
        (Kind::CTable, Some(col)) => {
            let arr = blz::import_column(&ctx, src, col, &storage(a.dst.clone()), &mut progress)
                .map_err(|e| failure("import", &a.src, &e))?;
            vec![(a.dst.clone(), arr)]
        }
        (Kind::CTable, None) if a.records => {
            let arr = blz::import_ctable_records(&ctx, src, &storage(a.dst.clone()), &mut progress)
                .map_err(|e| failure("import", &a.src, &e))?;
            vec![(a.dst.clone(), arr)]
        }
        (Kind::CTable, None) => {
            std::fs::create_dir(&a.dst).map_err(|e| Failure::Open(format!("cannot create '{}': {e}", a.dst)))?;
            let ext = if a.sparse { "b2nd" } else { "b2frame" };
            let dst = a.dst.clone();
            let r = blz::import_ctable(&ctx, src, &mut |name| storage(format!("{dst}/{name}.{ext}")), &mut progress);
            match r {
                Ok(cols) => cols.into_iter().map(|(n, arr)| (format!("{}/{n}.{ext}", a.dst), arr)).collect(),
                Err(e) => {
                    let _ = std::fs::remove_dir(&a.dst);
                    return Err(failure("import", &a.src, &e));
                }
            }
        }
        (_, Some(_)) => return Err(Failure::Usage("--column applies to a ctable only".into())),
        (_, None) if a.records => return Err(Failure::Usage("--records applies to a ctable only".into())),
        _ => {
            let arr = blz::import(&ctx, src, &storage(a.dst.clone()), &mut progress)
                .map_err(|e| failure("import", &a.src, &e))?;
            vec![(a.dst.clone(), arr)]
        }
    };
    drop(progress);
    if a.run.quiet {
        return Ok(());
    }
    let mut text = String::new();
    for (path, arr) in &arrays {
        let i = arr.info();
        text += &format!(
            "{path}: {:?} {}, chunks {:?}, blocks {:?}, {} -> {} bytes\n",
            arr.shape(),
            arr.dtype().unwrap_or_default(),
            i.chunkshape,
            i.blockshape,
            i.nbytes,
            i.cbytes
        );
    }
    crate::out(&text)
}

/// `caterva export`.
pub fn export(a: &ExportArgs) -> Outcome {
    let (dst_path, src) = a.paths.split_last().ok_or_else(|| Failure::Usage("SRC and DST are needed".into()))?;
    let ctx = crate::context(&a.run, CParams::default(), false)?;
    let opts = ExportOptions {
        cname: a.codec.clone(),
        clevel: a.clevel,
        shuffle: a.shuffle,
        chunklen: a.chunklen,
        checksum: a.checksum,
    };
    let arrays: Vec<Array> = src.iter().map(|p| crate::open(&ctx, p)).collect::<Result<_, _>>()?;
    let dst = Path::new(dst_path);
    let mut progress = reporter("export", a.run.wanted());
    let r = if arrays.len() == 1 && a.names.is_none() {
        if a.bloscpack {
            blz::export_bloscpack(&arrays[0], dst, &opts, &mut progress)
        } else {
            blz::export_carray(&arrays[0], dst, &opts, &mut progress)
        }
    } else {
        if a.bloscpack {
            return Err(Failure::Usage("a Bloscpack file holds one array".into()));
        }
        let names: Vec<String> = match &a.names {
            Some(n) => n.split(',').map(|s| s.trim().to_owned()).collect(),
            None => src
                .iter()
                .map(|p| Path::new(p).file_stem().map_or_else(|| p.clone(), |s| s.to_string_lossy().into_owned()))
                .collect(),
        };
        if names.len() != arrays.len() {
            return Err(Failure::Usage(format!("{} names for {} arrays", names.len(), arrays.len())));
        }
        let cols: Vec<(&str, &Array)> = names.iter().map(String::as_str).zip(&arrays).collect();
        blz::export_ctable(&cols, dst, &opts, &mut progress)
    };
    drop(progress);
    r.map_err(|e| match e.kind() {
        ErrorKind::InvalidArgument => Failure::Usage(e.message()),
        _ => failure("export to", dst_path, &e),
    })?;
    if a.run.quiet {
        return Ok(());
    }
    crate::out(&format!("{dst_path}: written\n"))
}

/// `caterva info` on BLZ data: `None` if `path` is not BLZ.
pub fn info(path: &str, as_json: bool) -> Option<Outcome> {
    let p = Path::new(path);
    let kind = blz::detect(p).ok()?;
    let fields = match describe(p, kind) {
        Ok(f) => f,
        Err(e) => return Some(Err(Failure::Failed(format!("'{path}': {e}")))),
    };
    let text = if as_json {
        let mut t = serde_json::to_string_pretty(&Value::Object(fields)).unwrap_or_default();
        t.push('\n');
        t
    } else {
        fields.iter().map(|(k, v)| format!("{:<14}{}\n", format!("{k}:"), plain(v))).collect()
    };
    Some(crate::out(&text))
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "(none)".into(),
        v => v.to_string(),
    }
}

fn describe(p: &Path, kind: Kind) -> caterva::Result<serde_json::Map<String, Value>> {
    let mut m = serde_json::Map::new();
    m.insert("path".into(), json!(p.display().to_string()));
    match kind {
        Kind::CArray | Kind::CTable => {
            let carrays = if kind == Kind::CTable {
                let t = blz::carray::CTable::open(p)?;
                m.insert("format".into(), json!("bcolz ctable"));
                m.insert("rows".into(), json!(t.len()));
                m.insert("columns".into(), json!(t.columns.iter().map(|(n, _)| n).collect::<Vec<_>>()));
                t.columns
            } else {
                m.insert("format".into(), json!("bcolz carray"));
                vec![(String::new(), blz::carray::CArray::open(p)?)]
            };
            for (name, c) in carrays {
                let prefix = if name.is_empty() { String::new() } else { format!("{name}.") };
                m.insert(format!("{prefix}shape"), json!(c.shape));
                m.insert(format!("{prefix}dtype"), json!(c.bcolz_dtype));
                m.insert(format!("{prefix}chunklen"), json!(c.chunklen));
                m.insert(format!("{prefix}nchunks"), json!(c.nchunks()));
                m.insert(format!("{prefix}cparams"), c.cparams.clone());
                m.insert(format!("{prefix}attrs"), blz::Json::Object(c.attrs.clone()).to_value_lossy());
            }
        }
        Kind::Bloscpack => {
            let r = blz::bloscpack::Reader::open(p)?;
            let h = r.header();
            m.insert("format".into(), json!(format!("Bloscpack version {}", h.version)));
            m.insert("checksum".into(), json!(h.checksum.name()));
            m.insert("typesize".into(), json!(h.typesize));
            m.insert("chunk_size".into(), json!(h.chunk_size));
            m.insert("last_chunk".into(), json!(h.last_chunk));
            m.insert("nchunks".into(), json!(h.nchunks));
            m.insert("offsets".into(), json!(h.offsets));
            m.insert("metadata".into(), r.metadata().cloned().unwrap_or(Value::Null));
            m.insert("shape".into(), json!(blz::source_shape(p)?));
        }
    }
    Ok(m)
}
