//! Which units a run with a unit limit evaluates.

use std::collections::HashSet;

use super::{SplitFilter, Unit};

/// The units [`super::run`] evaluates: those passing `split`, and with
/// `limit = Some(n)` at most `n` of them, spread over the data set and
/// covering its question categories when `n` allows. Units keep their data
/// order.
///
/// The rule, deterministic: let `m` be the number of units passing the
/// split filter. When `n ≥ m` all of them are taken. Otherwise the units at
/// positions ⌊i·m/n⌋ for i = 0..n (every (m/n)-th unit, the first one
/// included) are chosen. Then every category asked in the filtered set
/// ([`super::Query::category`] of a non-abstention query: LoCoMo
/// categories, LongMemEval question types) that no chosen unit asks is
/// brought in, one at a time in order of first appearance: a chosen unit
/// whose categories the other chosen units all ask is swapped for an
/// unchosen unit that asks the missing one, the pair nearest in position
/// (ties to the earlier ones). No category already asked is lost by a
/// swap, so with `n` at least the number of categories every category is
/// asked; with fewer, the first ones that fit are.
pub fn select_units<'a>(
    units: impl IntoIterator<Item = &'a Unit>,
    split: SplitFilter,
    limit: Option<usize>,
) -> Vec<&'a Unit> {
    let pool: Vec<&Unit> = units.into_iter().filter(|u| split.admits(u.split)).collect();
    let n = match limit {
        Some(n) if n < pool.len() => n,
        _ => return pool,
    };
    let m = pool.len();
    let mut chosen: Vec<bool> = vec![false; m];
    for i in 0..n {
        chosen[i * m / n] = true;
    }
    let cats: Vec<HashSet<&str>> = pool.iter().map(|u| categories(u)).collect();
    let mut order: Vec<&str> = Vec::new();
    for c in pool.iter().flat_map(|u| u.queries.iter()).filter(|q| !q.abstention).filter_map(|q| q.category.as_deref())
    {
        if !order.contains(&c) {
            order.push(c);
        }
    }
    for cat in order {
        if (0..m).any(|i| chosen[i] && cats[i].contains(cat)) {
            continue;
        }
        // A chosen unit is redundant when every category it asks is asked
        // by another chosen unit as well.
        let redundant = |v: usize| cats[v].iter().all(|c| (0..m).any(|j| j != v && chosen[j] && cats[j].contains(c)));
        let victims: Vec<usize> = (0..m).filter(|&v| chosen[v] && redundant(v)).collect();
        let carriers: Vec<usize> = (0..m).filter(|&c| !chosen[c] && cats[c].contains(cat)).collect();
        let best = victims.iter().flat_map(|&v| carriers.iter().map(move |&c| (v.abs_diff(c), v, c))).min();
        if let Some((_, v, c)) = best {
            chosen[v] = false;
            chosen[c] = true;
        }
    }
    pool.into_iter().zip(chosen).filter_map(|(u, keep)| keep.then_some(u)).collect()
}

/// The categories a unit's non-abstention queries ask.
fn categories(u: &Unit) -> HashSet<&str> {
    u.queries.iter().filter(|q| !q.abstention).filter_map(|q| q.category.as_deref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Query, Split};

    fn unit(i: usize, split: Split, cats: &[&str]) -> Unit {
        let queries = cats
            .iter()
            .enumerate()
            .map(|(j, c)| Query {
                id: format!("u{i}/q{j}"),
                text: "q".into(),
                gold: Vec::new(),
                gold_sessions: Vec::new(),
                category: Some(c.to_string()),
                split,
                time: None,
                abstention: false,
                gold_dropped: Vec::new(),
                gold_repaired: false,
            })
            .collect();
        Unit { name: format!("u{i}"), split, docs: Vec::new(), queries }
    }

    fn names(us: &[&Unit]) -> Vec<String> {
        us.iter().map(|u| u.name.clone()).collect()
    }

    #[test]
    fn sample_spreads_evenly_and_keeps_order() {
        let units: Vec<Unit> = (0..10).map(|i| unit(i, Split::Dev, &["a"])).collect();
        assert_eq!(names(&select_units(&units, SplitFilter::All, Some(3))), ["u0", "u3", "u6"]);
        assert_eq!(names(&select_units(&units, SplitFilter::All, Some(5))), ["u0", "u2", "u4", "u6", "u8"]);
        assert_eq!(select_units(&units, SplitFilter::All, Some(10)).len(), 10);
        assert_eq!(select_units(&units, SplitFilter::All, Some(99)).len(), 10);
        assert_eq!(select_units(&units, SplitFilter::All, None).len(), 10);
        assert!(select_units(&units, SplitFilter::All, Some(0)).is_empty());
        assert!(select_units(&units, SplitFilter::Test, Some(3)).is_empty());
    }

    #[test]
    fn sample_covers_every_category_when_the_limit_allows() {
        // One question per unit, as LongMemEval: types a (6 units), b, c.
        let cats = ["a", "a", "a", "b", "a", "a", "a", "c", "a", "a"];
        let units: Vec<Unit> = cats.iter().enumerate().map(|(i, c)| unit(i, Split::Dev, &[c])).collect();
        let got = select_units(&units, SplitFilter::All, Some(3));
        let asked: HashSet<&str> = got.iter().flat_map(|u| categories(u)).collect();
        assert_eq!(asked, HashSet::from(["a", "b", "c"]));
        // Evenly: u0 u3 u6; u3 already asks b; c comes in for u6 (nearest).
        assert_eq!(names(&got), ["u0", "u3", "u7"]);
        // Too few units for three categories: the first ones that fit.
        let got = select_units(&units, SplitFilter::All, Some(2));
        assert_eq!(names(&got), ["u0", "u3"]);
    }

    #[test]
    fn sample_respects_the_split() {
        let mut units: Vec<Unit> = Vec::new();
        for i in 0..8 {
            let split = if i % 2 == 0 { Split::Dev } else { Split::Test };
            let cat = if i == 7 { "rare" } else { "x" };
            units.push(unit(i, split, &[cat]));
        }
        let got = select_units(&units, SplitFilter::Dev, Some(2));
        assert_eq!(names(&got), ["u0", "u4"]);
        let got = select_units(&units, SplitFilter::Test, Some(2));
        assert_eq!(names(&got), ["u1", "u7"]);
    }
}
