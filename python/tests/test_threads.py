"""One engine shared by many Python threads: every acknowledged write is
there, and the GIL is released while the engine works."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from typing import Dict, List, Tuple

import mnemon

THREADS = 8
CALLS = 200


def test_eight_threads_two_hundred_calls_each(data):
    acknowledged: Dict[int, List[Tuple[int, str]]] = {t: [] for t in range(THREADS)}
    recalls = [0] * THREADS
    errors: List[BaseException] = []
    start = threading.Barrier(THREADS)

    with mnemon.Engine.open(data, embedder="hashing") as engine:

        def work(t: int) -> None:
            try:
                start.wait()
                ns = f"t{t % 4}"  # two threads per namespace
                for i in range(CALLS):
                    if i % 4 == 3:
                        hits = engine.recall(ns, f"note {t} {i - 1}", top_k=3, record_access=i % 8 == 3)
                        recalls[t] += 1
                        assert len(hits.hits) <= 3
                    else:
                        text = f"{uuid.uuid4().hex} note {uuid.uuid4().hex} {t}-{i}"
                        r = engine.remember(ns, text, key=f"thread{t}.note{i}")
                        acknowledged[t].append((r.id, text))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        assert sum(recalls) == THREADS * CALLS // 4
        # Every acknowledged write is readable now...
        for t, acks in acknowledged.items():
            assert len(acks) == CALLS * 3 // 4
            for mid, text in acks:
                assert engine.get(f"t{t % 4}", mid).content == text
        assert engine.stats().active_memories == THREADS * CALLS * 3 // 4
        assert engine.check().consistent

    # ...and after reopening (replay).
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        for t, acks in acknowledged.items():
            listed = {}
            cursor = None
            while True:
                page = engine.list(f"t{t % 4}", limit=1000, cursor=cursor)
                listed.update({m.id: m.content for m in page.memories})
                cursor = page.next_cursor
                if cursor is None:
                    break
            for mid, text in acks:
                assert listed[mid] == text


def test_the_gil_is_released_during_calls(data):
    """While one thread is inside a long engine call, another thread runs
    Python code: its ticks land inside the call's window. (Holding the GIL
    for the call would leave none there.)"""
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        for i in range(30):
            engine.remember("big", " ".join(f"word{i}x{j}" for j in range(400)))
        old = sys.getswitchinterval()
        # A long switch interval: without a released GIL the ticking thread
        # could not run during the call at all.
        sys.setswitchinterval(1.0)
        try:
            ticks: List[float] = []
            stop = threading.Event()

            def tick() -> None:
                while not stop.is_set():
                    ticks.append(time.perf_counter())
                    time.sleep(0)

            windows = []
            th = threading.Thread(target=tick)
            th.start()
            try:
                time.sleep(0.05)
                for _ in range(3):
                    t0 = time.perf_counter()
                    engine.compact()
                    t1 = time.perf_counter()
                    windows.append((t0, t1))
            finally:
                stop.set()
                th.join()
        finally:
            sys.setswitchinterval(old)
        inside = [t for t in ticks for (a, b) in windows if a < t < b]
        assert inside, f"no Python ran during {len(windows)} calls of {[b - a for a, b in windows]} s"
