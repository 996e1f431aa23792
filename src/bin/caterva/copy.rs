//! `caterva copy`: write a new array with the source's items and
//! metalayers, with other partitions, compression or storage if asked.

use std::path::Path;

use caterva::{Array, Geometry, StorageParams};

use crate::args::{self, Opt, Parsed};
use crate::info::{codec_code, codec_name};
use crate::{progress, Command, Failure, Outcome, NO_PROGRESS, THREADS};

/// `caterva copy`.
pub const COMMAND: Command = Command {
    name: "copy",
    usage: "copy SRC DST [OPTIONS]",
    summary: "write a copy, with new partitions, compression or storage if asked",
    details: "Unset options keep the source's settings (filters always are). When the\n\
partitions and compression are unchanged, chunks are copied without\n\
recompressing them. Metalayers and vlmetalayers are copied.",
    opts: &[
        Opt::value("chunks", "a,b,...", "chunk shape (default: the source's)"),
        Opt::value("blocks", "a,b,...", "block shape (default: the source's, cut to the chunks)"),
        Opt::value("codec", "NAME", "zstd, lz4, lz4hc, blosclz or zlib"),
        Opt::value("clevel", "N", "compression level, 0 to 9"),
        Opt::flag("contiguous", "write one frame file"),
        Opt::flag("sparse", "write a sparse-frame directory (one file per chunk)"),
        Opt::flag("force", "replace DST if it is an array already"),
        Opt::flag("checksums", "keep per-chunk checksums in the copy (kept anyway if SRC has them)"),
        THREADS,
        NO_PROGRESS,
    ],
    run,
};

fn run(p: &Parsed) -> Outcome {
    let [src, dst] = crate::positionals(p, &["SRC", "DST"])?[..] else { unreachable!("two positionals") };
    let reader = crate::context(p, Default::default())?;
    let arr = crate::open(&reader, src)?;
    let storage = storage(p, &arr, dst)?;
    check_destination(p, src, dst)?;
    let mut ctx = crate::context(p, cparams(p, &arr)?)?;
    if p.flag("checksums") {
        let config = caterva::Config { checksums: true, ..*ctx.config() };
        ctx = caterva::Context::new(config).map_err(|e| Failure::Usage(e.message()))?;
    }
    let copy = progress::spinner("copy", progress::wanted(p), || arr.copy(&ctx, &storage)).map_err(|e| {
        let msg = format!("cannot write '{dst}': {e}");
        match e {
            caterva::Error::InvalidStorage { .. } => Failure::Open(msg),
            _ => Failure::Failed(msg),
        }
    })?;
    let sc = copy.schunk();
    println!(
        "{dst}: {} {:?}, chunks {:?}, blocks {:?}, {} clevel {}, {} -> {} bytes",
        if storage.contiguous { "contiguous" } else { "sparse" },
        copy.shape(),
        copy.geometry().chunkshape(),
        copy.geometry().blockshape(),
        codec_name(sc.cparams().codec),
        sc.cparams().clevel,
        sc.nbytes(),
        sc.cbytes()
    );
    Ok(())
}

/// The partitions and location of the copy.
fn storage(p: &Parsed, arr: &Array, dst: &str) -> Result<StorageParams, Failure> {
    let g = arr.geometry();
    let shape_opt = |name: &str| -> Result<Option<Vec<i32>>, Failure> {
        let Some(v) = p.value(name) else { return Ok(None) };
        let list = args::list::<i32>(v, &format!("--{name}")).map_err(Failure::Usage)?;
        if list.len() != arr.ndim() {
            return Err(Failure::Usage(format!(
                "--{name} needs {} entries (one per axis), not {}",
                arr.ndim(),
                list.len()
            )));
        }
        Ok(Some(list))
    };
    let chunkshape = shape_opt("chunks")?.unwrap_or_else(|| g.chunkshape().to_vec());
    let blockshape = shape_opt("blocks")?
        .unwrap_or_else(|| g.blockshape().iter().zip(&chunkshape).map(|(&b, &c)| b.min(c)).collect());
    Geometry::new(arr.itemsize(), arr.shape(), &chunkshape, &blockshape).map_err(|e| Failure::Usage(e.message()))?;
    let contiguous = match (p.flag("contiguous"), p.flag("sparse")) {
        (true, true) => return Err(Failure::Usage("--contiguous and --sparse exclude each other".into())),
        (true, false) => true,
        (false, true) => false,
        (false, false) => arr.schunk().storage().contiguous,
    };
    Ok(StorageParams { chunkshape, blockshape, contiguous, urlpath: Some(dst.to_owned()), metalayers: Vec::new() })
}

/// The source's compression parameters with `--codec` and `--clevel` applied.
fn cparams(p: &Parsed, arr: &Array) -> Result<caterva::CParams, Failure> {
    let mut cp = arr.schunk().cparams();
    if !(1..=4).contains(&cp.splitmode) {
        // Not recorded in every frame: take the library default.
        cp.splitmode = caterva::CParams::default().splitmode;
    }
    if let Some(name) = p.value("codec") {
        cp.codec = codec_code(name).ok_or_else(|| {
            Failure::Usage(format!("--codec: unknown codec '{name}' (zstd, lz4, lz4hc, blosclz, zlib)"))
        })?;
        cp.codec_meta = 0;
    }
    if let Some(v) = p.value("clevel") {
        cp.clevel = args::number::<u8>(v, "--clevel")
            .ok()
            .filter(|&c| c <= 9)
            .ok_or_else(|| Failure::Usage(format!("--clevel: '{v}' is not a level from 0 to 9")))?;
    }
    Ok(cp)
}

/// Refuse to overwrite anything without `--force`, and the source always.
fn check_destination(p: &Parsed, src: &str, dst: &str) -> Outcome {
    if std::fs::symlink_metadata(dst).is_err() {
        return Ok(());
    }
    let same = match (Path::new(src).canonicalize(), Path::new(dst).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(Failure::Usage(format!("'{dst}' is the source array itself")));
    }
    if !p.flag("force") {
        return Err(Failure::Open(format!("'{dst}' exists; pass --force to replace it")));
    }
    Ok(())
}
