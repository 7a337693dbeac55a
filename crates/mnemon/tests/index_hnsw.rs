//! HNSW recall against exact search on clustered, embedding-like vectors.
//!
//! The medium case runs by default (debug builds compile the monomorphised
//! graph code without optimisation, so it is kept small); the large case
//! (20k × 384, default parameters) is `#[ignore]`d: run it with
//! `cargo test --release --no-default-features --test index_hnsw -- --ignored`.

use mnemon::embed::normalize;
use mnemon::index::{HnswParams, VectorIndex};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Standard normal sample (Box–Muller).
fn gauss(rng: &mut SmallRng) -> f32 {
    let u1: f32 = rng.gen_range(f32::EPSILON..1.0);
    let u2: f32 = rng.gen_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

fn unit_gauss(rng: &mut SmallRng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim).map(|_| gauss(rng)).collect();
    let _ = normalize(&mut v);
    v
}

/// Gaussian clusters around random unit centres with per-cluster spread
/// (noise norm 0.4–0.9, i.e. cosine to the centre ≈ 0.75–0.93), normalised.
struct Clusters {
    centres: Vec<Vec<f32>>,
    spreads: Vec<f32>,
}

impl Clusters {
    fn new(rng: &mut SmallRng, dim: usize, k: usize) -> Self {
        let centres = (0..k).map(|_| unit_gauss(rng, dim)).collect();
        let spreads = (0..k).map(|_| rng.gen_range(0.4f32..0.9) / (dim as f32).sqrt()).collect();
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

fn recall_case(seed: u64, n: usize, dim: usize, clusters: usize, params: HnswParams, queries: usize) -> f64 {
    println!("seed {seed}, n {n}, dim {dim}, clusters {clusters}, {params:?}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let cl = Clusters::new(&mut rng, dim, clusters);
    let data: Vec<Vec<f32>> = (0..n).map(|_| cl.sample(&mut rng)).collect();

    let mut hnsw = VectorIndex::new(dim, params.clone());
    let mut exact = VectorIndex::new(dim, HnswParams { exact_threshold: usize::MAX, ..params });
    for (i, v) in data.iter().enumerate() {
        hnsw.insert(i as u64, v);
        exact.insert(i as u64, v);
    }
    hnsw.wait_for_graph();
    assert!(hnsw.is_hnsw());
    assert!(!exact.is_hnsw());

    let all = |_: u64| true;
    let mut hits = 0usize;
    for _ in 0..queries {
        let q = cl.sample(&mut rng);
        let truth: Vec<u64> = exact.search(&q, 10, &all).into_iter().map(|x| x.0).collect();
        let got = hnsw.search(&q, 10, &all);
        assert_eq!(got.len(), 10);
        hits += got.iter().filter(|(id, _)| truth.contains(id)).count();
    }
    // A stored vector as query: no panic, and it comes back first.
    for i in (0..n).step_by(n / 25) {
        let r = hnsw.search(&data[i], 10, &all);
        assert_eq!(r[0].0, i as u64, "stored vector {i} not first");
        // The index stores each component rounded to f16 (relative error
        // ≤ 2^-11), so a vector's similarity to itself is 1 within 2^-11.
        assert!((r[0].1 - 1.0).abs() <= 2f32.powi(-11), "{}", r[0].1);
    }
    let recall = hits as f64 / (queries * 10) as f64;
    println!("recall@10 = {recall:.4}");
    recall
}

#[test]
fn hnsw_recall_medium() {
    // Small ef_search so that recall is not trivially 1.0 at this size.
    let params = HnswParams { exact_threshold: 500, ef_construction: 64, ef_search: 12, ..HnswParams::default() };
    let recall = recall_case(20240601, 2000, 32, 40, params, 100);
    assert!(recall >= 0.95, "recall@10 {recall}");
}

#[test]
#[ignore = "large: 20k × 384 with default parameters; run in release"]
fn hnsw_recall_large() {
    let params = HnswParams { exact_threshold: 2000, ..HnswParams::default() };
    let recall = recall_case(20240602, 20_000, 384, 100, params, 200);
    assert!(recall >= 0.95, "recall@10 {recall}");
}
