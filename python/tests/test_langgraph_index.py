"""`MnemonStore` with LangGraph's `index` configuration, against the real
`InMemoryStore(index=...)` with the same deterministic embedding function:
the same puts (whole values, `fields`, per-put `index=[...]` and
`index=False`) and searches give the same ranked keys in the same order
with the same scores, and the same unscored items after them."""

from __future__ import annotations

import asyncio
import math
import pathlib
from typing import Any, Dict, List, Optional, Tuple

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

import mnemon
from mnemon.langgraph import MnemonStore
from test_embedder import DIMS, Recorder, toy_vector

#: The engine keeps vectors as 16-bit floats: cosines agree with
#: InMemoryStore's 64-bit ones to about 1e-3.
SCORE_TOLERANCE = 1e-3

# (namespace, key, value, index) in order.
PUTS: List[Tuple[Tuple[str, ...], str, Dict[str, Any], Any]] = [
    (("docs",), "d1", {"text": "python tutorial for beginners", "tag": "code", "n": 1}, None),
    (("docs",), "d2", {"text": "rust guide to ownership", "tag": "code", "n": 2}, None),
    (("docs",), "d3", {"text": "green tea and python snakes", "tag": "food", "n": 3}, False),
    (("docs",), "d4", {"text": "sailing a boat", "summary": "python boat trip", "tag": "trip", "n": 4}, ["summary"]),
    (("docs", "zoo"), "d5", {"text": "snake facts", "tags": ["reptile", "python boat"], "n": 5}, ["tags[*]"]),
    (("docs",), "d6", {"other": "no text field here at all", "tag": "misc", "n": 6}, None),
    (("docs",), "d7", {"text": "tea ceremony music", "tag": "food", "n": 7}, None),
    (("notes",), "n1", {"text": "python notes elsewhere", "tag": "code", "n": 8}, None),
]

# (namespace prefix, query, filter, limit)
SEARCHES: List[Tuple[Tuple[str, ...], str, Optional[Dict[str, Any]], int]] = [
    (("docs",), "python", None, 10),
    (("docs",), "python", None, 2),
    (("docs",), "boat trip", None, 10),
    (("docs",), "tea", None, 10),
    (("docs",), "python guide", {"tag": "code"}, 10),
    (("docs",), "reptile snake", {"n": {"$gte": 4}}, 10),
    ((), "python", None, 20),
    (("docs", "zoo"), "boat", None, 10),
]


def scored_and_rest(items: List[Any]) -> Tuple[List[Tuple[Tuple[str, ...], str, float]], set]:
    scored = [(i.namespace, i.key, i.score) for i in items if i.score is not None]
    rest = {(i.namespace, i.key) for i in items if i.score is None}
    # Scored items come first.
    assert all(i.score is not None for i in items[: len(scored)])
    return scored, rest


def clusters(scored: List[Tuple[Tuple[str, ...], str, float]]) -> List[set]:
    """The ranked keys in runs of scores closer than twice the tolerance
    (their order may differ by rounding), in order."""
    out: List[set] = []
    last = None
    for ns, key, score in scored:
        if last is None or last - score >= 2 * SCORE_TOLERANCE:
            out.append(set())
        out[-1].add((ns, key))
        last = score
    return out


def assert_same_answers(ours: List[Any], theirs: List[Any]) -> None:
    a, a_rest = scored_and_rest(ours)
    b, b_rest = scored_and_rest(theirs)
    assert len(a) == len(b), (a, b)
    expected = {(ns, k): score for ns, k, score in b}
    assert clusters(b) == clusters([(ns, k, expected.get((ns, k), float("nan"))) for ns, k, _ in a]), (a, b)
    for ns, k, x in a:
        assert x == pytest.approx(expected[(ns, k)], abs=SCORE_TOLERANCE), k
    assert a_rest == b_rest
    for o, t in zip(ours, theirs):
        if (o.namespace, o.key) == (t.namespace, t.key):
            assert o.value == t.value


def both(tmp_path: pathlib.Path, index: Dict[str, Any]) -> Tuple[MnemonStore, InMemoryStore]:
    mine = MnemonStore.open(tmp_path / "store", index=dict(index))
    theirs = InMemoryStore(index=dict(index))
    return mine, theirs


@pytest.mark.parametrize("fields", [None, ["text"], ["text", "summary"], ["tags[*]", "text"]])
def test_the_same_puts_and_searches_give_the_same_answers(tmp_path, fields):
    index: Dict[str, Any] = {"dims": DIMS, "embed": Recorder()}
    if fields is not None:
        index["fields"] = fields
    mine, theirs = both(tmp_path, index)
    with mine:
        for ns, key, value, idx in PUTS:
            for s in (mine, theirs):
                if idx is None:
                    s.put(ns, key, value)
                else:
                    s.put(ns, key, value, index=idx)
        for prefix, query, flt, limit in SEARCHES:
            a = mine.search(prefix, query=query, filter=flt, limit=limit)
            b = theirs.search(prefix, query=query, filter=flt, limit=limit)
            assert_same_answers(a, b)
        # Without a query, the same items (mnemon lists newest first).
        for prefix in [("docs",), ()]:
            a = {(i.namespace, i.key) for i in mine.search(prefix, limit=50)}
            b = {(i.namespace, i.key) for i in theirs.search(prefix, limit=50)}
            assert a == b


class ToyEmbeddings(Embeddings):
    """A LangChain `Embeddings` over the same toy vectors, counting queries."""

    def __init__(self) -> None:
        self.queries: List[str] = []

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [toy_vector(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        self.queries.append(text)
        return toy_vector(text)


def test_a_langchain_embeddings_object_gives_the_same_answers(tmp_path):
    mine_embed, their_embed = ToyEmbeddings(), ToyEmbeddings()
    mine = MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": mine_embed, "fields": ["text"]})
    theirs = InMemoryStore(index={"dims": DIMS, "embed": their_embed, "fields": ["text"]})
    with mine:
        for ns, key, value, idx in PUTS:
            for s in (mine, theirs):
                s.put(ns, key, value, index=idx)
        for prefix, query, flt, limit in SEARCHES:
            assert_same_answers(
                mine.search(prefix, query=query, filter=flt, limit=limit),
                theirs.search(prefix, query=query, filter=flt, limit=limit),
            )
    # Queries went through embed_query in both.
    assert set(mine_embed.queries) == set(their_embed.queries) == {q for _, q, _, _ in SEARCHES}


def test_scores_are_the_cosine_of_the_best_text(tmp_path):
    mine = MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": Recorder(), "fields": ["a", "b"]})
    with mine:
        mine.put(("x",), "k", {"a": "tea ceremony", "b": "python boat"})
        [hit] = mine.search(("x",), query="python boat")
        assert hit.score == pytest.approx(1.0, abs=SCORE_TOLERANCE)
        [hit] = mine.search(("x",), query="tea")
        q, t = toy_vector("tea"), toy_vector("tea ceremony")
        cos = sum(x * y for x, y in zip(q, t)) / math.sqrt(sum(x * x for x in q) * sum(y * y for y in t))
        assert hit.score == pytest.approx(cos, abs=SCORE_TOLERANCE)


def test_an_unindexed_item_is_found_by_get_list_and_filter_but_never_ranked(tmp_path):
    fn = Recorder()
    with MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": fn, "fields": ["text"]}) as store:
        store.put(("docs",), "plain", {"text": "python boat", "tag": "a"}, index=False)
        assert fn.batches == []  # not embedded
        store.put(("docs",), "other", {"text": "tea ceremony", "tag": "b"})
        assert store.get(("docs",), "plain").value["text"] == "python boat"
        hits = store.search(("docs",), query="python boat")
        assert [(h.key, h.score is None) for h in hits] == [("other", False), ("plain", True)]
        assert [h.key for h in store.search(("docs",), filter={"tag": "a"})] == ["plain"]
        # Indexed again, it ranks; unindexed again, it stops.
        store.put(("docs",), "plain", {"text": "python boat", "tag": "a"})
        assert store.search(("docs",), query="python boat")[0].key == "plain"
        store.put(("docs",), "plain", {"text": "python boat", "tag": "a"}, index=False)
        assert store.search(("docs",), query="python boat")[0].key == "other"
        # Deleted, it is gone from both.
        store.delete(("docs",), "other")
        assert [h.key for h in store.search(("docs",), query="tea")] == ["plain"]


def test_without_an_index_an_unindexed_item_is_not_embedded_or_ranked(engine):
    store = MnemonStore(engine)
    store.put(("docs",), "plain", {"text": "green tea in the morning"}, index=False)
    store.put(("docs",), "other", {"text": "sailing on weekends"})
    hits = store.search(("docs",), query="green tea in the morning")
    assert [(h.key, h.score is None) for h in hits] == [("other", False), ("plain", True)]
    assert store.get(("docs",), "plain") is not None


def test_the_vectors_persist_and_reopening_embeds_nothing(tmp_path):
    index = {"dims": DIMS, "embed": Recorder(), "fields": ["text"]}
    with MnemonStore.open(tmp_path / "store", index=index) as store:
        store.put(("docs",), "a", {"text": "python tutorial"})
        store.put(("docs",), "b", {"text": "tea ceremony"})
        before = [(h.key, h.score) for h in store.search(("docs",), query="python")]
    fn = Recorder()
    with MnemonStore.open(tmp_path / "store", index={**index, "embed": fn}) as store:
        after = [(h.key, h.score) for h in store.search(("docs",), query="python")]
        assert fn.batches == [["python"]]
    assert before == after


def test_a_batch_embeds_every_put_in_one_call(tmp_path):
    fn = Recorder()
    with MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": fn, "fields": ["text"]}) as store:
        store.batch([PutOp(("docs",), f"k{i}", {"text": f"note {i} python"}) for i in range(5)])
        assert [len(b) for b in fn.batches] == [5]
        [found] = store.batch([SearchOp(("docs",), query="python", limit=3)])
        assert len(found) == 3 and all(h.score is not None for h in found)


def test_async_forms_use_the_index(tmp_path):
    async def main() -> List[str]:
        with MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": Recorder()}) as store:
            await store.aput(("docs",), "a", {"text": "python tutorial"})
            await store.aput(("docs",), "b", {"text": "tea ceremony"})
            return [h.key for h in await store.asearch(("docs",), query="tea")]

    assert asyncio.run(main()) == ["b", "a"]


def test_a_store_on_an_engine_uses_its_embedder(tmp_path):
    fn = Recorder()
    with mnemon.Engine.open(tmp_path / "store", embedder=fn, embedder_name="toy", dims=DIMS) as engine:
        store = MnemonStore(engine, index={"dims": DIMS, "fields": ["text"]})
        store.put(("docs",), "a", {"text": "python tutorial", "x": "tea"})
        assert ["python tutorial"] in fn.batches
        assert MnemonStore(engine, index={"embed": fn, "dims": DIMS})
        with pytest.raises(mnemon.InvalidInputError) as e:
            MnemonStore(engine, index={"embed": Recorder(), "dims": DIMS})
        assert e.value.field == "index.embed"
        with pytest.raises(mnemon.InvalidInputError) as e:
            MnemonStore(engine, index={"dims": 7})
        assert e.value.field == "index.dims" and "32 components" in e.value.message
        with pytest.raises(mnemon.InvalidInputError) as e:
            MnemonStore(engine, index={"dims": DIMS, "distance": "l2"})
        assert e.value.field == "index.distance"
        with pytest.raises(mnemon.InvalidInputError) as e:
            MnemonStore(engine, index={"dims": DIMS, "fields": "text"})
        assert e.value.field == "index.fields"


def test_index_embed_may_name_a_mnemon_model_or_a_provider(tmp_path):
    with MnemonStore.open(tmp_path / "a", index={"dims": 384, "embed": "hashing"}) as store:
        assert store.engine.model_id == "hashing-v1-384"
        store.put(("docs",), "a", {"text": "python tutorial"})
        assert store.search(("docs",), query="python")[0].key == "a"
    # mnemon's own provider: with `dims`, opening sends nothing (the store
    # records the provider; nothing is embedded until a put).
    with MnemonStore.open(tmp_path / "b", index={"dims": 1536, "embed": "openai:text-embedding-3-small"}) as store:
        assert store.engine.model_id == "openai:text-embedding-3-small@https://api.openai.com/v1#1536"
    # Another provider string needs LangChain's init_embeddings and the
    # provider's package: without them the error says so, and nothing is
    # created.
    try:
        import langchain  # noqa: F401
    except ImportError:
        with pytest.raises(mnemon.InvalidInputError) as e:
            MnemonStore.open(tmp_path / "b2", index={"dims": 1024, "embed": "cohere:embed-english-v3.0"})
        assert e.value.field == "index.embed" and "langchain" in e.value.message
        assert not (tmp_path / "b2").exists()

    async def later(texts: List[str]) -> List[List[float]]:
        return [toy_vector(t) for t in texts]

    with pytest.raises(mnemon.InvalidInputError) as e:
        MnemonStore.open(tmp_path / "c", index={"dims": DIMS, "embed": later})
    assert e.value.field == "index.embed"
    with pytest.raises(mnemon.InvalidInputError) as e:
        MnemonStore.open(tmp_path / "d", embedder="hashing", index={"dims": DIMS, "embed": Recorder()})
    assert e.value.field == "embedder"


def test_a_bad_put_index_is_refused(tmp_path):
    with MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": Recorder()}) as store:
        with pytest.raises(mnemon.InvalidInputError) as e:
            store.put(("docs",), "a", {"text": "x"}, index="text")  # type: ignore[arg-type]
        assert e.value.field == "index"
        with pytest.raises(mnemon.InvalidInputError) as e:
            store.put(("docs",), "a", {"text": "x"}, index=7)  # type: ignore[arg-type]
        assert e.value.field == "index"
        assert store.get(("docs",), "a") is None


def test_threads_putting_the_same_items_leave_one_vector_per_text(tmp_path):
    import threading

    with MnemonStore.open(tmp_path / "store", index={"dims": DIMS, "embed": Recorder(), "fields": ["text"]}) as store:

        def work(n: int) -> None:
            for i in range(15):
                store.put(("docs",), f"k{i % 3}", {"text": f"thread {n} round {i} python"})

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        facets = store.field_namespace(store.mnemon_namespace(("docs",)))
        memories = store.engine.list(facets, limit=100).memories
        assert sorted(m.session for m in memories) == sorted(store._ident(f"k{i}") for i in range(3))
        for hit in store.search(("docs",), query="python"):
            q, t = toy_vector("python"), toy_vector(hit.value["text"])
            cos = sum(x * y for x, y in zip(q, t)) / math.sqrt(sum(x * x for x in q) * sum(y * y for y in t))
            assert hit.score == pytest.approx(cos, abs=SCORE_TOLERANCE)
