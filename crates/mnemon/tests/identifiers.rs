//! Identifiers compare in one form, NFKC (case kept): slot keys, sessions,
//! namespaces and kinds written precomposed or decomposed, in full-width or
//! compatibility characters, name one thing — for new writes, and for a
//! store whose events were written before that form was stored (built
//! here by rewriting the events of a closed store in their old byte forms).

use std::error::Error as StdError;
use std::path::Path;

use mnemon::{
    event::decode_record, event::encode_record, Engine, Error, EventBody, ForgetRequest, Kind, ListOptions, MemoryId,
    Namespace, NewMemory, NewObservation, RememberAction, Role, Status,
};

type TestResult = Result<(), Box<dyn StdError>>;

/// `café` precomposed (NFC) and decomposed (NFD).
const CAFE_NFC: &str = "user.caf\u{e9}";
const CAFE_NFD: &str = "user.cafe\u{301}";
/// Full-width `ｕｓｅｒ` before the same attribute.
const CAFE_WIDE: &str = "\u{ff55}\u{ff53}\u{ff45}\u{ff52}.caf\u{e9}";
const CHARLENE_NFC: &str = "Charl\u{e8}ne";
const CHARLENE_NFD: &str = "Charle\u{300}ne";
const LOCKER: &str = "And my locker code is 2291";

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

fn active(engine: &Engine, ns: &Namespace) -> Vec<mnemon::Memory> {
    engine.list(ns, &ListOptions::default())
}

#[test]
fn one_slot_key_whatever_its_unicode_form() -> TestResult {
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path())?;
    let u = ns("u");
    let first = engine.remember(&u, NewMemory::new("Drinks espresso").key(CAFE_NFC))?;
    assert_eq!(first.action, RememberAction::Created);
    for (key, text) in [(CAFE_NFD, "Drinks flat white"), (CAFE_WIDE, "Drinks cortado")] {
        let before = engine.profile(&u, None, None)?;
        let r = engine.remember(&u, NewMemory::new(text).key(key))?;
        assert_eq!(r.action, RememberAction::Superseded { old: before[0].id }, "{key:?}");
        // The key is stored in its NFKC form, which here is the NFC one.
        assert_eq!(engine.get(&u, r.id)?.key.as_deref(), Some(CAFE_NFC), "{key:?}");
    }
    let profile = engine.profile(&u, None, None)?;
    assert_eq!(profile.len(), 1, "{profile:#?}");
    assert_eq!(profile[0].content, "Drinks cortado");
    assert_eq!(active(&engine, &u).len(), 1);
    assert_eq!(engine.history(&u, profile[0].id)?.len(), 3);

    // Other compatibility forms: a ligature, Hangul jamo against the
    // syllable they spell, a full-width full stop between the parts.
    for (a, b) in [
        ("user.\u{fb01}le", "user.file"),
        ("user.\u{1100}\u{1161}", "user.\u{ac00}"),
        ("user\u{ff0e}city", "user.city"),
        ("\u{7528}\u{6237}.\u{ff21}\u{ff22}", "\u{7528}\u{6237}.AB"),
    ] {
        let one = engine.remember(&u, NewMemory::new(format!("first value of {b}")).key(a))?;
        let two = engine.remember(&u, NewMemory::new(format!("second value of {b}")).key(b))?;
        assert_eq!(two.action, RememberAction::Superseded { old: one.id }, "{a:?} / {b:?}");
        assert_eq!(engine.get(&u, one.id)?.key.as_deref(), Some(b), "{a:?} is stored as {b:?}");
    }
    // Case is kept: these are two keys.
    let upper = engine.remember(&u, NewMemory::new("Lives in Lyon").key("User.City"))?;
    assert_eq!(upper.action, RememberAction::Created);
    engine.close()?;
    Ok(())
}

#[test]
fn a_key_that_normalises_to_no_key_is_refused_and_writes_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path())?;
    let u = ns("u");
    engine.remember(&u, NewMemory::new("anything").key("user.x"))?;
    let before = engine.stats().last_seq;
    // `㏂` is `a.m.` in NFKC: the last part of `x.a.m.` is empty.
    let err = engine.remember(&u, NewMemory::new("At dawn").key("x.\u{33c2}")).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { .. }), "{err:?}");
    assert!(err.to_string().contains("in NFKC \"x.a.m.\""), "{err}");
    // An ideographic space is a space in NFKC.
    let err = engine.remember(&u, NewMemory::new("x").key("user.\u{3000}x")).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { .. }), "{err:?}");
    // A namespace whose NFKC form leaves its character set.
    let err = Namespace::new("u\u{2474}").unwrap_err();
    assert!(matches!(err, Error::InvalidInput { .. }), "{err:?}");
    assert_eq!(engine.stats().last_seq, before);
    engine.close()?;
    Ok(())
}

#[test]
fn namespaces_and_kinds_compare_in_one_form() -> TestResult {
    assert_eq!(Namespace::new("\u{ff55}\u{ff11}")?, Namespace::new("u1")?);
    assert_eq!(Namespace::new("team\u{ff1a}a")?.as_str(), "team:a");
    assert_eq!("\u{ff46}\u{ff41}\u{ff43}\u{ff54}".parse::<Kind>()?, Kind::Fact);
    assert_eq!(Kind::Other("fact".into()), Kind::Fact);
    let nfd: Kind = "recette\u{301}".parse()?;
    assert_eq!(nfd, Kind::Other("recett\u{e9}".into()));
    assert_eq!(nfd.to_string(), "recett\u{e9}");

    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path())?;
    engine.remember(&ns("\u{ff55}\u{ff11}"), NewMemory::new("Bakes bread").kind(Kind::Other("recett\u{e9}".into())))?;
    let u1 = ns("u1");
    let opts = ListOptions { kind: Some(Kind::Other("recette\u{301}".into())), ..ListOptions::default() };
    assert_eq!(engine.list(&u1, &opts).len(), 1);
    engine.close()?;
    Ok(())
}

#[test]
fn forget_session_reaches_every_form_of_its_name() -> TestResult {
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path())?;
    let u = ns("u");
    engine.observe(&u, NewObservation::new(CHARLENE_NFC, Role::User, "My name is Charlène"))?;
    engine.observe(&u, NewObservation::new(CHARLENE_NFD, Role::User, LOCKER))?;
    engine.remember(&u, NewMemory::new("Charlène has a locker").session(CHARLENE_NFD))?;
    // Chinese full-width punctuation in a session id.
    engine.observe(&u, NewObservation::new("\u{4f1a}\u{8bdd}\u{ff1a}1", Role::User, "第一次对话"))?;
    assert_eq!(engine.session_turns(&u, CHARLENE_NFC, None)?.len(), 2);
    assert_eq!(engine.observations(&u, Some("\u{4f1a}\u{8bdd}:1")).len(), 1);

    let out = engine.forget(&u, ForgetRequest::Session(CHARLENE_NFC.into()), "")?;
    assert_eq!((out.observations, out.memories), (2, 1), "{out:?}");
    assert!(engine.observations(&u, None).iter().all(|o| o.text != LOCKER));
    // Forgotten once, under whichever form: the other form is no unknown session.
    let again = engine.forget(&u, ForgetRequest::Session(CHARLENE_NFD.into()), "")?;
    assert_eq!((again.observations, again.memories), (0, 0));
    let out = engine.forget(&u, ForgetRequest::Session("\u{4f1a}\u{8bdd}:1".into()), "")?;
    assert_eq!(out.observations, 1);
    engine.close()?;
    Ok(())
}

/// Rewrites, in a closed store, every string `from` of a key or session in
/// the events' payloads as `to`: events as a build that stored
/// identifiers byte for byte wrote them.
fn rewrite_identifiers(dir: &Path, pairs: &[(&str, &str)]) -> TestResult {
    let current = std::fs::read_to_string(dir.join("CURRENT"))?;
    let path = dir.join(current.trim());
    let mut tries = 0;
    let db = loop {
        match sled::Config::new().path(&path).open() {
            Ok(db) => break db,
            Err(sled::Error::Io(e)) if tries < 100 && e.to_string().contains("could not acquire lock") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    };
    let events = db.open_tree("events")?;
    let swap = |s: &mut String| {
        if let Some((_, to)) = pairs.iter().find(|(from, _)| from == s) {
            *s = (*to).to_string();
        }
    };
    let mut changed = 0;
    for item in events.iter() {
        let (k, v) = item?;
        let seq = u64::from_be_bytes(k.as_ref().try_into()?);
        let mut ev = decode_record(seq, &v)?;
        let before = format!("{:?}", ev.body);
        match &mut ev.body {
            EventBody::Observed(o) => swap(&mut o.session),
            EventBody::Extracted(x) => {
                x.key.as_mut().map(swap);
                x.session.as_mut().map(swap);
            }
            _ => {}
        }
        if format!("{:?}", ev.body) != before {
            events.insert(k, encode_record(&ev)?)?;
            changed += 1;
        }
    }
    assert!(changed > 0);
    db.flush()?;
    Ok(())
}

#[test]
fn a_store_written_before_keys_were_normalised_reads_one_value_per_key() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("u");
    let (a, b, c, plain);
    {
        let engine = Engine::open(dir.path())?;
        a = engine.remember(&u, NewMemory::new("Drinks espresso").key("user.keyA"))?.id;
        engine.observe(&u, NewObservation::new("sessionA", Role::User, "My name is Charlène"))?;
        b = engine.remember(&u, NewMemory::new("Drinks flat white").key("user.keyB"))?.id;
        engine.observe(&u, NewObservation::new("sessionB", Role::User, LOCKER))?;
        plain = engine.remember(&u, NewMemory::new("Has a locker at the gym").session("sessionB"))?.id;
        c = engine.remember(&u, NewMemory::new("Drinks cortado").key("user.keyC"))?.id;
        engine.close()?;
    }
    // Three keys that differ in bytes only, all three active: as a build
    // that compared identifiers byte by byte left them.
    rewrite_identifiers(
        dir.path(),
        &[
            ("user.keyA", CAFE_NFC),
            ("user.keyB", CAFE_NFD),
            ("user.keyC", CAFE_WIDE),
            ("sessionA", CHARLENE_NFC),
            ("sessionB", CHARLENE_NFD),
        ],
    )?;

    let engine = Engine::open(dir.path())?;
    // The latest write holds the key; the earlier ones read as replaced by
    // the version after them, which no event says, and show the key as
    // stored.
    let profile = engine.profile(&u, None, None)?;
    assert_eq!(profile.iter().map(|m| m.id).collect::<Vec<_>>(), vec![c], "{profile:#?}");
    let ma = engine.get(&u, a)?;
    let mb = engine.get(&u, b)?;
    assert_eq!((ma.status, ma.next, ma.key.as_deref()), (Status::Superseded, Some(b), Some(CAFE_NFC)));
    assert_eq!((mb.status, mb.next, mb.key.as_deref()), (Status::Superseded, Some(c), Some(CAFE_NFD)));
    assert_eq!(ma.valid_to, Some(mb.valid_from));
    assert_eq!(active(&engine, &u).iter().map(|m| m.id).collect::<Vec<_>>(), vec![plain, c]);
    // Before the later version was written the earlier one was current.
    {
        let then = engine.as_of(&u, mnemon::AsOf::Seq(b.0 - 1))?;
        assert_eq!(then.get(a)?.status, Status::Active);
    }
    let check = engine.check()?;
    assert!(check.consistent, "{check:?}");
    let digest = engine.digest();
    engine.close()?;

    // Replay is deterministic; a new write under the key replaces the
    // holder as any keyed write does.
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.digest(), digest);
    let r = engine.remember(&u, NewMemory::new("Drinks ristretto").key("user.cafe\u{301}"))?;
    assert_eq!(r.action, RememberAction::Superseded { old: c });
    assert_eq!(engine.profile(&u, None, None)?.len(), 1);

    // forget --session in one form reaches the turns stored under the other.
    let out = engine.forget(&u, ForgetRequest::Session(CHARLENE_NFC.into()), "")?;
    assert_eq!((out.observations, out.memories), (2, 1), "{out:?}");
    assert!(engine.observations(&u, None).is_empty());

    // Erasing a displaced version alone (its text, matched as an older
    // version), then compacting: replay still equals live.
    let out = engine.forget(
        &u,
        ForgetRequest::Matching { query: "Drinks flat white".into(), min_similarity: 1.0, limit: 10 },
        "",
    )?;
    assert_eq!(out.memory_ids, vec![b], "{out:?}");
    // `a` is displaced by the next version under its key instead.
    assert_eq!(engine.get(&u, a)?.next, Some(c));
    let check = engine.check()?;
    assert!(check.consistent, "{check:?}");
    engine.compact()?;
    let check = engine.check()?;
    assert!(check.consistent, "{check:?}");
    let digest = engine.digest();
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.digest(), digest);
    assert!(engine.check()?.consistent);
    engine.close()?;
    Ok(())
}

#[test]
fn erasing_the_version_that_displaced_another_makes_it_current_again() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("u");
    let (a, b);
    {
        let engine = Engine::open(dir.path())?;
        a = engine.remember(&u, NewMemory::new("Drinks espresso").key("user.keyA"))?.id;
        b = engine.remember(&u, NewMemory::new("Drinks flat white").key("user.keyB"))?.id;
        engine.close()?;
    }
    rewrite_identifiers(dir.path(), &[("user.keyA", CAFE_NFC), ("user.keyB", CAFE_NFD)])?;
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.get(&u, a)?.status, Status::Superseded);
    // The displacing version alone is forgotten: the one it displaced is
    // current again, as a replay that never sees it (after compaction) has it.
    let out = engine.forget(&u, ForgetRequest::Memory(b), "")?;
    assert_eq!(out.memory_ids, vec![b]);
    let ma = engine.get(&u, a)?;
    assert_eq!((ma.status, ma.next, ma.valid_to), (Status::Active, None, None));
    assert_eq!(engine.profile(&u, None, None)?.iter().map(|m| m.id).collect::<Vec<MemoryId>>(), vec![a]);
    engine.compact()?;
    assert!(engine.check()?.consistent);
    let digest = engine.digest();
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.digest(), digest);
    // And the key is held: a new write replaces it.
    let r = engine.remember(&u, NewMemory::new("Drinks mocha").key(CAFE_NFD))?;
    assert_eq!(r.action, RememberAction::Superseded { old: a });
    engine.close()?;
    Ok(())
}
