//! Rendering recalled memories into a block for the prompt.

use crate::recall::Hit;

/// Estimates the tokens a text costs in a typical LLM tokenizer: one token
/// per CJK character (Han, kana, Hangul) plus one per four other
/// characters, rounded up. BPE vocabularies of current models average about
/// four characters per English token and one to one and a half tokens per
/// Chinese character, so this errs slightly high for Chinese.
pub fn estimate_tokens(text: &str) -> usize {
    let mut cjk = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if crate::embed::is_cjk(c) || ('\u{AC00}'..='\u{D7AF}').contains(&c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

const HEADER: &str = "<memories>\nRelevant memories from earlier conversations, most relevant first. \
If the current conversation disagrees with a memory, the current conversation wins.\n";
const FOOTER: &str = "</memories>";

/// Renders hits (highest score first, as recall returns them) into a
/// delimited block: one line per memory with its date (`YYYY-MM-DD`, the
/// event time if known, else the write time), kind and source, cut so the
/// whole block stays within `token_budget` tokens as counted by
/// [`estimate_tokens`]. Returns the block and how many hits it holds; with a
/// budget too small for the frame, returns an empty string and 0.
pub fn render_context(hits: &[Hit], token_budget: usize) -> (String, usize) {
    let frame = estimate_tokens(HEADER) + estimate_tokens(FOOTER);
    if token_budget < frame {
        return (String::new(), 0);
    }
    let mut used = frame;
    let mut out = String::from(HEADER);
    let mut n = 0;
    for h in hits {
        let m = &h.memory;
        let date = m.effective_time().format("%Y-%m-%d");
        let source = match (&m.source_ref, &m.session) {
            (Some(r), _) => format!("; source {r}"),
            (None, Some(s)) => format!("; session {s}"),
            (None, None) => String::new(),
        };
        let content = m.content.replace('\n', " ");
        let line = format!("- [{date}] ({}{source}) {content}\n", m.kind);
        let cost = estimate_tokens(&line);
        if used + cost > token_budget {
            break;
        }
        used += cost;
        out.push_str(&line);
        n += 1;
    }
    out.push_str(FOOTER);
    (out, n)
}
