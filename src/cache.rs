//! A bounded cache of decompressed blocks, one per array handle, off by
//! default: repeated and neighbouring reads (a viewer panning over a plane,
//! a stencil walking a volume) find the blocks they need in memory instead
//! of decompressing them again.
//!
//! Its size in bytes comes from [`crate::Config::block_cache`], or, when
//! that is 0, from the environment variable `CATERVA_BLOCK_CACHE` (bytes,
//! with an optional `K`, `M` or `G` suffix: `CATERVA_BLOCK_CACHE=256M`),
//! which is how C callers, whose `caterva_config_t` has no such field,
//! turn it on. Region reads (`get_slice_buffer`, `to_buffer`, planes, …)
//! use it; orthogonal selections do not.
//!
//! Every write through the handle empties it ([`crate::store::Store::write`]).
//! Writes through another handle are not seen: a handle with a cache reads
//! the blocks it cached until it writes.
//!
//! The cache is split in 16 shards by block, each with its own lock and a
//! sixteenth of the budget, evicting its least recently used block first.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

const SHARDS: usize = 16;

/// A block: chunk number and block number inside the chunk.
type Key = (i64, u32);

#[derive(Default)]
struct Shard {
    blocks: HashMap<Key, (Arc<[u8]>, u64)>,
    /// Blocks by last use.
    order: BTreeMap<u64, Key>,
    bytes: usize,
    tick: u64,
}

/// The cache of one array handle.
pub(crate) struct BlockCache {
    /// Budget of each shard, in bytes.
    per_shard: usize,
    shards: Vec<Mutex<Shard>>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockCache({} bytes)", self.per_shard * SHARDS)
    }
}

impl BlockCache {
    /// A cache of `bytes`, or `None` for 0.
    pub(crate) fn new(bytes: usize) -> Option<BlockCache> {
        (bytes > 0).then(|| BlockCache {
            per_shard: bytes.div_ceil(SHARDS),
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
        })
    }

    fn shard(&self, key: Key) -> std::sync::MutexGuard<'_, Shard> {
        let h =
            (key.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(key.1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        // A panic while holding a shard leaves at worst a stale entry order.
        self.shards[(h >> 59) as usize % SHARDS].lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Block `nblock` of chunk `nchunk`, if cached (it becomes the most recently used).
    pub(crate) fn get(&self, nchunk: i64, nblock: u32) -> Option<Arc<[u8]>> {
        let mut s = self.shard((nchunk, nblock));
        s.tick += 1;
        let tick = s.tick;
        let (bytes, last) = s.blocks.get_mut(&(nchunk, nblock))?;
        let (bytes, old) = (bytes.clone(), std::mem::replace(last, tick));
        s.order.remove(&old);
        s.order.insert(tick, (nchunk, nblock));
        Some(bytes)
    }

    /// Keep a copy of block `nblock` of chunk `nchunk`, evicting the least
    /// recently used blocks to make room (a block larger than a shard's
    /// budget is not kept).
    pub(crate) fn put(&self, nchunk: i64, nblock: u32, bytes: &[u8]) {
        if bytes.len() > self.per_shard {
            return;
        }
        let key = (nchunk, nblock);
        let mut s = self.shard(key);
        if s.blocks.contains_key(&key) {
            return;
        }
        while s.bytes + bytes.len() > self.per_shard {
            let Some((_, victim)) = s.order.pop_first() else { break };
            if let Some((b, _)) = s.blocks.remove(&victim) {
                s.bytes -= b.len();
            }
        }
        s.tick += 1;
        let tick = s.tick;
        s.bytes += bytes.len();
        s.blocks.insert(key, (Arc::from(bytes), tick));
        s.order.insert(tick, key);
    }

    /// Forget every block (the array changed).
    pub(crate) fn clear(&self) {
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *s = Shard::default();
        }
    }
}

/// The cache size the environment asks for (`CATERVA_BLOCK_CACHE`), in bytes.
pub(crate) fn from_env() -> usize {
    std::env::var("CATERVA_BLOCK_CACHE").ok().and_then(|v| parse_size(&v)).unwrap_or(0)
}

/// `"1048576"`, `"512K"`, `"64M"`, `"2G"` (binary multiples) in bytes.
pub(crate) fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim();
    let (digits, mult) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1usize << 10),
        (i, 'm' | 'M') => (&v[..i], 1 << 20),
        (i, 'g' | 'G') => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_blocks_go_first() {
        // 16 shards of 100 bytes.
        let c = BlockCache::new(1600).unwrap();
        // Keys that land in one shard.
        let same: Vec<Key> = (0..10_000i64)
            .map(|n| (n, 0))
            .filter(|&k| {
                let h = (k.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                (h >> 59) as usize % SHARDS == 0
            })
            .take(3)
            .collect();
        let [a, b, d] = [same[0], same[1], same[2]];
        c.put(a.0, a.1, &[1; 40]);
        c.put(b.0, b.1, &[2; 40]);
        assert_eq!(c.get(a.0, a.1).as_deref(), Some(&[1u8; 40][..]));
        // a was used last: b goes.
        c.put(d.0, d.1, &[3; 40]);
        assert!(c.get(b.0, b.1).is_none());
        assert!(c.get(a.0, a.1).is_some() && c.get(d.0, d.1).is_some());
        // Too big for a shard: not kept, nothing evicted.
        c.put(b.0, b.1, &[4; 101]);
        assert!(c.get(b.0, b.1).is_none() && c.get(a.0, a.1).is_some());
        c.clear();
        assert!(c.get(a.0, a.1).is_none());
        assert!(BlockCache::new(0).is_none());
    }

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size(" 64m "), Some(64 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }
}
