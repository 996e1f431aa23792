//! `caterva verify`: read every chunk back ([`caterva::Array::verify`]) and
//! list the damaged ones, as text or (`--json`) one JSON object.

use caterva::{Array, CParams, ChunkProblem, ErrorKind};
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
    #[command(flatten)]
    run: RunOpts,
}

/// `caterva verify`.
pub fn run(a: &Args) -> Outcome {
    let path = a.path.as_str();
    let ctx = crate::context(&a.run, CParams::default(), false)?;
    // A frame whose structure is damaged is refused when it is opened: that
    // is a finding of verify, not a failure to run it.
    let arr = match Array::open(&ctx, path) {
        Ok(arr) => arr,
        Err(e) if e.kind() == ErrorKind::InvalidFormat => {
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
        arr.verify(&mut |done, _| bar.update(done as u64))
            .map_err(|e| Failure::Failed(format!("cannot verify '{path}': {e}")))?
    };
    crate::out(&if a.json { json_report(path, total, &problems) } else { text_report(a, total, &problems) })?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(format!("'{path}' has {} damaged chunk(s)", problems.len())))
    }
}

/// One line per problem, then a summary (left out with `--quiet`).
fn text_report(a: &Args, total: i64, problems: &[ChunkProblem]) -> String {
    let mut text: String = problems.iter().map(|p| format!("{p}\n")).collect();
    if !a.run.quiet {
        text += &match problems.len() {
            0 => format!("{}: {total} chunks, all sound\n", a.path),
            n => format!("{}: {n} of {total} chunks damaged\n", a.path),
        };
    }
    text
}

fn json_report(path: &str, total: i64, problems: &[ChunkProblem]) -> String {
    let list: Vec<_> = problems.iter().map(|p| json!({"chunk": p.nchunk, "reason": p.error.to_string()})).collect();
    report(json!({"path": path, "chunks": total, "problems": list, "sound": problems.is_empty()}))
}

fn report(value: serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value serialises");
    text.push('\n');
    text
}
