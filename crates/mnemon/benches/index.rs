//! Index benchmark: vector recall latency at 1k, 10k, 30k and 100k vectors
//! of dimension 384 for three searches over the same data: the `f32` exact
//! scan (the baseline), the quantised scan (`i8` codes, exact rescoring of
//! the best `rescore_factor · k` estimates) and HNSW; recall@10 of the last
//! two against the `f32` scan; memory per vector; filtered search; and BM25
//! query latency on 10k synthetic documents.
//!
//! Run: `cargo bench --bench index`
//! (`MNEMON_BENCH_SIZES=1000,10000` to pick sizes).
//!
//! Latencies exclude embedding (queries are precomputed vectors) and are
//! measured as **thread CPU time** per query (wall-clock p50 is shown too), so
//! that other processes on a shared machine inflate them less. Every figure
//! is also given as a ratio to the `f32` scan of the same run.

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

/// Latency percentiles of one series: thread-CPU p50, p95, p99 and wall p50.
struct Lat {
    p50: Duration,
    p95: Duration,
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
    Lat {
        p50: percentile(&cpu, 0.5),
        p95: percentile(&cpu, 0.95),
        p99: percentile(&cpu, 0.99),
        wall50: percentile(&wall, 0.5),
    }
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
        .unwrap_or_else(|| vec![1_000, 10_000, 30_000, 100_000])
}

/// recall@10 of `got` against `truth` over all queries (fraction of the
/// true top-10 ids found).
fn recall(truth: &[Vec<u64>], got: &[Vec<u64>]) -> f64 {
    let hits: usize = truth.iter().zip(got).map(|(t, g)| g.iter().filter(|id| t.contains(id)).count()).sum();
    hits as f64 / truth.iter().map(Vec::len).sum::<usize>().max(1) as f64
}

/// The baseline: an exact scan over the `f32` vectors as given (row-major,
/// one `Vec<f32>`), the search an index without quantisation or graph
/// does. Its dot product has the index's loop shape (four groups of four
/// accumulators over 16 components), so the ratios compare layouts, not
/// loop tuning.
struct F32Scan {
    rows: Vec<f32>,
}

impl F32Scan {
    fn new(data: &[Vec<f32>]) -> Self {
        F32Scan { rows: data.iter().flatten().copied().collect() }
    }

    #[allow(clippy::needless_range_loop)]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let mut a0 = [0.0f32; 4];
        let mut a1 = [0.0f32; 4];
        let mut a2 = [0.0f32; 4];
        let mut a3 = [0.0f32; 4];
        let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            for i in 0..4 {
                a0[i] += x[i] * y[i];
                a1[i] += x[4 + i] * y[4 + i];
                a2[i] += x[8 + i] * y[8 + i];
                a3[i] += x[12 + i] * y[12 + i];
            }
        }
        let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
        let s: [f32; 4] = std::array::from_fn(|i| (a0[i] + a1[i]) + (a2[i] + a3[i]));
        (s[0] + s[1]) + (s[2] + s[3]) + tail
    }

    /// The ids of the `k` best rows passing `filter` (ties: smaller id).
    fn search(&self, q: &[f32], k: usize, filter: &dyn Fn(u64) -> bool) -> Vec<u64> {
        let mut top: Vec<(f32, u64)> = Vec::with_capacity(k + 1);
        for (i, row) in self.rows.chunks_exact(DIM).enumerate() {
            let id = i as u64;
            let s = Self::dot(q, row);
            if top.len() == k && top.last().is_some_and(|w| s <= w.0) {
                continue;
            }
            if !filter(id) {
                continue;
            }
            let at = top.partition_point(|(t, _)| *t >= s);
            top.insert(at, (s, id));
            top.truncate(k);
        }
        top.into_iter().map(|(_, id)| id).collect()
    }
}

fn truth_ids(scan: &F32Scan, queries: &[Vec<f32>], filter: &dyn Fn(u64) -> bool) -> Vec<Vec<u64>> {
    queries.iter().map(|q| scan.search(q, 10, filter)).collect()
}

fn top_ids(ix: &VectorIndex, queries: &[Vec<f32>], filter: &dyn Fn(u64) -> bool) -> Vec<Vec<u64>> {
    queries.iter().map(|q| ix.search(q, 10, filter).into_iter().map(|x| x.0).collect()).collect()
}

fn main() {
    let all = |_: u64| true;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("mnemon index benchmark: dim {DIM}, {QUERIES} queries per size, k = 10, data seed {SEED:#x}");
    println!("load average at start: {}", load.trim());
    println!("HNSW params: {:?}", HnswParams::default());
    println!("f32: the bench's own exact scan over the f32 vectors as given, the baseline of every ratio and");
    println!("the truth of every recall@10.");
    println!("i8: quantised scan (exact_threshold = MAX, default rescore_factor): i8 estimates, rescoring with");
    println!("the index's f16 rows.");
    println!("HNSW: exact_threshold = 0 (graph built from the first insert; the planner may still answer by");
    println!("scanning when that is cheaper).");
    println!("Latencies: thread CPU time in µs; ratios are to the f32 scan's figure of the same run.");
    println!("bytes/vec: memory_bytes() / n (estimate; the scan indexes hold f16 rows and i8 codes);");
    println!("RSS Δ/vec: resident-memory growth while building, / n.");
    println!("HNSW build: the inserting thread's CPU time for all n inserts (what the writer pays; the graph");
    println!("is filled by its background thread), then the wall time until the graph holds every vector:");
    println!("grown (exact_threshold 0: the graph thread inserts each vector into its flat graph, one at a");
    println!("time) and, up to 30k, bulk (exact_threshold n: all n built at once by hnsw_rs, in parallel on");
    println!("every core, then copied); and their ratio.");
    println!();
    println!(
        "| vectors | f32 p50 | f32 p95 | i8 p50 | i8 p95 | i8/f32 p50 | i8/f32 p95 | i8 recall@10 | HNSW p50 | HNSW p95 | HNSW/f32 p50 | HNSW/f32 p95 | HNSW recall@10 | wall p50 f32 / i8 / HNSW | bytes/vec scan | bytes/vec HNSW | RSS Δ/vec scan / HNSW | HNSW build: caller CPU (ms) / wall grown (s) / wall bulk (s) / grown÷bulk |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rng = SmallRng::seed_from_u64(SEED);
    let clusters = Clusters::new(&mut rng, 200);
    let mut filtered_rows = Vec::new();
    for n in sizes() {
        let data: Vec<Vec<f32>> = (0..n).map(|_| clusters.sample(&mut rng)).collect();
        let queries: Vec<Vec<f32>> = (0..QUERIES).map(|_| clusters.sample(&mut rng)).collect();

        let scan_params = HnswParams { exact_threshold: usize::MAX, ..HnswParams::default() };
        let f32_scan = F32Scan::new(&data);
        let rss0 = rss_bytes();
        let mut quant = VectorIndex::new(DIM, scan_params);
        for (i, v) in data.iter().enumerate() {
            quant.insert(i as u64, v);
        }
        let rss1 = rss_bytes();

        // The caller's side of the build (what the writer thread pays) and
        // the wall time until the graph's background thread is done: grown
        // one vector at a time from the first insert, and (up to 30k) built
        // in bulk by `hnsw_rs` when the n-th vector arrives.
        let build = |threshold: usize| {
            let wall = Instant::now();
            let cpu = ThreadTime::now();
            let mut ix = VectorIndex::new(DIM, HnswParams { exact_threshold: threshold, ..HnswParams::default() });
            for (i, v) in data.iter().enumerate() {
                ix.insert(i as u64, v);
            }
            let caller = cpu.elapsed();
            ix.wait_for_graph();
            (ix, caller, wall.elapsed())
        };
        let (hnsw, caller_hnsw, build_hnsw) = build(0);
        let rss2 = rss_bytes();
        let bulk = (n <= 30_000).then(|| build(n).2);
        assert!(hnsw.is_hnsw() && !quant.is_hnsw());

        // Warm caches once, then measure.
        for q in queries.iter().take(20) {
            black_box(f32_scan.search(q, 10, &all));
            black_box(quant.search(q, 10, &all));
            black_box(hnsw.search(q, 10, &all));
        }
        let e = latencies(&queries, |q| {
            black_box(f32_scan.search(q, 10, &all));
        });
        let qz = latencies(&queries, |q| {
            black_box(quant.search(q, 10, &all));
        });
        let h = latencies(&queries, |q| {
            black_box(hnsw.search(q, 10, &all));
        });
        let truth = truth_ids(&f32_scan, &queries, &all);
        let recall_q = recall(&truth, &top_ids(&quant, &queries, &all));
        let recall_h = recall(&truth, &top_ids(&hnsw, &queries, &all));
        let bq = quant.memory_bytes() as f64 / n as f64;
        let bh = hnsw.memory_bytes() as f64 / n as f64;
        let rq = rss1.saturating_sub(rss0) as f64 / n as f64;
        let rh = rss2.saturating_sub(rss1) as f64 / n as f64;
        println!(
            "| {n} | {} | {} | {} | {} | {} | {} | {recall_q:.4} | {} | {} | {} | {} | {recall_h:.4} | {} / {} / {} | {bq:.0} | {bh:.0} | {rq:.0} / {rh:.0} | {:.0} / {:.1} / {} / {} |",
            us(e.p50),
            us(e.p95),
            us(qz.p50),
            us(qz.p95),
            ratio(qz.p50, e.p50),
            ratio(qz.p95, e.p95),
            us(h.p50),
            us(h.p95),
            ratio(h.p50, e.p50),
            ratio(h.p95, e.p95),
            us(e.wall50),
            us(qz.wall50),
            us(h.wall50),
            caller_hnsw.as_secs_f64() * 1000.0,
            build_hnsw.as_secs_f64(),
            bulk.map_or("–".to_string(), |s| format!("{:.1}", s.as_secs_f64())),
            bulk.map_or("–".to_string(), |s| format!("{:.2}", build_hnsw.as_secs_f64() / s.as_secs_f64())),
        );

        if n >= 10_000 {
            for (label, modulus) in [("50 %", 2u64), ("5 %", 20), ("0.5 %", 200)] {
                let f = move |id: u64| id.is_multiple_of(modulus);
                let qs = &queries[..100];
                let e = latencies(qs, |q| {
                    black_box(f32_scan.search(q, 10, &f));
                });
                let qz = latencies(qs, |q| {
                    black_box(quant.search(q, 10, &f));
                });
                let h = latencies(qs, |q| {
                    black_box(hnsw.search(q, 10, &f));
                });
                let truth = truth_ids(&f32_scan, qs, &f);
                filtered_rows.push(format!(
                    "| {n} | {label} | {} | {} | {} | {:.4} | {} | {} | {:.4} |",
                    us(e.p50),
                    us(qz.p50),
                    ratio(qz.p50, e.p50),
                    recall(&truth, &top_ids(&quant, qs, &f)),
                    us(h.p50),
                    ratio(h.p50, e.p50),
                    recall(&truth, &top_ids(&hnsw, qs, &f)),
                ));
            }
        }
    }
    println!();
    println!("Filtered search (k = 10, filter passes the given share of ids; CPU p50 in µs):");
    println!();
    println!("| vectors | filter passes | f32 p50 | i8 p50 | i8/f32 p50 | i8 recall@10 | HNSW index p50 | HNSW/f32 p50 | HNSW recall@10 |");
    println!("|---|---|---|---|---|---|---|---|---|");
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
