//! Arrays on Azure Blob Storage (`az://`, Azurite, started on 127.0.0.1):
//! made, read, written in place by two handles (the publish protocol:
//! Azurite holds the conditional writes, the probe passes it), listed,
//! copied back and removed, every value checked against the same
//! operations on disk. (`gs://` has no test server: no GCS emulator from
//! the registries CI reaches answers as the client needs; see docs/src/guides/object-stores.md.)
//!
//! One test function: the client reads the emulator's settings from the
//! environment, set once before the first client is made.

mod common;

use caterva::testing::servers;
use caterva::{Array, Config, Context, Params, StorageParams};
use common::scratch_dir;

const SHAPE: [i64; 2] = [50, 37];

fn items() -> Vec<u8> {
    (0..SHAPE.iter().product::<i64>()).flat_map(|v| ((v * 7919 + 3) as u32).to_le_bytes()).collect()
}

fn storage(url: &str, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![20, 16],
        blockshape: vec![10, 8],
        contiguous,
        urlpath: Some(url.to_owned()),
        metalayers: vec![],
    }
}

/// Make, write, read, list, copy back and remove arrays under `base`
/// (`az://arrays` or `gs://arrays`), beside the same on disk.
fn round_trip(ctx: &Context, base: &str, dir: &std::path::Path) {
    let params = Params { itemsize: 4, shape: SHAPE.to_vec(), dtype: Some("<u4".into()) };
    for contiguous in [false, true] {
        let name = if contiguous { "a.b2frame" } else { "a.b2nd" };
        let url = format!("{base}/dir/{name}");
        let local = dir.join(format!("{}-{name}", base.replace("://", "-")));
        let local = local.to_string_lossy().into_owned();
        let mut remote = Array::from_buffer(ctx, &params, &storage(&url, contiguous), &items())
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let mut disk = Array::from_buffer(ctx, &params, &storage(&local, contiguous), &items()).unwrap();
        let mut other = Array::open(ctx, &url).unwrap();
        // Writes through two handles: the second publishes on the version
        // the first made (after losing the race and refreshing).
        let patch = vec![0xAB; 9 * 30 * 4];
        remote.set_slice_buffer(&[3, 2], &[12, 32], &patch, &[9, 30]).unwrap();
        disk.set_slice_buffer(&[3, 2], &[12, 32], &patch, &[9, 30]).unwrap();
        other.set_slice_buffer(&[20, 16], &[40, 32], &[0; 20 * 16 * 4], &[20, 16]).unwrap();
        disk.set_slice_buffer(&[20, 16], &[40, 32], &[0; 20 * 16 * 4], &[20, 16]).unwrap();
        let back = Array::open(ctx, &url).unwrap();
        assert_eq!(back.to_vec().unwrap(), disk.to_vec().unwrap(), "{url}");
        assert!(back.verify(&mut |_, _| {}).unwrap().is_empty());
        let copy = dir.join(format!("back-{}", local.rsplit('/').next().unwrap()));
        back.save(&copy.to_string_lossy()).unwrap();
        assert_eq!(Array::open(ctx, &copy.to_string_lossy()).unwrap().to_vec().unwrap(), disk.to_vec().unwrap());
    }
    let listed = caterva::list(&format!("{base}/dir/")).unwrap();
    let names: Vec<_> = listed.iter().map(|l| (l.name.as_str(), l.contiguous)).collect();
    assert_eq!(names, [("a.b2frame", true), ("a.b2nd", false)], "{base}");
    for l in &listed {
        Array::remove(&l.url).unwrap();
        assert!(Array::open(ctx, &l.url).is_err(), "{} was removed", l.url);
    }
    assert!(caterva::list(&format!("{base}/dir/")).map_or(true, |l| l.is_empty()));
}

#[test]
fn arrays_on_azurite_read_and_write_as_on_disk() {
    let dir = scratch_dir("remote-clouds");
    let ctx = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let azurite = servers::azurite("arrays");
    std::env::set_var("AZURE_STORAGE_USE_EMULATOR", "true");
    std::env::set_var("AZURITE_BLOB_STORAGE_URL", azurite.url());
    round_trip(&ctx, "az://arrays", &dir);
    let _ = std::fs::remove_dir_all(&dir);
}
