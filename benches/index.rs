//! Index benchmark: vector recall latency (exact scan vs HNSW) at 1k, 10k and
//! 100k vectors of dimension 384, HNSW recall@10 against exact, memory per
//! vector, filtered search, and BM25 query latency on 10k synthetic documents.
//!
//! Run: `cargo bench --no-default-features --bench index`
//! (`MNEMON_BENCH_SIZES=1000,10000` to pick sizes).
//!
//! Latencies exclude embedding (queries are precomputed vectors) and are
//! measured as **thread CPU time** per query (wall-clock p50 is shown too), so
//! that other processes on a shared machine inflate them less. HNSW figures
//! are also given as ratios to the exact figures of the same run.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cpu_time::ThreadTime;
use mnemon::embed::normalize;
use mnemon::index::{HnswParams, LexicalIndex, VectorIndex};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const DIM: usize = 384;
const QUERIES: usize = 300;
const SEED: u64 = 0x6d6e_656d_6f6e;

fn gauss(rng: &mut SmallRng) -> f32 {
    let u1: f32 = rng.gen_range(f32::EPSILON..1.0);
    let u2: f32 = rng.gen_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// Embedding-like data: gaussian clusters around random unit centres with
/// per-cluster spread, normalised.
struct Clusters {
    centres: Vec<Vec<f32>>,
    spreads: Vec<f32>,
}

impl Clusters {
    fn new(rng: &mut SmallRng, k: usize) -> Self {
        let centres = (0..k)
            .map(|_| {
                let mut v: Vec<f32> = (0..DIM).map(|_| gauss(rng)).collect();
                let _ = normalize(&mut v);
                v
            })
            .collect();
        let spreads = (0..k).map(|_| rng.gen_range(0.4f32..0.9) / (DIM as f32).sqrt()).collect();
        Clusters { centres, spreads }
    }

    fn sample(&self, rng: &mut SmallRng) -> Vec<f32> {
        let c = rng.gen_range(0..self.centres.len());
        let s = self.spreads[c];
        let mut v: Vec<f32> = self.centres[c].iter().map(|x| x + s * gauss(rng)).collect();
        let _ = normalize(&mut v);
        v
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Latency percentiles of one series: thread-CPU p50, p99 and wall p50.
struct Lat {
    p50: Duration,
    p99: Duration,
    wall50: Duration,
}

/// Runs `f` once per query, timing each call.
fn latencies<T>(queries: &[T], mut f: impl FnMut(&T)) -> Lat {
    let mut cpu = Vec::with_capacity(queries.len());
    let mut wall = Vec::with_capacity(queries.len());
    for q in queries {
        let (t, c) = (Instant::now(), ThreadTime::now());
        f(q);
        cpu.push(c.elapsed());
        wall.push(t.elapsed());
    }
    cpu.sort_unstable();
    wall.sort_unstable();
    Lat { p50: percentile(&cpu, 0.5), p99: percentile(&cpu, 0.99), wall50: percentile(&wall, 0.5) }
}

/// Resident set size in bytes (Linux `/proc/self/statm`, 4 KiB pages);
/// 0 where unavailable. Used to check `memory_bytes()` against reality.
fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<usize>().ok()))
        .map_or(0, |pages| pages * 4096)
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.3}", a.as_secs_f64() / b.as_secs_f64().max(1e-12))
}

fn sizes() -> Vec<usize> {
    std::env::var("MNEMON_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000])
}

fn main() {
    let all = |_: u64| true;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("mnemon index benchmark: dim {DIM}, {QUERIES} queries per size, k = 10, data seed {SEED:#x}");
    println!("load average at start: {}", load.trim());
    println!("HNSW params: {:?}", HnswParams::default());
    println!("exact column: exact_threshold = MAX (always scans); HNSW column: exact_threshold = 0 (graph built");
    println!("from the first insert; the planner may still answer by scanning when that is cheaper).");
    println!("Latencies: thread CPU time p50/p99 in µs; 'wall p50' = wall-clock p50 exact / HNSW. Build: CPU seconds.");
    println!("bytes/vec: memory_bytes() / n (estimate); RSS Δ/vec: resident-memory growth while building, / n.");
    println!();
    println!(
        "| vectors | build exact (s) | build HNSW (s) | exact p50 | exact p99 | HNSW p50 | HNSW p99 | HNSW/exact p50 | HNSW/exact p99 | wall p50 (µs) | recall@10 | bytes/vec exact | bytes/vec HNSW | HNSW/exact bytes | RSS Δ/vec exact / HNSW |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rng = SmallRng::seed_from_u64(SEED);
    let clusters = Clusters::new(&mut rng, 200);
    let mut filtered_rows = Vec::new();
    for n in sizes() {
        let data: Vec<Vec<f32>> = (0..n).map(|_| clusters.sample(&mut rng)).collect();
        let queries: Vec<Vec<f32>> = (0..QUERIES).map(|_| clusters.sample(&mut rng)).collect();

        let rss0 = rss_bytes();
        let t = ThreadTime::now();
        let mut exact = VectorIndex::new(DIM, HnswParams { exact_threshold: usize::MAX, ..HnswParams::default() });
        for (i, v) in data.iter().enumerate() {
            exact.insert(i as u64, v);
        }
        let build_exact = t.elapsed();
        let rss1 = rss_bytes();

        let t = ThreadTime::now();
        let mut hnsw = VectorIndex::new(DIM, HnswParams { exact_threshold: 0, ..HnswParams::default() });
        for (i, v) in data.iter().enumerate() {
            hnsw.insert(i as u64, v);
        }
        let build_hnsw = t.elapsed();
        let rss2 = rss_bytes();
        assert!(hnsw.is_hnsw() && !exact.is_hnsw());

        // Warm caches once, then measure.
        for q in queries.iter().take(20) {
            black_box(exact.search(q, 10, &all));
            black_box(hnsw.search(q, 10, &all));
        }
        let e = latencies(&queries, |q| {
            black_box(exact.search(q, 10, &all));
        });
        let h = latencies(&queries, |q| {
            black_box(hnsw.search(q, 10, &all));
        });
        let mut hits = 0usize;
        for q in &queries {
            let truth: Vec<u64> = exact.search(q, 10, &all).into_iter().map(|x| x.0).collect();
            hits += hnsw.search(q, 10, &all).iter().filter(|(id, _)| truth.contains(id)).count();
        }
        let recall = hits as f64 / (QUERIES * 10) as f64;
        let be = exact.memory_bytes() as f64 / n as f64;
        let bh = hnsw.memory_bytes() as f64 / n as f64;
        let re = rss1.saturating_sub(rss0) as f64 / n as f64;
        let rh = rss2.saturating_sub(rss1) as f64 / n as f64;
        println!(
            "| {n} | {:.2} | {:.1} | {} | {} | {} | {} | {} | {} | {} / {} | {recall:.4} | {be:.0} | {bh:.0} | {:.2} | {re:.0} / {rh:.0} |",
            build_exact.as_secs_f64(),
            build_hnsw.as_secs_f64(),
            us(e.p50),
            us(e.p99),
            us(h.p50),
            us(h.p99),
            ratio(h.p50, e.p50),
            ratio(h.p99, e.p99),
            us(e.wall50),
            us(h.wall50),
            bh / be
        );

        if n >= 10_000 {
            for (label, modulus) in [("50 %", 2u64), ("5 %", 20), ("0.5 %", 200)] {
                let f = move |id: u64| id.is_multiple_of(modulus);
                let qs = &queries[..100];
                let e = latencies(qs, |q| {
                    black_box(exact.search(q, 10, &f));
                });
                let h = latencies(qs, |q| {
                    black_box(hnsw.search(q, 10, &f));
                });
                let mut hits = 0usize;
                for q in qs {
                    let truth: Vec<u64> = exact.search(q, 10, &f).into_iter().map(|x| x.0).collect();
                    hits += hnsw.search(q, 10, &f).iter().filter(|(id, _)| truth.contains(id)).count();
                }
                filtered_rows.push(format!(
                    "| {n} | {label} | {} | {} | {} | {:.4} |",
                    us(e.p50),
                    us(h.p50),
                    ratio(h.p50, e.p50),
                    hits as f64 / 1000.0
                ));
            }
        }
    }
    println!();
    println!("Filtered search (k = 10, filter passes the given share of ids; CPU p50 in µs):");
    println!();
    println!("| vectors | filter passes | exact p50 | HNSW index p50 | HNSW/exact p50 | recall@10 |");
    println!("|---|---|---|---|---|---|");
    for r in filtered_rows {
        println!("{r}");
    }

    bench_bm25();
}

fn bench_bm25() {
    let mut rng = SmallRng::seed_from_u64(SEED ^ 0xb325);
    // Zipf-like English vocabulary: word i drawn with weight 1/(i+1).
    let vocab: Vec<String> = (0..5000).map(|i| synthetic_word(i, &mut rng)).collect();
    let weights: Vec<f64> = (0..vocab.len()).map(|i| 1.0 / (i as f64 + 1.0)).collect();
    let total: f64 = weights.iter().sum();
    let cdf: Vec<f64> = weights
        .iter()
        .scan(0.0, |acc, w| {
            *acc += w / total;
            Some(*acc)
        })
        .collect();
    let pick = |rng: &mut SmallRng| {
        let x: f64 = rng.gen_range(0.0..1.0);
        &vocab[cdf.partition_point(|c| *c < x).min(vocab.len() - 1)]
    };
    let han: Vec<char> = "我你他她们的是在有和人这中大为上个国不以会到说时要就出也得里后自以家可下而过天去能对小多然于心学么之都好看起发当没成只如事把还用第样道想作种开美总从无情己面最女但现前些所同日手又行意动方期它头经长儿回位分爱老因很给名法间斯知世什两次使身者被高已亲其进此话常与活正感咖啡茶酸甜早上跑步公里北京酒店"
        .chars()
        .collect();

    let n = 10_000u64;
    let mut docs = Vec::with_capacity(n as usize);
    for id in 0..n {
        let mut text = String::new();
        if id % 5 == 0 {
            // One document in five is Chinese (with a few Latin words).
            for _ in 0..rng.gen_range(15..60) {
                text.push(han[rng.gen_range(0..han.len())]);
            }
            text.push(' ');
            text.push_str(pick(&mut rng));
        } else {
            for _ in 0..rng.gen_range(10..40) {
                text.push_str(pick(&mut rng));
                text.push(' ');
            }
        }
        docs.push(text);
    }
    let t = ThreadTime::now();
    let mut ix = LexicalIndex::new();
    for (id, d) in docs.iter().enumerate() {
        ix.insert(id as u64, d);
    }
    let build = t.elapsed();
    let queries: Vec<String> = (0..QUERIES)
        .map(|i| {
            if i % 5 == 0 {
                (0..4).map(|_| han[rng.gen_range(0..han.len())]).collect()
            } else {
                (0..3).map(|_| pick(&mut rng).as_str()).collect::<Vec<_>>().join(" ")
            }
        })
        .collect();
    let all = |_: u64| true;
    for q in queries.iter().take(20) {
        black_box(ix.search(q, 10, &all));
    }
    let lat = latencies(&queries, |q| {
        black_box(ix.search(q, 10, &all));
    });
    println!();
    println!("BM25 (k = 10), {n} synthetic docs (80 % English, Zipf over 5k words; 20 % Chinese):");
    println!();
    println!("| docs | build (CPU ms) | query p50 (µs) | query p99 (µs) | wall p50 (µs) | memory bytes/doc |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {n} | {:.1} | {} | {} | {} | {:.0} |",
        build.as_secs_f64() * 1e3,
        us(lat.p50),
        us(lat.p99),
        us(lat.wall50),
        ix.memory_bytes() as f64 / n as f64
    );
}

fn synthetic_word(i: usize, rng: &mut SmallRng) -> String {
    const SYL: [&str; 16] =
        ["ka", "to", "ri", "men", "sel", "par", "on", "dis", "ve", "lu", "gra", "tin", "bo", "ex", "qui", "nor"];
    let parts = 1 + (i % 3) + rng.gen_range(0..2);
    let mut w: String = (0..parts).map(|_| SYL[rng.gen_range(0..SYL.len())]).collect();
    w.push_str(&i.to_string().chars().map(|c| (b'a' + (c as u8 - b'0')) as char).collect::<String>());
    w
}
