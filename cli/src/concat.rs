//! `caterva concat`: a new array holding one array followed by another
//! along an axis (the library's `Array::concatenate`).

use caterva::{CParams, ErrorKind, StorageParams};

use crate::{progress, Failure, Outcome, RunOpts};

/// The arguments of `caterva concat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The first array
    #[arg(value_name = "A")]
    a: String,
    /// The array that follows it along the axis
    #[arg(value_name = "B")]
    b: String,
    /// Where to write the result (A's partitions, compression and storage
    /// kind; B's partitions and compression when A is empty)
    #[arg(value_name = "DST")]
    dst: String,
    /// The axis to join along
    #[arg(long, value_name = "N", default_value_t = 0)]
    axis: i64,
    /// Replace DST if it is an array already
    #[arg(short, long)]
    force: bool,
    #[command(flatten)]
    run: RunOpts,
}

/// `caterva concat`.
pub fn run(a: &Args) -> Outcome {
    let reader = crate::context(&a.run, CParams::default(), false)?;
    let first = crate::open(&reader, &a.a)?;
    let second = crate::open(&reader, &a.b)?;
    if std::fs::symlink_metadata(&a.dst).is_ok() && !a.force {
        return Err(Failure::Open(format!("'{}' exists; pass --force to replace it", a.dst)));
    }
    // The partitions and compression of the first array that holds items:
    // an empty one may have chunks of length 0 (python-blosc2 makes them
    // so), which hold none of the result's. A's storage kind, dtype and
    // metadata either way.
    let info = first.info();
    let empty = |arr: &caterva::Array| arr.shape().contains(&0);
    let from = if empty(&first) && !empty(&second) { second.info() } else { info.clone() };
    // A split mode the frame does not record reads as the library default.
    let ctx = crate::context(&a.run, from.cparams, false).map_err(|f| match f {
        Failure::Usage(m) => Failure::Failed(format!("cannot write '{}': {m}", a.dst)),
        f => f,
    })?;
    let storage = StorageParams {
        chunkshape: from.chunkshape,
        blockshape: from.blockshape,
        contiguous: info.contiguous,
        urlpath: Some(a.dst.clone()),
        metalayers: Vec::new(),
    };
    let out = progress::spinner("concat", a.run.wanted(), || first.concatenate(&ctx, &second, a.axis, &storage))
        .map_err(|e| match e.kind() {
            ErrorKind::InvalidArgument => Failure::Usage(e.message()),
            ErrorKind::InvalidStorage | ErrorKind::NotFound => Failure::Open(format!("cannot write '{}': {e}", a.dst)),
            _ => Failure::Failed(format!("cannot write '{}': {e}", a.dst)),
        })?;
    if a.run.quiet {
        return Ok(());
    }
    crate::out(&format!("{}: {:?}\n", a.dst, out.shape()))
}
