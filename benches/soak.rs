//! Load and soak: writer threads, recall threads and periodic compaction
//! together for a fixed number of operations. Afterwards every acknowledged
//! write is read back, and resident memory (VmRSS) before and after is
//! printed with ops/s and p50/p99 latencies.
//!
//! `cargo bench --no-default-features --bench soak`; `MNEMON_SOAK_OPS`
//! (default 2000 writes) scales it. Every recall appends an access event, so
//! the log grows with the recall rate and each compaction (a full rewrite
//! plus the erasure scan) takes longer as the run goes on.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemon::{DedupMode, Engine, ForgetRequest, MemoryId, Namespace, NewMemory, RecallOptions};

const WRITERS: usize = 4;
const READERS: usize = 2;

#[path = "common/rss.rs"]
mod rss;
use rss::rss_kib;

fn pct(v: &mut [Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn word(i: u64) -> String {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..10)
        .map(|_| {
            x ^= x >> 13;
            x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let ops: u64 = std::env::var("MNEMON_SOAK_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let dir = tempfile::tempdir().unwrap();
    let rss_before = rss_kib();
    let e = Engine::open(dir.path()).unwrap();
    let acked: Arc<Mutex<Vec<(usize, MemoryId, String)>>> = Arc::default();
    let forgotten: Arc<Mutex<Vec<MemoryId>>> = Arc::default();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let start = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (e, acked, forgotten) = (e.clone(), acked.clone(), forgotten.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                for i in 0..ops / WRITERS as u64 {
                    let n = Namespace::new(format!("u{}", t % 2)).unwrap();
                    let text = format!("soak memory {} {} about {}", word(i * 31 + t as u64), word(i), word(i % 97));
                    let t0 = Instant::now();
                    let id = e.remember(&n, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
                    lat.push(t0.elapsed());
                    if i % 50 == 49 {
                        e.forget(&n, ForgetRequest::Memory(id), "soak").unwrap();
                        forgotten.lock().unwrap().push(id);
                    } else {
                        acked.lock().unwrap().push((t % 2, id, text));
                    }
                }
                lat
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|t| {
            let (e, done) = (e.clone(), done.clone());
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut i = 0u64;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let n = Namespace::new(format!("u{}", t % 2)).unwrap();
                    let t0 = Instant::now();
                    let _ = e.recall(&n, &format!("about {}", word(i % 97)), &RecallOptions::default()).unwrap();
                    lat.push(t0.elapsed());
                    i += 1;
                }
                lat
            })
        })
        .collect();
    let compactor = {
        let (e, done) = (e.clone(), done.clone());
        std::thread::spawn(move || {
            let mut lat = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(2));
                let t0 = Instant::now();
                assert!(e.compact().unwrap().verified);
                lat.push(t0.elapsed());
            }
            lat
        })
    };
    let mut wlat: Vec<Duration> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let write_secs = start.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut rlat: Vec<Duration> = readers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let mut clat = compactor.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    let forgotten = forgotten.lock().unwrap().clone();
    for (n, id, text) in &acked {
        let m = e.get(&Namespace::new(format!("u{n}")).unwrap(), *id).unwrap();
        assert_eq!(&m.content, text);
    }
    let check = e.check().unwrap();
    assert!(check.consistent);
    let rss_open = rss_kib();
    e.close().unwrap();
    let rss_after = rss_kib();
    println!(
        "soak: {} writes ({} forgotten) by {WRITERS} threads in {write_secs:.1}s = {:.0} writes/s; p50 {:?} p99 {:?}",
        wlat.len(),
        forgotten.len(),
        wlat.len() as f64 / write_secs,
        pct(&mut wlat, 0.5),
        pct(&mut wlat, 0.99)
    );
    println!(
        "soak: {} recalls by {READERS} threads = {:.0} recalls/s; p50 {:?} p99 {:?}",
        rlat.len(),
        rlat.len() as f64 / write_secs,
        pct(&mut rlat, 0.5),
        pct(&mut rlat, 0.99)
    );
    println!("soak: {} compactions, p50 {:?} max {:?}", clat.len(), pct(&mut clat, 0.5), pct(&mut clat, 1.0));
    println!(
        "soak: all {} acknowledged writes read back; check consistent over {} records; VmRSS {} KiB before, {} KiB open at end, {} KiB after close",
        acked.len(),
        check.records,
        rss_before,
        rss_open,
        rss_after
    );
}
