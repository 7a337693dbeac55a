//! The OpenAPI 3.1 document of the REST routes, generated from the
//! command surface's JSON Schemas ([`mnemon_api::schemas`]): each route's
//! body is its operation's request schema less the fields its path gives,
//! each query parameter one of the request's properties, each answer the
//! operation's response schema, and every error the surface's error
//! object. The schemas' `$defs` become `components.schemas` (a name two
//! operations define differently gets a numbered suffix).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::routes::{Input, Route, ROUTES};
use super::IDEMPOTENCY_KEY;

/// The document, as served at [`super::OPENAPI_PATH`] and printed by
/// `mnemon schema --openapi`.
pub fn openapi() -> Value {
    let mut c = Components::default();
    let mut requests: HashMap<&str, Value> = HashMap::new();
    let mut responses: HashMap<&str, String> = HashMap::new();
    for s in mnemon_api::schemas() {
        let req = c.absorb(s.request);
        requests.insert(s.op, req);
        let resp = c.absorb(s.response);
        let name = format!("{}Response", camel(s.op));
        c.insert_named(&name, resp);
        responses.insert(s.op, name);
    }
    let api_error = c.absorb(schemars::schema_for!(mnemon_api::ApiError).to_value());
    c.insert_named("ApiError", api_error);
    c.insert_named(
        "Error",
        json!({
            "type": "object",
            "description": "Every error: the surface's error object under `error`.",
            "required": ["error"],
            "properties": { "error": { "$ref": "#/components/schemas/ApiError" } },
            "additionalProperties": false
        }),
    );

    let mut paths: Map<String, Value> = Map::new();
    for r in ROUTES.iter() {
        let (Some(req), Some(resp)) = (requests.get(r.op), responses.get(r.op)) else { continue };
        let op = operation(r, req, resp);
        let item = paths.entry(r.path.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = item {
            m.insert(r.method.as_str().to_ascii_lowercase(), op);
        }
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "mnemon",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Long-term memory for agents over REST: each route runs one operation of the command \
                surface, with the same request fields, the same response and the same error object as the CLI, \
                MCP and Python. Writes take an optional Idempotency-Key header. With a server token, every \
                request sends Authorization: Bearer TOKEN.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" }
        },
        "paths": paths,
        "components": {
            "schemas": c.schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
        },
        // A server started without a token needs none.
        "security": [ { "bearer": [] }, {} ]
    })
}

/// `end_session` → `EndSession`.
fn camel(op: &str) -> String {
    op.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

#[derive(Default)]
struct Components {
    schemas: Map<String, Value>,
    /// Each component's schema as its operation defined it (references
    /// still local), to tell a shared definition from a different one.
    raw: HashMap<String, Value>,
}

impl Components {
    /// Moves `schema`'s `$defs` into the components (renaming on a clash)
    /// and returns the root with its references pointing there.
    fn absorb(&mut self, mut schema: Value) -> Value {
        let defs = match &mut schema {
            Value::Object(m) => {
                m.remove("$schema");
                m.remove("$defs").and_then(|d| match d {
                    Value::Object(d) => Some(d),
                    _ => None,
                })
            }
            _ => None,
        }
        .unwrap_or_default();
        let mut names: HashMap<String, String> = HashMap::new();
        for (name, def) in &defs {
            let mut chosen = name.clone();
            let mut n = 2;
            while self.raw.get(&chosen).is_some_and(|d| d != def) {
                chosen = format!("{name}{n}");
                n += 1;
            }
            names.insert(name.clone(), chosen);
        }
        for (name, mut def) in defs {
            let chosen = names[&name].clone();
            if self.raw.contains_key(&chosen) {
                continue;
            }
            self.raw.insert(chosen.clone(), def.clone());
            rewrite(&mut def, &names);
            self.schemas.insert(chosen, def);
        }
        rewrite(&mut schema, &names);
        schema
    }

    fn insert_named(&mut self, name: &str, mut schema: Value) {
        if let Value::Object(m) = &mut schema {
            m.remove("$schema");
        }
        self.schemas.insert(name.to_string(), schema);
    }
}

/// Points `#/$defs/X` references at `#/components/schemas/<names[X]>`.
fn rewrite(v: &mut Value, names: &HashMap<String, String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/$defs/") {
                    let to = names.get(name).cloned().unwrap_or_else(|| name.to_string());
                    *r = format!("#/components/schemas/{to}");
                }
            }
            for (_, x) in m.iter_mut() {
                rewrite(x, names);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rewrite(x, names)),
        _ => {}
    }
}

/// The kinds of answers every route may give besides its own.
const ERRORS: &[(&str, &str)] = &[
    ("400", "Invalid input: a field is missing, of the wrong type or out of range. Nothing was written."),
    ("401", "The server has a token and the request did not send it."),
    ("403", "The namespace is not one this server serves, or the browser origin is not allowed."),
    ("404", "No such memory, observation, session or namespace."),
    ("409", "Conflicts with the current state, or the Idempotency-Key is still running."),
    ("422", "Refused as it stands: the safety policy, an item above the response budget, or an Idempotency-Key reused for another request."),
    ("429", "Too many calls running at once (--max-in-flight): nothing was run; retry after Retry-After seconds."),
    ("500", "A fault of the store (corruption, I/O)."),
    ("503", "Not available now (shutting down, the store handed over, a provider down): retry after Retry-After seconds."),
];

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
    })
}

/// The operation object of one route.
fn operation(r: &Route, request: &Value, response: &str) -> Value {
    let props = request.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required: Vec<String> = request
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let mut parameters = Vec::new();
    for p in r.params() {
        let schema = props.get(p).cloned().unwrap_or_else(|| json!({ "type": "string" }));
        parameters.push(param(p, "path", true, schema));
    }
    let taken: Vec<(&String, &Value)> = props.iter().filter(|(k, _)| r.takes(k)).collect();
    let mut body = None;
    match r.input {
        Input::Query => {
            for (name, schema) in &taken {
                parameters.push(param(name, "query", required.contains(name), (*schema).clone()));
            }
        }
        Input::Body => {
            let body_required: Vec<&String> = required.iter().filter(|f| r.takes(f)).collect();
            let mut schema = Map::new();
            schema.insert("type".into(), json!("object"));
            schema.insert(
                "properties".into(),
                Value::Object(taken.iter().map(|(k, v)| ((*k).clone(), (*v).clone())).collect()),
            );
            if !body_required.is_empty() {
                schema.insert("required".into(), json!(body_required));
            }
            // The surface refuses unknown fields.
            schema.insert("additionalProperties".into(), json!(false));
            body = Some(json!({
                "required": !body_required.is_empty(),
                "content": { "application/json": { "schema": schema } }
            }));
        }
    }
    if r.writes() {
        parameters.push(json!({
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "description": "Makes the write idempotent: a retry with the same key and request gets the first answer \
                (marked Idempotent-Replayed: true) without writing again. Kept 24 hours, in memory.",
            "schema": { "type": "string", "minLength": 1, "maxLength": super::idempotency::MAX_KEY_LEN, "pattern": "^[!-~]+$" }
        }));
    }
    debug_assert_eq!(IDEMPOTENCY_KEY, "idempotency-key");
    let status = if r.creates { "201" } else { "200" };
    let mut responses = Map::new();
    responses.insert(
        status.into(),
        json!({
            "description": "The operation's response.",
            "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{response}") } } }
        }),
    );
    for (code, why) in ERRORS {
        responses.insert((*code).into(), error_response(why));
    }
    if r.input == Input::Body {
        responses.insert("413".into(), error_response("The body is above the server's limit."));
        responses.insert("415".into(), error_response("The body is not application/json."));
        responses.insert("408".into(), error_response("The body did not arrive in time."));
    }
    let mut op = Map::new();
    op.insert("operationId".into(), json!(r.operation_id));
    op.insert("summary".into(), json!(r.summary));
    if let Some(d) = request.get("description") {
        op.insert("description".into(), d.clone());
    }
    op.insert("parameters".into(), Value::Array(parameters));
    if let Some(b) = body {
        op.insert("requestBody".into(), b);
    }
    op.insert("responses".into(), Value::Object(responses));
    Value::Object(op)
}

/// A parameter: a scalar or array schema directly (arrays as repeated
/// parameters), any other value as JSON text.
fn param(name: &str, location: &str, required: bool, mut schema: Value) -> Value {
    let description = match &mut schema {
        Value::Object(m) => m.remove("description"),
        _ => None,
    };
    let simple = simple(&schema);
    let mut p = json!({ "name": name, "in": location, "required": required });
    if let Some(d) = description {
        p["description"] = d;
    }
    if simple {
        p["schema"] = schema;
    } else {
        p["content"] = json!({ "application/json": { "schema": schema } });
    }
    p
}

/// True for a schema a parameter can carry as plain text: a scalar, a
/// reference (to a string enumeration or scalar), or an array of those,
/// possibly nullable.
fn simple(schema: &Value) -> bool {
    if schema.get("$ref").is_some() {
        // Refs used by parameters name string enumerations or formats.
        return true;
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(members) = schema.get(union).and_then(Value::as_array) {
            return members.iter().all(|m| m.get("type").and_then(Value::as_str) == Some("null") || simple(m));
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return schema.get("enum").is_some() || schema.get("const").is_some(),
    };
    types.iter().all(|t| match *t {
        "array" => schema.get("items").is_none_or(simple),
        "object" => false,
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves_and_every_route_is_there() {
        let doc = openapi();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        out.push(r.clone());
                    }
                    m.values().for_each(|x| refs(x, out));
                }
                Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
            assert!(schemas.contains_key(name), "{r}");
        }
        for r in ROUTES.iter() {
            let op = &doc["paths"][r.path][r.method.as_str().to_ascii_lowercase()];
            assert_eq!(op["operationId"], r.operation_id);
        }
        let body = &doc["paths"]["/v1/namespaces/{namespace}/memories"]["post"]["requestBody"]["content"]
            ["application/json"]["schema"];
        assert!(body["properties"].get("content").is_some());
        assert!(body["properties"].get("namespace").is_none());
        let del = &doc["paths"]["/v1/namespaces/{namespace}/memories/{id}"]["delete"]["parameters"];
        let names: Vec<&str> = del.as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["namespace", "id", "dry_run", "reason", "Idempotency-Key"]);
    }
}
