//! `caterva verify`: read every chunk back ([`caterva::Array::verify`]) and
//! list the damaged ones, as text or (`--json`) one JSON object.
//!
//! A file that does not open because it is damaged (a broken frame, or a
//! checksum table, header marker or recorded metadata that fails its
//! check) is reported as damaged as a whole; so is, with
//! `--require-checksums`, a file that keeps no checksums.

use caterva::{Array, CParams, ChunkProblem, Config, Context, ErrorKind};
use serde_json::json;

use crate::progress::Bar;
use crate::{Failure, Outcome, RunOpts};

/// The arguments of `caterva verify`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The array: a frame file or a sparse-frame directory
    #[arg(value_name = "PATH")]
    path: String,
    /// Print one JSON object (path, chunks, problems, sound) instead of lines
    #[arg(long)]
    json: bool,
    /// Report a file that keeps no per-chunk checksums as damaged (whose
    /// chunks could hold wrong data that no check would see)
    #[arg(long)]
    require_checksums: bool,
    #[command(flatten)]
    run: RunOpts,
}

/// `caterva verify`.
pub fn run(a: &Args) -> Outcome {
    let path = a.path.as_str();
    let ctx = crate::context(&a.run, CParams::default(), false)?;
    let ctx = if a.require_checksums {
        Context::new(Config { require_checksums: true, ..*ctx.config() }).map_err(|e| Failure::Usage(e.message()))?
    } else {
        ctx
    };
    // A frame whose structure, checksum table or metadata is damaged is
    // refused when it is opened: that is a finding of verify, not a failure
    // to run it.
    let arr = match Array::open(&ctx, path) {
        Ok(arr) => arr,
        Err(e) if matches!(e.kind(), ErrorKind::InvalidFormat | ErrorKind::Corrupt) => {
            if a.json {
                let problem = json!({"chunk": null, "reason": e.to_string()});
                crate::out(&report(json!({"path": path, "chunks": null, "problems": [problem], "sound": false})))?;
            } else {
                crate::out(&format!("{path}: damaged: {e}\n"))?;
            }
            return Err(Failure::Failed(format!("'{path}' is damaged")));
        }
        Err(e) => return Err(crate::open_failure(path, &e)),
    };
    let total = arr.info().nchunks;
    let problems = {
        let mut bar = Bar::new("verify", "chunks", total as u64, a.run.wanted());
        // A chunk that could not be read says nothing of the array: the
        // storage failed (exit 2, as for an array that does not open).
        arr.verify(&mut |done, _| bar.update(done as u64))
            .map_err(|e| Failure::Open(format!("could not read '{path}' to verify it: {e}")))?
    };
    crate::out(&if a.json { json_report(path, total, &problems) } else { text_report(a, total, &problems) })?;
    let chunks = problems.iter().filter(|p| p.nchunk >= 0).count();
    if problems.len() > chunks {
        Err(Failure::Failed(format!("'{path}' is damaged: its checksum table or metadata, and {chunks} chunk(s)")))
    } else if chunks > 0 {
        Err(Failure::Failed(format!("'{path}' has {chunks} damaged chunk(s)")))
    } else {
        Ok(())
    }
}

/// One line per problem, then a summary (left out with `--quiet`).
fn text_report(a: &Args, total: i64, problems: &[ChunkProblem]) -> String {
    let mut text: String = problems.iter().map(|p| format!("{p}\n")).collect();
    if !a.run.quiet {
        let chunks = problems.iter().filter(|p| p.nchunk >= 0).count();
        let table = if problems.len() > chunks { "checksum table or metadata damaged; " } else { "" };
        text += &match chunks {
            0 if table.is_empty() => format!("{}: {total} chunks, all sound\n", a.path),
            n => format!("{}: {table}{n} of {total} chunks damaged\n", a.path),
        };
    }
    text
}

fn json_report(path: &str, total: i64, problems: &[ChunkProblem]) -> String {
    // The checksum table and metadata (nchunk -1) belong to no chunk.
    let chunk = |p: &ChunkProblem| if p.nchunk >= 0 { json!(p.nchunk) } else { json!(null) };
    let list: Vec<_> = problems.iter().map(|p| json!({"chunk": chunk(p), "reason": p.error.to_string()})).collect();
    report(json!({"path": path, "chunks": total, "problems": list, "sound": problems.is_empty()}))
}

fn report(value: serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value serialises");
    text.push('\n');
    text
}
