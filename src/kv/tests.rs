use std::collections::HashMap;

use super::*;
use crate::mem::{HugePolicy, Placement};

fn store(buckets: usize, log_bytes: usize) -> Store {
    Store::new(StoreConfig {
        buckets,
        log_bytes,
        place: Placement {
            huge: HugePolicy::Off,
            numa_node: None,
        },
    })
    .unwrap()
}

/// A key in bucket `bucket` with tag `tag`; `lo` tells keys of one bucket and tag apart.
fn key(bucket: u32, tag: u16, lo: u64) -> Key {
    Key((u128::from(tag) << 112) | (u128::from(bucket) << 64) | u128::from(lo))
}

fn get(s: &mut Store, k: Key) -> Option<Vec<u8>> {
    let mut out = [0u8; MAX_VALUE];
    s.get(k, &mut out).map(|n| out[..n].to_vec())
}

#[test]
fn get_after_put_and_overwrites() {
    let mut s = store(16, 1 << 16);
    let k = Key::of(7);
    assert_eq!(get(&mut s, k), None);
    s.put(k, b"first value").unwrap();
    assert_eq!(get(&mut s, k).as_deref(), Some(&b"first value"[..]));
    // Same length: in place. Other length: a new item, the index follows it.
    s.put(k, b"other value").unwrap();
    assert_eq!(get(&mut s, k).as_deref(), Some(&b"other value"[..]));
    s.put(k, &[9u8; MAX_VALUE]).unwrap();
    assert_eq!(get(&mut s, k), Some(vec![9u8; MAX_VALUE]));
    assert!(s.put(k, &[]).is_err());
    assert!(s.put(k, &[0u8; MAX_VALUE + 1]).is_err());
    assert_eq!(s.stats.get_misses, 1);
}

#[test]
fn a_full_bucket_evicts_one_key_and_says_so() {
    let mut s = store(4, 1 << 16);
    let keys: Vec<Key> = (0..9).map(|t| key(2, 100 + t as u16, t)).collect();
    for (i, k) in keys.iter().enumerate() {
        s.put(*k, &[i as u8 + 1; 8]).unwrap();
    }
    assert_eq!(s.stats.index_evictions, 1);
    // The ninth key took slot tag mod 8 = 108 mod 8 = 4: the fifth key's.
    assert_eq!(get(&mut s, keys[4]), None);
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| *i != 4) {
        assert_eq!(get(&mut s, *k), Some(vec![i as u8 + 1; 8]), "key {i}");
    }
}

#[test]
fn a_colliding_tag_loses_the_older_key_never_returns_the_wrong_value() {
    let mut s = store(4, 1 << 16);
    let (a, b) = (key(1, 42, 1), key(1, 42, 2));
    s.put(a, b"value of a").unwrap();
    s.put(b, b"value of b").unwrap();
    assert_eq!(get(&mut s, b).as_deref(), Some(&b"value of b"[..]));
    assert_eq!(get(&mut s, a), None);
}

#[test]
fn log_wrap_around_drops_old_items_and_keeps_new_ones_whole() {
    // 4 KiB of log, 72-byte items: the log wraps every ~56 inserts.
    let mut s = store(1024, 4096);
    let n = 1000u64;
    for i in 0..n {
        s.put(Key::of(i), &[(i % 251) as u8; MAX_VALUE]).unwrap();
    }
    assert!(s.stats.log_wraps >= 15, "{:?}", s.stats);
    let (mut hits, mut misses) = (0, 0);
    for i in 0..n {
        match get(&mut s, Key::of(i)) {
            Some(v) => {
                assert_eq!(
                    v,
                    vec![(i % 251) as u8; MAX_VALUE],
                    "key {i} came back torn or stale"
                );
                hits += 1;
            }
            None => misses += 1,
        }
    }
    // The most recent lap is there; everything the head passed is gone.
    assert!((40..=60).contains(&hits), "{hits} hits");
    assert_eq!(hits + misses, n);
    for i in n - 40..n {
        assert!(get(&mut s, Key::of(i)).is_some(), "recent key {i} missing");
    }
}

/// xorshift64*: a fixed, seedable stream for the model test.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Random batches against a `HashMap` model. A GET returns the model's value or misses; it
/// never returns another value. In a store too big to evict or wrap, it never misses either.
#[test]
fn random_batches_agree_with_a_hashmap_model() {
    for (seed, buckets, log, keys, lossless) in [
        (1u64, 1 << 12, 1 << 20, 500u64, true),
        (2, 1 << 12, 1 << 20, 2000, true),
        (3, 8, 1 << 20, 300, false),    // full buckets: evictions
        (4, 1 << 10, 4096, 300, false), // a small log: wraps
        (5, 4, 8192, 200, false),       // both
    ] {
        let mut s = store(buckets, log);
        let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut ops = Vec::with_capacity(MAX_BATCH);
        let mut resps = vec![Resp::default(); MAX_BATCH];
        for _round in 0..400 {
            ops.clear();
            let mut ids = Vec::new();
            for _ in 0..1 + rng.next() % MAX_BATCH as u64 {
                let id = rng.next() % keys;
                let put = rng.next().is_multiple_of(4);
                let len = 1 + (rng.next() % MAX_VALUE as u64) as usize;
                let mut value = [0u8; MAX_VALUE];
                for b in &mut value[..len] {
                    *b = rng.next() as u8;
                }
                ops.push(Op {
                    key: Key::of(id),
                    opcode: if put { OP_PUT } else { OP_GET },
                    val_len: len as u8,
                    value,
                });
                ids.push(id);
            }
            s.batch(&ops, &mut resps);
            // Replay the batch on the model in order, checking each GET as of its turn.
            for ((op, r), id) in ops.iter().zip(&resps).zip(&ids) {
                if op.opcode == OP_PUT {
                    assert_eq!(r.kind, RESP_PUT_SUCCESS);
                    model.insert(*id, op.value[..op.val_len as usize].to_vec());
                    continue;
                }
                let want = model.get(id);
                match r.kind {
                    RESP_GET_SUCCESS => assert_eq!(
                        Some(&r.value[..r.len as usize]),
                        want.map(|v| &v[..]),
                        "seed {seed}: key {id} returned a value that is not its latest"
                    ),
                    RESP_GET_FAIL => assert!(
                        !lossless || want.is_none(),
                        "seed {seed}: key {id} missing from a store that cannot lose it"
                    ),
                    k => panic!("unknown response {k}"),
                }
            }
        }
        if !lossless {
            assert!(
                s.stats.index_evictions + s.stats.log_wraps > 0,
                "seed {seed}: the lossy configuration lost nothing: {:?}",
                s.stats
            );
        }
    }
}

#[test]
fn populate_inserts_every_key_with_its_version_0_value() {
    let mut s = store(1 << 10, 1 << 20);
    let evicted = s.populate(1000, 32).unwrap();
    assert!(evicted < 0.01, "{evicted}");
    let k = Key::of(123);
    let mut want = [0u8; 32];
    value_of(k, 0, &mut want);
    assert_eq!(get(&mut s, k), Some(want.to_vec()));
}

#[test]
fn a_partition_holds_its_keys_only() {
    let mut s = store(1 << 10, 1 << 20);
    s.populate_where(1000, 8, |k| k.server() % 3 == 1).unwrap();
    let mut mine = 0;
    for i in 0..1000 {
        let k = Key::of(i);
        assert_eq!(get(&mut s, k).is_some(), k.server() % 3 == 1, "key {i}");
        mine += usize::from(k.server() % 3 == 1);
    }
    // The server field is well mixed: about a third of the keys.
    assert!((250..420).contains(&mine), "{mine}");
}

#[test]
fn values_differ_by_version_and_key_and_are_stable() {
    let (mut a, mut b, mut c) = ([0u8; 46], [0u8; 46], [0u8; 46]);
    value_of(Key::of(1), 5, &mut a);
    value_of(Key::of(1), 6, &mut b);
    value_of(Key::of(2), 5, &mut c);
    assert_ne!(a, b);
    assert_ne!(a, c);
    value_of(Key::of(1), 5, &mut b);
    assert_eq!(a, b);
}

#[test]
fn bad_sizes_are_refused() {
    let cfg = |buckets, log_bytes| StoreConfig {
        buckets,
        log_bytes,
        place: Placement::default(),
    };
    assert!(Store::new(cfg(3, 1 << 20)).is_err());
    assert!(Store::new(cfg(4, 1000)).is_err());
    assert!(Store::new(cfg(4, 2048)).is_err());
}

#[test]
fn splitmix64_is_the_reference_generator() {
    // The reference splitmix64 seeded with 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4.
    assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    assert_eq!(splitmix64(SPLITMIX_GAMMA), 0x6e78_9e6a_a1b9_65f4);
}

fn op(opcode: u8, k: Key, value: &[u8]) -> Op {
    let mut v = [0u8; MAX_VALUE];
    v[..value.len()].copy_from_slice(value);
    Op {
        key: k,
        opcode,
        val_len: value.len() as u8,
        value: v,
    }
}

/// What one operation answers when run alone, through `get` and `put`.
fn one_by_one(s: &mut Store, o: &Op) -> (u8, Vec<u8>) {
    match o.opcode {
        OP_GET => match get(s, o.key) {
            Some(v) => (RESP_GET_SUCCESS, v),
            None => (RESP_GET_FAIL, vec![]),
        },
        OP_PUT => match o.value.get(..o.val_len as usize).map(|v| s.put(o.key, v)) {
            Some(Ok(())) => (RESP_PUT_SUCCESS, vec![]),
            _ => (RESP_GET_FAIL, vec![]),
        },
        _ => (RESP_GET_FAIL, vec![]),
    }
}

/// A batch answers exactly as its operations run one by one in order, misses included: the
/// prefetch passes see the buckets before the batch's own inserts, the work pass must not. Few
/// keys in few buckets and a small log, so batches are full of same-key and same-bucket pairs,
/// evictions and wraps.
#[test]
fn a_batch_is_its_operations_run_in_order() {
    for (seed, buckets, log, keys) in [
        (11u64, 1usize, 4096usize, 12u64), // one bucket: evictions in nearly every batch
        (12, 2, 4096, 40),
        (13, 4, 8192, 9),
        (14, 64, 4096, 300), // wraps: ~56 items per lap
    ] {
        let (mut batched, mut single) = (store(buckets, log), store(buckets, log));
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut resps = vec![Resp::default(); MAX_BATCH];
        for round in 0..600 {
            let ops: Vec<Op> = (0..1 + rng.next() % MAX_BATCH as u64)
                .map(|_| {
                    let k = Key::of(rng.next() % keys);
                    let len = match rng.next() % 8 {
                        0 => 1 + (rng.next() % MAX_VALUE as u64) as usize,
                        _ => 8 + 8 * (rng.next() % 2) as usize, // mostly two lengths: in place
                    };
                    let v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    let code = match rng.next() % 16 {
                        0 => 7,            // unknown: changes nothing
                        1 => OP_PUT + 100, // unknown too
                        2..=7 => OP_PUT,
                        _ => OP_GET,
                    };
                    let mut o = op(code, k, &v);
                    if code == OP_PUT && rng.next().is_multiple_of(16) {
                        // A bad length: refused, even for a key whose item is in the store.
                        o.val_len = [0, MAX_VALUE as u8 + 1, 255][(rng.next() % 3) as usize];
                    }
                    o
                })
                .collect();
            batched.batch(&ops, &mut resps);
            for (i, (o, r)) in ops.iter().zip(&resps).enumerate() {
                let (kind, v) = one_by_one(&mut single, o);
                assert_eq!(
                    (r.kind, &r.value[..r.len as usize]),
                    (kind, &v[..]),
                    "seed {seed} round {round} op {i}: {o:?}"
                );
            }
            assert_eq!(batched.stats, single.stats, "seed {seed} round {round}");
        }
        assert!(
            batched.stats.index_evictions > 0 || batched.stats.log_wraps > 0,
            "seed {seed}: {:?}",
            batched.stats
        );
    }
}

#[test]
fn in_one_batch_a_get_sees_the_puts_before_it_and_not_those_after() {
    let mut s = store(16, 1 << 16);
    let (k, other) = (Key::of(1), Key::of(2));
    let ops = [
        op(OP_GET, k, &[]),
        op(OP_PUT, k, b"12345678"), // an insert
        op(OP_GET, k, &[]),
        op(OP_PUT, k, b"abcdefgh"), // in place
        op(OP_GET, k, &[]),
        op(OP_PUT, k, b"a longer value"), // a new item, the slot follows
        op(OP_GET, k, &[]),
        op(OP_PUT, k, &[]), // bad length: nothing changes
        op(OP_GET, other, &[]),
        op(OP_GET, k, &[]),
    ];
    let mut r = [Resp::default(); 10];
    s.batch(&ops, &mut r);
    let got: Vec<(u8, &[u8])> = r
        .iter()
        .map(|r| (r.kind, &r.value[..r.len as usize]))
        .collect();
    assert_eq!(
        got,
        [
            (RESP_GET_FAIL, &b""[..]),
            (RESP_PUT_SUCCESS, b""),
            (RESP_GET_SUCCESS, b"12345678"),
            (RESP_PUT_SUCCESS, b""),
            (RESP_GET_SUCCESS, b"abcdefgh"),
            (RESP_PUT_SUCCESS, b""),
            (RESP_GET_SUCCESS, b"a longer value"),
            (RESP_GET_FAIL, b""),
            (RESP_GET_FAIL, b""),
            (RESP_GET_SUCCESS, b"a longer value"),
        ]
    );
    assert_eq!((s.stats.gets, s.stats.get_misses, s.stats.puts), (6, 2, 3));
}

#[test]
fn an_eviction_and_a_wrap_inside_a_batch_turn_later_gets_into_misses() {
    // A full bucket, then a ninth key evicts slot tag mod 8 in the batch that GETs its owner.
    let mut s = store(4, 1 << 16);
    let keys: Vec<Key> = (0..9).map(|t| key(2, 100 + t as u16, t)).collect();
    for k in &keys[..8] {
        s.put(*k, b"old").unwrap();
    }
    let ops = [
        op(OP_GET, keys[4], &[]),
        op(OP_PUT, keys[8], b"new"),
        op(OP_GET, keys[4], &[]),
        op(OP_GET, keys[8], &[]),
    ];
    let mut r = [Resp::default(); 4];
    s.batch(&ops, &mut r);
    let kinds: Vec<u8> = r.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RESP_GET_SUCCESS,
            RESP_PUT_SUCCESS,
            RESP_GET_FAIL,
            RESP_GET_SUCCESS
        ]
    );
    assert_eq!(&r[0].value[..3], b"old");

    // A 4 KiB log: a batch of inserts wraps it over the item a GET earlier in the batch read.
    let mut s = store(1024, 4096);
    let first = Key::of(0);
    s.put(first, &[1; MAX_VALUE]).unwrap();
    let mut ops = vec![op(OP_GET, first, &[])];
    ops.extend((1..=30).map(|i| op(OP_PUT, Key::of(i), &[2; MAX_VALUE])));
    ops.push(op(OP_GET, first, &[]));
    let mut r = vec![Resp::default(); ops.len()];
    s.batch(&ops, &mut r);
    assert_eq!(
        (r[0].kind, &r[0].value[..r[0].len as usize]),
        (RESP_GET_SUCCESS, &[1u8; MAX_VALUE][..]),
        "the GET before the wrap has the value as it was"
    );
    assert_eq!(s.stats.log_wraps, 0, "30 items fit before the first wrap");
    let mut ops = vec![op(OP_GET, first, &[])];
    ops.extend((31..=60).map(|i| op(OP_PUT, Key::of(i), &[3; MAX_VALUE])));
    ops.push(op(OP_GET, first, &[]));
    s.batch(&ops, &mut r);
    assert_eq!(r[0].kind, RESP_GET_SUCCESS);
    assert_eq!(&r[0].value[..MAX_VALUE], &[1u8; MAX_VALUE][..]);
    assert!(s.stats.log_wraps >= 1);
    assert_eq!(
        r[31].kind, RESP_GET_FAIL,
        "the head passed the first item in this batch"
    );
}

#[test]
fn a_batch_longer_than_max_batch_runs_whole_and_short_slices_answer_what_fits() {
    let mut s = store(1 << 10, 1 << 20);
    let ops: Vec<Op> = (0..100)
        .map(|i| op(OP_PUT, Key::of(i), &[i as u8; 8]))
        .collect();
    let mut r = vec![Resp::default(); 100];
    s.batch(&ops, &mut r);
    assert!(r.iter().all(|r| r.kind == RESP_PUT_SUCCESS));
    let gets: Vec<Op> = (0..100).map(|i| op(OP_GET, Key::of(i), &[])).collect();
    let mut few = vec![Resp::default(); 40];
    s.batch(&gets, &mut few);
    for (i, r) in few.iter().enumerate() {
        assert_eq!(&r.value[..r.len as usize], &[i as u8; 8], "key {i}");
    }
    assert_eq!(
        s.stats.gets, 40,
        "only the ops that have a response slot run"
    );
}
