//! `caterva copy`: write a new array with the source's items and
//! metalayers, with other partitions, compression or storage if asked.

use std::path::Path;

use caterva::{
    codec, propose_partitions, Access, Array, ArrayInfo, CParams, Codec, Config, Context, ErrorKind, Filter, Objective,
    PartitionHints, StorageParams, Tuning,
};

use crate::{progress, Failure, Outcome, RunOpts};

/// The arguments of `caterva copy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The array to copy
    #[arg(value_name = "SRC")]
    src: String,
    /// Where to write the copy
    #[arg(value_name = "DST")]
    dst: String,
    /// Chunk shape (default: the source's)
    #[arg(long, value_name = "a,b,...", value_parser = parse_shape)]
    chunks: Option<Shape>,
    /// Block shape (default: the source's, cut to the chunks)
    #[arg(long, value_name = "a,b,...", value_parser = parse_shape)]
    blocks: Option<Shape>,
    /// Choose chunks and blocks for how the copy will be read: balanced,
    /// small-reads, scans or planes:AXIS (see the README's "Choosing chunks
    /// and blocks")
    #[arg(long, value_name = "PATTERN", value_parser = parse_access, conflicts_with_all = ["chunks", "blocks"])]
    access: Option<Access>,
    /// With --access: uncompressed bytes per chunk to aim for (K, M, G suffixes)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, requires = "access")]
    chunk_size: Option<usize>,
    /// With --access: uncompressed bytes per block to aim for (K, M, G suffixes)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, requires = "access")]
    block_size: Option<usize>,
    /// Let the data choose the codec, filters and chunks: speed, balanced
    /// or size (whole blocks of the source, about 256 KiB, compressed a few
    /// ways; the choice and why are kept in the copy, see `caterva info`). Sources
    /// under 32 MiB get the default proposal.
    #[arg(long, value_name = "OBJECTIVE", value_parser = parse_objective,
          conflicts_with_all = ["chunks", "blocks", "access", "codec", "clevel"])]
    tune: Option<Objective>,
    /// Codec: zstd, lz4, lz4hc, blosclz or zlib
    #[arg(long, value_name = "NAME", value_parser = parse_codec)]
    codec: Option<Codec>,
    /// Compression level, 0 to 9
    #[arg(long, value_name = "N", value_parser = parse_clevel)]
    clevel: Option<u8>,
    /// Write one frame file
    #[arg(long, conflicts_with = "sparse")]
    contiguous: bool,
    /// Write a sparse-frame directory (one file per chunk)
    #[arg(long)]
    sparse: bool,
    /// Replace DST if it is an array already
    #[arg(short, long)]
    force: bool,
    /// Keep per-chunk checksums in the copy (kept anyway if SRC has them)
    #[arg(long)]
    checksums: bool,
    #[command(flatten)]
    run: RunOpts,
}

/// A chunk or block shape given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape(Vec<i32>);

/// Parse `a,b,...` (empty for a 0-dim array).
fn parse_shape(s: &str) -> Result<Shape, String> {
    if s.trim().is_empty() {
        return Ok(Shape(Vec::new()));
    }
    s.split(',')
        .map(|x| x.trim().parse().map_err(|_| format!("'{x}' is not a valid number")))
        .collect::<Result<_, _>>()
        .map(Shape)
}

fn parse_access(name: &str) -> Result<Access, String> {
    Access::by_name(name)
        .ok_or_else(|| format!("unknown access pattern '{name}' (balanced, small-reads, scans, planes:AXIS)"))
}

/// Parse a byte count: digits with an optional K, M or G (powers of 1024).
fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{s}' is not a size in bytes (such as 65536, 64K or 4M)"))
}

fn parse_codec(name: &str) -> Result<Codec, String> {
    codec::by_name(name).map(Codec::from_id).ok_or_else(|| {
        let names: Vec<&str> = codec::ALL.iter().map(|(_, n)| *n).collect();
        format!("unknown codec '{name}' ({})", names.join(", "))
    })
}

fn parse_objective(name: &str) -> Result<Objective, String> {
    Objective::by_name(name).ok_or_else(|| format!("unknown objective '{name}' (speed, balanced, size)"))
}

fn parse_clevel(s: &str) -> Result<u8, String> {
    s.trim().parse::<u8>().ok().filter(|&c| c <= 9).ok_or_else(|| format!("'{s}' is not a level from 0 to 9"))
}

/// `caterva copy`.
pub fn run(a: &Args) -> Outcome {
    let reader = crate::context(&a.run, CParams::default(), false)?;
    let arr = crate::open(&reader, &a.src)?;
    let info = arr.info();
    let mut storage = storage(a, arr.ndim(), &info)?;
    if let Some(access) = a.access {
        let threads = a.run.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let p = propose(&arr, access, a.chunk_size, a.block_size, threads)?;
        (storage.chunkshape, storage.blockshape) = (p.chunkshape, p.blockshape);
    }
    let mut cp = cparams(a, &info);
    let tuning = match a.tune {
        Some(objective) => {
            let threads = a.run.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
            let t = tune_by(&arr, objective, threads)?;
            (storage.chunkshape, storage.blockshape) =
                (t.partitions.chunkshape.clone(), t.partitions.blockshape.clone());
            cp = CParams { use_dict: false, ..t.cparams };
            Some(t)
        }
        None => None,
    };
    check_destination(a)?;
    let (cp, changes) = writable(cp);
    for change in &changes {
        eprintln!("caterva: copy: {change}");
    }
    // The parameters are the source's or checked options: a context that
    // still cannot be made is a failure here, not the user's command line.
    let ctx = crate::context(&a.run, cp, a.checksums).map_err(|f| match f {
        Failure::Usage(m) => Failure::Failed(format!("cannot write '{}': {m}", a.dst)),
        f => f,
    })?;
    let copy = progress::spinner("copy", a.run.wanted(), || {
        let mut copy = arr.copy(&ctx, &storage)?;
        if let Some(t) = tuning.as_ref().filter(|t| !t.candidates.is_empty()) {
            copy.vlmeta_add(caterva::REPORT_VLMETA, &t.recorded())?;
        }
        Ok(copy)
    })
    .map_err(|e: caterva::Error| {
        let partitions = a.chunks.is_some() || a.blocks.is_some();
        match e.kind() {
            // The partitions asked for do not fit the array.
            ErrorKind::InvalidArgument if partitions => Failure::Usage(e.message()),
            ErrorKind::InvalidStorage | ErrorKind::NotFound => Failure::Open(format!("cannot write '{}': {e}", a.dst)),
            // A chunk of the source this build cannot decode: the copy cannot be made here.
            ErrorKind::Unsupported => Failure::Unsupported(format!("cannot copy '{}': {e}", a.src)),
            _ => Failure::Failed(format!("cannot write '{}': {e}", a.dst)),
        }
    })?;
    if a.run.quiet {
        return Ok(());
    }
    let ci = copy.info();
    crate::out(&format!(
        "{}: {} {:?}, chunks {:?}, blocks {:?}, {} clevel {}, {} -> {} bytes\n",
        a.dst,
        if ci.contiguous { "contiguous" } else { "sparse" },
        copy.shape(),
        ci.chunkshape,
        ci.blockshape,
        ci.cparams.codec,
        ci.cparams.clevel,
        ci.nbytes,
        ci.cbytes
    ))
}

/// The partitions and location of the copy (the library checks that the
/// partitions fit the array).
fn storage(a: &Args, ndim: usize, info: &ArrayInfo) -> Result<StorageParams, Failure> {
    let check = |name: &str, shape: &Option<Shape>| -> Result<Option<Vec<i32>>, Failure> {
        match shape {
            Some(Shape(v)) if v.len() != ndim => {
                Err(Failure::Usage(format!("--{name} needs {ndim} entries (one per axis), not {}", v.len())))
            }
            Some(Shape(v)) => Ok(Some(v.clone())),
            None => Ok(None),
        }
    };
    let chunkshape = check("chunks", &a.chunks)?.unwrap_or_else(|| info.chunkshape.clone());
    let blockshape = check("blocks", &a.blocks)?
        .unwrap_or_else(|| info.blockshape.iter().zip(&chunkshape).map(|(&b, &c)| b.min(c)).collect());
    let contiguous = match (a.contiguous, a.sparse) {
        (true, _) => true,
        (_, true) => false,
        _ => info.contiguous,
    };
    Ok(StorageParams { chunkshape, blockshape, contiguous, urlpath: Some(a.dst.clone()), metalayers: Vec::new() })
}

/// The partitions `--access` proposes for the copy of `arr`.
fn propose(
    arr: &Array,
    access: Access,
    chunk_bytes: Option<usize>,
    block_bytes: Option<usize>,
    threads: usize,
) -> Result<caterva::Partitions, Failure> {
    let hints = PartitionHints { access, chunk_bytes, block_bytes, threads: Some(threads) };
    propose_partitions(arr.itemsize(), arr.shape(), &hints)
        .map_err(|e| Failure::Usage(format!("--access: {}", e.message())))
}

/// What the tuner chooses for a copy of `arr`: from its items (a slab of
/// the first rows, enough for the tuner's minimum when the array has it).
fn tune_by(arr: &Array, objective: Objective, threads: usize) -> Result<Tuning, Failure> {
    let failed = |e: caterva::Error| Failure::Failed(format!("cannot tune: {e}"));
    let shape = arr.shape().to_vec();
    let row: i64 = shape.iter().skip(1).product::<i64>() * arr.itemsize() as i64;
    let mut stop = shape.clone();
    if let (Some(first), true) = (stop.first_mut(), row > 0) {
        *first = (*first).min((caterva::MIN_TUNED_BYTES as i64 + row - 1) / row);
    }
    let start = vec![0; shape.len()];
    let n: i64 = stop.iter().product::<i64>() * arr.itemsize() as i64;
    let mut data = vec![0u8; usize::try_from(n).map_err(|_| Failure::Failed("the sample is too large".into()))?];
    arr.get_slice_buffer(&start, &stop, &mut data, &stop).map_err(failed)?;
    // The tuner's minimum is about the array, not the slab: a smaller array keeps the rule.
    let total: i64 = shape.iter().product::<i64>() * arr.itemsize() as i64;
    let data = if (total as usize) < caterva::MIN_TUNED_BYTES { &data[..0] } else { &data[..] };
    let hints = PartitionHints { threads: Some(threads), ..PartitionHints::default() };
    let t = caterva::tune(data, arr.itemsize(), &shape, &hints, objective).map_err(failed)?;
    Ok(t)
}

/// The source's compression parameters with `--codec` and `--clevel` applied.
fn cparams(a: &Args, info: &ArrayInfo) -> CParams {
    // A split mode the frame does not record reads as the library default.
    let mut cp = info.cparams;
    if let Some(c) = a.codec {
        cp.codec = c;
        cp.codec_meta = 0;
    }
    if let Some(level) = a.clevel {
        cp.clevel = level;
    }
    cp
}

/// `cp` made writable here, with a sentence for each change: an array we
/// read may record a codec or filter plugin c-blosc2 is built here without
/// (its chunks may still decode: special chunks, or a filter recorded but
/// unused), or a dictionary with a codec other than ZSTD (c-blosc2 3.x);
/// the copy is recompressed with the library's default codec in place of
/// the plugin codec, without the plugin filters (the values read are what
/// the copy holds: a lossy filter's work is already in them), and without
/// the dictionary. Everything else is kept. Unchanged when the library
/// takes `cp` as it is.
fn writable(cp: CParams) -> (CParams, Vec<String>) {
    let takes = |cp: CParams| Context::new(Config { cparams: cp, nthreads: 1, ..Config::default() }).is_ok();
    if takes(cp) {
        return (cp, Vec::new());
    }
    let mut out = cp;
    let mut changes = Vec::new();
    if let Codec::Other(id) = cp.codec {
        out.codec = CParams::default().codec;
        out.codec_meta = 0;
        let name = codec::plugin_name(id).map_or(format!("codec {id}"), |n| format!("codec {n} (id {id})"));
        changes.push(format!("{name} cannot be written by this build: recompressed with {} instead", out.codec));
    }
    for (slot, filter) in out.filters.iter_mut().enumerate() {
        if let Filter::Other(id) = *filter {
            *filter = Filter::NoFilter;
            out.filters_meta[slot] = 0;
            let name =
                codec::filter::plugin_name(id).map_or(format!("filter {id}"), |n| format!("filter {n} (id {id})"));
            changes.push(format!("{name} cannot be run by this build: left out of the copy's filters"));
        }
    }
    if out.use_dict && out.codec != Codec::Zstd {
        out.use_dict = false;
        changes.push(format!("a dictionary with codec {}: left out (dictionaries are for zstd only)", out.codec));
    }
    (out, changes)
}

/// Refuse to overwrite anything without `--force`, and the source always.
fn check_destination(a: &Args) -> Outcome {
    if std::fs::symlink_metadata(&a.dst).is_err() {
        return Ok(());
    }
    let same = match (Path::new(&a.src).canonicalize(), Path::new(&a.dst).canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    };
    if same {
        return Err(Failure::Usage(format!("'{}' is the source array itself", a.dst)));
    }
    if !a.force {
        return Err(Failure::Open(format!("'{}' exists; pass --force to replace it", a.dst)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values() {
        assert_eq!(parse_shape("1, 2,3"), Ok(Shape(vec![1, 2, 3])));
        assert_eq!(parse_shape(""), Ok(Shape(vec![])));
        assert!(parse_shape("1,,2").unwrap_err().contains("'' is not a valid number"));
        assert_eq!(parse_codec("lz4hc"), Ok(Codec::Lz4hc));
        assert!(parse_codec("snappy").unwrap_err().contains("unknown codec 'snappy' (blosclz, lz4"));
        assert_eq!(parse_clevel("9"), Ok(9));
        assert_eq!(parse_access("planes:1"), Ok(Access::Planes { axis: 1 }));
        assert!(parse_access("rows").unwrap_err().contains("unknown access pattern 'rows'"));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("3m"), Ok(3 << 20));
        assert_eq!(parse_bytes("1000"), Ok(1000));
        for bad in ["0", "x", "4T", "", "99999999999999999999G"] {
            assert!(parse_bytes(bad).unwrap_err().contains("is not a size in bytes"), "{bad}");
        }
        assert!(parse_clevel("10").unwrap_err().contains("not a level from 0 to 9"));
    }
}
