//! `caterva copy`: write a new array with the source's items and
//! metalayers, with other partitions, compression or storage if asked.

use std::path::Path;

use caterva::{codec, ArrayInfo, CParams, ErrorKind, StorageParams};

use crate::info::codec_text;
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
    /// Codec: zstd, lz4, lz4hc, blosclz or zlib
    #[arg(long, value_name = "NAME", value_parser = parse_codec)]
    codec: Option<u8>,
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

fn parse_codec(name: &str) -> Result<u8, String> {
    codec::by_name(name).ok_or_else(|| {
        let names: Vec<&str> = codec::ALL.iter().map(|(_, n)| *n).collect();
        format!("unknown codec '{name}' ({})", names.join(", "))
    })
}

fn parse_clevel(s: &str) -> Result<u8, String> {
    s.trim().parse::<u8>().ok().filter(|&c| c <= 9).ok_or_else(|| format!("'{s}' is not a level from 0 to 9"))
}

/// `caterva copy`.
pub fn run(a: &Args) -> Outcome {
    let reader = crate::context(&a.run, CParams::default(), false)?;
    let arr = crate::open(&reader, &a.src)?;
    let info = arr.info();
    let storage = storage(a, arr.ndim(), &info)?;
    check_destination(a)?;
    let ctx = crate::context(&a.run, cparams(a, &info), a.checksums)?;
    let copy = progress::spinner("copy", a.run.wanted(), || arr.copy(&ctx, &storage)).map_err(|e| {
        let partitions = a.chunks.is_some() || a.blocks.is_some();
        match e.kind() {
            // The partitions asked for do not fit the array.
            ErrorKind::InvalidArgument if partitions => Failure::Usage(e.message()),
            ErrorKind::InvalidStorage => Failure::Open(format!("cannot write '{}': {e}", a.dst)),
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
        codec_text(ci.cparams.codec),
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

/// The source's compression parameters with `--codec` and `--clevel` applied.
fn cparams(a: &Args, info: &ArrayInfo) -> CParams {
    let mut cp = info.cparams;
    if !(1..=4).contains(&cp.splitmode) {
        // Not recorded in every frame: take the library default.
        cp.splitmode = CParams::default().splitmode;
    }
    if let Some(c) = a.codec {
        cp.codec = c;
        cp.codec_meta = 0;
    }
    if let Some(level) = a.clevel {
        cp.clevel = level;
    }
    cp
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
        assert_eq!(parse_codec("lz4hc"), Ok(codec::LZ4HC));
        assert!(parse_codec("snappy").unwrap_err().contains("unknown codec 'snappy' (blosclz, lz4"));
        assert_eq!(parse_clevel("9"), Ok(9));
        assert!(parse_clevel("10").unwrap_err().contains("not a level from 0 to 9"));
    }
}
