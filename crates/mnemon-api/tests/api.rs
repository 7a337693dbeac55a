//! The command surface (`mnemon_api`): decoding with field-level errors,
//! namespace policies, paging that pins its read position, the response
//! budget, and every operation's schema.

use mnemon::{DedupMode, Engine, Namespace, NewMemory, NewObservation, Role};
use mnemon_api::{self as api, json_tokens, ApiError, ErrorCode, Limits, NamespacePolicy, Request, Response};
use serde_json::{json, Value};

fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path().join("store")).unwrap();
    (dir, e)
}

fn call(e: &Engine, v: Value) -> Result<Value, ApiError> {
    let req = Request::from_value(v)?;
    api::execute(e, req).map(|r| r.to_value())
}

fn call_with(e: &Engine, v: Value, limits: &Limits) -> Result<Value, ApiError> {
    let req = Request::from_value(v)?;
    api::execute_with(e, req, limits).map(|r| r.to_value())
}

fn err(r: Result<Value, ApiError>) -> ApiError {
    match r {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e,
    }
}

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

/// Distinct words, so that no two memories are duplicates of each other.
fn text(i: usize, words: usize) -> String {
    let w: Vec<String> = (0..words).map(|j| format!("w{}x{}", i, j)).collect();
    format!("Memory {i}: {}", w.join(" "))
}

#[test]
fn every_operation_has_a_request_and_response_schema_and_its_own_tag() {
    let schemas = api::schemas();
    assert_eq!(schemas.len(), api::OPS.len());
    for s in &schemas {
        assert!(s.request.is_object() && s.response.is_object(), "{}", s.op);
        // The tag a request serialises with is its operation's name.
        let probe = match Request::from_op(s.op, minimal_args(s.op)) {
            Ok(r) => r,
            Err(e) => panic!("{}: {e:?}", s.op),
        };
        assert_eq!(probe.op(), s.op);
        assert_eq!(probe.to_value()["op"], s.op);
        let again = Request::from_value(probe.to_value()).unwrap();
        assert_eq!(again.to_value(), probe.to_value(), "{} does not round-trip", s.op);
    }
    // Flattened fields are part of the request schema.
    let recall = schemas.iter().find(|s| s.op == "recall").unwrap();
    for f in
        ["namespace", "query", "top_k", "kinds", "tiers", "from", "to", "as_of", "mode", "record_access", "explain"]
    {
        assert!(recall.request["properties"].get(f).is_some(), "{f}");
    }
}

fn minimal_args(op: &str) -> Value {
    match op {
        "remember" => json!({"namespace": "u", "content": "x"}),
        "observe" => json!({"namespace": "u", "session": "s", "text": "x"}),
        "supersede" => json!({"namespace": "u", "id": 1, "content": "x"}),
        "recall" | "context" => json!({"namespace": "u", "query": "x"}),
        "get" | "history" => json!({"namespace": "u", "id": 1}),
        "list" | "log" | "consolidate" | "timeline" | "verify_shred" => json!({"namespace": "u"}),
        "forget" => json!({"namespace": "u", "all": true, "dry_run": true}),
        "forget_user" => json!({"namespaces": ["u", "u:work"]}),
        "extraction_prompt" | "end_session" => json!({"namespace": "u", "session": "s"}),
        "apply_extraction" => json!({"namespace": "u", "extraction": {}}),
        "verify_erasure" => json!({"texts": ["abcdefgh"]}),
        "import" => json!({"namespace": "u", "text": ""}),
        "backup" => json!({"dir": "/tmp/none"}),
        "export" => json!({"path": "/tmp/none.jsonl"}),
        "restore" => json!({"from": "/tmp/none.jsonl", "into": "/tmp/none"}),
        _ => json!({}),
    }
}

#[test]
fn remember_takes_the_callers_vector_and_checks_it() {
    let (_d, e) = engine();
    let dim = e.embedder().dim();
    let mut v = vec![0.0f32; dim];
    v[3] = 2.0;
    call(&e, json!({"op": "remember", "namespace": "u", "content": "Prefers green tea", "vector": v})).unwrap();
    let hits =
        call(&e, json!({"op": "recall", "namespace": "u", "query": "tea", "mode": "dense", "abstain_below": -1.0}))
            .unwrap();
    assert_eq!(hits["hits"][0]["content"], "Prefers green tea");
    let short = err(call(&e, json!({"op": "remember", "namespace": "u", "content": "Short", "vector": [1.0, 2.0]})));
    assert_eq!((short.code, short.field.as_deref()), (ErrorCode::InvalidInput, Some("vector")));
    assert!(short.message.contains(&format!("expected {dim} components")), "{}", short.message);
    let zeros = err(call(&e, json!({"op": "remember", "namespace": "u", "content": "Zero", "vector": vec![0.0; dim]})));
    assert_eq!(zeros.field.as_deref(), Some("vector"));
    let text = err(call(&e, json!({"op": "remember", "namespace": "u", "content": "Text", "vector": "abc"})));
    assert_eq!(text.field.as_deref(), Some("vector"));
    let listed = call(&e, json!({"op": "list", "namespace": "u"})).unwrap();
    assert_eq!(listed["memories"].as_array().map(Vec::len), Some(1));
    let schema = api::schemas().into_iter().find(|s| s.op == "remember").unwrap();
    assert!(schema.request["properties"].get("vector").is_some());
}

#[test]
fn bad_requests_name_the_field_and_write_nothing() {
    let (_d, e) = engine();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"op": "remember", "namespace": "u", "content": "x", "tags": ["a"]}), "tags"),
        (json!({"op": "remember", "namespace": "u"}), "content"),
        (json!({"op": "remember", "namespace": "u", "content": 42}), "content"),
        (json!({"op": "remember", "namespace": "u u", "content": "x"}), "namespace"),
        (json!({"op": "remember", "namespace": "", "content": "x"}), "namespace"),
        (json!({"op": "remember", "namespace": "u", "content": "x", "importance": "high"}), "importance"),
        (json!({"op": "remember", "namespace": "u", "content": "x", "importance": 1.5}), "importance"),
        (json!({"op": "remember", "namespace": "u", "content": "   "}), "content"),
        (json!({"op": "remember", "namespace": "u", "content": "x".repeat(40_000)}), "content"),
        (json!({"op": "remember", "namespace": "u", "content": "x", "tier": "forever"}), "tier"),
        (json!({"op": "remember", "namespace": "u", "content": "x", "kind": ""}), "kind"),
        (json!({"op": "remember", "namespace": "u", "content": "x", "sources": [1, "two"]}), "sources"),
        (json!({"op": "recall", "namespace": "u", "query": "x", "include_archived": "yes"}), "include_archived"),
        (json!({"op": "observe", "namespace": "u", "session": "s", "text": "x", "role": "robot"}), "role"),
        (json!({"op": "recall", "namespace": "u", "query": "x", "kinds": ["fact", ""]}), "kinds[1]"),
        (json!({"op": "recall", "namespace": "u", "query": "x", "top_k": 0}), "top_k"),
        (json!({"op": "recall", "namespace": "u", "query": "x", "top_k": -3}), "top_k"),
        (json!({"op": "recall", "namespace": "u", "query": "x", "as_of": {"when": 3}}), "as_of"),
        (json!({"op": "recall", "namespace": "u", "query": "x", "from": "last week"}), "from"),
        (json!({"op": "forget", "namespace": "u"}), "target"),
        (json!({"op": "forget", "namespace": "u", "id": 1, "all": true}), "target"),
        (json!({"op": "forget", "namespace": "u", "id": 1, "limit": 3}), "limit"),
        (json!({"op": "list", "namespace": "u", "limit": 5000}), "limit"),
        (json!({"op": "list", "namespace": "u", "cursor": "x.y"}), "cursor"),
        (json!({"op": "teleport", "namespace": "u"}), "op"),
        (json!({"namespace": "u"}), "op"),
    ];
    for (req, field) in cases {
        let e = err(call(&e, req.clone()));
        assert_eq!(e.code, ErrorCode::InvalidInput, "{req}: {e:?}");
        assert_eq!(e.field.as_deref(), Some(field), "{req}: {e:?}");
        // The message names the field first and does not repeat the code.
        assert!(e.message.starts_with(field), "{req}: {e:?}");
        assert!(!e.message.contains("invalid input"), "{req}: {e:?}");
    }
    // A whole number past u64::MAX reaches serde as a float; it is named
    // as out of range, not as a fraction.
    let huge: Value = serde_json::from_str(r#"{"op": "get", "namespace": "u", "id": 99999999999999999999}"#).unwrap();
    let h = err(call(&e, huge));
    assert_eq!(h.field.as_deref(), Some("id"), "{h:?}");
    assert_eq!(h.message, "id must be a whole number (0 or more), got 1e+20, which is out of range", "{h:?}");
    assert_eq!(e.stats().last_seq, 0, "a rejected request wrote something");
    assert_eq!(err(call(&e, json!({"op": "get", "namespace": "u", "id": 7}))).code, ErrorCode::NotFound);
    // The error object's JSON shape.
    let v = serde_json::to_value(ApiError::invalid("top_k", "bad")).unwrap();
    assert_eq!(v, json!({"code": "invalid_input", "message": "top_k: bad", "field": "top_k"}));
}

/// Field errors say what the field takes, with the range the operation
/// admits (not its Rust type's), and what was given; no parser's words.
#[test]
fn errors_say_what_the_field_takes_in_plain_words() {
    let (_d, e) = engine();
    let cases = [
        (
            json!({"op": "recall", "namespace": "u", "query": "x", "top_k": 0}),
            "top_k must be between 1 and 1000, got 0",
        ),
        (
            json!({"op": "recall", "namespace": "u", "query": "x", "top_k": "ten"}),
            "top_k must be a whole number between 1 and 1000, got \"ten\"",
        ),
        (
            json!({"op": "recall", "namespace": "u", "query": "x", "top_k": -3}),
            "top_k must be a whole number between 1 and 1000, got -3",
        ),
        (
            json!({"op": "context", "namespace": "u", "query": "x", "budget_tokens": 0}),
            "budget_tokens must be between 1 and 12400, got 0",
        ),
        (
            json!({"op": "remember", "namespace": "u", "content": "x", "importance": "high"}),
            "importance must be a number between 0 and 1, got \"high\"",
        ),
        (
            json!({"op": "remember", "namespace": "u", "content": "x", "tier": "forever"}),
            "tier must be one of short_term, long_term, permanent, got \"forever\"",
        ),
        (
            json!({"op": "recall", "namespace": "u", "query": "x", "from": "2025-01"}),
            "from must be an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00",
        ),
        (json!({"op": "remember", "namespace": "u"}), "content is required"),
        (json!({"op": "list", "namespace": "u", "limit": 5000}), "limit must be between 1 and 1000, got 5000"),
        (json!({"op": "get", "namespace": "u", "id": 7}), "no memory 7 in namespace u"),
    ];
    for (req, want) in cases {
        let got = err(call(&e, req.clone()));
        assert_eq!(got.message, want, "{req}");
        for internal in ["premature", "input contains", "invalid type", "invalid value", "expected u", "1..="] {
            assert!(!got.message.contains(internal), "{req}: {}", got.message);
        }
    }
}

/// A recall hit is compact by default (id, content, score, why: five hits
/// of short memories well under 400 tokens) and carries the whole memory
/// and the parts of its score with `explain`, under the same names.
#[test]
fn recall_hits_are_compact_unless_explained() {
    let (_d, e) = engine();
    let u = ns("u");
    for m in [
        "Prefers aisle seats on long flights",
        "Lives in Lisbon since 2023",
        "Works as a nurse at the city hospital",
        "Allergic to peanuts and tree nuts",
        "Has a dog named Biscuit who hates flights",
    ] {
        e.remember(&u, NewMemory::new(m)).unwrap();
    }
    e.remember(&u, NewMemory::new("Prefers window seats now").key("user.seat")).unwrap();
    let q = "seat on flights, home town, job, allergies, pets";
    let compact = call(&e, json!({"op": "recall", "namespace": "u", "query": q, "top_k": 5})).unwrap();
    let hits = compact["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 5, "{compact}");
    for h in hits {
        let keys: Vec<&str> = h.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["content", "id", "score", "why"], "{h}");
        assert!(!h["why"].as_str().unwrap().is_empty(), "{h}");
    }
    let keyed = hits.iter().find(|h| h["content"] == "Prefers window seats now").unwrap();
    assert!(keyed["why"].as_str().unwrap().contains("current value of user.seat"), "{keyed}");
    let tokens = json_tokens(&compact);
    assert!(tokens <= 400, "five compact hits take {tokens} tokens: {compact}");

    let full = call(&e, json!({"op": "recall", "namespace": "u", "query": q, "top_k": 5, "explain": true})).unwrap();
    for (c, f) in hits.iter().zip(full["hits"].as_array().unwrap()) {
        for k in ["id", "content", "score", "why"] {
            assert_eq!(c[k], f[k], "{k}: {f}");
        }
        assert_eq!(f["memory"]["content"], f["content"], "{f}");
        assert!(f["explain"]["similarity"].is_number(), "{f}");
    }
    assert!(json_tokens(&full) > 2 * tokens, "{full}");
    // The typed response reads both shapes.
    let Response::Recall(r) =
        api::execute(&e, Request::from_value(json!({"op": "recall", "namespace": "u", "query": q})).unwrap()).unwrap()
    else {
        panic!("not a recall response")
    };
    assert!(r.hits.iter().all(|h| h.memory.is_none() && h.explain.is_none()));
}

#[test]
fn namespace_policies_fill_check_and_refuse_store_wide_calls() {
    let (_d, e) = engine();
    let only = NamespacePolicy::Only(ns("alice"));
    let run = |v: Value, p: &NamespacePolicy| -> Result<Response, ApiError> {
        let op = v["op"].as_str().unwrap().to_string();
        let mut args = v;
        args.as_object_mut().unwrap().remove("op");
        let req = Request::from_op_with(&op, args, p)?;
        api::execute(&e, req)
    };
    let Response::Remember(r) = run(json!({"op": "remember", "content": "Alice likes tea"}), &only).unwrap() else {
        panic!()
    };
    assert_eq!(e.get(&ns("alice"), r.id).unwrap().content, "Alice likes tea");
    let x = run(json!({"op": "remember", "namespace": "bob", "content": "Bob likes tea"}), &only).unwrap_err();
    assert_eq!((x.code, x.field.as_deref()), (ErrorCode::NamespaceNotAllowed, Some("namespace")));
    assert_eq!(run(json!({"op": "stats"}), &only).unwrap_err().code, ErrorCode::NamespaceNotAllowed);
    // With one namespace served, maintenance is of that namespace.
    let Response::Maintain(m) = run(json!({"op": "maintain"}), &only).unwrap() else { panic!() };
    assert_eq!(m.iter().map(|r| r.namespace.as_str()).collect::<Vec<_>>(), ["alice"]);

    let allow = NamespacePolicy::allow_list("bob, team:*").unwrap();
    assert!(run(json!({"op": "remember", "namespace": "bob", "content": "Bob likes tea"}), &allow).is_ok());
    assert!(run(json!({"op": "remember", "namespace": "team:red", "content": "Red team ships"}), &allow).is_ok());
    for bad in ["alice", "team", "bobby"] {
        let x = run(json!({"op": "list", "namespace": bad}), &allow).unwrap_err();
        assert_eq!(x.code, ErrorCode::NamespaceNotAllowed, "{bad}");
    }
    let x = run(json!({"op": "list"}), &allow).unwrap_err();
    assert_eq!((x.code, x.field.as_deref()), (ErrorCode::InvalidInput, Some("namespace")));
    assert!(NamespacePolicy::allow_list("ok, not ok").is_err());
    assert!(NamespacePolicy::allow_list(" , ").is_err());
    // Nothing of the refused calls was written.
    assert!(e.list(&ns("bob"), &Default::default()).len() == 1);
    assert!(e.list(&ns("alice"), &Default::default()).len() == 1);
}

#[test]
fn list_history_and_log_page_at_a_pinned_position() {
    let (_d, e) = engine();
    let u = ns("u");
    for i in 0..250 {
        e.remember(&u, NewMemory::new(text(i, 3)).dedup(DedupMode::Off)).unwrap();
    }
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut req = json!({"op": "list", "namespace": "u"});
        if let Some(c) = &cursor {
            req["cursor"] = json!(c);
        }
        let v = call(&e, req).unwrap();
        pages += 1;
        ids.extend(v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()));
        // Writes between pages are not seen by later pages.
        e.remember(&u, NewMemory::new(format!("late memory {pages}"))).unwrap();
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(ids, (1..=250).collect::<Vec<u64>>());

    // A version chain of 12, in pages of 5.
    let mut id = e.remember(&u, NewMemory::new("version 0 of the chain")).unwrap().id;
    for v in 1..12 {
        id = e.supersede(&u, id, NewMemory::new(format!("version {v} of the chain"))).unwrap().id;
    }
    let mut got = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut req = json!({"op": "history", "namespace": "u", "id": id.0, "limit": 5});
        if let Some(c) = &cursor {
            req["cursor"] = json!(c);
        }
        let v = call(&e, req).unwrap();
        got.extend(v["versions"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_string()));
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(got, (0..12).map(|v| format!("version {v} of the chain")).collect::<Vec<_>>());

    // The audit export in pages of 100 covers the namespace's events once each.
    let last = e.last_seq();
    let other = ns("other");
    e.remember(&other, NewMemory::new("another namespace")).unwrap();
    let mut seqs = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut req = json!({"op": "log", "namespace": "u"});
        if let Some(c) = &cursor {
            req["cursor"] = json!(c);
        }
        let v = call(&e, req).unwrap();
        seqs.extend(v["events"].as_array().unwrap().iter().map(|ev| ev["seq"].as_u64().unwrap()));
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let expected: Vec<u64> = e.events(&u, 1, last).unwrap().iter().map(|ev| ev.seq).collect();
    assert_eq!(seqs, expected);
}

#[test]
fn responses_stay_within_the_token_budget() {
    let (_d, e) = engine();
    let u = ns("u");
    let small = Limits { max_response_tokens: 3_000 };
    for i in 0..40 {
        // About 700 tokens each: a few fit in one response, not all.
        e.remember(&u, NewMemory::new(format!("shared topic words {}", text(i, 400))).dedup(DedupMode::Off)).unwrap();
    }
    let v =
        call_with(&e, json!({"op": "recall", "namespace": "u", "query": "shared topic words", "top_k": 40}), &small)
            .unwrap();
    let hits = v["hits"].as_array().unwrap().len();
    assert!((1..40).contains(&hits), "{hits}");
    assert_eq!(hits + v["omitted"].as_u64().unwrap() as usize, 40);
    assert!(json_tokens(&v) <= small.max_response_tokens, "{}", json_tokens(&v));

    let v = call_with(&e, json!({"op": "list", "namespace": "u", "limit": 1000}), &small).unwrap();
    let n = v["memories"].as_array().unwrap().len();
    assert!((1..40).contains(&n) && v["next_cursor"].is_string(), "{n}");
    assert!(json_tokens(&v) <= small.max_response_tokens);

    let v = call_with(&e, json!({"op": "forget", "namespace": "u", "all": true, "dry_run": true}), &small).unwrap();
    assert_eq!(v["memories"], 40);
    assert!(json_tokens(&v) <= small.max_response_tokens);
    assert!(!v["preview"].as_array().unwrap().is_empty());

    // One item above the budget is an error, not a cut item.
    let tiny = Limits { max_response_tokens: 500 };
    let x = err(call_with(&e, json!({"op": "get", "namespace": "u", "id": 1}), &tiny));
    assert_eq!(x.code, ErrorCode::ResponseTooLarge);
    let x = err(call_with(&e, json!({"op": "list", "namespace": "u"}), &tiny));
    assert_eq!(x.code, ErrorCode::ResponseTooLarge);
    let x = err(call_with(&e, json!({"op": "context", "namespace": "u", "query": "x", "budget_tokens": 400}), &tiny));
    assert_eq!(x.field.as_deref(), Some("budget_tokens"));

    // The extraction prompt of a long session is cut to fit, newest kept.
    for i in 0..120 {
        e.observe(&u, NewObservation::new("long", Role::User, format!("turn {i}: {}", text(i, 60)))).unwrap();
    }
    let v = call(&e, json!({"op": "extraction_prompt", "namespace": "u", "session": "long"})).unwrap();
    assert!(json_tokens(&v) <= api::DEFAULT_MAX_RESPONSE_TOKENS, "{}", json_tokens(&v));
    let prompt = v["prompt"].as_str().unwrap();
    assert!(prompt.contains("turn 119:") && !prompt.contains("turn 0:"));
    assert!(prompt.contains("update_existing"), "the JSON shape must stay");
    let v = call_with(&e, json!({"op": "extraction_prompt", "namespace": "u", "session": "long"}), &small).unwrap();
    assert!(json_tokens(&v) <= small.max_response_tokens);
}

#[test]
fn writes_through_the_surface_match_the_library() {
    let (_d, e) = engine();
    let v = call(&e, json!({"op": "observe", "namespace": "u", "session": "s1", "text": "User: I live in Hangzhou"}))
        .unwrap();
    let obs = v["observation_id"].as_u64().unwrap();
    let v = call(
        &e,
        json!({"op": "remember", "namespace": "u", "content": "Lives in Hangzhou", "kind": "fact", "tier": "permanent",
               "importance": 0.8, "entities": ["Hangzhou"], "key": "user.city", "sources": [obs], "session": "s1",
               "event_time": "2025-05-01T10:00:00Z"}),
    )
    .unwrap();
    assert_eq!(v["action"], "created");
    let id = v["id"].as_u64().unwrap();
    let m = call(&e, json!({"op": "get", "namespace": "u", "id": id})).unwrap();
    assert_eq!(m["tier"], "permanent");
    assert_eq!(m["entities"], json!(["Hangzhou"]));
    assert_eq!(m["sources"], json!([obs]));
    assert_eq!(m["event_time"], "2025-05-01T10:00:00Z");
    let v = call(&e, json!({"op": "supersede", "namespace": "u", "id": id, "content": "Lives in Shanghai"})).unwrap();
    assert_eq!(v["action"], "superseded");
    // apply_extraction takes the document as an object or as its text.
    let doc = json!({"new_memories": [{"content": "Has a cat named Mochi", "kind": "fact", "source_ids": [obs]}]});
    let r = call(&e, json!({"op": "apply_extraction", "namespace": "u", "extraction": doc})).unwrap();
    assert_eq!(r["items"][0]["status"], "applied", "{r}");
    let doc = json!({"new_memories": [{"content": "Drinks oolong", "kind": "preference", "source_ids": [obs]}]});
    let r = call(&e, json!({"op": "apply_extraction", "namespace": "u", "extraction": doc.to_string()})).unwrap();
    assert_eq!(r["items"][0]["status"], "applied", "{r}");
    let x = err(call(&e, json!({"op": "apply_extraction", "namespace": "u", "extraction": [1]})));
    assert_eq!(x.field.as_deref(), Some("extraction"));
    // A dry run writes nothing; the forget then erases the whole chain.
    let before = e.last_seq();
    let v = call(&e, json!({"op": "forget", "namespace": "u", "id": id, "dry_run": true})).unwrap();
    assert_eq!((v["memories"].as_u64(), v["dry_run"].as_bool()), (Some(2), Some(true)));
    assert_eq!(e.last_seq(), before);
    let v = call(&e, json!({"op": "forget", "namespace": "u", "id": id, "reason": "moved"})).unwrap();
    assert_eq!(v["memories"], 2);
    assert_eq!(err(call(&e, json!({"op": "get", "namespace": "u", "id": id}))).code, ErrorCode::NotFound);
    let v = call(&e, json!({"op": "check"})).unwrap();
    assert_eq!(v["consistent"], true);
}

/// A timeline over a span shorter than its buckets has only the buckets
/// that reach its last event: one on a store with one event, one for
/// events at one instant, one per µs over a span of a few µs; an empty
/// namespace has none.
#[test]
fn a_timeline_over_one_instant_has_one_bucket() {
    let (_d, e) = engine();
    let empty = call(&e, json!({"op": "timeline", "namespace": "u"})).unwrap();
    assert_eq!((empty["events"].as_u64(), empty["buckets"].as_array().map(Vec::len)), (Some(0), Some(0)));

    e.observe(&ns("u"), NewObservation::new("s1", Role::User, "I moved to Lisbon")).unwrap();
    let one = call(&e, json!({"op": "timeline", "namespace": "u"})).unwrap();
    let buckets = one["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 1, "{one}");
    assert_eq!((buckets[0]["observed"].as_u64(), one["events"].as_u64()), (Some(1), Some(1)));
    assert_eq!(one["from"], one["to"]);

    // A new version: its `extracted` and `superseded` events share one
    // commit time.
    e.remember(&ns("u"), NewMemory::new("Lives in Porto").key("user.city")).unwrap();
    e.remember(&ns("u"), NewMemory::new("Lives in Lisbon").key("user.city")).unwrap();
    let all: mnemon::Timeline =
        serde_json::from_value(call(&e, json!({"op": "timeline", "namespace": "u"})).unwrap()).unwrap();
    let at = all.to.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let instant = call(&e, json!({"op": "timeline", "namespace": "u", "from": at, "to": at})).unwrap();
    let buckets = instant["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 1, "{instant}");
    assert_eq!((buckets[0]["extracted"].as_u64(), buckets[0]["superseded"].as_u64()), (Some(1), Some(1)));

    // Five microseconds before it: six buckets of 1 µs, the events in the
    // last.
    let before = (all.to - chrono::Duration::microseconds(5)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let short = call(&e, json!({"op": "timeline", "namespace": "u", "from": before, "to": at})).unwrap();
    let buckets = short["buckets"].as_array().unwrap();
    assert_eq!((buckets.len(), short["bucket_micros"].as_i64()), (6, Some(1)), "{short}");
    assert_eq!(buckets[5]["extracted"].as_u64(), Some(1), "{short}");
}

/// Every `forget` selector that names a target answers one way, dry run or
/// not: a target that never existed is `not_found` and writes nothing; one
/// forgotten before is zero counts (also after compaction and reopen); a
/// `matching` search that finds nothing is zero counts.
#[test]
fn forget_of_an_unknown_target_is_not_found_whatever_the_selector() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let e = Engine::open(&path).unwrap();
    e.observe(&ns("u"), NewObservation::new("s1", Role::User, "I moved to Lisbon")).unwrap();
    e.remember(&ns("u"), NewMemory::new("Lives in Lisbon").session("s1")).unwrap();
    let before = e.last_seq();
    let unknown = [
        json!({"namespace": "u", "id": 999}),
        json!({"namespace": "u", "observation": 999}),
        json!({"namespace": "u", "session": "no-such-session"}),
        json!({"namespace": "nobody", "session": "s1"}),
        json!({"namespace": "nobody", "id": 1}),
        json!({"namespace": "nobody", "all": true}),
    ];
    for target in &unknown {
        for dry_run in [false, true] {
            let mut req = target.clone();
            req["op"] = json!("forget");
            req["dry_run"] = json!(dry_run);
            let x = err(call(&e, req.clone()));
            assert_eq!(x.code, ErrorCode::NotFound, "{req}: {x:?}");
            // The error names the argument that named what is missing.
            assert!(x.field.as_ref().is_some_and(|f| f != "op" && req.get(f).is_some()), "{req}: {x:?}");
        }
    }
    // A write's unknown source is the `sources` field's fault, at every door.
    for req in [
        json!({"op": "remember", "namespace": "u", "content": "Lives in Porto", "sources": [999]}),
        json!({"op": "supersede", "namespace": "u", "id": 2, "content": "Lives in Porto", "sources": [999]}),
    ] {
        let x = err(call(&e, req.clone()));
        assert_eq!((x.code, x.field.as_deref()), (ErrorCode::NotFound, Some("sources")), "{req}: {x:?}");
    }
    let x = err(call(&e, json!({"op": "get", "namespace": "u", "id": 999})));
    assert_eq!(x.field.as_deref(), Some("id"), "{x:?}");
    assert_eq!(e.last_seq(), before, "an unknown target writes nothing");
    // A search that finds nothing is not an error.
    let v = call(&e, json!({"op": "forget", "namespace": "nobody", "matching": "Lisbon"})).unwrap();
    assert_eq!((v["memories"].as_u64(), v["observations"].as_u64()), (Some(0), Some(0)), "{v}");
    assert_eq!(e.last_seq(), before);

    let v = call(&e, json!({"op": "forget", "namespace": "u", "session": "s1", "dry_run": true})).unwrap();
    assert_eq!((v["memories"].as_u64(), v["observations"].as_u64()), (Some(1), Some(1)), "{v}");
    let v = call(&e, json!({"op": "forget", "namespace": "u", "session": "s1"})).unwrap();
    assert_eq!((v["memories"].as_u64(), v["observations"].as_u64()), (Some(1), Some(1)), "{v}");
    let again = |e: &Engine| {
        let seq = e.last_seq();
        for dry_run in [true, false] {
            let req = json!({"op": "forget", "namespace": "u", "session": "s1", "dry_run": dry_run});
            let v = call(e, req).unwrap();
            assert_eq!((v["memories"].as_u64(), v["observations"].as_u64()), (Some(0), Some(0)), "{v}");
            let v = call(e, json!({"op": "forget", "namespace": "u", "all": true, "dry_run": dry_run})).unwrap();
            assert_eq!(v["memories"].as_u64(), Some(0), "{v}");
        }
        assert_eq!(e.last_seq(), seq, "forgetting again writes nothing");
    };
    again(&e);
    e.compact().unwrap();
    e.close().unwrap();
    let e = Engine::open(&path).unwrap();
    again(&e);
    assert_eq!(err(call(&e, json!({"op": "forget", "namespace": "u", "session": "s2"}))).code, ErrorCode::NotFound);
    e.close().unwrap();
}

/// A dry run of `forget --matching` shows each memory it would erase with
/// its similarity to the query, best first, and writes nothing; other dry
/// runs carry no similarities.
#[test]
fn matching_dry_run_shows_similarities() {
    let (_d, e) = engine();
    for t in ["I live in Berlin near the river Spree", "My favourite food is ramen", "Berlin river walks at dawn"] {
        e.remember(&ns("u"), NewMemory::new(t)).unwrap();
    }
    let before = e.last_seq();
    let q =
        json!({"op": "forget", "namespace": "u", "matching": "Berlin river", "min_similarity": 0.2, "dry_run": true});
    let v = call(&e, q).unwrap();
    assert_eq!(e.last_seq(), before);
    let sims: Vec<f64> = v["similarities"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    let preview = v["preview"].as_array().unwrap();
    assert_eq!(sims.len(), preview.len(), "{v}");
    assert!(!sims.is_empty() && sims.windows(2).all(|w| w[0] >= w[1]), "{sims:?}");
    assert!(sims.iter().all(|&s| (0.2..=1.0 + 1e-6).contains(&s)), "{sims:?}");
    assert!(preview.iter().all(|m| m["content"].as_str().unwrap().contains("Berlin")), "{v}");
    let v = call(&e, json!({"op": "forget", "namespace": "u", "all": true, "dry_run": true})).unwrap();
    assert!(v.get("similarities").is_none(), "{v}");
}

/// `context` abstains when nothing stored is relevant: a question about
/// something the user never mentioned gets a block with no entry, says so
/// (`abstained`) and names what no memory mentions (`unknown_names`); a
/// related question fills the block; floors of -1 always fill it; `recall`
/// abstains only when asked to.
#[test]
fn context_abstains_when_nothing_stored_is_relevant() {
    let (_d, e) = engine();
    let facts = [
        "I moved to Lisbon in March and rent a flat near the river",
        "My sister Ana is a nurse at the children's hospital",
        "I am allergic to peanuts and shellfish",
        "I prefer dark roast coffee, no sugar",
        "We adopted a grey cat called Miso last summer",
    ];
    for t in facts {
        e.remember(&ns("u"), NewMemory::new(t)).unwrap();
    }
    let ctx = |q: &str, extra: Value| {
        let mut v = json!({"op": "context", "namespace": "u", "query": q});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        call(&e, v).unwrap()
    };
    let related = ctx("What is my sister Ana's job?", json!({}));
    assert_eq!(related["abstained"], false, "{related}");
    assert!(related["memories"].as_u64().unwrap() > 0, "{related}");
    assert!(related["context"].as_str().unwrap().contains("nurse"), "{related}");
    assert_eq!(related["unknown_names"], json!([]), "{related}");

    let stranger = ctx("Which football club does Jean support in Marseille?", json!({}));
    assert_eq!(stranger["abstained"], true, "{stranger}");
    assert_eq!(stranger["memories"], 0, "{stranger}");
    assert_eq!(stranger["unknown_names"], json!(["Jean", "Marseille"]), "{stranger}");
    // Why: the closest memory's cosine and the floor it missed, the hashing
    // embedder's base floor (0.15) or its floor for unknown names (0.30).
    let why = &stranger["abstention"];
    let best = why["best_similarity"].as_f64().unwrap();
    let floor = why["floor"].as_f64().unwrap();
    assert!(best < floor, "{stranger}");
    assert!([0.15, 0.30].iter().any(|f| (floor - f).abs() < 1e-6), "{stranger}");
    assert!(related.get("abstention").is_none(), "{related}");
    let text = stranger["context"].as_str().unwrap();
    assert!(text.starts_with(mnemon::recall::BLOCK_OPEN) && text.ends_with(mnemon::recall::BLOCK_CLOSE), "{text}");
    assert!(!text.contains("\n- ["), "{text}");

    // Nothing was given to the agent, so no access is recorded. (Access
    // events go to the writer without waiting; a write after them is
    // committed after them.)
    let settle = |e: &mnemon::Engine| e.remember(&ns("other"), NewMemory::new("A note to settle the queue")).unwrap();
    let accessed = |e: &mnemon::Engine| e.stats().events.accessed;
    settle(&e);
    let before = accessed(&e);
    ctx("Which football club does Jean support in Marseille?", json!({}));
    call(&e, json!({"op": "recall", "namespace": "u", "query": "Which football club does Jean support?", "abstain_below": 0.99}))
        .unwrap();
    settle(&e);
    assert_eq!(accessed(&e), before, "an abstaining recall or context records no access");
    let forced = ctx("Which football club does Jean support in Marseille?", json!({"abstain_below": -1.0}));
    settle(&e);
    assert_eq!(accessed(&e), before + 1, "one access event, for the forced block only");
    assert_eq!(forced["abstained"], false, "{forced}");
    assert!(forced["memories"].as_u64().unwrap() > 0, "{forced}");

    // Recall makes the same decision as `context` by default, and says so.
    let r =
        call(&e, json!({"op": "recall", "namespace": "u", "query": "Which football club does Jean support?"})).unwrap();
    assert_eq!(r["abstained"], true, "recall abstains as context does: {r}");
    assert_eq!(r["hits"], json!([]), "{r}");
    let r = call(
        &e,
        json!({"op": "recall", "namespace": "u", "query": "Which football club does Jean support?", "abstain_below": -1.0}),
    )
    .unwrap();
    assert!(!r["hits"].as_array().unwrap().is_empty(), "abstain_below -1 returns them anyway: {r}");
    // A base floor just under the best cosine: only the unknown names can
    // make recall abstain, and the response names them.
    let stranger_q = "Which football club does Jean support in Marseille?";
    let r =
        call(&e, json!({"op": "recall", "namespace": "u", "query": stranger_q, "abstain_below": best - 0.01})).unwrap();
    assert_eq!(r["hits"], json!([]), "{r}");
    assert_eq!(r["abstained"], true, "{r}");
    assert_eq!(r["unknown_names"], json!(["Jean", "Marseille"]), "{r}");
    assert!((r["abstention"]["best_similarity"].as_f64().unwrap() - best).abs() < 1e-6, "{r}");
    assert!(r["abstention"]["floor"].as_f64().unwrap() > best, "{r}");
    // A base floor above every cosine: abstains on the cosine alone, and
    // still names what no memory mentions, as `context` does.
    let r = call(
        &e,
        json!({"op": "recall", "namespace": "u", "query": "Which football club does Jean support?",
               "abstain_below": 0.99}),
    )
    .unwrap();
    assert_eq!((r["abstained"].as_bool(), r["abstention"]["floor"].as_f64()), (Some(true), Some(0.99)), "{r}");
    assert_eq!(r["unknown_names"], json!(["Jean"]), "{r}");
    // Related: not abstained, and the response says so.
    let r = call(
        &e,
        json!({"op": "recall", "namespace": "u", "query": "What is my sister Ana's job?", "abstain_below": 0.15}),
    )
    .unwrap();
    assert_eq!(r["abstained"], false, "{r}");
    assert!(!r["hits"].as_array().unwrap().is_empty() && r.get("abstention").is_none(), "{r}");
    for op in ["recall", "context"] {
        let bad = err(call(&e, json!({"op": op, "namespace": "u", "query": "x", "abstain_below": 1.5})));
        assert_eq!(bad.code, ErrorCode::InvalidInput);
        assert_eq!(bad.field.as_deref(), Some("abstain_below"), "{op}: {bad:?}");
    }
}

#[test]
fn namespaces_timeline_and_log_kinds_count_without_content() {
    let (_d, e) = engine();
    for i in 0..3 {
        e.remember(&ns("b"), NewMemory::new(text(i, 4))).unwrap();
    }
    e.observe(&ns("a"), NewObservation::new("s1", Role::User, "I drink oolong every morning")).unwrap();
    let r = e.remember(&ns("a"), NewMemory::new("Drinks oolong").key("user.tea")).unwrap();
    e.remember(&ns("a"), NewMemory::new("Drinks jasmine tea now").key("user.tea")).unwrap();
    call(&e, json!({"op": "forget", "namespace": "b", "all": true, "reason": "asked"})).unwrap();
    let before = e.last_seq();

    let page = call(&e, json!({"op": "namespaces", "limit": 1})).unwrap();
    assert_eq!(page["namespaces"].as_array().unwrap().len(), 1);
    assert_eq!(page["namespaces"][0]["namespace"], "a");
    assert_eq!(page["namespaces"][0]["active"], 1);
    assert_eq!(page["namespaces"][0]["superseded"], 1);
    assert_eq!(page["namespaces"][0]["observations"], 1);
    let rest = call(&e, json!({"op": "namespaces", "cursor": page["next_cursor"]})).unwrap();
    assert_eq!(rest["namespaces"][0]["namespace"], "b");
    assert_eq!(rest["namespaces"][0]["active"], 0);
    assert_eq!(rest["namespaces"][0]["forgotten_memories"], 3);
    assert!(rest.get("next_cursor").is_none(), "{rest}");

    let t = call(&e, json!({"op": "timeline", "namespace": "a", "buckets": 4})).unwrap();
    let buckets = t["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 4);
    let sum = |k: &str| buckets.iter().map(|b| b[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("observed"), sum("extracted"), sum("superseded"), sum("forgotten")), (1, 2, 1, 0));
    assert_eq!(t["events"], 4);
    let last = buckets.iter().filter_map(|b| b["last_seq"].as_u64()).max().unwrap();
    assert_eq!(last, r.id.0 + 2, "the supersede link is a's last event");
    // The writes above took milliseconds: each bucket's label still names
    // it apart from its neighbours.
    let parsed: mnemon::Timeline = serde_json::from_value(t.clone()).unwrap();
    let labels: std::collections::BTreeSet<String> = parsed.buckets.iter().map(|b| parsed.label(b.start)).collect();
    assert_eq!(labels.len(), 4, "{labels:?} for buckets of {} µs", parsed.bucket_micros);
    let tb = call(&e, json!({"op": "timeline", "namespace": "b", "buckets": 1})).unwrap();
    assert_eq!((tb["buckets"][0]["extracted"].as_u64(), tb["buckets"][0]["forgotten"].as_u64()), (Some(3), Some(1)));
    let empty = call(&e, json!({"op": "timeline", "namespace": "nobody"})).unwrap();
    assert_eq!(empty["events"], 0);
    assert!(empty["buckets"].as_array().unwrap().is_empty());
    for bad in [
        json!({"buckets": 0}),
        json!({"buckets": 501}),
        json!({"from": "2026-05-01T00:00:00Z", "to": "2026-04-01T00:00:00Z"}),
    ] {
        let mut req = json!({"op": "timeline", "namespace": "a"});
        req.as_object_mut().unwrap().extend(bad.as_object().unwrap().clone());
        assert_eq!(err(call(&e, req)).code, ErrorCode::InvalidInput);
    }

    let forgotten = call(&e, json!({"op": "log", "namespace": "b", "kinds": ["forgotten"]})).unwrap();
    let events = forgotten["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["body"]["forgotten"]["memories"].as_array().unwrap().len(), 3);
    let tomb = call(&e, json!({"op": "log", "namespace": "b", "kinds": ["tombstone"], "limit": 2})).unwrap();
    assert_eq!(tomb["events"].as_array().unwrap().len(), 2);
    let more = call(&e, json!({"op": "log", "namespace": "b", "kinds": ["tombstone"], "cursor": tomb["next_cursor"]}))
        .unwrap();
    assert_eq!(more["events"].as_array().unwrap().len(), 1);
    assert!(!more.to_string().contains("w0x0"), "forgotten content in the export");
    let bad = err(call(&e, json!({"op": "log", "namespace": "b", "kinds": ["observed", "deleted"]})));
    assert_eq!(bad.field.as_deref(), Some("kinds[1]"));

    // Store-wide: a restricted policy refuses it.
    let only = NamespacePolicy::Only(ns("a"));
    let e2 = err(Request::from_value_with(json!({"op": "namespaces"}), &only).map(|_| Value::Null));
    assert_eq!(e2.code, ErrorCode::NamespaceNotAllowed);
    // Reading wrote nothing.
    assert_eq!(e.last_seq(), before);
}

#[test]
fn context_renders_three_parts_and_refuses_bad_shares() {
    let (_d, e) = engine();
    let u = ns("u");
    e.remember(&u, NewMemory::new("Lives in Porto").key("user.city")).unwrap();
    e.remember(&u, NewMemory::new("Lives in Berlin now").key("user.city")).unwrap();
    e.remember(&u, NewMemory::new("My sister Ana is a nurse at the children's hospital")).unwrap();
    e.observe(&u, NewObservation::new("s1", Role::User, "Which shift does Ana work this week?")).unwrap();
    let v = call(
        &e,
        json!({"op": "context", "namespace": "u", "query": "What is my sister Ana's job?", "current_session": "s1"}),
    )
    .unwrap();
    assert_eq!((v["profile"].as_u64(), v["recent"].as_u64()), (Some(1), Some(1)), "{v}");
    let text = v["context"].as_str().unwrap();
    assert!(text.contains(mnemon::recall::SECTION_PROFILE) && text.contains(mnemon::recall::SECTION_RECENT), "{text}");
    assert!(text.contains("Lives in Berlin now") && !text.contains("Porto"), "{text}");
    // Shares per call; 0 turns a part off.
    let v = call(
        &e,
        json!({"op": "context", "namespace": "u", "query": "What is my sister Ana's job?", "current_session": "s1",
               "profile_share": 0, "recent_share": 0}),
    )
    .unwrap();
    assert_eq!((v["profile"].as_u64(), v["recent"].as_u64()), (Some(0), Some(0)), "{v}");
    // Bad shares name their field and write nothing.
    // (Access events of the calls above go to the writer without waiting;
    // a write after them is committed after them.)
    e.remember(&ns("other"), NewMemory::new("A note to settle the queue")).unwrap();
    let seq = e.last_seq();
    for (extra, field) in [
        (json!({"profile_share": -0.25}), "profile_share"),
        (json!({"recent_share": 1.01}), "recent_share"),
        (json!({"profile_share": 0.75, "recent_share": 0.5}), "recent_share"),
        (json!({"profile_share": "a lot"}), "profile_share"),
    ] {
        let mut v = json!({"op": "context", "namespace": "u", "query": "Ana"});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let x = err(call(&e, v));
        assert_eq!((x.code, x.field.as_deref()), (ErrorCode::InvalidInput, Some(field)), "{x:?}");
    }
    e.sync().unwrap();
    assert_eq!(e.last_seq(), seq);
    // A session that has just begun (nothing belongs to it yet) has an
    // empty recent part, not an error.
    let v = call(
        &e,
        json!({"op": "context", "namespace": "u", "query": "Ana", "current_session": "s-new", "record_access": false}),
    )
    .unwrap();
    assert_eq!(v["recent"].as_u64(), Some(0), "{v}");
    // Entries and floors only when asked: an agent's block costs no more.
    assert!(v.get("entries").is_none() && v.get("floors").is_none(), "{v}");
    let v = call(
        &e,
        json!({"op": "context", "namespace": "u", "query": "What is my sister Ana's job?", "current_session": "s1",
               "record_access": false, "explain": true}),
    )
    .unwrap();
    let entries = v["entries"].as_array().unwrap();
    let fate = |part: &str, fate: &str| entries.iter().filter(|x| x["part"] == part && x["fate"] == fate).count();
    assert_eq!(fate("profile", "whole") as u64, v["profile"].as_u64().unwrap(), "{v}");
    assert_eq!(fate("recent", "whole") as u64, v["recent"].as_u64().unwrap(), "{v}");
    assert_eq!(fate("relevant", "whole") as u64, v["memories"].as_u64().unwrap(), "{v}");
    assert_eq!(fate("relevant", "in_profile") as u64, v["in_profile"].as_u64().unwrap(), "{v}");
    assert!(entries.iter().any(|x| x["part"] == "recent" && x["observation"].is_u64()), "{v}");
    assert!(v["floors"]["below"].is_number(), "{v}");
    // A response written before the per-part counts still reads.
    let old: mnemon::ContextBlock = serde_json::from_value(
        json!({"context": "<memories>\n</memories>", "memories": 0, "truncated": 0, "skipped": 0, "tokens": 3}),
    )
    .unwrap();
    assert_eq!((old.profile, old.recent, old.in_profile, old.abstained), (0, 0, 0, false));
}

/// Every door writes an `f32` field as its shortest decimal (`0.99`), as
/// the CLI's `--json` and Python do; the wire value never carries the
/// digits of its widening to `f64` (`0.9900000095367432`).
#[test]
fn floats_keep_their_shortest_form_on_the_wire() {
    let (_d, e) = engine();
    e.remember(&ns("u"), NewMemory::new("Jean supports Olympique de Marseille").importance(0.7)).unwrap();
    let ctx = call(&e, json!({"op": "context", "namespace": "u", "query": "football club", "abstain_below": 0.99}))
        .unwrap()
        .to_string();
    assert!(ctx.contains("0.99") && !ctx.contains("0.9900000"), "{ctx}");
    let listed = call(&e, json!({"op": "list", "namespace": "u"})).unwrap().to_string();
    assert!(listed.contains("\"importance\":0.7") && !listed.contains("0.699999"), "{listed}");
    let hits = call(&e, json!({"op": "recall", "namespace": "u", "query": "Which club does Jean support?"})).unwrap();
    let sim = &hits["hits"][0]["score"];
    let f = sim.as_f64().unwrap() as f32;
    assert_eq!(sim.to_string(), serde_json::to_string(&f).unwrap(), "{hits}");
}

/// The formats of other memory systems pass through the surface; a
/// LangGraph import writes into several namespaces, so a restricted
/// policy refuses it, and mem0 records of other users are listed, not
/// written.
#[test]
fn imports_from_other_systems_through_the_surface() {
    let (_d, e) = engine();
    let mem0 =
        r#"[{"id":"m1","memory":"Likes green tea","user_id":"alice"},{"id":"m2","memory":"喜欢咖啡","user_id":"bob"}]"#;
    let v = call(&e, json!({"op": "import", "namespace": "alice", "format": "mem0", "text": mem0})).unwrap();
    assert_eq!((v["memories_written"].as_u64(), v["unmapped"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_eq!(v["unmapped_list"][0]["at"], "[1] (id m2)", "{v}");
    assert_eq!(v["unmapped_list"][0]["skipped"], true, "{v}");
    let graph = "{\"type\":\"entity\",\"name\":\"Ann\",\"entityType\":\"person\",\"observations\":[\"Sings\"]}\n";
    let v = call(&e, json!({"op": "import", "namespace": "g", "format": "mcp_memory", "text": graph})).unwrap();
    assert_eq!(v["memories_written"], 1, "{v}");

    let dump = r#"[{"namespace":["users","ann"],"key":"k","value":{"text":"Ann sings"}}]"#;
    let args = json!({"namespace": "lg", "format": "langgraph", "text": dump});
    let only = NamespacePolicy::Only(ns("lg"));
    let x = Request::from_op_with("import", args.clone(), &only).unwrap_err();
    assert_eq!(x.code, ErrorCode::NamespaceNotAllowed);
    let req = Request::from_op_with("import", args, &NamespacePolicy::Any).unwrap();
    let Response::Import(s) = api::execute(&e, req).unwrap() else { panic!("not an import") };
    assert_eq!(s.memories_written, 2, "the item and its catalogue entry: {s:?}");
    assert_eq!(e.list(&ns("lg:users.ann"), &Default::default()).len(), 1);
    let x = call(&e, json!({"op": "import", "namespace": "lg:x", "format": "langgraph", "text": dump})).unwrap_err();
    assert_eq!((x.code, x.field.as_deref()), (ErrorCode::InvalidInput, Some("namespace")));
}
