//! Phone-number redaction: precision, recall and per-text cost of the
//! redactor, against the pattern-only redactor it replaced (frozen in
//! `benches/phones/baseline.rs`), in the same run.
//!
//! The labelled set (`benches/phones/set.rs`) is generated from a fixed seed:
//! libphonenumber's example numbers of the six default regions (CN, US, GB,
//! DE, FR, JP) and seeded variants, in national and international writing
//! with spaces, dashes, dots and parentheses; international writings of 22
//! more regions; UK drama-range numbers; and non-phone numbers (amounts,
//! identifiers, dates, versions, ISBNs, coordinates, times, percentages,
//! counts, timestamps, addresses). A personal number counts as found only
//! when phone spans cover all of it; any phone span in a non-phone text, or
//! over a service number (toll-free, premium-rate, shared-cost, UAN), is a
//! false positive.
//!
//! When the real data sets are present (`MNEMON_EVAL_DATA`, as for
//! `tests/eval_real_data.rs`), the dev-split turns of LoCoMo, LongMemEval_S
//! and MADial-Bench zh are scanned too: texts taken to hold a phone, every
//! such span listed for audit, and the per-text cost on real text.
//!
//! Run with `cargo bench --bench phones` (optionally `-- --seed N`).

#[path = "phones/baseline.rs"]
mod baseline;
#[path = "phones/set.rs"]
mod set;

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use cpu_time::ThreadTime;
use mnemon::safety::{PiiKind, Redactor};
use mnemon_eval::{load_locomo, load_longmemeval, load_madial, Split, Unit};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use set::{Item, Label};

const DEFAULT_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Byte ranges of phone spans in `text`, per redactor.
trait PhoneFinder {
    fn phones(&self, text: &str) -> Vec<(usize, usize)>;
}

impl PhoneFinder for Redactor {
    fn phones(&self, text: &str) -> Vec<(usize, usize)> {
        self.find(text)
            .into_iter()
            .filter(|s| matches!(s.kind, PiiKind::Phone | PiiKind::CnMobile))
            .map(|s| (s.start, s.end))
            .collect()
    }
}

impl PhoneFinder for baseline::Redactor {
    fn phones(&self, text: &str) -> Vec<(usize, usize)> {
        self.find(text)
            .into_iter()
            .filter(|s| matches!(s.kind, baseline::PiiKind::Phone | baseline::PiiKind::CnMobile))
            .map(|s| (s.start, s.end))
            .collect()
    }
}

/// Whether the redactor takes the item's number for a phone: for a personal
/// number, every byte of it covered by phone spans; otherwise any phone span
/// touching it (non-phones: anywhere in the text).
fn says_phone(r: &dyn PhoneFinder, item: &Item) -> bool {
    let spans = r.phones(&item.text);
    match item.label {
        Label::Personal => (item.start..item.end)
            .filter(|&b| item.text.is_char_boundary(b))
            .all(|b| spans.iter().any(|&(s, e)| s <= b && b < e)),
        Label::Service => spans.iter().any(|&(s, e)| s < item.end && item.start < e),
        Label::NotPhone => !spans.is_empty(),
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    tp: usize,
    fn_: usize,
    fp: usize,
    tn: usize,
}

impl Tally {
    fn add(&mut self, item: &Item, said: bool) {
        match (item.label == Label::Personal, said) {
            (true, true) => self.tp += 1,
            (true, false) => self.fn_ += 1,
            (false, true) => self.fp += 1,
            (false, false) => self.tn += 1,
        }
    }
    fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }
    fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

/// Thread CPU time per text of one pass over `texts`, nanoseconds.
fn pass_ns(r: &dyn PhoneFinder, texts: &[String]) -> f64 {
    let t = ThreadTime::now();
    for text in texts {
        black_box(r.phones(black_box(text)));
    }
    t.elapsed().as_nanos() as f64 / texts.len() as f64
}

/// Per-text thread CPU time of `before` and `after` on `texts`: the best of
/// `rounds` passes each, the two redactors alternating so that both see the
/// same machine load.
fn per_text_ns(before: &dyn PhoneFinder, after: &dyn PhoneFinder, texts: &[String], rounds: usize) -> (f64, f64) {
    let (mut b, mut a) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..rounds {
        b = b.min(pass_ns(before, texts));
        a = a.min(pass_ns(after, texts));
    }
    (b, a)
}

/// Sentences of ordinary memory text without long digit runs (dates and
/// times only), seeded.
fn prose(rng: &mut SmallRng, n: usize) -> Vec<String> {
    use rand::seq::SliceRandom;
    use rand::Rng;
    const EN: &[&str] = &[
        "The team standup meeting starts at 9:30 every weekday morning in room four.",
        "Prefers oolong tea in the afternoon and dark roast coffee before 10.",
        "Her daughter's piano competition is in Hangzhou on 2024-05-18.",
        "Allergic to penicillin; carries an epinephrine pen since March.",
        "The flight to Lisbon leaves Tuesday at 07:45 from terminal 2.",
        "Booked the dentist for 14:30 on the third Thursday of the month.",
    ];
    const ZH: &[&str] = &[
        "我每周二晚上去游泳，一般游四十分钟。",
        "女儿下个月要去杭州参加钢琴比赛。",
        "他喜欢喝偏酸的浅烘咖啡，不加糖。",
        "周五下午三点在二号会议室评审方案。",
    ];
    (0..n)
        .map(|_| {
            let k = rng.gen_range(1..4);
            (0..k)
                .map(|_| if rng.gen_bool(0.6) { EN.choose(rng) } else { ZH.choose(rng) }.copied().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Turn texts of the real data sets' dev splits (`MNEMON_EVAL_DATA`, else
/// `shared/data` in the repository), deduplicated, per data set; `None`
/// when the files are absent.
fn real_dev_texts() -> Option<Vec<(&'static str, Vec<String>)>> {
    let dir = std::env::var_os("MNEMON_EVAL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if !dir.join("locomo10.json").is_file() {
        println!(
            "
(no real data in {}: set MNEMON_EVAL_DATA to the shared data directory)",
            dir.display()
        );
        return None;
    }
    let dev_texts = |units: Vec<Unit>| -> Vec<String> {
        let set: BTreeSet<String> =
            units.into_iter().filter(|u| u.split == Split::Dev).flat_map(|u| u.docs).map(|d| d.text).collect();
        set.into_iter().collect()
    };
    let mut out = Vec::new();
    if let Ok(u) = load_locomo(&dir.join("locomo10.json")) {
        out.push(("LoCoMo dev turns", dev_texts(u)));
    }
    let lme = dir.join("longmemeval_s_498.jsonl.gz");
    if let Ok(u) = load_longmemeval(&lme, Some(&dir.join("longmemeval_s_dev100_ids.txt"))) {
        out.push(("LongMemEval_S dev user turns", dev_texts(u)));
    }
    if let Ok(u) = load_madial(&dir.join("madial-bench-zh")) {
        out.push(("MADial-Bench zh dev memories", dev_texts(u)));
    }
    Some(out)
}

fn main() {
    let seed =
        std::env::args().skip_while(|a| a != "--seed").nth(1).and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_SEED);
    let mut rng = SmallRng::seed_from_u64(seed);

    // The library's metadata loads on first use: time that once.
    let t = Instant::now();
    let new = Redactor::new();
    black_box(new.find("call 020 7946 0958"));
    let cold_ms = t.elapsed().as_secs_f64() * 1e3;
    let old = baseline::Redactor::new();

    let phones = set::phones(&mut rng);
    let others = set::not_phones(&mut rng);
    let items: Vec<&Item> = phones.iter().chain(&others).collect();
    let count = |l: Label| items.iter().filter(|i| i.label == l).count();
    println!(
        "mnemon phone redaction bench, seed {seed:#x}: {} personal phone writings, {} service-number writings, {} non-phone numbers",
        count(Label::Personal),
        count(Label::Service),
        count(Label::NotPhone)
    );
    println!("first redaction in the process (library metadata load included): {cold_ms:.1} ms\n");

    let mut overall = [Tally::default(); 2];
    let mut by_region_form: BTreeMap<(String, String), [Tally; 2]> = BTreeMap::new();
    let mut by_category: BTreeMap<String, [Tally; 2]> = BTreeMap::new();
    let mut service = [Tally::default(); 2];
    let mut service_by_region: BTreeMap<(String, String), [Tally; 2]> = BTreeMap::new();
    let mut misses: Vec<String> = Vec::new();
    let mut false_pos: Vec<String> = Vec::new();
    for item in &items {
        let said = [says_phone(&old, item), says_phone(&new, item)];
        for k in 0..2 {
            match item.label {
                Label::Service => service[k].add(item, said[k]),
                _ => overall[k].add(item, said[k]),
            }
            match item.label {
                Label::Personal => {
                    let form = item.form.split('-').next().unwrap_or("").to_owned();
                    by_region_form.entry((item.region.clone(), form)).or_default()[k].add(item, said[k]);
                }
                Label::NotPhone => by_category.entry(item.form.clone()).or_default()[k].add(item, said[k]),
                Label::Service => {
                    let form = item.form.split('-').next().unwrap_or("").to_owned();
                    service_by_region.entry((item.region.clone(), form)).or_default()[k].add(item, said[k]);
                }
            }
        }
        if item.label == Label::Personal && !said[1] {
            misses.push(format!("{} {}: {:?}", item.region, item.form, &item.text[item.start..item.end]));
        }
        if item.label == Label::NotPhone && said[1] {
            false_pos.push(format!("{}: {:?}", item.form, item.text));
        }
    }

    println!("| redactor | precision | recall | TP | FN | FP | TN |");
    println!("|---|---|---|---|---|---|---|");
    for (name, t) in [("pattern-only (before)", overall[0]), ("libphonenumber-confirmed", overall[1])] {
        println!("| {name} | {:.3} | {:.3} | {} | {} | {} | {} |", t.precision(), t.recall(), t.tp, t.fn_, t.fp, t.tn);
    }
    println!(
        "\nservice numbers (toll-free, premium, shared-cost, UAN) left in clear: before {}/{}, after {}/{}",
        service[0].tn,
        service[0].tn + service[0].fp,
        service[1].tn,
        service[1].tn + service[1].fp
    );

    println!("\n| region | writing | service numbers | left in clear before | after |");
    println!("|---|---|---|---|---|");
    for ((region, form), t) in &service_by_region {
        println!("| {region} | {form} | {} | {} | {} |", t[0].tn + t[0].fp, t[0].tn, t[1].tn);
    }
    println!("\nrecall per region and writing (national = trunk-prefixed or local form, intl = +CC or 00CC):\n");
    println!("| region | writing | n | recall before | recall after |");
    println!("|---|---|---|---|---|");
    for ((region, form), t) in &by_region_form {
        let n = t[0].tp + t[0].fn_;
        println!("| {region} | {form} | {n} | {:.3} | {:.3} |", t[0].recall(), t[1].recall());
    }

    println!("\nnon-phone numbers taken for phones, per category:\n");
    println!("| category | n | false positives before | after |");
    println!("|---|---|---|---|");
    for (cat, t) in &by_category {
        println!("| {cat} | {} | {} | {} |", t[0].fp + t[0].tn, t[0].fp, t[1].fp);
    }

    if !misses.is_empty() {
        println!("\nphones missed ({}):", misses.len());
        for m in misses.iter().take(40) {
            println!("  {m}");
        }
    }
    if !false_pos.is_empty() {
        println!("\nnon-phone numbers taken for phones ({}):", false_pos.len());
        for m in false_pos.iter().take(40) {
            println!("  {m}");
        }
    }

    // Per-text cost, same run, same texts.
    let texts_of = |keep: &dyn Fn(&Item) -> bool| -> Vec<String> {
        items.iter().filter(|i| keep(i)).map(|i| i.text.clone()).collect()
    };
    let labelled = texts_of(&|_| true);
    let national = texts_of(&|i| i.label != Label::NotPhone && i.form.starts_with("national"));
    let intl = texts_of(&|i| i.label != Label::NotPhone && i.form.starts_with("intl"));
    let non_phones = texts_of(&|i| i.label == Label::NotPhone);
    let plain = prose(&mut rng, 2000);
    println!("\nper-text cost (thread CPU time, best of 7 alternating passes, warm):\n");
    println!("| texts | n | before µs | after µs | after / before |");
    println!("|---|---|---|---|---|");
    for (name, texts) in [
        ("labelled set (every text holds a number)", &labelled),
        ("  phone written nationally", &national),
        ("  phone written internationally", &intl),
        ("  non-phone number", &non_phones),
        ("memory prose (dates and times only)", &plain),
    ] {
        let (b, a) = per_text_ns(&old, &new, texts, 7);
        println!("| {name} | {} | {:.2} | {:.2} | {:.2} |", texts.len(), b / 1e3, a / 1e3, a / b);
    }

    // Real conversations: every phone span found is listed for audit (these
    // turns hold few real phone numbers, so most spans would be mistakes).
    let Some(real) = real_dev_texts() else { return };
    println!("\nreal dev-split texts: texts with a phone span, spans, and per-text cost:\n");
    println!("| texts | n | with a phone before | after | before µs | after µs | after / before |");
    println!("|---|---|---|---|---|---|---|");
    let mut found: Vec<String> = Vec::new();
    for (name, texts) in &real {
        let with = |r: &dyn PhoneFinder| texts.iter().filter(|t| !r.phones(t).is_empty()).count();
        let (b, a) = per_text_ns(&old, &new, texts, 3);
        println!(
            "| {name} | {} | {} | {} | {:.2} | {:.2} | {:.2} |",
            texts.len(),
            with(&old),
            with(&new),
            b / 1e3,
            a / 1e3,
            a / b
        );
        for t in texts {
            let (b, a) = (old.phones(t), new.phones(t));
            for (tag, spans, other) in [("after", &a, &b), ("before only", &b, &a)] {
                for &(s, e) in spans {
                    if tag != "after" && other.contains(&(s, e)) {
                        continue;
                    }
                    let from = t[..s].char_indices().rev().nth(24).map_or(0, |(i, _)| i);
                    let to = t[e..].char_indices().nth(24).map_or(t.len(), |(i, _)| e + i);
                    let context = format!("…{}[{}]{}…", &t[from..s], &t[s..e], &t[e..to]).replace(['\n', '\r'], " ");
                    found.push(format!("{tag}, {name}: {context}"));
                }
            }
        }
    }
    println!(
        "\nphone spans in real dev texts, after, and those only the pattern-only redactor took ({}):",
        found.len()
    );
    for f in &found {
        println!("  {f}");
    }
}
