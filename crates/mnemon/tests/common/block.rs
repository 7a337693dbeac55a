//! The grammar of the prompt block (see the context renderer's module docs
//! in `mnemon::recall`), as a reader that knows it parses it back: shared by
//! `tests/prompt_block.rs` and the `render` fuzz target.
#![allow(dead_code)]

use mnemon::{
    recall::BLOCK_CLOSE, recall::BLOCK_OPEN, recall::BLOCK_PREAMBLE, recall::SECTION_PROFILE, recall::SECTION_RECENT,
    recall::SECTION_RELEVANT, recall::TRUNCATED_FIELD,
};
use unicode_security::skeleton;

/// One entry as parsed back from a line.
#[derive(Debug)]
pub struct Parsed {
    /// `META` fields, entities kept (see [`decode_entities`]), without the
    /// `truncated` flag: the kind first, then `key K`, `source R` or
    /// `session S`.
    pub meta: Vec<String>,
    /// `CONTENT`, without the ellipsis of a cut entry.
    pub content: String,
    /// The entry was cut to fit the budget.
    pub truncated: bool,
}

/// Characters that end a line for some reader: every control character but
/// LF (which the block uses), the Unicode line and paragraph separators, and
/// what Python's `str.splitlines` splits on.
pub fn breaks_line(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{1C}'..='\u{1E}')
}

/// The entities the renderer writes, with the character each stands for:
/// `&amp;` `&lt;` `&gt;` in every field, `&#59;` `&#40;` `&#41;` `&#32;` in `META`.
pub const ENTITIES: [(&str, char); 7] =
    [("&amp;", '&'), ("&lt;", '<'), ("&gt;", '>'), ("&#59;", ';'), ("&#40;", '('), ("&#41;", ')'), ("&#32;", ' ')];

/// The length of the entity `s` starts with, if it starts with one of
/// [`ENTITIES`].
fn entity_len(s: &str) -> Option<usize> {
    ENTITIES.iter().find(|(e, _)| s.starts_with(e)).map(|(e, _)| e.len())
}

/// Splits a `META` part on the `; ` that close no entity, keeping each
/// field's entities (decode them with [`decode_entities`]); `None` on an
/// `&` that opens none of [`ENTITIES`], a separator not followed by a
/// space, or a parenthesis.
pub fn split_meta(meta: &str) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut rest = meta;
    while let Some(c) = rest.chars().next() {
        match c {
            '&' => {
                let n = entity_len(rest)?;
                out.last_mut()?.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
            ';' => {
                rest = rest[1..].strip_prefix(' ')?;
                out.push(String::new());
                continue;
            }
            '(' | ')' => return None,
            c => out.last_mut()?.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// Parses `- [YYYY-MM-DD] (META) CONTENT`.
pub fn parse_entry(line: &str) -> Result<Parsed, String> {
    let rest = line.strip_prefix("- [").ok_or_else(|| format!("not an entry: {line:?}"))?;
    let date = rest.get(..10).ok_or("short date")?;
    let ok_date = date.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    if !ok_date {
        return Err(format!("bad date in {line:?}"));
    }
    let rest = rest[10..].strip_prefix("] (").ok_or_else(|| format!("no meta in {line:?}"))?;
    // The meta part ends at the first ')': inside `META` every stored one
    // is the entity `&#41;`.
    let end = rest.find(')').ok_or_else(|| format!("unclosed meta in {line:?}"))?;
    let mut meta = split_meta(&rest[..end]).ok_or_else(|| format!("bad meta in {line:?}"))?;
    let truncated = meta.len() > 1 && meta.last().is_some_and(|m| m == TRUNCATED_FIELD);
    if truncated {
        meta.pop();
    }
    let content = rest[end + 1..].strip_prefix(' ').ok_or_else(|| format!("no content gap in {line:?}"))?;
    let content = if truncated {
        content.strip_suffix(" …").ok_or_else(|| format!("cut entry without its ellipsis: {line:?}"))?
    } else {
        content
    };
    Ok(Parsed { meta, content: content.to_string(), truncated })
}

/// A block's entries by part.
#[derive(Debug, Default)]
pub struct Sections {
    /// Entries under the profile section line.
    pub profile: Vec<Parsed>,
    /// Entries under the relevant section line.
    pub relevant: Vec<Parsed>,
    /// Entries under the recent-turns section line.
    pub recent: Vec<Parsed>,
}

/// Parses a whole block into its parts: between the frame, every line is
/// either one of the three section lines (each at most once, in the order
/// profile, relevant, recent, each followed by at least one entry) or an
/// entry (`- ` …) of the part its section line opened.
pub fn parse_sections(block: &str) -> Result<Sections, String> {
    if let Some(c) = block.chars().find(|&c| breaks_line(c)) {
        return Err(format!("line-breaking character U+{:04X} in the block", u32::from(c)));
    }
    let lines: Vec<&str> = block.split('\n').collect();
    if lines.len() < 3 || lines[0] != BLOCK_OPEN || lines[1] != BLOCK_PREAMBLE {
        return Err(format!("bad header: {block:?}"));
    }
    if lines[lines.len() - 1] != BLOCK_CLOSE {
        return Err(format!("block does not end with its footer: {block:?}"));
    }
    let order = [SECTION_PROFILE, SECTION_RELEVANT, SECTION_RECENT];
    let mut out = Sections::default();
    // Index into `order` of the open section, and how many entries it has.
    let mut open: Option<(usize, usize)> = None;
    for l in &lines[2..lines.len() - 1] {
        if l.starts_with("- ") {
            let Some((k, n)) = open.as_mut() else {
                return Err(format!("entry before any section line: {l:?}"));
            };
            *n += 1;
            let e = parse_entry(l)?;
            match *k {
                0 => out.profile.push(e),
                1 => out.relevant.push(e),
                _ => out.recent.push(e),
            }
            continue;
        }
        let k = order.iter().position(|s| s == l).ok_or_else(|| format!("line is neither entry nor section: {l:?}"))?;
        match open {
            Some((_, 0)) => return Err(format!("empty section before {l:?}")),
            Some((prev, _)) if prev >= k => return Err(format!("section {l:?} out of order or repeated")),
            _ => {}
        }
        open = Some((k, 0));
    }
    if let Some((_, 0)) = open {
        return Err("empty last section".into());
    }
    Ok(out)
}

/// Parses a whole block (see [`parse_sections`]) and returns every entry,
/// parts in block order.
pub fn parse_block(block: &str) -> Result<Vec<Parsed>, String> {
    let s = parse_sections(block)?;
    Ok(s.profile.into_iter().chain(s.relevant).chain(s.recent).collect())
}

/// True when `c` is or looks like an angle bracket: it is a single angle
/// bracket of another block, or its TR39 skeleton holds `<` or `>`, or
/// (for a character neither ASCII nor CJK, which the renderer keeps as
/// they are) one of those brackets (`ㄑ`'s skeleton is `❬`; kana such as
/// `く` stay letters).
pub fn angle_like(c: char) -> bool {
    let plain = c.is_ascii() || mnemon::text::is_cjk(c);
    other_bracket(c)
        || skeleton(c.encode_utf8(&mut [0; 4])).any(|s| s == '<' || s == '>' || (!plain && other_bracket(s)))
}

/// A single angle bracket of a block other than ASCII.
fn other_bracket(c: char) -> bool {
    matches!(
        c,
        '\u{2329}'
            | '\u{232A}'
            | '\u{27E8}'
            | '\u{27E9}'
            | '\u{276C}'
            | '\u{276D}'
            | '\u{2770}'
            | '\u{2771}'
            | '\u{3008}'
            | '\u{3009}'
            | '\u{29FC}'
            | '\u{29FD}'
            | '\u{2991}'
            | '\u{2992}'
    )
}

/// True for a default-ignorable (invisible) character: TR39's skeleton
/// drops exactly those.
pub fn invisible(c: char) -> bool {
    skeleton(c.encode_utf8(&mut [0; 4])).next().is_none()
}

/// A rendered field with its entities ([`ENTITIES`]) decoded in one pass,
/// or `None` when an `&` starts none of them: the renderer writes every `&`
/// of stored text as `&amp;`, so a bare one means a stored entity passed
/// through unescaped, or an escape's output escaped again.
pub fn decode_entities(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let (e, c) = ENTITIES.iter().find(|(e, _)| tail.starts_with(e))?;
        out.push(*c);
        rest = &tail[e.len()..];
    }
    out.push_str(rest);
    Some(out)
}

/// True when `c` is neither ASCII nor CJK (which the renderer keeps as
/// they are) and its TR39 skeleton holds one of `targets` (`；` and `;`
/// (U+037E) look like `;`, `＆` like `&`).
pub fn looks_like(c: char, targets: &[char]) -> bool {
    !c.is_ascii() && !mnemon::text::is_cjk(c) && skeleton(c.encode_utf8(&mut [0; 4])).any(|s| targets.contains(&s))
}

/// Letters and digits that must survive rendering: alphanumeric, visible,
/// not an angle-bracket look-alike. Give a rendered field decoded
/// ([`decode_entities`]), a stored one as it is.
pub fn signature(s: &str) -> String {
    // The renderer writes a character that looks like an angle bracket, an
    // ampersand or a `META` separator as its TR39 skeleton with those
    // escaped (`ᔌ` → `ᔋ&lt;`, `⒜` → `&#40;a&#41;` in `META`): such a
    // character counts as the letters of its skeleton.
    s.chars()
        .flat_map(|c| {
            let parts: Vec<char> = if angle_like(c) || looks_like(c, &['&', ';', '(', ')']) {
                skeleton(c.encode_utf8(&mut [0; 4])).collect()
            } else {
                vec![c]
            };
            parts.into_iter()
        })
        .filter(|&c| c.is_alphanumeric() && !angle_like(c) && !invisible(c))
        .collect()
}

/// Invisible characters the renderer keeps: ZWNJ, ZWJ, variation selectors.
pub fn kept_invisible(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}' | '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}
