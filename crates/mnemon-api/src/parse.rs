//! Decoding request arguments with the path of the field at fault.

use std::collections::BTreeSet;

use mnemon::plain_json_words;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ApiError;

/// Decodes `args` as `T`; an error names the JSON path of the bad field.
///
/// serde loses the path inside flattened parts of a request (they are
/// decoded from a buffer); such an error is located by decoding the
/// required fields with one optional field at a time (`required` are the
/// request's required fields), so it still names its field.
pub(crate) fn decode<T: DeserializeOwned>(args: Value, required: &BTreeSet<String>) -> Result<T, ApiError> {
    let (path, msg) = match try_decode::<T>(&args) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if path.is_none() && !msg.starts_with("missing field") {
        if let Value::Object(map) = &args {
            let base: serde_json::Map<String, Value> =
                map.iter().filter(|(k, _)| required.contains(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
            for (k, v) in map.iter().filter(|(k, _)| !required.contains(*k)) {
                let mut one = base.clone();
                one.insert(k.clone(), v.clone());
                if let Err((p, m)) = try_decode::<T>(&Value::Object(one)) {
                    let field = p.unwrap_or_else(|| k.clone());
                    return Err(ApiError::invalid(field.clone(), field_message(&field, &m)));
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
    Err(ApiError::invalid(field.clone(), field_message(&field, &msg)))
}

/// `"{field}: {msg}"`, without saying either twice: a value type's own
/// check (a namespace, a key) already writes `invalid input: namespace: …`.
fn field_message(field: &str, msg: &str) -> String {
    let msg = msg.strip_prefix("invalid input: ").unwrap_or(msg);
    let last = field.rsplit(['.', '[']).next().unwrap_or(field);
    if msg.starts_with(&format!("{field}: ")) {
        msg.to_string()
    } else if let Some(rest) = msg.strip_prefix(&format!("{last}: ")) {
        format!("{field}: {rest}")
    } else {
        format!("{field}: {msg}")
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
    fn a_field_is_named_once() {
        use super::field_message;
        assert_eq!(
            field_message("namespace", "invalid input: namespace: must be 1-128 characters"),
            "namespace: must be 1-128 characters"
        );
        assert_eq!(
            field_message("sources[1]", "invalid type: null, expected a string"),
            "sources[1]: invalid type: null, expected a string"
        );
        assert_eq!(field_message("filter.key", "invalid input: key: empty"), "filter.key: empty");
        assert_eq!(field_message("top_k", "must be at least 1"), "top_k: must be at least 1");
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
