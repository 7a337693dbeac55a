"""The REST door of `mnemon serve` (/v1, /openapi.json), driven by httpx
and fuzzed by Schemathesis from the served OpenAPI document: no 5xx, every
answer matches its documented status, media type and schema, invalid
requests are refused, and a refused request writes nothing."""

import json
import subprocess

import httpx
import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.checks import not_a_server_error

from conftest import BIN, TOKEN, HttpServer

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def rest(tmp_path_factory):
    s = HttpServer(tmp_path_factory.mktemp("rest") / "data")
    yield s
    s.stop()


def client(s):
    return httpx.Client(base_url=s.base, headers=AUTH, timeout=60)


def written(c):
    """Events that change what is remembered (every kind but `accessed`,
    which recalls queue as bookkeeping)."""
    events = c.get("/v1/stats").json()["events"]
    return {k: v for k, v in events.items() if k != "accessed"}


def test_openapi_document_is_served_and_matches_the_cli(rest):
    with client(rest) as c:
        served = c.get("/openapi.json").json()
    printed = json.loads(subprocess.run([BIN, "schema", "--openapi"], capture_output=True, check=True).stdout)
    assert served == printed
    assert served["openapi"].startswith("3.1")
    ops = {op["operationId"] for path in served["paths"].values() for op in path.values()}
    assert {"remember", "recall", "context", "get", "history", "list", "forget", "forget_memory"} <= ops


def test_the_scenario_through_rest(rest):
    ns = "/v1/namespaces/scenario"
    with client(rest) as c:
        r = c.post(f"{ns}/memories", json={"content": "Lives in Porto", "key": "user.city"})
        assert r.status_code == 201, r.text
        first = r.json()["id"]
        r = c.post(f"{ns}/memories", json={"content": "Lives in Lisbon", "key": "user.city"})
        assert r.status_code == 201
        second = r.json()["id"]
        assert r.json()["action"] == "superseded"
        c.post(f"{ns}/memories", json={"content": "喜欢喝乌龙茶", "kind": "preference"})
        hits = c.post(f"{ns}/recall", json={"query": "which city does the user live in?"}).json()["hits"]
        assert hits[0]["id"] == second
        block = c.post(f"{ns}/context", json={"query": "plan a weekend trip"}).json()["context"]
        assert "Lives in Lisbon" in block and "Lives in Porto" not in block
        assert c.get(f"{ns}/memories/{second}").json()["content"] == "Lives in Lisbon"
        versions = c.get(f"{ns}/memories/{second}/history").json()["versions"]
        assert [v["id"] for v in versions] == [first, second]
        # Paging with cursors, typed query parameters.
        page = c.get(f"{ns}/memories", params={"limit": 1}).json()
        assert len(page["memories"]) == 1 and page["next_cursor"]
        rest_page = c.get(f"{ns}/memories", params={"limit": 10, "cursor": page["next_cursor"]}).json()
        assert len(page["memories"]) + len(rest_page["memories"]) == 2
        # Forget: a dry run writes nothing, then the forget, then 404.
        before = written(c)
        preview = c.delete(f"{ns}/memories/{second}", params={"dry_run": "true"}).json()
        assert preview["dry_run"] and preview["memory_ids"]
        assert written(c) == before
        assert c.delete(f"{ns}/memories/{second}", params={"reason": "user asked"}).status_code == 200
        r = c.get(f"{ns}/memories/{second}")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "not_found"


def test_errors_have_the_surface_shape_and_fitting_statuses(rest):
    ns = "/v1/namespaces/errors"
    with client(rest) as c:
        r = c.post(f"{ns}/recall", json={"query": "x", "top_k": 0})
        assert r.status_code == 400
        assert r.json()["error"] == {
            "code": "invalid_input",
            "field": "top_k",
            "message": r.json()["error"]["message"],
        }
        assert c.get(f"{ns}/memories", params={"limit": "many"}).json()["error"]["field"] == "limit"
        assert c.post(f"{ns}/memories", json={"namespace": "other", "content": "x"}).status_code == 400
        assert c.post(f"{ns}/memories", json={"content": "x", "bogus": 1}).json()["error"]["field"] == "bogus"
        assert c.post(f"{ns}/import", json={"path": "/etc/passwd"}).json()["error"]["field"] == "path"
        r = c.post(f"{ns}/memories", content=b"content=x", headers={"Content-Type": "text/plain"})
        assert r.status_code == 415
        assert c.put("/v1/stats").status_code == 405
        assert c.get("/v1/nowhere").status_code == 404
        r = c.post(f"{ns}/memories", content=b"{" + b" " * (9 * 1024 * 1024) + b"}", headers={"Content-Type": "application/json"})
        assert r.status_code == 413
    with httpx.Client(base_url=rest.base, timeout=60) as anonymous:
        r = anonymous.get("/v1/stats")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")
        r = anonymous.get("/v1/stats", headers={**AUTH, "Origin": "https://evil.example"})
        assert r.status_code == 403


def test_idempotency_key_replays_without_writing_twice(rest):
    ns = "/v1/namespaces/idem"
    with client(rest) as c:
        body = {"content": "Takes the 8:10 train to work"}
        first = c.post(f"{ns}/memories", json=body, headers={"Idempotency-Key": "req-1"})
        assert first.status_code == 201
        before = written(c)
        again = c.post(f"{ns}/memories", json=body, headers={"Idempotency-Key": "req-1"})
        assert again.status_code == 201 and again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        assert written(c) == before
        other = c.post(f"{ns}/memories", json={"content": "Something else"}, headers={"Idempotency-Key": "req-1"})
        assert other.status_code == 422 and other.json()["error"]["field"] == "Idempotency-Key"
        assert written(c) == before
        bad = c.post(f"{ns}/memories", json=body, headers={"Idempotency-Key": "has space"})
        assert bad.status_code == 400
        # The same request spaced and ordered differently is the same request.
        spaced = b'{ "content" :  "Takes the 8:10 train to work" }'
        again = c.post(f"{ns}/memories", content=spaced, headers={"Idempotency-Key": "req-1", "Content-Type": "application/json"})
        assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
        # An error keeps nothing: the corrected request runs under the same key.
        typo = c.post(f"{ns}/memories", json={"contnet": "Has a dog"}, headers={"Idempotency-Key": "req-2"})
        assert typo.status_code == 400
        fixed = c.post(f"{ns}/memories", json={"content": "Has a dog"}, headers={"Idempotency-Key": "req-2"})
        assert fixed.status_code == 201 and "idempotent-replayed" not in fixed.headers
        # A delete replays too: the second answer is the first's, not a 404.
        mid = c.post(f"{ns}/memories", json={"content": "Parks on level 3"}).json()["id"]
        d1 = c.delete(f"{ns}/memories/{mid}", headers={"Idempotency-Key": "del-1"})
        d2 = c.delete(f"{ns}/memories/{mid}", headers={"Idempotency-Key": "del-1"})
        assert d1.status_code == d2.status_code == 200 and d1.json() == d2.json()


# --- Fuzzing from the served OpenAPI document ---------------------------------

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _run(case, rest, checks):
    with client(rest) as c:
        before = written(c)
        response = case.call(headers=AUTH)
        case.validate_response(response, checks=checks, headers=AUTH)
        if response.status_code >= 400:
            assert written(c) == before, f"a refused request wrote: {case.method} {case.formatted_path}"


def _fuzz(rest, mode, checks):
    """Every operation of the served document, `FUZZ_EXAMPLES` generated
    requests each (Hypothesis, derandomised so a failure reproduces)."""
    schema = schemathesis.openapi.from_url(f"{rest.base}/openapi.json", headers=AUTH)
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) == sum(len(p) for p in schema.raw_schema["paths"].values())
    untestable = []
    for op in operations:

        @hypothesis.settings(
            max_examples=FUZZ_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
        @hypothesis.given(case=op.as_strategy(generation_mode=mode))
        def one(case):
            _run(case, rest, checks)

        try:
            one()
        except hypothesis.errors.Unsatisfiable:
            # No input of this operation can break the schema (it takes
            # none, or only free-form ones).
            assert mode == GenerationMode.NEGATIVE, f"{op.method.upper()} {op.path}"
            untestable.append(f"{op.method.upper()} {op.path}")
        except Exception as e:
            raise AssertionError(f"{op.method.upper()} {op.path}: {e}") from e
    assert len(untestable) <= 3, untestable


FUZZ_EXAMPLES = 25


def test_fuzz_valid_requests(rest):
    """Schema-valid requests: never a 5xx, every answer as documented, and
    one the surface still refuses (a range the schema cannot state, an id
    that does not exist) writes nothing."""
    _fuzz(rest, GenerationMode.POSITIVE, CHECKS)


def test_fuzz_invalid_requests(rest):
    """Requests that break the schema: refused (4xx), as documented, and
    nothing written."""
    _fuzz(rest, GenerationMode.NEGATIVE, [*CHECKS, negative_data_rejection])


def test_calls_beyond_max_in_flight_get_429_and_run_nothing(tmp_path):
    import threading

    s = HttpServer(tmp_path / "data", "--max-in-flight", "1")
    try:
        lines = "".join(
            json.dumps({"type": "memory", "content": f"Visited museum number {i} in the old town"}) + "\n"
            for i in range(20000)
        )
        done = {}

        def slow_import():
            with client(s) as c:
                # The calls below may take the only slot first: then wait.
                while True:
                    done["r"] = c.post("/v1/namespaces/busy/import", json={"text": lines})
                    if done["r"].status_code != 429:
                        return
                    done["waited"] = True

        t = threading.Thread(target=slow_import)
        t.start()
        refused = []
        with client(s) as c:
            n = 0
            while t.is_alive():
                n += 1
                r = c.post("/v1/namespaces/busy/memories", json={"content": f"Locker word zebra{n}"})
                if r.status_code == 429:
                    refused.append((r, f"Locker word zebra{n}"))
        t.join()
        assert done["r"].status_code == 200, done["r"].text
        assert refused, "the import ended before a second call arrived"
        r = refused[0][0]
        assert r.headers["retry-after"] == "1"
        assert r.json()["error"]["code"] == "unavailable"
        stored, cursor = set(), None
        with client(s) as c:
            while True:
                page = c.get("/v1/namespaces/busy/memories", params={"limit": 1000, **({"cursor": cursor} if cursor else {})}).json()
                stored.update(m["content"] for m in page["memories"])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
        assert not {text for _, text in refused} & stored, "a refused call wrote"
    finally:
        s.stop()


def test_verify_shred_over_rest_proves_a_shredded_namespace_unreadable(tmp_path):
    """An encrypted store served over REST: the forget of a namespace
    destroys its key, and `POST …/verify-shred` answers the proof the CLI
    gives for the same store. Paths of the server's machine are not taken."""
    key = tmp_path / "store.key"
    made = subprocess.run([BIN, "key", "new", str(key)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    s = HttpServer(tmp_path / "data", "--key-file", str(key))
    try:
        with client(s) as c:
            for text in ["Lena's passport number is X4417 amber", "Lena is allergic to shellfish"]:
                assert c.post("/v1/namespaces/lena/memories", json={"content": text}).status_code == 201
            never = c.post("/v1/namespaces/lena/verify-shred", json={})
            assert never.status_code == 400 and never.json()["error"]["field"] == "namespace", never.text
            gone = c.delete("/v1/namespaces/lena", params={"reason": "account closed"})
            assert gone.status_code == 200 and gone.json()["key_shredded"] is True, gone.text
            r = c.post("/v1/namespaces/lena/verify-shred", json={})
            assert r.status_code == 200, r.text
            proof = r.json()
            assert proof["verified"] is True and proof["shredded_keys"] == [1], proof
            [store] = proof["checks"]
            assert store["source"] == "store" and store["sealed"] >= 2 and store["opened"] == 0, proof
            files = c.post("/v1/namespaces/lena/verify-shred", json={"backups": ["/etc"]})
            assert files.status_code == 400 and files.json()["error"]["field"] == "backups", files.text
    finally:
        s.stop()
