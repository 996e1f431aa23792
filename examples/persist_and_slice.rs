//! The C example's work through the safe Rust API: a table of float64
//! readings kept in one file; create it, reopen it, append rows, reopen again
//! and read a block of rows and columns, checking every item.
//!
//! Run with `cargo run --example persist_and_slice`.

use caterva::{Array, Config, Context, Params, StorageParams};

const COLS: i64 = 16;

/// Reading (row, col).
fn reading(row: i64, col: i64) -> f64 {
    row as f64 + col as f64 / 100.0
}

/// Rows [first, first + n) of readings, row-major, as little-endian bytes.
fn rows(first: i64, n: i64) -> Vec<u8> {
    (first..first + n).flat_map(|r| (0..COLS).flat_map(move |c| reading(r, c).to_le_bytes())).collect()
}

/// Bytes back to float64 items.
fn floats(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new(Config { nthreads: 2, ..Config::default() })?;
    let dir = std::env::temp_dir().join(format!("caterva-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("readings.b2frame").to_str().ok_or("temporary path is not UTF-8")?.to_owned();

    // Create: 50 rows in chunks of 32 rows and blocks of 8, in one file.
    let params = Params { itemsize: 8, shape: vec![50, COLS], dtype: Some("<f8".into()) };
    let storage = StorageParams {
        chunkshape: vec![32, COLS as i32],
        blockshape: vec![8, COLS as i32],
        contiguous: true,
        urlpath: Some(path.clone()),
        ..Default::default()
    };
    drop(Array::from_buffer(&ctx, &params, &storage, &rows(0, 50))?);
    println!("created {path} with 50 rows");

    // Reopen and append 25 rows along axis 0.
    Array::open(&ctx, &path)?.append(&rows(50, 25), 0)?;

    // Reopen and read rows 40..60 (across the append), columns 3..7.
    let arr = Array::open(&ctx, &path)?;
    assert_eq!(arr.shape(), &[75, COLS], "shape after the append");
    assert_eq!(arr.dtype().as_deref(), Some("<f8"));
    let mut block = vec![0u8; 20 * 4 * 8];
    arr.get_slice_buffer(&[40, 3], &[60, 7], &mut block, &[20, 4])?;
    let block = floats(&block);
    for (i, &v) in block.iter().enumerate() {
        let (r, c) = (40 + i as i64 / 4, 3 + i as i64 % 4);
        assert_eq!(v, reading(r, c), "item ({r}, {c})");
    }
    println!("rows 40..60, columns 3..7: first {:.2}, last {:.2}, correct", block[0], block[79]);

    // Bad input is an error value, not a crash.
    let mut small = vec![0u8; 8];
    let err = arr.get_slice_buffer(&[70, 0], &[80, 1], &mut small, &[10, 1]).expect_err("slice past the end");
    println!("slice past the end refused: {err}");

    drop(arr);
    Array::remove(&path)?;
    std::fs::remove_dir(&dir)?;
    println!("persist_and_slice ok");
    Ok(())
}
