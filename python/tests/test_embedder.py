"""Your own embedding model as the engine's embedder
(`Engine.open(path, embedder=fn)`), your own vectors on `remember`, and
`Engine.embed`: batching, checked answers, the model id the store records
and what reopening with another model does."""

from __future__ import annotations

import asyncio
import hashlib
import math
import pathlib
import re
import threading
import time
import warnings
from typing import List

import pytest

import mnemon

DIMS = 32


def toy_vector(text: str) -> List[float]:
    """A deterministic bag-of-words vector: texts sharing words point the
    same way."""
    v = [0.0] * DIMS
    v[0] = 0.3 + (len(text) % 11) / 4
    for word in re.findall(r"[a-z]+", text.lower()):
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
        v[1 + h % (DIMS - 1)] += 1.0 + (h >> 20) % 7 / 10
    return v


class Recorder:
    """An embedding function that records every batch it is given."""

    def __init__(self) -> None:
        self.batches: List[List[str]] = []
        self.lock = threading.Lock()

    def __call__(self, texts: List[str]) -> List[List[float]]:
        with self.lock:
            self.batches.append(list(texts))
        return [toy_vector(t) for t in texts]


def open_toy(data: pathlib.Path, fn=None, **kw) -> mnemon.Engine:
    return mnemon.Engine.open(data, embedder=fn or Recorder(), embedder_name="toy-bow-32", dims=DIMS, **kw)


def test_a_function_embeds_memories_and_queries(data):
    fn = Recorder()
    with mnemon.Engine.open(data, embedder=fn, embedder_name="toy-bow-32", dims=DIMS) as engine:
        assert (engine.model_id, engine.dim, engine.embedder) == ("toy-bow-32", DIMS, fn)
        assert fn.batches == []  # dims given: no probe
        engine.remember("u1", "Prefers green tea in the morning")
        engine.remember("u1", "Sails a small boat on weekends")
        hits = engine.recall("u1", "which boat does she sail", mode="dense").hits
        assert hits[0].content == "Sails a small boat on weekends"
    assert ["Prefers green tea in the morning"] in fn.batches
    assert ["which boat does she sail"] in fn.batches


def test_the_dimension_is_probed_once_when_not_given(data):
    fn = Recorder()
    with mnemon.Engine.open(data, embedder=fn, embedder_name="toy-bow-32") as engine:
        assert engine.dim == DIMS
        assert len(fn.batches) == 1 and len(fn.batches[0]) == 1


def test_reopening_with_the_same_model_reuses_the_vectors(data):
    with open_toy(data) as engine:
        for i in range(5):
            engine.remember("u1", f"memory number {i} about tea", dedup="off")
    fn = Recorder()
    with open_toy(data, fn) as engine:
        assert fn.batches == []
        assert engine.recall("u1", "tea", mode="dense").hits


def test_reopening_with_another_model_embeds_every_memory_again_in_batches(data):
    with open_toy(data) as engine:
        for i in range(70):
            engine.remember("u1", f"note {i}: " + " ".join(["tea", "boat", "song"][: 1 + i % 3]), dedup="off")
    fn = Recorder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = mnemon.Engine.open(data, embedder=fn, embedder_name="toy-bow-32-v2", dims=DIMS)
    with engine:
        assert engine.model_id == "toy-bow-32-v2"
        sizes = sorted((len(b) for b in fn.batches), reverse=True)
        assert sum(sizes) == 70 and sizes[0] > 1 and sizes[0] <= 64, sizes
        assert any("toy-bow-32" in str(w.message) and "embedded again" in str(w.message) for w in caught)


def test_auto_refuses_a_store_built_with_your_own_model(data):
    with open_toy(data) as engine:
        engine.remember("u1", "Prefers green tea")
    with pytest.raises(mnemon.EmbedderError, match="toy-bow-32"):
        mnemon.Engine.open(data)


def test_a_langchain_embeddings_object_embeds_queries_with_embed_query(data):
    class Embeddings:
        model = "toy"

        def __init__(self) -> None:
            self.queries: List[str] = []

        def embed_documents(self, texts: List[str]) -> List[List[float]]:
            return [toy_vector(t) for t in texts]

        def embed_query(self, text: str) -> List[float]:
            self.queries.append(text)
            return toy_vector(text)

    e = Embeddings()
    with mnemon.Engine.open(data, embedder=e, dims=DIMS) as engine:
        assert engine.model_id.startswith("python:") and engine.model_id.endswith("Embeddings:toy")
        engine.remember("u1", "Sails a small boat")
        assert engine.recall("u1", "boat", mode="dense").hits
    assert e.queries == ["boat"]


def test_numpy_arrays_and_tuples_are_vectors(data):
    np = pytest.importorskip("numpy")

    def fn(texts):
        return np.array([toy_vector(t) for t in texts], dtype=np.float32)

    with mnemon.Engine.open(data, embedder=fn, embedder_name="np", dims=DIMS) as engine:
        engine.remember("u1", "Sails a small boat")


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda texts: [toy_vector(t)[:5] for t in texts], "5 components, expected 32"),
        (lambda texts: [toy_vector(t) for t in texts] * 2, "2 vectors for 1 texts"),
        (lambda texts: [[math.nan] * DIMS for _ in texts], "is NaN (must be finite"),
        (lambda texts: [[0.0] * DIMS for _ in texts], "all zeros"),
        (lambda texts: ["not a vector" for _ in texts], "not a sequence of numbers"),
        (lambda texts: 42, "not a list of vectors"),
        (lambda texts: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_a_wrong_answer_is_an_embedder_error_naming_the_embedder(data, answer, words):
    with mnemon.Engine.open(data, embedder=answer, embedder_name="broken-model", dims=DIMS) as engine:
        with pytest.raises(mnemon.EmbedderError) as e:
            engine.remember("u1", "Prefers green tea")
        assert "broken-model" in str(e.value) and words in str(e.value), str(e.value)
        assert engine.list("u1").memories == []


def test_a_failing_probe_refuses_the_open_and_creates_nothing(data):
    def broken(texts):
        raise RuntimeError("model offline")

    with pytest.raises(mnemon.EmbedderError, match="model offline"):
        mnemon.Engine.open(data, embedder=broken, embedder_name="offline")
    assert not data.exists()


def test_bad_settings_are_refused(data):
    async def later(texts):
        return [toy_vector(t) for t in texts]

    with pytest.raises(mnemon.InvalidInputError) as e:
        mnemon.Engine.open(data, embedder=later, dims=DIMS)
    assert e.value.field == "embedder" and "async" in e.value.message
    with pytest.raises(mnemon.InvalidInputError) as e:
        mnemon.Engine.open(data, embedder=42)
    assert e.value.field == "embedder"
    with pytest.raises(mnemon.InvalidInputError) as e:
        mnemon.Engine.open(data, embedder=Recorder(), embedder_name="hashing-v1-384", dims=DIMS)
    assert e.value.field == "embedder_name"
    with pytest.raises(mnemon.InvalidInputError) as e:
        mnemon.Engine.open(data, embedder=Recorder(), embedder_name="toy", dims=0)
    assert e.value.field == "dims"
    with pytest.raises(mnemon.InvalidInputError) as e:
        mnemon.Engine.open(data, embedder="hashing", dims=DIMS)
    assert e.value.field == "dims"
    assert not data.exists()


def test_deferred_embedding_calls_the_function_from_the_engine_thread(data):
    fn = Recorder()
    with open_toy(data, fn, embed_mode="deferred") as engine:
        r = engine.remember("u1", "Sails a small boat on weekends")
        assert r.vector_pending
        deadline = time.monotonic() + 30
        while engine.stats().embed_backlog and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ["Sails a small boat on weekends"] in fn.batches
        hits = engine.recall("u1", "boat", mode="dense").hits
        assert hits and hits[0].content == "Sails a small boat on weekends"


def test_threads_share_an_engine_with_a_python_embedder(data):
    with open_toy(data) as engine:
        errors = []

        def work(n: int) -> None:
            try:
                for i in range(10):
                    engine.remember("u1", f"thread {n} note {i} boat", dedup="off")
                    engine.recall("u1", "boat")
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert engine.stats().active_memories == 40


def test_remember_takes_your_own_vector(engine):
    v = [0.0] * engine.dim
    v[7] = 3.0
    engine.remember("u1", "Prefers green tea", vector=v)
    engine.remember("u1", "Sails a small boat")
    with pytest.raises(mnemon.InvalidInputError) as e:
        engine.remember("u1", "Short vector", vector=[1.0, 2.0])
    assert e.value.field == "vector" and "expected 384 components" in e.value.message
    with pytest.raises(mnemon.InvalidInputError) as e:
        engine.remember("u1", "NaN vector", vector=[math.nan] * engine.dim)
    assert e.value.field.startswith("vector")
    with pytest.raises(mnemon.InvalidInputError) as e:
        engine.remember("u1", "Text vector", vector="abc")
    assert e.value.field == "vector"
    assert sorted(m.content for m in engine.list("u1").memories) == ["Prefers green tea", "Sails a small boat"]


def test_embed_gives_unit_vectors_of_the_store_model_after_redaction(data):
    fn = Recorder()
    with open_toy(data, fn) as engine:
        vs = engine.embed(["Sails a boat", "call me at +44 20 7946 0958"])
        assert len(vs) == 2 and all(len(v) == DIMS for v in vs)
        assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5 for v in vs)
        assert "0958" not in fn.batches[-1][1]
        q = engine.embed(["boat"], query=True)[0]
        engine.remember("u1", "Prefers green tea", vector=engine.embed(["Prefers green tea"])[0])
        assert engine.recall("u1", "tea", mode="dense").hits
        assert len(q) == DIMS
        with pytest.raises(mnemon.InvalidInputError):
            engine.embed("not a list")  # type: ignore[arg-type]


def test_a_running_event_loop_does_not_matter(data):
    async def main() -> int:
        with open_toy(data) as engine:
            engine.remember("u1", "Sails a small boat")
            return len(engine.recall("u1", "boat").hits)

    assert asyncio.run(main()) == 1
