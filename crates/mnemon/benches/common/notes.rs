//! The memories and queries of the recall benches (`recall_cost`,
//! `million`): short sentences over a 40-word vocabulary, so that a query's
//! two frequent words ("the", "near") are in every memory and its three
//! others each in about one memory in ten: a worst case for BM25.

const WORDS: [&str; 40] = [
    "harbor", "violin", "pepper", "glacier", "lantern", "meadow", "copper", "falcon", "orchard", "thunder", "velvet",
    "canyon", "saffron", "marble", "cobalt", "willow", "ember", "quartz", "juniper", "tundra", "basil", "onyx",
    "mango", "cedar", "lisbon", "kyoto", "ticket", "dentist", "sister", "garden", "invoice", "recipe", "piano",
    "river", "bakery", "tennis", "laptop", "museum", "coffee", "wedding",
];

/// Word `k` of memory `i`.
fn word(i: usize, k: usize) -> &'static str {
    let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(k as u32 * 7) ^ k as u64;
    WORDS[(x % WORDS.len() as u64) as usize]
}

/// Memory `i`: about 60–75 bytes, with its own number.
pub fn text(i: usize) -> String {
    format!("On day {} the {} near the {} needed the {} and a {}", i, word(i, 1), word(i, 2), word(i, 3), word(i, 4))
}

/// A query close to memory `i`: two of its words replaced.
pub fn query(i: usize) -> String {
    format!("the {} near the {} needed a {}", word(i, 1), word(i + 7, 2), word(i, 4))
}
