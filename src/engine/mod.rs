//! The slicing engine: plans which chunks and blocks a region touches, reads
//! them in parallel straight into the caller's buffer (decompressing only the
//! touched blocks), and builds compressed chunks in parallel for writes.
//!
//! By concern: `plan.rs` (the chunk parts of a region, the batch policy, the
//! checks of the caller's buffer), `tasks.rs` (how a job shares the
//! context's threads and runs), `copy.rs` (the view of the caller's buffer,
//! the copies between it and chunks), `read.rs` (parallel reads),
//! `write.rs` (parallel chunk builds), `select.rs` (orthogonal selections).
//! The workers (codecs and scratch) are defined in [`crate::context`],
//! whose pool keeps them between calls.

mod copy;
mod plan;
mod read;
mod select;
mod tasks;
mod write;

pub(crate) use copy::{clear_box, pack, UserBuf};
pub(crate) use plan::{batch_len, check_user_buffer, plan};
pub(crate) use read::{read_part_box, read_region};
pub(crate) use select::{build_selection, read_selection, Selection};
pub(crate) use tasks::{run_tasks, write_split, Split};
pub(crate) use write::{build_chunks, Spares};
