//! Decoding request arguments with the path of the field at fault.

use std::collections::{BTreeMap, BTreeSet};

use mnemon::plain_json_words;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ApiError;

/// Decodes `args` as `T`; an error names the JSON path of the bad field
/// and says what the field takes in plain words
/// (`top_k must be a whole number between 1 and 1000, got "ten"`).
///
/// serde loses the path inside flattened parts of a request (they are
/// decoded from a buffer); such an error is located by decoding the
/// required fields with one optional field at a time (`op` gives the
/// request's required fields and the bounds its schema declares), so it
/// still names its field.
pub(crate) fn decode<T: DeserializeOwned>(args: Value, op: &OpFields) -> Result<T, ApiError> {
    let (path, msg) = match try_decode::<T>(&args) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let required = &op.required;
    if path.is_none() && !msg.starts_with("missing field") {
        if let Value::Object(map) = &args {
            let base: serde_json::Map<String, Value> =
                map.iter().filter(|(k, _)| required.contains(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
            for (k, v) in map.iter().filter(|(k, _)| !required.contains(*k)) {
                let mut one = base.clone();
                one.insert(k.clone(), v.clone());
                if let Err((p, m)) = try_decode::<T>(&Value::Object(one)) {
                    let field = p.unwrap_or_else(|| k.clone());
                    return Err(ApiError::invalid(field.clone(), reword(&m, op.bounds.get(&field))));
                }
            }
        }
    }
    // "missing field `x`" is reported at the parent; name the field.
    let field = match (msg.strip_prefix("missing field `").and_then(|r| r.split('`').next()), path) {
        (Some(missing), None) => missing.to_string(),
        (Some(missing), Some(p)) => format!("{p}.{missing}"),
        (None, Some(p)) => p,
        (None, None) => "arguments".to_string(),
    };
    let reason = reword(&msg, op.bounds.get(&field));
    Err(ApiError::invalid(field, reason))
}

/// What an operation's request admits, requires and bounds, read once
/// from its schema.
pub(crate) struct OpFields {
    /// Every field it admits (flattened parts included).
    pub(crate) admitted: BTreeSet<String>,
    /// The fields it requires.
    pub(crate) required: BTreeSet<String>,
    /// The bounds its schema declares on numeric fields.
    pub(crate) bounds: BTreeMap<String, Bounds>,
}

impl OpFields {
    /// Reads them from a request schema.
    pub(crate) fn of(schema: &Value) -> OpFields {
        let mut bounds = BTreeMap::new();
        collect_bounds(schema, &mut bounds);
        OpFields { admitted: properties(schema), required: required(schema), bounds }
    }
}

/// The range a numeric field admits, as its request schema declares it
/// (`minimum`, `maximum`), and whether it is a whole number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// True for an integer field.
    pub whole: bool,
    /// Smallest value admitted.
    pub min: Option<f64>,
    /// Largest value admitted.
    pub max: Option<f64>,
}

impl Bounds {
    /// What the field takes, in words: `a whole number between 1 and 1000`,
    /// `a number between -1 and 1`, `a whole number, 1 or more`.
    pub fn words(&self) -> String {
        let what = if self.whole { "a whole number" } else { "a number" };
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("{what} between {lo} and {hi}"),
            (Some(lo), None) => format!("{what}, {lo} or more"),
            (None, Some(hi)) => format!("{what}, at most {hi}"),
            (None, None) => what.to_string(),
        }
    }
}

fn collect_bounds(schema: &Value, out: &mut BTreeMap<String, Bounds>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            let num = |k: &str| p.get(k).and_then(Value::as_f64);
            let types: Vec<&str> = match p.get("type") {
                Some(Value::String(t)) => vec![t.as_str()],
                Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let whole = types.contains(&"integer");
            if !(whole || types.contains(&"number")) {
                continue;
            }
            // An unsigned type's own `minimum: 0` says nothing a whole
            // number "(0 or more)" does not; only a declared range counts.
            let min = num("minimum").filter(|m| !(whole && *m == 0.0 && num("maximum").is_none()));
            let max = num("maximum");
            if min.is_some() || max.is_some() {
                out.insert(name.clone(), Bounds { whole, min, max });
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(subs) = schema.get(key).and_then(Value::as_array) {
            for s in subs {
                collect_bounds(s, out);
            }
        }
    }
}

/// A decoding message (serde's, in [`plain_json_words`]) as the reason of
/// a field error: what the field must be, then what it got
/// (`must be a whole number between 1 and 1000, got "ten"`), with the
/// field's declared `bounds` instead of the bare type, and without the
/// parser's positions and words (`invalid type:`, `at line 1 column 9`,
/// chrono's `premature end of input`).
pub(crate) fn reword(msg: &str, bounds: Option<&Bounds>) -> String {
    let msg = match msg.find(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    };
    if msg.starts_with("missing field `") {
        return "is required".to_string();
    }
    let expected = |exp: &str| match bounds {
        Some(b) if exp.starts_with("a whole number") || exp == "a number" => b.words(),
        _ => exp.to_string(),
    };
    // chrono's words for a time it cannot read, followed by the form.
    if let Some((_, exp)) = msg.split_once(": expected ") {
        if exp.starts_with("an RFC 3339 time") {
            return format!("must be {exp}");
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        if let Some((got, exp)) = rest.split_once("`, expected ") {
            let exp = exp.strip_prefix("one of ").unwrap_or(exp).replace('`', "");
            return format!("must be one of {exp}, got {got:?}");
        }
    }
    for head in ["invalid type: ", "invalid value: "] {
        let Some(rest) = msg.strip_prefix(head) else { continue };
        if let Some((n, exp)) = rest.strip_prefix('`').and_then(|r| r.split_once("` is out of range, expected ")) {
            return format!("must be {}, got {n}, which is out of range", expected(exp));
        }
        if let Some((got, exp)) = rest.rsplit_once(", expected ") {
            return format!("must be {}, got {}", expected(exp), got_words(got));
        }
    }
    if let Some(rest) = msg.strip_prefix("invalid length ") {
        if let Some((n, exp)) = rest.split_once(", expected ") {
            return format!("must be {exp}, got {n} items");
        }
    }
    msg.to_string()
}

/// serde's words for a value it got (`integer `-1``, `string "x"`,
/// `sequence`) as the value or its JSON kind (`-1`, `"x"`, `an array`).
fn got_words(got: &str) -> String {
    for kind in ["integer `", "floating point `", "boolean `", "char `"] {
        if let Some(v) = got.strip_prefix(kind).and_then(|v| v.strip_suffix('`')) {
            return v.to_string();
        }
    }
    if let Some(v) = got.strip_prefix("string ") {
        return v.to_string();
    }
    match got {
        "sequence" => "an array".to_string(),
        "map" => "an object".to_string(),
        other => other.to_string(),
    }
}

/// Decodes, returning the path of the failure (`None` at the root) and the message.
fn try_decode<T: DeserializeOwned>(args: &Value) -> Result<T, (Option<String>, String)> {
    serde_path_to_error::deserialize::<_, T>(args).map_err(|e| {
        let path = e.path().to_string();
        let msg = plain_json_words(&e.into_inner().to_string());
        ((path != ".").then_some(path), msg)
    })
}

/// The fields a request schema requires.
pub(crate) fn required(schema: &Value) -> BTreeSet<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The property names a request schema admits, including those of
/// flattened and combined sub-schemas.
pub(crate) fn properties(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect(schema, &mut out);
    out
}

fn collect(schema: &Value, out: &mut BTreeSet<String>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        out.extend(props.keys().cloned());
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(subs) = schema.get(key).and_then(Value::as_array) {
            for s in subs {
                collect(s, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use mnemon::plain_json_words;

    #[test]
    fn rust_type_names_become_json_words() {
        let cases = [
            ("invalid type: string \"ten\", expected f32", "invalid type: string \"ten\", expected a number"),
            (
                "invalid value: integer `-1`, expected usize",
                "invalid value: integer `-1`, expected a whole number (0 or more)",
            ),
            (
                "invalid type: floating point `1.5`, expected i64 at line 1 column 9",
                "invalid type: floating point `1.5`, expected a whole number at line 1 column 9",
            ),
            ("invalid type: unit value, expected a string", "invalid type: null, expected a string"),
            ("invalid type: string \"x\", expected a sequence", "invalid type: string \"x\", expected an array"),
            (
                "invalid type: integer `3`, expected struct ImportMemory",
                "invalid type: integer `3`, expected an object",
            ),
            ("invalid type: integer `3`, expected a map", "invalid type: integer `3`, expected an object"),
            // Anything else is left alone.
            (
                "unknown variant `forever`, expected one of `short_term`, `long_term`",
                "unknown variant `forever`, expected one of `short_term`, `long_term`",
            ),
            ("missing field `text`", "missing field `text`"),
            (
                "input contains invalid characters",
                "input contains invalid characters: expected an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00",
            ),
            ("invalid type: string \"a\", expected u32s", "invalid type: string \"a\", expected u32s"),
            // serde_json reads an integer past u64::MAX as a float.
            (
                "invalid type: floating point `1e20`, expected usize at line 1 column 30",
                "invalid value: `1e20` is out of range, expected a whole number (0 or more) at line 1 column 30",
            ),
            (
                "invalid type: floating point `-1e19`, expected i64",
                "invalid value: `-1e19` is out of range, expected a whole number",
            ),
            // Within u64's range, a float literal is a float the client wrote.
            (
                "invalid type: floating point `1e19`, expected u64",
                "invalid type: floating point `1e19`, expected a whole number (0 or more)",
            ),
            // A fraction, or a float written as one, is still a float.
            (
                "invalid type: floating point `100.0`, expected u64",
                "invalid type: floating point `100.0`, expected a whole number (0 or more)",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(plain_json_words(given), want, "{given}");
        }
    }

    #[test]
    fn decoding_messages_say_what_the_field_takes() {
        use super::{reword, Bounds};
        let top_k = Bounds { whole: true, min: Some(1.0), max: Some(1000.0) };
        let cases = [
            (
                "invalid type: string \"ten\", expected a whole number (0 or more)",
                Some(top_k),
                "must be a whole number between 1 and 1000, got \"ten\"",
            ),
            (
                "invalid value: integer `-1`, expected a whole number (0 or more)",
                Some(top_k),
                "must be a whole number between 1 and 1000, got -1",
            ),
            (
                "invalid value: integer `-1`, expected a whole number (0 or more)",
                None,
                "must be a whole number (0 or more), got -1",
            ),
            ("invalid type: null, expected a string", None, "must be a string, got null"),
            ("invalid type: sequence, expected a string at line 1 column 4", None, "must be a string, got an array"),
            (
                "unknown variant `forever`, expected one of `short_term`, `long_term`",
                None,
                "must be one of short_term, long_term, got \"forever\"",
            ),
            ("missing field `text`", None, "is required"),
            (
                "premature end of input: expected an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00",
                None,
                "must be an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00",
            ),
            (
                "invalid value: `1e20` is out of range, expected a whole number (0 or more) at line 1 column 30",
                Some(top_k),
                "must be a whole number between 1 and 1000, got 1e20, which is out of range",
            ),
        ];
        for (given, bounds, want) in cases {
            assert_eq!(reword(given, bounds.as_ref()), want, "{given}");
        }
        let share = Bounds { whole: false, min: Some(0.0), max: Some(1.0) };
        assert_eq!(share.words(), "a number between 0 and 1");
        assert_eq!(Bounds { whole: true, min: Some(1.0), max: None }.words(), "a whole number, 1 or more");
    }

    #[test]
    fn a_request_names_json_types() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Req {
            top_k: usize,
            weight: f32,
            tags: Vec<String>,
        }
        let args = serde_json::json!({"top_k": "ten", "weight": 0.5, "tags": []});
        let (path, msg) = super::try_decode::<Req>(&args).unwrap_err();
        assert_eq!(path.as_deref(), Some("top_k"));
        assert_eq!(msg, "invalid type: string \"ten\", expected a whole number (0 or more)");
        let args = serde_json::json!({"top_k": 3, "weight": null, "tags": []});
        let (_, msg) = super::try_decode::<Req>(&args).unwrap_err();
        assert_eq!(msg, "invalid type: null, expected a number");
    }
}
