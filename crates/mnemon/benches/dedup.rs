//! Near-duplicate decisions on the labelled pairs of
//! `tests/fixtures/dedup_pairs.json` (real turns of LongMemEval_S, MADial-Bench
//! zh and MemoryBank-cn, each with a paraphrase and three one-fact changes:
//! a number, a name, a negation), per embedder, split and language:
//!
//! * false merges: one-fact changes the rule would take for restatements
//!   (cosine ≥ the embedder's near-duplicate threshold and the same facts;
//!   target 0), next to the count under cosine alone;
//! * paraphrases merged or collapsed: the share of paraphrase pairs the rule
//!   takes for restatements (a remember supersedes, a recall shows one;
//!   target ≥ 0.9);
//! * unrelated: pairs of the 80 distinct memories of the built-in
//!   cross-lingual set that the rule would merge (must stay 0: the fact
//!   check cannot tell two unrelated facts without numbers or names apart,
//!   only the cosine can).
//!
//! Then a threshold sweep on the dev half, which is what the embedders'
//! `near_duplicate_threshold` was calibrated on. Run with
//! `cargo bench --bench dedup`; the neural embedders are measured when
//! installed (`mnemon model install minilm` / `e5-small` / `bge-small-en`).

use mnemon::dedup::FactSignature;
use mnemon::embed::{EmbedKind, Embedder, HashingEmbedder};

struct Pair {
    split: String,
    lang: String,
    paraphrase: bool,
    cos: f32,
    same_facts: bool,
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn pairs(e: &dyn Embedder) -> Vec<Pair> {
    let set: serde_json::Value =
        serde_json::from_str(include_str!("../tests/fixtures/dedup_pairs.json")).expect("fixture parses");
    let raw = set["pairs"].as_array().expect("pairs");
    let texts = |k: &str| raw.iter().map(|p| p[k].as_str().expect("text")).collect::<Vec<_>>();
    let (a, b) = (texts("a"), texts("b"));
    let va = e.embed(&a, EmbedKind::Passage).expect("embed");
    let vb = e.embed(&b, EmbedKind::Passage).expect("embed");
    raw.iter()
        .enumerate()
        .map(|(i, p)| Pair {
            split: p["split"].as_str().expect("split").to_string(),
            lang: p["lang"].as_str().expect("lang").to_string(),
            paraphrase: p["label"] == "paraphrase",
            cos: cos(&va[i], &vb[i]),
            same_facts: FactSignature::of(a[i]).differs(&FactSignature::of(b[i])).is_none(),
        })
        .collect()
}

/// Cosine and same-facts of every pair of the cross-lingual set's memories.
fn unrelated(e: &dyn Embedder) -> Vec<(f32, bool)> {
    let set: serde_json::Value =
        serde_json::from_str(include_str!("../../mnemon-eval/src/crosslingual.json")).expect("built-in set parses");
    let texts: Vec<&str> =
        set["memories"].as_array().expect("memories").iter().filter_map(|m| m["text"].as_str()).collect();
    let v = e.embed(&texts, EmbedKind::Passage).expect("embed");
    let sigs: Vec<FactSignature> = texts.iter().map(|t| FactSignature::of(t)).collect();
    let mut out = Vec::new();
    for i in 0..v.len() {
        for j in i + 1..v.len() {
            out.push((cos(&v[i], &v[j]), sigs[i].differs(&sigs[j]).is_none()));
        }
    }
    out
}

fn rates(ps: &[&Pair], t: f32) -> (usize, usize, usize, usize) {
    let distinct: Vec<&&Pair> = ps.iter().filter(|p| !p.paraphrase).collect();
    let para: Vec<&&Pair> = ps.iter().filter(|p| p.paraphrase).collect();
    let false_merges = distinct.iter().filter(|p| p.cos >= t && p.same_facts).count();
    let cosine_alone = distinct.iter().filter(|p| p.cos >= t).count();
    let merged = para.iter().filter(|p| p.cos >= t && p.same_facts).count();
    (false_merges, cosine_alone, merged, para.len())
}

fn report(e: &dyn Embedder) {
    let ps = pairs(e);
    let un = unrelated(e);
    let t = e.near_duplicate_threshold();
    let unrelated_merges = un.iter().filter(|(c, same)| *c >= t && *same).count();
    for split in ["dev", "test"] {
        for lang in ["en", "zh"] {
            let sel: Vec<&Pair> = ps.iter().filter(|p| p.split == split && p.lang == lang).collect();
            let (fm, alone, merged, n) = rates(&sel, t);
            println!(
                "| {:<34} | {split:<4} | {lang} | {fm:>2} / {:<3} | {alone:>3} | {merged:>2} / {n} = {:.2} | {t:.2} |",
                e.model_id(),
                sel.len() - n,
                merged as f64 / n as f64,
            );
        }
    }
    println!("  unrelated memory pairs merged at {t:.2}: {unrelated_merges} of {}", un.len());
    println!("  dev sweep: threshold | false merges | en paraphrases | zh paraphrases | unrelated merged");
    let dev: Vec<&Pair> = ps.iter().filter(|p| p.split == "dev").collect();
    for k in 70..=99 {
        let t = k as f32 / 100.0;
        let (fm, _, _, _) = rates(&dev, t);
        let en: Vec<&Pair> = dev.iter().copied().filter(|p| p.lang == "en").collect();
        let zh: Vec<&Pair> = dev.iter().copied().filter(|p| p.lang == "zh").collect();
        let (_, _, me, ne) = rates(&en, t);
        let (_, _, mz, nz) = rates(&zh, t);
        let u = un.iter().filter(|(c, same)| *c >= t && *same).count();
        println!("  {t:.2} | {fm} | {:.2} | {:.2} | {u}", me as f64 / ne as f64, mz as f64 / nz as f64);
    }
}

fn main() {
    println!(
        "| embedder | split | lang | false merges | by cosine alone | paraphrases merged or collapsed | threshold |"
    );
    println!("|---|---|---|---|---|---|---|");
    report(&HashingEmbedder::default());
    #[cfg(feature = "neural")]
    {
        use mnemon::embed::e5::{E5Embedder, E5_SMALL};
        use mnemon::embed::{default_models_dir, is_installed, model_dir, MiniLmEmbedder, MINILM};
        let dir = default_models_dir();
        if is_installed(&MINILM, &dir) {
            match MiniLmEmbedder::load(&model_dir(&MINILM, &dir)) {
                Ok(m) => report(&m),
                Err(e) => eprintln!("MiniLM failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED MiniLM: not installed (run `mnemon model install minilm`)");
        }
        if is_installed(&E5_SMALL, &dir) {
            match E5Embedder::load(&model_dir(&E5_SMALL, &dir)) {
                Ok(m) => report(&m),
                Err(e) => eprintln!("e5-small failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED e5-small: not installed (run `mnemon model install e5-small`)");
        }
        if is_installed(&mnemon::embed::BGE_SMALL_EN, &dir) {
            match mnemon::embed::BgeEmbedder::load(&model_dir(&mnemon::embed::BGE_SMALL_EN, &dir)) {
                Ok(m) => report(&m),
                Err(e) => eprintln!("bge-small-en failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED bge-small-en: not installed (run `mnemon model install bge-small-en`)");
        }
    }
}
