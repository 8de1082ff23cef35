"""A structure-aware fuzzer of the HTTP service: the real request shapes of API v1 (articles,
batches, result sets, origin queries, ids in paths, query parameters) filled with hostile
values, plus malformed bodies, deep nesting, wrong methods and content types.

Used by ``tests/test_service_fuzz.py`` (a small run in the normal suite, 20,000 requests a
backend under ``-m slow``).  Deterministic for a seed.  A request "fails" when the answer is
a 5xx, or an error that is not the service's JSON error shape.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import random
import urllib.parse
from typing import Any

VALID_TEXT = (
    "Shares rose sharply on Monday in Tokyo as exporters led gains. Analysts expect the "
    "central bank to hold rates at 2.5 percent this week, dealers said."
)


class Raw(str):
    """A JSON token written as is (NaN, 10**5000 as digits, ...)."""


STRINGS: list[Any] = [
    "",
    " ",
    "a",
    "seed-0",
    "\x00",
    "a\x00b",
    "\ud800",
    "a\udfffb",
    "\ud83d\ude00",  # a surrogate pair: one emoji, valid once decoded
    "\u202eevil",
    "😀" * 10,
    "x" * 2048,
    "x" * 2049,
    "é" * 1025,
    "/",
    "../..",
    "%00",
    "\\",
    '"',
    "<script>alert(1)</script>",
    "\n\t\r",
    " " * 200,
    "null",
    "1e999",
    VALID_TEXT,
    VALID_TEXT.upper(),
    "مرحبا بالعالم " * 20,
    "中文新闻。" * 50,
]
BIG_STRINGS = ["x" * 100_000, "word " * 50_000, "y" * 1_000_001]
NUMBERS: list[Any] = [
    0,
    1,
    -1,
    0.5,
    1.0,
    1e-320,
    1e308,
    -1e308,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    True,
    False,
    Raw("NaN"),
    Raw("Infinity"),
    Raw("-Infinity"),
    Raw("1" * 5000),
    Raw("1e999"),
    Raw("-0"),
    Raw("0.5e-400"),
]
DATES = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59.999999+00:01",
    "2024-02-30",
    "2024-13-01",
    "2024-01-01T24:00:00",
    "2024-01-01T23:59:60Z",
    "yesterday",
    "",
    "2024-01-01T00:00:00+99:00",
    "+002024-01-01",
    "2024-W01",
    "2024-01-01T00:00:00.1234567Z",
    "1987-02-26T15:01:01Z",
    "2024-03-01T12:00:00+05:30",
]
PATHS_GET = ["/healthz", "/metrics", "/", "/static/app.js", "/openapi.json", "/v1/events"]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]


def dumps(value: Any) -> str:
    """JSON with :class:`Raw` tokens as is and lone surrogates as ``\\ud800`` escapes."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value)


@dataclasses.dataclass
class Request:
    method: str
    path: str
    body: bytes | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path.split('?')[0][:40]}"


class Fuzzer:
    """Draws hostile requests of every endpoint's shape."""

    def __init__(self, seed: int, known_ids: list[str]) -> None:
        self.rng = random.Random(seed)
        self.known = known_ids
        self.counter = 0

    # --- values ---------------------------------------------------------------------------
    def string(self) -> Any:
        r = self.rng.random()
        if r < 0.02:
            return self.rng.choice(BIG_STRINGS)
        if r < 0.15 and self.known:
            return self.rng.choice(self.known)
        return self.rng.choice(STRINGS)

    def value(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if r < 0.35:
            return self.string()
        if r < 0.6:
            return self.rng.choice(NUMBERS)
        if r < 0.7:
            return None
        if r < 0.8:
            return self.rng.choice(DATES)
        if depth > 2:
            return self.rng.choice([[], {}])
        if r < 0.9:
            return [self.value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return {self.rng.choice(["id", "text", "x", ""]): self.value(depth + 1)}

    def maybe(self, good: Any, hostile_share: float = 0.5) -> Any:
        return self.value() if self.rng.random() < hostile_share else good

    def fresh_id(self) -> str:
        self.counter += 1
        return f"fz-{self.counter}-{self.rng.randrange(10**6)}"

    def text(self) -> Any:
        if self.rng.random() < 0.5:
            words = VALID_TEXT.split()
            self.rng.shuffle(words)
            return " ".join(words) + f" {self.rng.randrange(10**6)}."
        return self.string()

    # --- bodies ---------------------------------------------------------------------------
    def article(self) -> Any:
        doc: dict[str, Any] = {
            "id": self.maybe(self.fresh_id(), 0.3),
            "text": self.maybe(self.text(), 0.3),
        }
        if self.rng.random() < 0.6:
            doc["date"] = self.maybe(self.rng.choice(DATES), 0.2)
        if self.rng.random() < 0.4:
            doc["title"] = self.maybe("A title", 0.4)
        if self.rng.random() < 0.3:
            doc["source"] = self.maybe("wire", 0.4)
        if self.rng.random() < 0.1:
            doc[self.rng.choice(["url", "extra", "lang", "articles"])] = self.value()
        if self.rng.random() < 0.1:
            doc.pop(self.rng.choice(["id", "text"]))
        return doc if self.rng.random() > 0.05 else self.value()

    def documents_body(self) -> Any:
        r = self.rng.random()
        if r < 0.5:
            return self.article()
        batch = [self.article() for _ in range(self.rng.choice([0, 1, 2, 5, 20]))]
        if r < 0.75:
            return batch
        body: dict[str, Any] = {"articles": self.maybe(batch, 0.1)}
        if self.rng.random() < 0.1:
            body["other"] = 1
        return body

    def dedup_item(self) -> Any:
        r = self.rng.random()
        if r < 0.4:
            return self.maybe(self.rng.choice(self.known) if self.known else "x", 0.3)
        if r < 0.6:
            return {"id": self.maybe(self.rng.choice(self.known or ["x"]), 0.3)}
        if r < 0.9:
            item: dict[str, Any] = {"text": self.maybe(self.text(), 0.3)}
            if self.rng.random() < 0.5:
                item["id"] = self.maybe(self.fresh_id(), 0.3)
            return item
        return self.value()

    def dedup_body(self) -> Any:
        n = self.rng.choice([0, 1, 3, 10, 100, 1001])
        body: dict[str, Any] = {"items": [self.dedup_item() for _ in range(n)]}
        if n == 1001 and self.rng.random() < 0.5:
            body["items"] = [self.rng.choice(self.known or ["x"])] * n
        if self.rng.random() < 0.5:
            body["threshold"] = self.maybe(self.rng.choice([0.5, 1, 0.01]), 0.6)
        if self.rng.random() < 0.05:
            body["extra"] = self.value()
        return body if self.rng.random() > 0.05 else self.value()

    def origin_body(self) -> Any:
        r = self.rng.random()
        if r < 0.4:
            return {"id": self.maybe(self.rng.choice(self.known or ["x"]), 0.4)}
        if r < 0.8:
            return {"text": self.maybe(self.text(), 0.4)}
        if r < 0.9:
            return {"id": self.string(), "text": self.string()}
        return self.value()

    def malformed(self) -> bytes:
        depth = self.rng.choice([33, 1000, 100_000])
        return self.rng.choice(
            [
                b"[" * depth + b"]" * depth,
                b'{"a":' * depth + b"1" + b"}" * depth,
                b"{not json",
                b"\xff\xfe\x00",
                b'{"id": "a", "id": "b", "text": "t"}',
                b"",
                b"   ",
                b'"\\ud800"',
                b'{"text": "\\udc00\\ud800"}',
                b"\x00" * 10,
                bytes(self.rng.randrange(256) for _ in range(64)),
                b'{"items": [' + b'"a",' * 2000 + b'"a"]}',
            ]
        )

    # --- requests -------------------------------------------------------------------------
    def encode(self, body: Any) -> bytes:
        return dumps(body).encode("utf-8", "surrogatepass")

    def path_id(self) -> str:
        raw = self.string() if self.rng.random() < 0.7 else self.fresh_id()
        # at most 3,000 characters: a URL stays under HTTP clients' own length limits
        raw = str(raw)[:3000]
        return urllib.parse.quote(raw.encode("utf-8", "surrogatepass"), safe="")

    def query(self, **params: Any) -> str:
        pairs = []
        for k, v in params.items():
            if self.rng.random() < 0.7:
                text = (v if isinstance(v, str) else dumps(v))[:3000]
                pairs.append((k, text.encode("utf-8", "surrogatepass")))
        return ("?" + urllib.parse.urlencode(pairs)) if pairs else ""

    def request(self) -> Request:
        r = self.rng.random()
        json_type = {"content-type": "application/json"}
        if r < 0.25:
            return Request("POST", "/v1/documents", self.encode(self.documents_body()), json_type)
        if r < 0.45:
            return Request("POST", "/v1/dedup", self.encode(self.dedup_body()), json_type)
        if r < 0.55:
            return Request("POST", "/v1/origin", self.encode(self.origin_body()), json_type)
        if r < 0.62:
            path = self.rng.choice(["/v1/documents", "/v1/dedup", "/v1/origin"])
            kind = self.rng.choice(["application/json", "text/plain", "application/x-www-form"])
            return Request("POST", path, self.malformed(), {"content-type": kind})
        if r < 0.72:
            suffix = self.rng.choice(["", "/similar"])
            q = self.query(limit=self.rng.choice([*NUMBERS, "5", "x", "-1"]))
            return Request("GET", f"/v1/documents/{self.path_id()}{suffix}{q}")
        if r < 0.8:
            q = self.query(
                since=self.rng.choice([*DATES, self.string()]),
                until=self.rng.choice([*DATES, self.string()]),
            )
            return Request("GET", f"/v1/events{q}")
        if r < 0.85:
            return Request("GET", f"/v1/events/{self.path_id()}")
        if r < 0.9:
            q = self.query(limit=self.rng.choice([*NUMBERS, "5", "1000", "1001"]))
            return Request("GET", f"/v1/documents{q}")
        if r < 0.95:
            path = self.rng.choice([*PATHS_GET, "/v1/documents", "/v1/dedup", "/v1/origin"])
            body = self.encode(self.value()) if self.rng.random() < 0.5 else None
            return Request(self.rng.choice(METHODS), path, body)
        return Request("GET", self.rng.choice(PATHS_GET))


@dataclasses.dataclass
class Report:
    requests: int = 0
    statuses: collections.Counter[int] = dataclasses.field(default_factory=collections.Counter)
    by_endpoint: dict[str, collections.Counter[int]] = dataclasses.field(default_factory=dict)
    failures: list[str] = dataclasses.field(default_factory=list)

    def add(self, req: Request, status: int, problem: str | None) -> None:
        self.requests += 1
        self.statuses[status] += 1
        self.by_endpoint.setdefault(req.endpoint, collections.Counter())[status] += 1
        if problem is not None:
            body = (req.body or b"")[:200]
            self.failures.append(f"{req.method} {req.path[:200]} {body!r} -> {status}: {problem}")


def check_answer(req: Request, status: int, headers: Any, content: bytes) -> str | None:
    """Why an answer is wrong (``None``: it is fine)."""
    if status >= 500:
        return content[:300].decode("utf-8", "replace")
    if status >= 400 and req.method != "HEAD":
        if not headers.get("content-type", "").startswith("application/json"):
            return f"error without JSON: {headers.get('content-type')}"
        try:
            error = json.loads(content)["error"]
            if not error["message"] or error["status"] != status:
                return f"error body {error!r}"
        except (ValueError, KeyError, TypeError) as exc:
            return f"error body not the service's shape: {exc}"
    return None


def run(client: Any, n: int, seed: int, known_ids: list[str]) -> Report:
    """Send ``n`` fuzzed requests through a ``TestClient``; the report counts statuses and
    keeps the failures."""
    fuzzer = Fuzzer(seed, known_ids)
    report = Report()
    for _ in range(n):
        req = fuzzer.request()
        res = client.request(req.method, req.path, content=req.body, headers=req.headers)
        report.add(
            req, res.status_code, check_answer(req, res.status_code, res.headers, res.content)
        )
    return report
