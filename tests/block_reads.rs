//! Reads of fewer chunks than threads run a task per block (the engine's
//! `read_blocks`): every such read must give the same items as the source,
//! whatever the chunks hold (data, zeros, NaNs, a repeated value, nothing
//! yet), wherever they live (memory, a frame file, a directory), with or
//! without the block cache, and where a chunk cannot be read by blocks
//! (a ZSTD dictionary) the read falls back to whole chunks.

mod common;

use caterva::{Array, CParams, Codec, Config, Context, Filter, Params, StorageParams};

/// An empty slot of the filter pipeline.
const N: Filter = Filter::NoFilter;
use common::Rng;

const SHAPE: [i64; 3] = [40, 36, 30];
const CHUNKS: [i32; 3] = [20, 18, 15];
const BLOCKS: [i32; 3] = [5, 6, 5];

fn storage(urlpath: Option<String>, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: CHUNKS.to_vec(),
        blockshape: BLOCKS.to_vec(),
        contiguous,
        urlpath,
        ..Default::default()
    }
}

/// The C-order bytes of `src` (shape SHAPE, 8-byte items) in `[start, stop)`.
fn expected(src: &[u8], start: &[i64], stop: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in start[0]..stop[0] {
        for j in start[1]..stop[1] {
            let row = ((i * SHAPE[1] + j) * SHAPE[2]) as usize * 8;
            out.extend_from_slice(&src[row + start[2] as usize * 8..row + stop[2] as usize * 8]);
        }
    }
    out
}

/// Random boxes (mostly small, some across chunk edges) and planes of
/// `arr`, each checked against `src`.
fn check_reads(arr: &Array, src: &[u8], rng: &mut Rng, what: &str) {
    let mut boxes: Vec<(Vec<i64>, Vec<i64>)> = (0..60)
        .map(|_| {
            let start: Vec<i64> = SHAPE.iter().map(|&s| rng.range(0, s - 1)).collect();
            let stop: Vec<i64> = start.iter().zip(SHAPE).map(|(&a, s)| (a + rng.range(1, 12)).min(s)).collect();
            (start, stop)
        })
        .collect();
    for axis in 0..3 {
        let mut start = vec![0; 3];
        let mut stop = SHAPE.to_vec();
        start[axis] = SHAPE[axis] / 2;
        stop[axis] = start[axis] + 1;
        boxes.push((start, stop));
    }
    // One item, one block, one chunk exactly.
    boxes.push((vec![3, 4, 5], vec![4, 5, 6]));
    boxes.push((vec![5, 6, 5], vec![10, 12, 10]));
    boxes.push((vec![20, 18, 15], vec![40, 36, 30]));
    for (start, stop) in boxes {
        let shape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
        let mut got = vec![0xa5u8; shape.iter().product::<i64>() as usize * 8];
        arr.get_slice_buffer(&start, &stop, &mut got, &shape).unwrap();
        assert!(got == expected(src, &start, &stop), "{what}: box {start:?}..{stop:?}");
    }
}

fn source(rng: &mut Rng) -> Vec<u8> {
    let n = SHAPE.iter().product::<i64>() as usize;
    (0..n).flat_map(|i| ((i as u64) ^ (rng.next() & 0xff)).to_le_bytes()).collect()
}

#[test]
fn block_task_reads_match_the_source_everywhere() {
    let dir = std::env::temp_dir().join(format!("caterva-block-reads-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(0x0b10c5);
    let src = source(&mut rng);
    let p = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let zstd =
        CParams { codec: Codec::Zstd, clevel: 5, filters: [N, N, N, N, N, Filter::Shuffle], ..CParams::default() };
    let dict = CParams { use_dict: true, ..zstd };
    for (name, cp) in [("zstd", zstd), ("zstd dict", dict)] {
        for (nthreads, cache) in [(4, 0), (8, 0), (4, 1 << 20)] {
            let ctx = Context::new(Config { nthreads, cparams: cp, block_cache: cache, ..Config::default() }).unwrap();
            for (k, (url, contiguous)) in
                [(None, true), (Some("f.b2frame"), true), (Some("d.b2nd"), false)].into_iter().enumerate()
            {
                let url = url.map(|u| dir.join(format!("{k}-{nthreads}-{cache}-{}-{u}", name.replace(' ', "_"))));
                let url = url.map(|u| u.to_string_lossy().into_owned());
                let what = format!("{name}, {nthreads} threads, cache {cache}, {url:?}");
                let arr = Array::from_buffer(&ctx, &p, &storage(url.clone(), contiguous), &src).unwrap();
                check_reads(&arr, &src, &mut rng, &what);
                // Twice: the second time from the cache, where there is one.
                check_reads(&arr, &src, &mut rng, &format!("{what}, again"));
                if let Some(url) = url {
                    let reopened = Array::open(&ctx, &url).unwrap();
                    check_reads(&reopened, &src, &mut rng, &format!("{what}, reopened"));
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn special_and_missing_chunks_read_by_blocks() {
    let mut rng = Rng(0x5bec);
    let p = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let n = SHAPE.iter().product::<i64>() as usize;
    let ctx = Context::new(Config { nthreads: 4, ..Config::default() }).unwrap();
    let zeros = vec![0u8; n * 8];
    check_reads(&Array::zeros(&ctx, &p, &storage(None, true)).unwrap(), &zeros, &mut rng, "zeros");
    check_reads(&Array::uninit(&ctx, &p, &storage(None, false)).unwrap(), &zeros, &mut rng, "uninit");
    let value = 7.25f64.to_le_bytes();
    let full: Vec<u8> = value.iter().copied().cycle().take(n * 8).collect();
    check_reads(&Array::full(&ctx, &p, &storage(None, true), &value).unwrap(), &full, &mut rng, "full");
    let fp = Params { dtype: Some("<f8".into()), ..p.clone() };
    let nan = f64::NAN.to_le_bytes();
    let nans: Vec<u8> = nan.iter().copied().cycle().take(n * 8).collect();
    check_reads(&Array::nans(&ctx, &fp, &storage(None, true)).unwrap(), &nans, &mut rng, "nans");
    // Data in some chunks, special ones beside them.
    let mut arr = Array::zeros(&ctx, &p, &storage(None, true)).unwrap();
    let mut mixed = zeros.clone();
    let (start, stop) = ([0i64, 18, 0], [20i64, 36, 15]);
    let src = source(&mut rng);
    let part = expected(&src, &start, &stop);
    arr.set_slice_buffer(&start, &stop, &part, &[20, 18, 15]).unwrap();
    for i in 0..20 {
        for j in 18..36 {
            let row = ((i * SHAPE[1] + j) * SHAPE[2]) as usize * 8;
            let from = ((i * 18 + (j - 18)) * 15) as usize * 8;
            mixed[row..row + 15 * 8].copy_from_slice(&part[from..from + 15 * 8]);
        }
    }
    check_reads(&arr, &mixed, &mut rng, "mixed");
}

/// Writes that touch some blocks of a chunk recompress only those and keep
/// the others' streams: the spliced chunks must decompress whole (as
/// c-blosc2 reads them, on one thread) and by blocks. DELTA chunks are
/// rebuilt whole, and reads of them decode the first block too.
#[test]
fn writes_that_splice_blocks_read_back_whole_and_by_blocks() {
    let dir = std::env::temp_dir().join(format!("caterva-block-writes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(0x5_911ce);
    let p = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let codecs = [
        CParams { codec: Codec::Zstd, clevel: 5, filters: [N, N, N, N, N, Filter::Shuffle], ..CParams::default() },
        CParams { codec: Codec::Lz4, clevel: 5, filters: [N, N, N, N, N, Filter::BitShuffle], ..CParams::default() },
        CParams {
            codec: Codec::BloscLz,
            clevel: 5,
            filters: [N, N, N, N, Filter::Delta, Filter::Shuffle],
            ..CParams::default()
        },
    ];
    for (k, cp) in codecs.into_iter().enumerate() {
        let one = Context::new(Config { nthreads: 1, cparams: cp, ..Config::default() }).unwrap();
        let four = Context::new(Config { nthreads: 4, cparams: cp, ..Config::default() }).unwrap();
        let url = dir.join(format!("{k}.b2frame")).to_string_lossy().into_owned();
        let mut src = source(&mut rng);
        let mut arr = Array::from_buffer(&four, &p, &storage(Some(url.clone()), true), &src).unwrap();
        for _ in 0..12 {
            let start: Vec<i64> = SHAPE.iter().map(|&s| rng.range(0, s - 1)).collect();
            let stop: Vec<i64> = start.iter().zip(SHAPE).map(|(&a, s)| (a + rng.range(1, 9)).min(s)).collect();
            let shape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
            let vals: Vec<u8> = (0..shape.iter().product::<i64>() * 8).map(|_| rng.next() as u8).collect();
            arr.set_slice_buffer(&start, &stop, &vals, &shape).unwrap();
            let mut at = 0;
            for i in start[0]..stop[0] {
                for j in start[1]..stop[1] {
                    let row = ((i * SHAPE[1] + j) * SHAPE[2] + start[2]) as usize * 8;
                    let len = shape[2] as usize * 8;
                    src[row..row + len].copy_from_slice(&vals[at..at + len]);
                    at += len;
                }
            }
        }
        drop(arr);
        let whole = Array::open(&one, &url).unwrap();
        assert!(whole.to_vec().unwrap() == src, "codec {k}: whole-chunk read");
        // Boxes that skip a chunk's first block: DELTA (codec 2) decodes
        // every block against it, on one thread and on several.
        check_reads(&whole, &src, &mut rng, &format!("codec {k}, 1 thread"));
        check_reads(&Array::open(&four, &url).unwrap(), &src, &mut rng, &format!("codec {k}"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
