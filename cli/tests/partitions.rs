//! `caterva copy --access PATTERN [--chunk-size B] [--block-size B]`: the
//! copy gets the partitions `caterva::propose_partitions` proposes, holds
//! the same items, and bad patterns or sizes are usage errors that write
//! nothing.

use std::path::Path;

use caterva::{propose_partitions, Access, Array, Params, PartitionHints, StorageParams};

mod common;
use common::{caterva, ctx, scratch_dir, Run};

/// A {40, 60, 50} array of int64 0..n in a frame file, in small chunks.
fn source(d: &Path) -> (String, Vec<u8>) {
    let path = d.join("src.b2frame").to_str().unwrap().to_owned();
    let shape = vec![40i64, 60, 50];
    let data: Vec<u8> = (0..shape.iter().product::<i64>()).flat_map(i64::to_le_bytes).collect();
    let storage = StorageParams {
        chunkshape: vec![10, 10, 10],
        blockshape: vec![5, 5, 5],
        urlpath: Some(path.clone()),
        contiguous: true,
        ..Default::default()
    };
    Array::from_buffer(&ctx(), &Params { itemsize: 8, shape, dtype: None }, &storage, &data).unwrap();
    (path, data)
}

/// Options, and the pattern and sizes they ask for.
type Case = (&'static [&'static str], Access, Option<usize>, Option<usize>);

#[test]
fn copy_with_an_access_pattern_takes_the_proposed_partitions() {
    let d = scratch_dir("cli-partitions-ok");
    let (src, data) = source(&d);
    let cases: &[Case] = &[
        (&["--access", "balanced"], Access::Balanced, None, None),
        (&["--access", "scans"], Access::Scans, None, None),
        (&["--access", "small-reads", "--block-size", "2K"], Access::SmallReads, None, Some(2048)),
        (
            &["--access", "planes:1", "--chunk-size", "64K", "--block-size", "4096"],
            Access::Planes { axis: 1 },
            Some(65536),
            Some(4096),
        ),
    ];
    for (i, (opts, access, chunk_bytes, block_bytes)) in cases.iter().enumerate() {
        let dst = d.join(format!("dst{i}.b2frame"));
        let dst = dst.to_str().unwrap();
        let args = [&["copy", &src, dst, "-j", "2"], *opts].concat();
        let Run { code, stdout: out, stderr: err } = caterva(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let hints =
            PartitionHints { access: *access, chunk_bytes: *chunk_bytes, block_bytes: *block_bytes, threads: Some(2) };
        let want = propose_partitions(8, &[40, 60, 50], &hints).unwrap();
        let arr = Array::open(&ctx(), dst).unwrap();
        let info = arr.info();
        assert_eq!((&info.chunkshape, &info.blockshape), (&want.chunkshape, &want.blockshape), "{args:?}");
        assert!(out.contains(&format!("chunks {:?}, blocks {:?}", want.chunkshape, want.blockshape)), "{out}");
        assert!(arr.to_vec().unwrap() == data, "{args:?}: the items differ");
        if let Access::Planes { axis } = access {
            assert_eq!(info.blockshape[*axis], 1);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_patterns_and_sizes_are_usage_errors() {
    let d = scratch_dir("cli-partitions-bad");
    let (src, _) = source(&d);
    let dst = d.join("never.b2frame");
    let dst = dst.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--access", "rows"], "unknown access pattern 'rows'"),
        (&["--access", "planes:3"], "--access: the planes' axis 3 is not an axis of a 3-dim array"),
        (&["--access", "planes:-1"], "unknown access pattern 'planes:-1'"),
        (&["--access", "scans", "--chunks", "4,4,4"], "cannot be used with"),
        (&["--chunk-size", "1M"], "--access <PATTERN>"),
        (&["--access", "scans", "--block-size", "0"], "'0' is not a size in bytes"),
        (&["--access", "scans", "--chunk-size", "12X"], "'12X' is not a size in bytes"),
    ];
    for (opts, want) in cases {
        let args = [&["copy", &src, dst], *opts].concat();
        let Run { code, stderr: err, .. } = caterva(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: '{want}' not in\n{err}");
        assert!(!Path::new(dst).exists(), "{args:?}: a refused copy wrote nothing");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `caterva copy --tune OBJECTIVE`: the copy of a 32 MiB array gets what
/// `caterva::tune` chooses from its data, the same items, and the report,
/// which `caterva info` shows; a small source gets the default proposal;
/// --tune with --codec, or an unknown objective, is a usage error.
#[test]
fn copy_with_tune_takes_what_the_data_chooses_and_says_why() {
    let d = scratch_dir("cli-partitions-tune");
    let path = d.join("labels.b2nd").to_str().unwrap().to_owned();
    let shape = vec![256i64, 128, 128];
    let data: Vec<u8> = (0..shape.iter().product::<i64>()).flat_map(|i| (i / 8192).to_le_bytes()).collect();
    let storage = StorageParams {
        chunkshape: vec![32, 64, 64],
        blockshape: vec![8, 16, 16],
        urlpath: Some(path.clone()),
        contiguous: false,
        ..Default::default()
    };
    Array::from_buffer(&ctx(), &Params { itemsize: 8, shape: shape.clone(), dtype: None }, &storage, &data).unwrap();
    for objective in [caterva::Objective::Speed, caterva::Objective::Size] {
        let dst = d.join(format!("{}.b2nd", objective.name()));
        let dst = dst.to_str().unwrap();
        let Run { code, stderr: err, .. } = caterva(&["copy", &path, dst, "-j", "2", "--tune", objective.name()]);
        assert_eq!(code, 0, "{err}");
        let hints = PartitionHints { threads: Some(2), ..PartitionHints::default() };
        let want = caterva::tune(&data, 8, &shape, &hints, objective).unwrap();
        let arr = Array::open(&ctx(), dst).unwrap();
        let info = arr.info();
        assert_eq!((&info.chunkshape, &info.blockshape), (&want.partitions.chunkshape, &want.partitions.blockshape));
        assert_eq!((info.cparams.codec, info.cparams.filters), (want.cparams.codec, want.cparams.filters));
        assert!(arr.to_vec().unwrap() == data, "the items differ");
        let Run { code, stdout: out, .. } = caterva(&["info", dst]);
        assert_eq!(code, 0);
        let line = out.lines().find(|l| l.starts_with("tuning:")).unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains(&format!("{}: ", objective.name())), "{line}");
    }
    let (src, _) = source(&d);
    let dst = d.join("small.b2frame");
    let Run { code, stderr: err, .. } = caterva(&["copy", &src, dst.to_str().unwrap(), "--tune", "balanced"]);
    assert_eq!(code, 0, "{err}");
    let small = Array::open(&ctx(), dst.to_str().unwrap()).unwrap();
    assert_eq!(small.info().cparams, caterva::propose_cparams());
    assert!(!small.vlmeta_exists(caterva::REPORT_VLMETA).unwrap());
    let Run { code, stderr: err, .. } =
        caterva(&["copy", &src, d.join("x.b2frame").to_str().unwrap(), "--tune", "size", "--codec", "lz4"]);
    assert_eq!(code, 2, "{err}");
    let Run { code, stderr: err, .. } =
        caterva(&["copy", &src, d.join("y.b2frame").to_str().unwrap(), "--tune", "fastest"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown objective 'fastest'"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
