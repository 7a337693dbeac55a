//! The text search reads from a memory's content: a JSON object or array
//! (what agent frameworks such as LangGraph's store write) is read by its
//! values, not its braces and key names.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The text that search data is derived from for `content`: when `content`
/// (without surrounding whitespace) is a JSON object or array, its leaf
/// values in document order, strings as they are and numbers and booleans
/// as JSON writes them (keys, `null` and empty strings dropped), joined
/// with `". "`; otherwise, or when no leaf holds text, `content` itself.
///
/// The embedder, the BM25 index, the script set of the cross-script offset
/// and near-duplicate detection all read this text; the stored content,
/// and every rendering of it, stay verbatim.
///
/// ```text
/// {"likes": "oolong tea", "since": 2019}  ->  oolong tea. 2019
/// {not json} and more                     ->  {not json} and more
/// ```
pub fn searchable(content: &str) -> Cow<'_, str> {
    let t = content.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return Cow::Borrowed(content);
    }
    let mut leaves = Vec::new();
    let mut de = serde_json::Deserializer::from_str(t);
    let parsed = Leaves(&mut leaves).deserialize(&mut de).and_then(|()| de.end());
    if parsed.is_err() || leaves.is_empty() {
        return Cow::Borrowed(content);
    }
    Cow::Owned(leaves.join(". "))
}

/// Collects the leaf values of one JSON value, in document order.
struct Leaves<'a>(&'a mut Vec<String>);

impl Leaves<'_> {
    fn push(self, leaf: String) {
        if !leaf.trim().is_empty() {
            self.0.push(leaf);
        }
    }
}

impl<'de> DeserializeSeed<'de> for Leaves<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Leaves<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.push(v.to_string());
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.push(v.to_string());
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.push(v.to_string());
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.push(v.to_string());
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.push(v.to_string());
        Ok(())
    }

    fn visit_string<E>(self, v: String) -> Result<(), E> {
        self.push(v);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        while seq.next_element_seed(Leaves(&mut *out))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(Leaves(&mut *out))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::searchable;

    #[test]
    fn a_nested_object_is_read_by_its_values_in_document_order() {
        let s = searchable(
            r#" {"zeta": "oolong tea", "profile": {"city": "Hangzhou", "age": 31, "vip": true, "note": null}} "#,
        );
        assert_eq!(s, "oolong tea. Hangzhou. 31. true");
        assert_eq!(searchable(r#"{"text": "我住在杭州西湖边"}"#), "我住在杭州西湖边");
        assert_eq!(searchable(r#"{"ratio": 0.5, "big": -7, "empty": "", "list": []}"#), "0.5. -7");
    }

    #[test]
    fn an_array_is_read_by_its_values() {
        assert_eq!(searchable(r#"["tea", {"k": ["coffee", 2]}, [[false]]]"#), "tea. coffee. 2. false");
    }

    #[test]
    fn other_text_is_left_as_it_is() {
        for text in [
            "Likes oolong tea",
            "{braces} are how templates mark a field",
            "[1] is a footnote",
            r#"{"likes": "oolong tea""#,
            r#"{"likes": "tea"} and more"#,
            r#"{'likes': 'tea'}"#,
            "\"just a string\"",
            "42",
            "{}",
            r#"{"a": null, "b": ""}"#,
            "",
        ] {
            assert!(matches!(searchable(text), Cow::Borrowed(t) if t == text), "{text:?}");
        }
    }
}
