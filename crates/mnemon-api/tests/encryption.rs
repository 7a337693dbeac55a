//! Encrypted stores through the command surface: the in-process doors'
//! key settings (`door::key_settings`, `OpenSettings::keys`), the typed
//! `key_required` / `wrong_key` errors, and `forget_user`, which forgets a
//! set of namespaces and shreds each one's data key.

use std::path::{Path, PathBuf};

use mnemon::embed::EmbedderChoice;
use mnemon::Engine;
use mnemon_api::door::{self, DoorEmbedder, OpenSettings};
use mnemon_api::{self as api, ApiError, ErrorCode, NamespacePolicy, Request};
use serde_json::{json, Value};

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

fn settings(path: &Path, keys: mnemon::crypt::KeySettings) -> OpenSettings {
    OpenSettings {
        path: path.to_path_buf(),
        embedder: DoorEmbedder::Named(EmbedderChoice::Hashing),
        models_dir: path.join("no-models"),
        durability: None,
        max_content_bytes: None,
        pii_policy: None,
        injection_policy: None,
        embed_mode: None,
        reranker: None,
        keys,
    }
}

fn open_with(path: &Path, key_file: Option<PathBuf>) -> Result<Engine, ApiError> {
    let keys = match key_file {
        Some(f) => door::key_settings(Some(f), None, None)?,
        // Built directly: `key_settings(None, …)` would read MNEMON_KEY*.
        None => mnemon::crypt::KeySettings::default(),
    };
    settings(path, keys).open().map(|(e, _)| e).map_err(ApiError::from)
}

fn call(e: &Engine, v: Value) -> Result<Value, ApiError> {
    api::execute(e, Request::from_value(v)?).map(|r| r.to_value())
}

fn remember(e: &Engine, ns: &str, content: &str) -> Res {
    call(e, json!({"op": "remember", "namespace": ns, "content": content}))?;
    Ok(())
}

/// A store with a user's memories in two namespaces and another user's in
/// a third, created with the key in `key`.
fn user_store(dir: &Path, key: &Path) -> Res<PathBuf> {
    let store = dir.join("store");
    let e = open_with(&store, Some(key.to_path_buf()))?;
    remember(&e, "alice", "Alice prefers a window seat on long flights")?;
    remember(&e, "alice", "Alice is allergic to peanuts")?;
    remember(&e, "alice:work", "Alice's team ships the billing service on Thursdays")?;
    call(
        &e,
        json!({"op": "observe", "namespace": "alice:work", "session": "s1", "text": "Can you book the Lisbon offsite?"}),
    )?;
    remember(&e, "bob", "Bob lives in Porto")?;
    e.close()?;
    Ok(store)
}

fn new_key(dir: &Path, name: &str) -> Res<PathBuf> {
    let f = dir.join(name);
    mnemon::crypt::write_new_key_file(&f)?;
    Ok(f)
}

#[test]
fn an_encrypted_store_opens_with_its_key_and_refuses_none_or_another() -> Res {
    let dir = tempfile::tempdir()?;
    let key = new_key(dir.path(), "store.key")?;
    let other = new_key(dir.path(), "other.key")?;
    let store = user_store(dir.path(), &key)?;

    let e = open_with(&store, Some(key.clone()))?;
    let hits = call(&e, json!({"op": "recall", "namespace": "alice", "query": "which seat on a flight"}))?;
    assert!(hits["hits"][0]["content"].as_str().unwrap_or_default().contains("window seat"), "{hits}");
    e.close()?;

    let none = open_with(&store, None).err().ok_or("opened without a key")?;
    assert_eq!((none.code, none.field.as_deref()), (ErrorCode::KeyRequired, Some("key")), "{none:?}");
    assert_eq!(none.code.as_str(), "key_required");
    let wrong = open_with(&store, Some(other)).err().ok_or("opened with another key")?;
    assert_eq!((wrong.code, wrong.field.as_deref()), (ErrorCode::WrongKey, Some("key")), "{wrong:?}");
    assert_eq!(wrong.code.as_str(), "wrong_key");
    let missing = open_with(&store, Some(dir.path().join("nowhere.key"))).err().ok_or("opened")?;
    assert_eq!(missing.code, ErrorCode::KeyRequired, "{missing:?}");
    assert!(missing.message.contains("nowhere.key"), "{}", missing.message);
    // Refusals write nothing: the store still opens with its key, whole.
    let e = open_with(&store, Some(key))?;
    let listed = call(&e, json!({"op": "list", "namespace": "alice"}))?;
    assert_eq!(listed["memories"].as_array().map(Vec::len), Some(2), "{listed}");
    Ok(())
}

#[test]
fn a_key_in_a_named_environment_variable_opens_the_store() -> Res {
    let dir = tempfile::tempdir()?;
    let key = new_key(dir.path(), "store.key")?;
    let store = user_store(dir.path(), &key)?;
    // A variable of this test's own, so no other test sees it.
    std::env::set_var("MNEMON_TEST_DOOR_KEY", std::fs::read_to_string(&key)?.trim());
    let keys = door::key_settings(None, Some("MNEMON_TEST_DOOR_KEY"), None)?;
    let (e, _) = settings(&store, keys).open()?;
    let got = call(&e, json!({"op": "list", "namespace": "bob"}))?;
    assert_eq!(got["memories"][0]["content"], "Bob lives in Porto");
    e.close()?;
    let unset = door::key_settings(None, Some("MNEMON_TEST_DOOR_KEY_UNSET"), None)?;
    let e = settings(&store, unset).open().err().map(ApiError::from).ok_or("opened")?;
    assert_eq!(e.code, ErrorCode::KeyRequired);
    Ok(())
}

#[test]
fn bad_key_settings_are_refused_naming_the_setting() {
    let field = |r: Result<mnemon::crypt::KeySettings, ApiError>| r.err().map(|e| (e.code, e.field));
    let named = |f: &str| Some((ErrorCode::InvalidInput, Some(f.to_string())));
    assert_eq!(field(door::key_settings(Some(PathBuf::new()), None, None)), named("key_file"));
    assert_eq!(field(door::key_settings(None, Some(""), None)), named("key_env"));
    assert_eq!(field(door::key_settings(None, Some("A=B"), None)), named("key_env"));
    assert_eq!(field(door::key_settings(Some("k".into()), Some("K"), None)), named("key_env"));
    assert_eq!(field(door::key_settings(Some("k".into()), None, Some(PathBuf::new()))), named("keyring"));
}

#[test]
fn forget_user_forgets_each_namespace_and_shreds_its_key() -> Res {
    let dir = tempfile::tempdir()?;
    let key = new_key(dir.path(), "store.key")?;
    let store = user_store(dir.path(), &key)?;
    let e = open_with(&store, Some(key.clone()))?;
    let backup = dir.path().join("backup");
    call(&e, json!({"op": "backup", "dir": backup.to_str()}))?;

    let r = call(&e, json!({"op": "forget_user", "namespaces": ["alice", "alice:work"], "reason": "account closed"}))?;
    assert_eq!(r["namespaces"][0]["namespace"], "alice");
    assert_eq!(r["namespaces"][0]["memories"], 2);
    assert_eq!(r["namespaces"][0]["key_shredded"], true);
    assert_eq!(r["namespaces"][1]["namespace"], "alice:work");
    assert_eq!(
        (r["namespaces"][1]["memories"].clone(), r["namespaces"][1]["observations"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(r["namespaces"][1]["key_shredded"], true);
    assert_eq!((r["memories"].clone(), r["observations"].clone()), (json!(3), json!(1)));
    for ns in ["alice", "alice:work"] {
        let listed = call(&e, json!({"op": "list", "namespace": ns}))?;
        assert_eq!(listed["memories"].as_array().map(Vec::len), Some(0), "{ns}: {listed}");
    }
    let bob = call(&e, json!({"op": "list", "namespace": "bob"}))?;
    assert_eq!(bob["memories"][0]["content"], "Bob lives in Porto");
    // Sent again: nothing left, zero counts, still a receipt per namespace.
    let again = call(&e, json!({"op": "forget_user", "namespaces": ["alice", "alice:work"]}))?;
    assert_eq!((again["memories"].clone(), again["namespaces"].as_array().map(Vec::len)), (json!(0), Some(2)));
    e.close()?;

    // The backup taken before reads the user's namespaces as shredded.
    let keys = mnemon::crypt::KeySettings {
        provider: Some(std::sync::Arc::new(mnemon::crypt::KeyFile(key))),
        keyring: Some(store.join(mnemon::crypt::KEYRING_FILE)),
        directory: None,
    };
    let (copy, _) = settings(&backup, keys).open()?;
    let shredded = &copy.open_report().shredded;
    for ns in ["alice", "alice:work"] {
        assert!(shredded.iter().any(|s| s == ns), "{ns} not shredded in the backup: {shredded:?}");
    }
    let listed = call(&copy, json!({"op": "list", "namespace": "alice"}))?;
    assert_eq!(listed["memories"].as_array().map(Vec::len), Some(0), "{listed}");
    let bob = call(&copy, json!({"op": "list", "namespace": "bob"}))?;
    assert_eq!(bob["memories"][0]["content"], "Bob lives in Porto");
    Ok(())
}

#[test]
fn forget_user_on_a_plain_store_shreds_nothing() -> Res {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path().join("store"))?;
    remember(&e, "u1", "Prefers tea to coffee")?;
    remember(&e, "u1:notes", "Takes notes in Markdown")?;
    let r = call(&e, json!({"op": "forget_user", "namespaces": ["u1", "u1:notes"]}))?;
    assert_eq!(r["memories"], 2);
    assert_eq!(r["namespaces"][0]["key_shredded"], false);
    assert_eq!(r["namespaces"][1]["key_shredded"], false);
    Ok(())
}

#[test]
fn forget_user_refuses_bad_sets_and_writes_nothing() -> Res {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path().join("store"))?;
    remember(&e, "u1", "Prefers tea to coffee")?;
    let before = e.stats().last_seq;
    let code = |v: Value| call(&e, v).err().map(|e| (e.code, e.field.unwrap_or_default()));
    let invalid = |f: &str| Some((ErrorCode::InvalidInput, f.to_string()));
    assert_eq!(code(json!({"op": "forget_user", "namespaces": []})), invalid("namespaces"));
    assert_eq!(code(json!({"op": "forget_user"})), invalid("namespaces"));
    assert_eq!(code(json!({"op": "forget_user", "namespaces": ["u1", "bad name"]})), invalid("namespaces[1]"));
    assert_eq!(code(json!({"op": "forget_user", "namespaces": ["u1", "u1"]})), invalid("namespaces"));
    assert_eq!(code(json!({"op": "forget_user", "namespaces": "u1"})), invalid("namespaces"));
    assert_eq!(code(json!({"op": "forget_user", "namespaces": ["u1"], "reason": "x".repeat(5000)})), invalid("reason"));
    let unknown = call(&e, json!({"op": "forget_user", "namespaces": ["u1", "nobody"]})).err().ok_or("forgot")?;
    assert_eq!(unknown.code, ErrorCode::NotFound);
    assert!(unknown.message.contains("nobody"), "{}", unknown.message);
    assert_eq!(e.stats().last_seq, before, "a refused forget_user wrote");
    assert_eq!(call(&e, json!({"op": "list", "namespace": "u1"}))?["memories"].as_array().map(Vec::len), Some(1));
    Ok(())
}

#[test]
fn forget_user_is_allowed_only_when_every_namespace_is() -> Res {
    let policy = NamespacePolicy::allow_list("alice*")?;
    let ok = Request::from_value_with(json!({"op": "forget_user", "namespaces": ["alice", "alice:work"]}), &policy)?;
    assert_eq!(ok.namespaces().len(), 2);
    let refused = Request::from_value_with(json!({"op": "forget_user", "namespaces": ["alice", "bob"]}), &policy)
        .err()
        .ok_or("allowed")?;
    assert_eq!(refused.code, ErrorCode::NamespaceNotAllowed);
    assert!(refused.message.contains("bob"), "{}", refused.message);
    Ok(())
}
