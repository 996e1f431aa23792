//! `caterva verify`: read every chunk back ([`caterva::Array::verify`]) and
//! list the damaged ones.

use crate::args::Parsed;
use crate::progress::{self, Bar};
use crate::{Command, Failure, Outcome, NO_PROGRESS, THREADS};

/// `caterva verify`.
pub const COMMAND: Command = Command {
    name: "verify",
    usage: "verify PATH [OPTIONS]",
    summary: "decompress every chunk and report the damaged ones (exit status 1 if any)",
    details: "Prints one line per damaged chunk ('chunk N: reason'), then a summary; a frame\n\
whose structure is damaged is reported as a whole ('PATH: damaged: reason').",
    opts: &[THREADS, NO_PROGRESS],
    run,
};

fn run(p: &Parsed) -> Outcome {
    let [path] = crate::positionals(p, &["PATH"])?[..] else { unreachable!("one positional") };
    let ctx = crate::context(p, Default::default())?;
    // A frame whose structure is damaged is refused when it is opened: that
    // is a finding of verify, not a failure to run it.
    let arr = match caterva::Array::open(&ctx, path) {
        Err(e @ caterva::Error::InvalidFormat(_)) => {
            println!("{path}: damaged: {e}");
            return Err(Failure::Failed(format!("'{path}' is damaged")));
        }
        _ => crate::open(&ctx, path)?,
    };
    let total = arr.schunk().nchunks();
    let problems = {
        let mut bar = Bar::new("verify", "chunks", total as u64, progress::wanted(p));
        arr.verify(&mut |done, _| bar.update(done as u64))
            .map_err(|e| Failure::Failed(format!("cannot verify '{path}': {e}")))?
    };
    for problem in &problems {
        println!("{problem}");
    }
    if problems.is_empty() {
        println!("{path}: {total} chunks, all sound");
        Ok(())
    } else {
        println!("{path}: {} of {total} chunks damaged", problems.len());
        Err(Failure::Failed(format!("'{path}' has {} damaged chunk(s)", problems.len())))
    }
}
