//! Caller-side checks of a large batch on every core.
//!
//! The checks a write runs before it reaches the writer thread (input
//! rules, personal-data redaction, the injection detector) cost about
//! 20 µs per memory and are independent from item to item; for a batch of
//! 1,000 they ran on the caller's thread alone while the other cores
//! waited. [`par_map`] spreads them over scoped threads in contiguous
//! chunks and keeps the items' order, so the first error of a batch is
//! the one a sequential check finds first.

use std::num::NonZeroUsize;
use std::sync::OnceLock;

/// Fewest items a thread is given: below this, starting a thread (tens of
/// µs) costs more than it saves.
const MIN_PER_THREAD: usize = 64;

/// The cores this process may use, read once.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}

/// `items` mapped by `f`, in order. Batches of fewer than twice
/// [`MIN_PER_THREAD`] items, and machines with one core, map on the
/// calling thread; larger ones are cut into one contiguous chunk per core
/// (at most), the calling thread taking the first. A thread the system
/// refuses leaves its chunk to the calling thread; a panic in `f` is
/// raised again on the calling thread.
pub(crate) fn par_map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = cores().min(items.len() / MIN_PER_THREAD).max(1);
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut rest = items.into_iter();
    loop {
        let chunk: Vec<T> = rest.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    let f = &f;
    std::thread::scope(|s| {
        let mut chunks = chunks.into_iter();
        let first = chunks.next().unwrap_or_default();
        let mut spawned = Vec::new();
        let mut inline = Vec::new();
        for chunk in chunks {
            // The chunk moves into the thread only if it starts.
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<T>>(1);
            match std::thread::Builder::new().name("mnemon-check".into()).spawn_scoped(s, move || {
                rx.recv().map(|c| c.into_iter().map(f).collect::<Vec<R>>()).unwrap_or_default()
            }) {
                Ok(h) => {
                    // The thread is alive and waiting on this channel.
                    let _ = tx.send(chunk);
                    spawned.push(Some(h));
                }
                Err(_) => {
                    spawned.push(None);
                    inline.push(chunk);
                }
            }
        }
        let mut out: Vec<R> = first.into_iter().map(f).collect();
        let mut inline = inline.into_iter();
        for h in spawned {
            match h {
                Some(h) => match h.join() {
                    Ok(part) => out.extend(part),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                None => out.extend(inline.next().unwrap_or_default().into_iter().map(f)),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::par_map;

    #[test]
    fn keeps_order_and_every_item() {
        for n in [0, 1, 63, 64, 127, 128, 129, 1000, 4097] {
            let items: Vec<usize> = (0..n).collect();
            let out = par_map(items, |i| i * 3);
            assert_eq!(out, (0..n).map(|i| i * 3).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn the_first_error_in_order_wins() {
        let items: Vec<usize> = (0..1000).collect();
        let out: Result<Vec<usize>, usize> =
            par_map(items, |i| if i == 700 || i == 900 || i == 300 { Err(i) } else { Ok(i) }).into_iter().collect();
        assert_eq!(out, Err(300));
    }

    #[test]
    #[should_panic(expected = "item 999")]
    fn a_panic_reaches_the_caller() {
        let items: Vec<usize> = (0..1000).collect();
        par_map(items, |i| if i == 999 { panic!("item {i}") } else { i });
    }
}
