//! Similarity calibration: where each embedder puts paraphrases (the same
//! fact said again) and distinct facts, passage against passage. The
//! near-duplicate threshold of a model must sit above its distinct-fact
//! cosines and below its paraphrase cosines. Distinct facts are the 80
//! memories of the built-in cross-lingual set (`src/eval/crosslingual.json`,
//! near-distractors included); paraphrases are the pairs below, English and
//! Chinese. Run with `cargo bench --bench similarity`.

use mnemon::embed::{EmbedKind, Embedder, HashingEmbedder};

/// The same fact, said twice.
const PARAPHRASES: &[(&str, &str)] = &[
    ("I switched to oat milk because dairy upsets my stomach.", "Dairy upsets my stomach, so I switched to oat milk."),
    ("My sister Lena lives in Vancouver and works as a nurse.", "Lena, my sister, is a nurse living in Vancouver."),
    ("I'm allergic to penicillin.", "I have a penicillin allergy."),
    ("Our dog Biscuit is terrified of thunderstorms.", "Biscuit, our dog, is really scared of thunderstorms."),
    ("I prefer aisle seats on long flights.", "On long flights I like to sit in an aisle seat."),
    (
        "My daughter's piano competition is in Hangzhou next month.",
        "Next month my daughter has a piano competition in Hangzhou.",
    ),
    ("我喜欢喝偏酸的浅烘咖啡。", "我爱喝浅烘的、偏酸一点的咖啡。"),
    ("我女儿下个月要去杭州参加钢琴比赛。", "下个月女儿要去杭州比钢琴。"),
    ("我对海鲜过敏，吃了虾会起疹子。", "我海鲜过敏，一吃虾就起疹子。"),
    ("我哥哥在深圳做软件工程师。", "我哥是深圳的软件工程师。"),
    ("我们家的狗叫豆豆，是一只柯基。", "豆豆是我们家养的柯基犬。"),
    ("我每周二晚上去游泳。", "每个星期二晚上我都会去游泳。"),
];

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn pct(sorted: &[f32], p: f64) -> f32 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn calibrate(e: &dyn Embedder) {
    let set: serde_json::Value =
        serde_json::from_str(include_str!("../../mnemon-eval/src/crosslingual.json")).expect("built-in set parses");
    let texts: Vec<&str> =
        set["memories"].as_array().expect("memories").iter().filter_map(|m| m["text"].as_str()).collect();
    let v = e.embed(&texts, EmbedKind::Passage).expect("embed");
    let mut distinct = Vec::new();
    for i in 0..v.len() {
        for j in i + 1..v.len() {
            distinct.push(cos(&v[i], &v[j]));
        }
    }
    distinct.sort_by(f32::total_cmp);
    let a: Vec<&str> = PARAPHRASES.iter().map(|p| p.0).collect();
    let b: Vec<&str> = PARAPHRASES.iter().map(|p| p.1).collect();
    let (va, vb) = (e.embed(&a, EmbedKind::Passage).expect("embed"), e.embed(&b, EmbedKind::Passage).expect("embed"));
    let mut para: Vec<f32> = va.iter().zip(&vb).map(|(x, y)| cos(x, y)).collect();
    para.sort_by(f32::total_cmp);
    println!(
        "| {:<38} | {:>5.3} | {:>5.3} | {:>5.3} | {:>5.3} | {:>5.3} | {:>5.3} |",
        e.model_id(),
        pct(&distinct, 0.5),
        pct(&distinct, 0.99),
        distinct[distinct.len() - 1],
        para[0],
        pct(&para, 0.5),
        e.near_duplicate_threshold(),
    );
}

fn main() {
    println!("| embedder                               | distinct p50 | p99 | max | paraphrase min | p50 | threshold in use |");
    println!("|----------------------------------------|-------|-------|-------|-------|-------|-------|");
    calibrate(&HashingEmbedder::default());
    #[cfg(feature = "neural")]
    {
        use mnemon::embed::e5::{E5Embedder, E5_SMALL};
        use mnemon::embed::{default_models_dir, is_installed, model_dir, MiniLmEmbedder, MINILM};
        let dir = default_models_dir();
        if is_installed(&MINILM, &dir) {
            match MiniLmEmbedder::load(&model_dir(&MINILM, &dir)) {
                Ok(m) => calibrate(&m),
                Err(e) => eprintln!("MiniLM failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED MiniLM: not installed (run `mnemon model install minilm`)");
        }
        if is_installed(&E5_SMALL, &dir) {
            match E5Embedder::load(&model_dir(&E5_SMALL, &dir)) {
                Ok(m) => calibrate(&m),
                Err(e) => eprintln!("e5-small failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED e5-small: not installed (run `mnemon model install e5-small`)");
        }
        if is_installed(&mnemon::embed::BGE_SMALL_EN, &dir) {
            match mnemon::embed::BgeEmbedder::load(&model_dir(&mnemon::embed::BGE_SMALL_EN, &dir)) {
                Ok(m) => calibrate(&m),
                Err(e) => eprintln!("bge-small-en failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED bge-small-en: not installed (run `mnemon model install bge-small-en`)");
        }
    }
}
