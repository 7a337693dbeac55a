//! Imports from the systems people leave: the MCP memory server's
//! knowledge graph, mem0 memories and LangGraph store dumps. A dry run
//! writes nothing; the real import makes the facts recallable; what has no
//! place in mnemon's model is listed as unmapped; bad input is rejected by
//! record and, under abort, nothing is written; no input panics a reader.

use mnemon::portability::{ImportFormat, ImportOptions, ImportSummary, OnError};
use mnemon::{Engine, ListOptions, Namespace, RecallOptions, Tier};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const MCP: &str = include_str!("fixtures/import/mcp_memory.jsonl");
const MEM0: &str = include_str!("fixtures/import/mem0.json");
const LANGGRAPH: &str = include_str!("fixtures/import/langgraph.jsonl");

fn ns(s: &str) -> Namespace {
    Namespace::new(s).expect("namespace")
}

fn import(e: &Engine, n: &Namespace, format: ImportFormat, text: &str, dry_run: bool) -> mnemon::Result<ImportSummary> {
    let opts = ImportOptions { dry_run, ..ImportOptions::default() };
    e.import(n, format.parse_for(text, n)?, &opts)
}

/// The memory texts recall returns for `query`, best first.
fn recalled(e: &Engine, n: &Namespace, query: &str) -> mnemon::Result<Vec<String>> {
    Ok(e.recall(n, query, &RecallOptions::default())?.into_iter().map(|h| h.memory.content).collect())
}

fn reasons(s: &ImportSummary) -> Vec<String> {
    s.unmapped_list.iter().map(|u| format!("{} {} {}: {}", u.line, u.at, u.skipped, u.reason)).collect()
}

#[test]
fn mcp_memory_graph_dry_run_then_import() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let g = ns("graph");
    let before = e.last_seq();
    let dry = import(&e, &g, ImportFormat::McpMemory, MCP, true)?;
    assert_eq!(e.last_seq(), before, "a dry run writes nothing");
    assert!(dry.dry_run);
    // 7 observations, 1 relation whose ends are both in the file, Bob's one.
    assert_eq!((dry.memories_written, dry.rejected), (9, 0), "{dry:?}");

    let s = import(&e, &g, ImportFormat::McpMemory, MCP, false)?;
    assert_eq!(s.memories_written, 9, "{s:?}");
    // Left out: the relation to 韩梅梅 (not in the file) and the note;
    // imported without its extra field: Bob.
    let listed = reasons(&s);
    assert_eq!(s.unmapped, 3, "{listed:?}");
    assert!(
        listed[0].starts_with("5 relation \"李雷 认识 韩梅梅\" true") && listed[0].contains("\"韩梅梅\""),
        "{listed:?}"
    );
    assert!(listed[1].starts_with("7  true: record type \"note\""), "{listed:?}");
    assert!(listed[2].starts_with("8 entity \"Bob\" false") && listed[2].contains("`createdBy`"), "{listed:?}");
    assert_eq!(s.read, 11, "9 memories and 2 records left out");

    let hits = recalled(&e, &g, "What is Alice allergic to?")?;
    assert_eq!(hits.first().map(String::as_str), Some("Alice Martin (person): Is allergic to peanuts"), "{hits:?}");
    let hits = recalled(&e, &g, "李雷住在哪里")?;
    assert!(hits.iter().take(3).any(|h| h == "李雷 (人): 住在北京"), "{hits:?}");
    let all = e.list(&g, &ListOptions::default());
    let works = all.iter().find(|m| m.content == "Alice Martin works_at Acme Robotics").ok_or("relation")?;
    assert_eq!(works.entities, ["Alice Martin", "Acme Robotics"]);

    let again = import(&e, &g, ImportFormat::McpMemory, MCP, false)?;
    assert_eq!((again.memories_written, again.duplicates), (0, 9), "{again:?}");
    Ok(())
}

#[test]
fn mem0_imports_one_user_and_lists_the_others() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let alice = ns("alice");
    let before = e.last_seq();
    let dry = import(&e, &alice, ImportFormat::Mem0, MEM0, true)?;
    assert_eq!(e.last_seq(), before);
    assert_eq!((dry.memories_written, dry.rejected), (4, 1), "{dry:?}");

    let s = import(&e, &alice, ImportFormat::Mem0, MEM0, false)?;
    assert_eq!((s.memories_written, s.rejected), (4, 1), "{s:?}");
    assert_eq!(s.rejections[0].at, "results[4] (id 2c3d4e5f-6071-8293-a4b5-c6d7e8f90112)");
    let listed = reasons(&s);
    assert_eq!(s.unmapped, 3, "{listed:?}");
    assert!(listed[0].contains("`metadata` {\"source\":\"onboarding\"}"), "{listed:?}");
    assert!(listed[1].contains("true: a record of user_id \"bob\""), "{listed:?}");
    assert!(listed[2].contains("`agent_id` \"support-bot\"") && listed[2].contains("`role` \"user\""), "{listed:?}");

    let all = e.list(&alice, &ListOptions::default());
    let veg = all.iter().find(|m| m.content == "Is vegetarian and avoids dairy").ok_or("memory")?;
    assert_eq!(veg.source_ref.as_deref(), Some("mem0:0f5c9b7e-3b2d-4c1e-9a55-2f1d6c7a8b90"));
    assert_eq!(veg.entities, ["food", "health"]);
    assert_eq!(veg.event_time.map(|t| t.to_rfc3339()).as_deref(), Some("2024-08-02T16:00:00+00:00"));
    let trip = all.iter().find(|m| m.content == "计划十月去东京旅行").ok_or("memory")?;
    assert_eq!(trip.session.as_deref(), Some("trip-planning"));
    assert!(!all.iter().any(|m| m.content.contains("bicycle")), "bob's record stays out");
    let hits = recalled(&e, &alice, "东京旅行")?;
    assert_eq!(hits.first().map(String::as_str), Some("计划十月去东京旅行"), "{hits:?}");

    // Bob's record goes into his own namespace.
    let bob = ns("bob");
    let s = import(&e, &bob, ImportFormat::Mem0, MEM0, false)?;
    assert_eq!(s.memories_written, 2, "his record and the graph relation: {s:?}");
    assert!(recalled(&e, &bob, "how does bob get to work")?.iter().any(|h| h.contains("bicycle")));
    Ok(())
}

#[test]
fn langgraph_items_land_where_mnemon_store_reads_them() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let lg = ns("lg");
    let before = e.last_seq();
    let dry = import(&e, &lg, ImportFormat::Langgraph, LANGGRAPH, true)?;
    assert_eq!(e.last_seq(), before);
    // 3 items and one catalogue entry per namespace tuple (2).
    assert_eq!((dry.memories_written, dry.rejected), (5, 1), "{dry:?}");

    let s = import(&e, &lg, ImportFormat::Langgraph, LANGGRAPH, false)?;
    assert_eq!((s.memories_written, s.rejected), (5, 1), "{s:?}");
    assert_eq!((s.rejections[0].line, s.rejections[0].at.as_str()), (4, "key \"broken\""));
    let listed = reasons(&s);
    assert_eq!(s.unmapped, 1, "{listed:?}");
    assert!(listed[0].contains("`ttl` 30"), "{listed:?}");

    let alice = ns("lg:users.alice.memories");
    let items = e.list(&alice, &ListOptions::default());
    assert_eq!(items.len(), 2);
    let city = items.iter().find(|m| m.key.as_deref() == Some("item.city")).ok_or("item")?;
    assert_eq!(city.session.as_deref(), Some("item.city"));
    assert_eq!(city.source_ref.as_deref(), Some("city"));
    assert_eq!(city.tier, Tier::Permanent);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&city.content)?["text"], "住在里昂");
    assert_eq!(city.valid_from.to_rfc3339(), "2024-09-03T11:30:00+00:00", "updated_at");
    let bob = e.list(&ns("lg:users.@E9@B2@8D@E5@8B@83@20Bao"), &ListOptions::default());
    assert_eq!(bob.len(), 1);
    assert_eq!(bob[0].key.as_deref(), Some("item.trip@20plans"));
    let catalogue = e.list(&ns("lg::catalog"), &ListOptions::default());
    assert_eq!(catalogue.len(), 2);
    assert!(catalogue.iter().all(|m| m.key.as_deref().is_some_and(|k| k.starts_with("ns."))));
    let hits = recalled(&e, &alice, "Alice vegetarian")?;
    assert!(hits.first().is_some_and(|h| h.contains("vegetarian")), "{hits:?}");

    // A namespace that is no MnemonStore prefix is refused before reading.
    let err = ImportFormat::Langgraph.parse_for(LANGGRAPH, &ns("lg:users")).err().ok_or("accepted")?;
    assert!(matches!(err, mnemon::Error::InvalidInput { .. }), "{err:?}");
    let again = import(&e, &lg, ImportFormat::Langgraph, LANGGRAPH, false)?;
    assert_eq!((again.memories_written, again.duplicates), (0, 5), "{again:?}");
    Ok(())
}

/// Bad input names the record; under abort nothing of the file is written,
/// though the file's good records would map, and unmapped records alone
/// never abort.
#[test]
fn bad_records_abort_and_unmapped_ones_do_not() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let g = ns("g");
    let abort = ImportOptions { on_error: OnError::Abort, ..ImportOptions::default() };
    let bad = format!("{MCP}{{\"type\":\"entity\",\"name\":\"Eve\",\"entityType\":7,\"observations\":[]}}\nnot json\n");
    let before = e.last_seq();
    let s = e.import(&g, ImportFormat::McpMemory.parse_for(&bad, &g)?, &abort)?;
    assert!(s.aborted && s.rejected == 2, "{s:?}");
    assert_eq!(e.last_seq(), before, "nothing written");
    let lines: Vec<u64> = s.rejections.iter().map(|r| r.line).collect();
    assert_eq!(lines, [9, 10]);
    assert!(s.rejections[0].reason.contains("entityType"), "{:?}", s.rejections);
    let s = e.import(&g, ImportFormat::McpMemory.parse_for(MCP, &g)?, &abort)?;
    assert!(!s.aborted && s.unmapped == 3 && s.memories_written == 9, "{s:?}");
    for (format, text) in [(ImportFormat::Mem0, "[{\"id\":1}"), (ImportFormat::Langgraph, "[1,2")] {
        let n = ns("lg");
        let s = e.import(&n, format.parse_for(text, &n)?, &abort)?;
        assert!(s.aborted && s.rejected == 1 && s.rejections[0].reason.starts_with("not a JSON document"), "{s:?}");
    }
    Ok(())
}

#[test]
fn format_names_read_both_ways() -> TestResult {
    for f in ImportFormat::ALL {
        assert_eq!(f.name().parse::<ImportFormat>()?, f);
        assert_eq!(serde_json::to_value(f)?, f.name());
    }
    assert_eq!("mcp-memory".parse::<ImportFormat>()?, ImportFormat::McpMemory);
    let err = "mem1".parse::<ImportFormat>().err().ok_or("accepted")?;
    assert!(err.to_string().contains("mcp_memory, mem0, langgraph"), "{err}");
    Ok(())
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const FOREIGN: [ImportFormat; 3] = [ImportFormat::McpMemory, ImportFormat::Mem0, ImportFormat::Langgraph];

    fn check(text: &str) -> Result<(), TestCaseError> {
        let lines = text.split('\n').count() as u64;
        for format in FOREIGN {
            for p in [format.parse(text), format.parse_for(text, &ns("alice")).expect("a valid prefix")] {
                prop_assert!(p.records.iter().all(|r| r.line <= lines));
                prop_assert!(p.rejected.iter().all(|r| r.line <= lines && !r.reason.is_empty()));
                prop_assert!(p.unmapped.iter().all(|u| u.line <= lines && !u.reason.is_empty()));
                prop_assert!(p.read() >= p.records.len() as u64);
            }
        }
        Ok(())
    }

    /// A JSON value of the shapes these readers look at, with arbitrary leaves.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z.@ 李]{0,8}".prop_map(serde_json::Value::from),
            prop::sample::select(vec![
                "entity",
                "relation",
                "2024-07-20T01:19:45-07:00",
                "alice",
                "bob",
                "memory",
                "results",
            ])
            .prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            let keys = prop::sample::select(vec![
                "type",
                "name",
                "entityType",
                "observations",
                "from",
                "to",
                "relationType",
                "id",
                "memory",
                "user_id",
                "agent_id",
                "run_id",
                "metadata",
                "categories",
                "created_at",
                "updated_at",
                "namespace",
                "key",
                "value",
                "results",
                "relations",
                "entities",
                "items",
                "source",
                "relationship",
                "target",
            ]);
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map(keys, inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Arbitrary text never panics a reader; every record is where the input has lines.
        #[test]
        fn arbitrary_text_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            check(&String::from_utf8_lossy(&bytes))?;
        }

        /// Arbitrary JSON, as one document or as lines, is read or refused by record.
        #[test]
        fn arbitrary_json_is_read_or_refused(values in prop::collection::vec(json(), 0..6)) {
            let lines: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            check(&lines.join("\n"))?;
            check(&serde_json::Value::from(values.clone()).to_string())?;
            check(&serde_json::to_string_pretty(&serde_json::json!({"results": values, "items": [], "entities": []})).unwrap_or_default())?;
        }
    }
}
