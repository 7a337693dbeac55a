"""`mnemon.langgraph.MnemonStore` against the real `langgraph` package:
the same calls as LangGraph's own `InMemoryStore` with equal results where
the `BaseStore` contract defines them, namespace mapping, versions,
erasure, bad input, async forms, and a small real graph whose nodes write
and search memories through the store."""

from __future__ import annotations

import asyncio
import json
import pathlib
import threading
import uuid
from typing import Any, Dict, List, Tuple

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel, ParrotFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_store
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

import mnemon
from conftest import files_containing
from mnemon.langgraph import MnemonStore, escape_label


@pytest.fixture
def store(engine: mnemon.Engine) -> MnemonStore:
    return MnemonStore(engine)


def non_empty_namespaces(mem: InMemoryStore, **kw: Any) -> List[Tuple[str, ...]]:
    """InMemoryStore's listing without the namespaces it keeps after their
    last item went (the contract lists namespaces holding items)."""
    held = {ns for ns, items in mem._data.items() if items}
    listed = mem.list_namespaces(**{**kw, "limit": 10_000, "offset": 0})
    kept = [ns for ns in listed if any(h[: len(ns)] == ns for h in held)]
    if kw.get("max_depth") is None:
        kept = [ns for ns in kept if ns in held]
    offset, limit = kw.get("offset", 0), kw.get("limit", 100)
    return kept[offset : offset + limit]


def same_item(a: Any, b: Any) -> None:
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return
    assert (a.namespace, a.key, a.value) == (b.namespace, b.key, b.value)


def keyset(items: List[Any]) -> List[Tuple[Tuple[str, ...], str]]:
    return sorted((i.namespace, i.key) for i in items)


DOCS: List[Tuple[Tuple[str, ...], str, Dict[str, Any]]] = [
    (("users", "alice", "prefs"), "drink", {"text": "Prefers oolong tea", "kind": "drink", "score": 3}),
    (("users", "alice", "prefs"), "seat", {"text": "Window seat on flights", "kind": "travel", "score": 5}),
    (
        ("users", "alice", "facts"),
        "city",
        {"text": "Lives in Hangzhou", "kind": "home", "score": 1, "tags": ["a", "b"]},
    ),
    (("users", "bob", "prefs"), "drink", {"text": "Prefers black coffee", "kind": "drink", "score": 4}),
    (("users", "bob", "prefs"), "food", {"text": "Vegetarian", "kind": "diet", "score": 2, "meta": {"since": 2019}}),
    (("docs",), "readme", {"text": "How to install", "kind": "doc", "score": 0}),
    (("docs", "v1"), "readme", {"text": "Old install guide", "kind": "doc", "score": 0}),
    (("cache", "x", "v1"), "k", {"text": "cached", "kind": "cache", "score": 9}),
]


def test_same_calls_as_the_in_memory_store(store):
    mem = InMemoryStore()
    both = (store, mem)
    for s in both:
        for ns, key, value in DOCS:
            s.put(ns, key, value)
    # get: existing, missing key, missing namespace.
    for ns, key, _ in DOCS:
        same_item(store.get(ns, key), mem.get(ns, key))
    same_item(store.get(("users", "alice", "prefs"), "nope"), mem.get(("users", "alice", "prefs"), "nope"))
    # overwrite, then delete.
    for s in both:
        s.put(("users", "alice", "prefs"), "drink", {"text": "Prefers green tea", "kind": "drink", "score": 6})
        s.delete(("users", "bob", "prefs"), "food")
        s.delete(("users", "bob", "prefs"), "never-existed")
    same_item(store.get(("users", "alice", "prefs"), "drink"), mem.get(("users", "alice", "prefs"), "drink"))
    assert store.get(("users", "bob", "prefs"), "food") is None and mem.get(("users", "bob", "prefs"), "food") is None
    # search without a query: prefix scope and filters (the order is the
    # store's own: compare the sets).
    cases = [
        dict(namespace_prefix=("users",)),
        dict(namespace_prefix=("users", "alice")),
        dict(namespace_prefix=("docs",)),
        dict(namespace_prefix=()),
        dict(namespace_prefix=("users",), filter={"kind": "drink"}),
        dict(namespace_prefix=("users",), filter={"score": {"$gt": 3}}),
        dict(namespace_prefix=(), filter={"score": {"$gte": 1, "$lte": 5}}),
        dict(namespace_prefix=(), filter={"score": {"$lt": 1}}),
        dict(namespace_prefix=(), filter={"kind": {"$ne": "drink"}}),
        dict(namespace_prefix=(), filter={"kind": {"$eq": "doc"}}),
        dict(namespace_prefix=(), filter={"tags": ["a", "b"]}),
        dict(namespace_prefix=(), filter={"meta": {"since": 2019}}),
        dict(namespace_prefix=(), filter={"kind": "none"}),
        dict(namespace_prefix=("nothing",)),
    ]
    for kw in cases:
        ours, theirs = (
            store.search(*[kw["namespace_prefix"]], filter=kw.get("filter"), limit=100),
            mem.search(kw["namespace_prefix"], filter=kw.get("filter"), limit=100),
        )
        assert keyset(ours) == keyset(theirs), kw
        for o in ours:
            same_item(o, mem.get(o.namespace, o.key))
    # Paging: pages partition the result.
    pages = [store.search(("users",), limit=2, offset=o) for o in (0, 2, 4)]
    assert sorted(k for p in pages for k in keyset(p)) == keyset(mem.search(("users",), limit=100))
    assert [len(p) for p in pages] == [2, 2, 0]
    # list_namespaces: prefix, suffix, wildcards, depth, paging.
    for kw in [
        {},
        {"prefix": ("users",)},
        {"prefix": ("users", "*", "prefs")},
        {"suffix": ("prefs",)},
        {"suffix": ("v1",)},
        {"prefix": ("cache", "*")},
        {"max_depth": 1},
        {"max_depth": 2, "prefix": ("users",)},
        {"limit": 2},
        {"limit": 2, "offset": 2},
        {"prefix": ("users",), "suffix": ("facts",)},
    ]:
        assert store.list_namespaces(**kw) == non_empty_namespaces(mem, **kw), kw
    # batch: results in op order.
    ops = [
        GetOp(("docs",), "readme"),
        SearchOp(("docs",), None, 10, 0),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
        PutOp(("docs",), "new", {"text": "New page"}),
    ]
    ours_b, theirs_b = store.batch(ops), mem.batch(ops)
    same_item(ours_b[0], theirs_b[0])
    assert keyset(ours_b[1]) == keyset(theirs_b[1])
    assert ours_b[2] == theirs_b[2] and ours_b[3] is None is theirs_b[3]
    same_item(store.get(("docs",), "new"), mem.get(("docs",), "new"))


def test_search_with_a_query_ranks_by_recall(store):
    mem = InMemoryStore()
    for s in (store, mem):
        for ns, key, value in DOCS:
            s.put(ns, key, value)
    hits = store.search(("users",), query="oolong tea", limit=3)
    assert hits[0].key == "drink" and hits[0].namespace == ("users", "alice", "prefs")
    assert hits[0].score is not None and all(
        (a.score or float("-inf")) >= (b.score or float("-inf")) for a, b in zip(hits, hits[1:])
    )
    # With room for everything, a query returns the same items as the
    # in-memory store (ranked ones first, then the rest with score None).
    everything = store.search(("users",), query="oolong tea", limit=100)
    assert keyset(everything) == keyset(mem.search(("users",), query="oolong tea", limit=100))
    # Filters apply to query results too.
    filtered = store.search(("users",), query="tea", filter={"kind": "travel"}, limit=10)
    assert [(i.namespace, i.key) for i in filtered] == [(("users", "alice", "prefs"), "seat")]
    assert store.search(("users",), query="tea", limit=1, offset=1)[0].key != hits[0].key or len(hits) == 1


def test_namespace_mapping_is_injective_and_valid(store):
    tricky = [
        ("a",),
        ("a", "b"),
        ("a-b",),
        ("a_b",),
        ("a@b",),
        ("a@40b",),
        ("a:b",),
        ("a", "b", "c"),
        ("a b",),
        ("a/b",),
        ("ü",),
        ("@C3@BC",),
        ("名字",),
        ("emoji🙂",),
        ("users", "jane+tag@example"),
        ("%", "%25"),
        ("-",),
        ("_",),
    ]
    names = [store.mnemon_namespace(t) for t in tricky]
    assert len(set(names)) == len(names)
    for n in names:
        mnemon.Namespace(n)
        assert n.startswith("lg:")
    assert store.catalog_namespace not in names
    long = ("x" * 200,)
    longer = ("x" * 201,)
    cjk = tuple("名" * 15 for _ in range(3))
    for t in (long, longer, cjk):
        n = store.mnemon_namespace(t)
        mnemon.Namespace(n)
        assert n.startswith("lg:@@") and len(n) <= 128
    assert store.mnemon_namespace(long) != store.mnemon_namespace(longer)
    # Every one of them stores and lists its own items.
    for i, t in enumerate(tricky + [long, longer, cjk]):
        store.put(t, "k", {"i": i})
    for i, t in enumerate(tricky + [long, longer, cjk]):
        assert store.get(t, "k").value == {"i": i}
    assert sorted(store.list_namespaces(limit=1000)) == sorted(tricky + [long, longer, cjk])
    # The catalogue survives reopening: a fresh store on the same engine sees it.
    again = MnemonStore(store.engine)
    assert sorted(again.list_namespaces(limit=1000)) == sorted(tricky + [long, longer, cjk])
    assert escape_label("a@b") == "a@40b" and escape_label("a@40b") == "a@4040b"


def test_stray_memories_in_the_catalogue_are_passed_over(engine):
    """The catalogue namespace is an ordinary one: another door may write
    to it. What this store did not write there is not a namespace."""
    store = MnemonStore(engine)
    store.put(("users", "ana"), "city", {"v": "Lisbon"})
    cat = store.catalog_namespace
    engine.remember(cat, "not a catalog entry")
    engine.remember(cat, "abcd")  # decodes, but to no JSON
    engine.remember(cat, "hhgnhchn", key="ns.x")  # letters of '["a"]'-like bytes, wrong key
    engine.remember(cat, "这不是目录")
    again = MnemonStore(engine)
    assert again.list_namespaces() == [("users", "ana")]
    assert again.get(("users", "ana"), "city").value == {"v": "Lisbon"}


def test_prefixes_keep_stores_apart(engine):
    a, b = MnemonStore(engine, prefix="appA"), MnemonStore(engine, prefix="appB")
    a.put(("n",), "k", {"v": "a"})
    b.put(("n",), "k", {"v": "b"})
    assert a.get(("n",), "k").value == {"v": "a"} and b.get(("n",), "k").value == {"v": "b"}
    assert a.list_namespaces() == [("n",)] == b.list_namespaces()
    for bad in ("", "has:colon", "dot.", "x" * 33, None):
        with pytest.raises(mnemon.InvalidInputError):
            MnemonStore(engine, prefix=bad)  # type: ignore[arg-type]


def test_keys_and_versions(store, engine):
    ns = ("users", "carol")
    for key in ["plain", "", "with space", "with.dot", "ключ", "k" * 200, "a@41"]:
        store.put(ns, key, {"key": key})
        assert store.get(ns, key).value == {"key": key}
        assert store.get(ns, key).key == key
    assert store.get(ns, "A") is None  # a@41 is not "aA"
    with pytest.raises(mnemon.InvalidInputError):
        store.put(ns, "k" * 300, {"v": 1})
    # A put to the same key supersedes: one item, a chain of versions.
    for i in range(3):
        store.put(ns, "drink", {"text": f"version {i}"})
    item = store.get(ns, "drink")
    assert item.value == {"text": "version 2"}
    assert item.created_at <= item.updated_at
    versions = store.history(ns, "drink")
    assert [v.value["text"] for v in versions] == ["version 0", "version 1", "version 2"]
    assert versions[0].created_at == item.created_at
    assert [i.key for i in store.search(ns, filter={"text": {"$ne": None}}, limit=100)].count("drink") == 1
    # Underneath, the memories are permanent and form one version chain.
    name = store.mnemon_namespace(ns)
    active = engine.list(name, limit=1000).memories
    assert all(m.tier == "permanent" for m in active)
    drink = next(m for m in active if m.source_ref == "drink")
    assert len(engine.history(name, drink.id).versions) == 3


def test_delete_is_forget_and_compaction_erases(store, engine, data):
    canary = uuid.uuid4().hex + uuid.uuid4().hex
    ns = ("users", "dave")
    store.put(ns, "secret", {"text": f"Vault code {canary}"})
    store.put(ns, "secret", {"text": f"Vault code changed {canary}"})
    store.put(ns, "keep", {"text": "Keep this one"})
    store.delete(ns, "secret")
    assert store.get(ns, "secret") is None
    assert store.history(ns, "secret") == []
    assert canary not in json.dumps([i.value for i in store.search(ns, query=canary, limit=10)])
    assert store.get(ns, "keep").value == {"text": "Keep this one"}
    receipt = engine.compact()
    assert receipt.verified
    assert files_containing(pathlib.Path(data), canary.encode()) == []
    # Put again after a delete: a fresh item.
    store.put(ns, "secret", {"text": "new"})
    assert [v.value for v in store.history(ns, "secret")] == [{"text": "new"}]


def test_values_are_redacted_and_stay_json(store):
    ns = ("users", "erin")
    store.put(ns, "contact", {"phone": 13812345678, "mail": "jane.roe@example.com", "n": [1, 2.5, None, True]})
    v = store.get(ns, "contact").value
    assert v["n"] == [1, 2.5, None, True]
    assert "13812345678" not in json.dumps(v) and "jane.roe@example.com" not in json.dumps(v)
    assert isinstance(v["phone"], str) and v["phone"].startswith("[")


def test_a_key_holding_personal_data_is_refused_as_the_key(store, engine):
    ns = ("users", "gina")
    before = engine.stats().last_seq
    for key in ["13812345678", "user@example.com", "call +1 415 555 0100"]:
        with pytest.raises(mnemon.InvalidInputError) as e:
            store.put(ns, key, {"v": 1})
        assert e.value.field == "key", (key, e.value)
        assert str(e.value).startswith("key: ") and key not in str(e.value), e.value
        assert "session" not in str(e.value) and "source_ref" not in str(e.value), e.value
    # The catalogue entry aside, nothing was written for the refused items.
    assert [m.key for m in engine.list(store.mnemon_namespace(ns)).memories] == []


def test_bad_input_raises_and_writes_nothing(store, engine):
    ns = ("users", "frank")
    store.put(ns, "ok", {"v": 1})
    before = engine.stats().last_seq
    bad_values = [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": {1, 2}},
        {"x": object()},
        {"x": "y" * (40 * 1024)},
        {"x": "\ud800"},
    ]
    for value in bad_values:
        with pytest.raises(mnemon.InvalidInputError):
            store.put(ns, "bad", value)
    for value in ["text", 42, ["a"]]:
        with pytest.raises((mnemon.InvalidInputError, InvalidNamespaceError, TypeError)):
            store.batch([PutOp(ns, "bad", value)])  # type: ignore[arg-type]
    for bad_ns in [(), ("a.b",), ("",), ("a", 1), "users"]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad_ns, "k", {"v": 1})])  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        store.put(ns, "ttl", {"v": 1}, ttl=5)
    with pytest.raises(mnemon.InvalidInputError):
        store.search(ns, filter={"v": {"$regex": "x"}})
    with pytest.raises(mnemon.InvalidInputError):
        store.batch([object()])  # type: ignore[list-item]
    assert engine.stats().last_seq == before
    assert store.get(ns, "bad") is None


def test_async_forms(store):
    async def run() -> None:
        ns = ("async", "u1")
        await store.aput(ns, "a", {"text": "Likes sailing"})
        await store.aput(ns, "b", {"text": "Owns a red bicycle"})
        assert (await store.aget(ns, "a")).value == {"text": "Likes sailing"}
        found = await store.asearch(("async",), query="sailing", limit=5)
        assert found[0].key == "a"
        assert await store.alist_namespaces(prefix=("async",)) == [ns]
        await store.adelete(ns, "a")
        assert await store.aget(ns, "a") is None
        many = await asyncio.gather(*(store.aput(ns, f"k{i}", {"i": i}) for i in range(20)))
        assert many == [None] * 20
        results = await store.abatch([GetOp(ns, f"k{i}") for i in range(20)])
        assert [r.value["i"] for r in results] == list(range(20))

    asyncio.run(run())


def test_threads_share_a_store(store):
    errors: List[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(25):
                store.put(("threads", f"t{t % 3}"), f"{t}-{i}", {"t": t, "i": i})
                assert store.get(("threads", f"t{t % 3}"), f"{t}-{i}").value == {"t": t, "i": i}
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(store.search(("threads",), limit=1000)) == 150
    assert store.list_namespaces(prefix=("threads",)) == [("threads", f"t{i}") for i in range(3)]


def test_a_real_graph_writes_and_searches_memories(store):
    extractor = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(content=json.dumps({"fact": "The user goes sailing every weekend"})),
                AIMessage(content=json.dumps({"fact": "The user's boat is called Sea Biscuit"})),
                AIMessage(content=json.dumps({})),
            ]
        )
    )
    answerer = ParrotFakeChatModel()

    def extract(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> Dict[str, Any]:
        user = config["configurable"]["user_id"]
        found = json.loads(extractor.invoke(state["messages"]).content)
        if found.get("fact"):
            store.put(("memories", user), str(uuid.uuid4()), {"fact": found["fact"]})
        return {}

    def answer(state: MessagesState, config: RunnableConfig) -> Dict[str, Any]:
        user = config["configurable"]["user_id"]
        question = state["messages"][-1].content
        memories = get_store().search(("memories", user), query=question, limit=2)
        prompt = "Known about the user:\n" + "\n".join(f"- {m.value['fact']}" for m in memories)
        reply = answerer.invoke([HumanMessage(content=question), HumanMessage(content=prompt)])
        return {"messages": [AIMessage(content=reply.content)]}

    graph = (
        StateGraph(MessagesState)
        .add_node("extract", extract)
        .add_node("answer", answer)
        .add_edge(START, "extract")
        .add_edge("extract", "answer")
        .add_edge("answer", END)
        .compile(store=store)
    )
    cfg = {"configurable": {"user_id": "u-42"}}
    graph.invoke({"messages": [HumanMessage(content="I go sailing every weekend")]}, cfg)
    graph.invoke({"messages": [HumanMessage(content="My boat is called Sea Biscuit")]}, cfg)
    out = graph.invoke({"messages": [HumanMessage(content="What is my boat called?")]}, cfg)
    reply = out["messages"][-1].content
    assert "Sea Biscuit" in reply
    stored = store.search(("memories", "u-42"), limit=10)
    assert sorted(i.value["fact"] for i in stored) == [
        "The user goes sailing every weekend",
        "The user's boat is called Sea Biscuit",
    ]
    assert store.list_namespaces() == [("memories", "u-42")]

    async def async_graph() -> str:
        async def recall_node(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> Dict[str, Any]:
            hits = await store.asearch(("memories", "u-42"), query=state["messages"][-1].content, limit=1)
            await store.aput(("memories", "u-42", "log"), "last-question", {"q": state["messages"][-1].content})
            return {"messages": [AIMessage(content=hits[0].value["fact"])]}

        g = StateGraph(MessagesState).add_node("recall", recall_node).add_edge(START, "recall").compile(store=store)
        result = await g.ainvoke({"messages": [HumanMessage(content="weekend sailing")]}, cfg)
        return str(result["messages"][-1].content)

    assert asyncio.run(async_graph()) == "The user goes sailing every weekend"
    assert store.get(("memories", "u-42", "log"), "last-question").value == {"q": "weekend sailing"}


def test_an_imported_store_dump_reads_back_as_the_same_items(engine: mnemon.Engine) -> None:
    """A dump of LangGraph's own store (`Item.dict()` per item, JSON lines),
    imported with `format="langgraph"`, is read by `MnemonStore` as the same
    items: get, search without a query, namespaces, the updated time."""
    mem = InMemoryStore()
    mem.put(("users", "alice", "memories"), "food", {"text": "Alice is vegetarian", "tags": ["diet"]})
    mem.put(("users", "alice", "memories"), "城市", {"text": "住在里昂", "confidence": 0.9})
    mem.put(("users", "鲍勃 Bao"), "trip plans", {"text": "Bob visits Kyoto in October"})
    mem.put(("users", "alice", "memories"), "food", {"text": "Alice is vegan now"})
    items = mem.search(("users",), limit=100)
    dump = "\n".join(json.dumps(i.dict(), ensure_ascii=False) for i in items) + "\n"

    for prefix in ("lg", "team"):
        dry = engine.import_records(prefix, text=dump, format="langgraph", dry_run=True)
        assert (dry.memories_written, dry.rejected, dry.unmapped) == (5, 0, 0), dry
        s = engine.import_records(prefix, text=dump, format="langgraph")
        assert (s.memories_written, s.rejected) == (5, 0), s
        store = MnemonStore(engine, prefix=prefix)
        for i in items:
            got = store.get(i.namespace, i.key)
            assert got is not None, i
            assert (got.namespace, got.key, got.value) == (i.namespace, i.key, i.value)
            assert got.updated_at == i.updated_at
        assert store.list_namespaces() == mem.list_namespaces()
        listed = store.search(("users", "alice"), limit=10)
        assert sorted(x.key for x in listed) == ["food", "城市"]
        hits = store.search(("users",), query="Kyoto trip", limit=1)
        assert hits and hits[0].key == "trip plans"
        # Imported again: nothing new.
        assert engine.import_records(prefix, text=dump, format="langgraph").memories_written == 0


def test_a_langgraph_import_needs_a_store_prefix(engine: mnemon.Engine) -> None:
    with pytest.raises(mnemon.InvalidInputError) as e:
        engine.import_records("lg:users", text="[]", format="langgraph")
    assert e.value.field == "namespace"
