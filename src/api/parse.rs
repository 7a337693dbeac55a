//! Decoding request arguments with the path of the field at fault.

use std::collections::BTreeSet;

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
                    return Err(ApiError::invalid(field.clone(), format!("{field}: {m}")));
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
    Err(ApiError::invalid(field.clone(), format!("{field}: {msg}")))
}

/// Decodes, returning the path of the failure (`None` at the root) and the message.
fn try_decode<T: DeserializeOwned>(args: &Value) -> Result<T, (Option<String>, String)> {
    serde_path_to_error::deserialize::<_, T>(args).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().to_string();
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
