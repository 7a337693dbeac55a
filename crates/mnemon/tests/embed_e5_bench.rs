//! Measurements for multilingual-e5-small (ignored by default): similarity
//! bands of unrelated pairs, paraphrases and translations; throughput; peak
//! resident memory. Run with
//! `cargo test --release --test embed_e5_bench -- --ignored --nocapture`.
#![cfg(feature = "neural")]

use std::path::PathBuf;
use std::time::Instant;

use mnemon::embed::e5::{E5Embedder, E5_SMALL, MODEL_FILE};
use mnemon::embed::{default_models_dir, model_dir, EmbedKind, Embedder};

fn model_path() -> PathBuf {
    model_dir(&E5_SMALL, &default_models_dir()).join(MODEL_FILE)
}

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Resets the peak-RSS counter (Linux: writing 5 to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

const UNRELATED: [(&str, &str); 12] = [
    ("I prefer light-roast coffee with fruity notes.", "The train to Berlin leaves at 7:40."),
    ("My sister lives in Vancouver.", "Remember to water the tomatoes twice a week."),
    ("The invoice must be paid by Friday.", "Our cat hates thunderstorms."),
    ("那个酸酸的咖啡", "明天下午三点开会"),
    ("我的猫喜欢睡在窗台上", "这个季度的销售额增长了百分之十"),
    ("他每天早上跑步五公里", "请把护照放在抽屉里"),
    ("I am allergic to penicillin.", "周末我们去爬山了"),
    ("Die Heizung im Büro ist kaputt.", "She plays the cello in an orchestra."),
    ("偏酸的豆子", "我的猫喜欢睡在窗台上"),
    ("今天晚上吃火锅", "The quarterly report is due next Tuesday."),
    ("下周去上海出差", "我女儿对花生过敏。"),
    ("The wifi password is on the fridge.", "My daughter is allergic to peanuts."),
];

const PARAPHRASES: [(&str, &str); 7] = [
    ("I prefer light-roast coffee with fruity notes.", "I like lightly roasted coffee that tastes fruity."),
    ("My sister lives in Vancouver.", "My sister's home is in Vancouver."),
    ("The invoice must be paid by Friday.", "Payment for the invoice is due on Friday."),
    ("那个酸酸的咖啡", "那杯偏酸的咖啡"),
    ("我的猫喜欢睡在窗台上", "我家猫咪爱在窗台上睡觉"),
    ("他每天早上跑步五公里", "他每天清晨都会跑五公里"),
    ("The meeting was moved to Thursday.", "We rescheduled the meeting for Thursday."),
];

const TRANSLATIONS: [(&str, &str); 7] = [
    ("I prefer light-roast coffee with fruity notes.", "我更喜欢带果香的浅烘焙咖啡。"),
    ("My sister lives in Vancouver.", "我姐姐住在温哥华。"),
    ("The invoice must be paid by Friday.", "这张发票必须在周五前付款。"),
    ("My daughter is allergic to peanuts.", "我女儿对花生过敏。"),
    ("Our dog needs his vaccination in March.", "我们的狗三月份需要打疫苗。"),
    ("The heating in the office is broken.", "Die Heizung im Büro ist kaputt."),
    ("She plays the cello in an orchestra.", "她在一个管弦乐团里拉大提琴。"),
];

fn band(m: &E5Embedder, name: &str, pairs: &[(&str, &str)]) {
    let left: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    let right: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    let (lp, rp) =
        (m.embed(&left, EmbedKind::Passage).expect("embed"), m.embed(&right, EmbedKind::Passage).expect("embed"));
    let lq = m.embed(&left, EmbedKind::Query).expect("embed");
    let pp: Vec<f32> = lp.iter().zip(&rp).map(|(a, b)| dot(a, b)).collect();
    let qp: Vec<f32> = lq.iter().zip(&rp).map(|(a, b)| dot(a, b)).collect();
    let stats = |v: &[f32]| {
        let mean = v.iter().sum::<f32>() / v.len() as f32;
        let min = v.iter().copied().fold(f32::INFINITY, f32::min);
        let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        format!("mean {mean:.3} min {min:.3} max {max:.3}")
    };
    println!("{name:<12} passage-passage {} | query-passage {}", stats(&pp), stats(&qp));
    for (((l, r), s), q) in pairs.iter().zip(&pp).zip(&qp) {
        println!("    {s:.3} {q:.3}  {l} | {r}");
    }
}

#[test]
#[ignore = "measurement; needs the model and a release build"]
fn e5_measurements() {
    let path = model_path();
    if !path.exists() {
        eprintln!("SKIPPED: e5-small model not found at {}", path.display());
        return;
    }
    let before = rss_kib("VmRSS:");
    let t = Instant::now();
    let m = E5Embedder::load(&path).expect("load");
    println!(
        "load {:.2} s; RSS before {} MiB, after load {} MiB, peak during load {} MiB",
        t.elapsed().as_secs_f64(),
        before / 1024,
        rss_kib("VmRSS:") / 1024,
        rss_kib("VmHWM:") / 1024
    );

    band(&m, "unrelated", &UNRELATED);
    band(&m, "paraphrase", &PARAPHRASES);
    band(&m, "translation", &TRANSLATIONS);

    let short: Vec<String> =
        (0..64).map(|i| format!("Note {i}: remember to buy oat milk and coffee beans tomorrow.")).collect();
    let sentence = "The committee reviewed the quarterly budget, discussed the delayed \
        infrastructure projects, and agreed to revisit the hiring plan after the audit. ";
    let long: Vec<String> = (0..64).map(|i| format!("{i} {}", sentence.repeat(3))).collect();
    let long_tokens = m.token_ids(&long[0], EmbedKind::Passage).len();
    let short_tokens = m.token_ids(&short[0], EmbedKind::Passage).len();
    for (name, texts, tokens) in [("short", &short, short_tokens), ("long", &long, long_tokens)] {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        m.embed(&refs[..2], EmbedKind::Passage).expect("warm-up");
        for batch in [1usize, 32] {
            reset_peak();
            let n = if batch == 1 { 16 } else { 64 };
            let t = Instant::now();
            for chunk in refs[..n].chunks(batch) {
                m.embed(chunk, EmbedKind::Passage).expect("embed");
            }
            let rate = n as f64 / t.elapsed().as_secs_f64();
            println!(
                "{name} ({tokens} tokens) batch {batch}: {rate:.1} sentences/s, peak RSS {} MiB",
                rss_kib("VmHWM:") / 1024
            );
        }
    }
    let max = vec!["长".repeat(600); 4];
    let refs: Vec<&str> = max.iter().map(String::as_str).collect();
    reset_peak();
    let t = Instant::now();
    m.embed(&refs, EmbedKind::Passage).expect("embed");
    println!("4 × 512 tokens: {:.2} s, peak RSS {} MiB", t.elapsed().as_secs_f64(), rss_kib("VmHWM:") / 1024);
    println!("RSS now {} MiB", rss_kib("VmRSS:") / 1024);
}
