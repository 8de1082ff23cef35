"""A first run as the README gives it, in a fresh folder: the service starts (with and
without the shared data), the page stores an article, the API docs load without internet,
``ingest`` and the Python API use the one default store ``./neardup.db``, a bare path is a
store, and no file appears outside the current folder (the home folder may gain caches).
Run as an unprivileged user when this machine allows it (root drops privileges with
setpriv); that variant skips with the reason otherwise, and the same checks run as the
current user.  The filesystem root is not watched: other programs on a shared machine may
write there; a store URL can no longer point there by accident (tests/test_store.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from neardup.samples import sample_corpus
from test_service_process import free_port

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534


def neardup() -> list[str]:
    script = Path(sys.executable).with_name("neardup")
    return [str(script)] if script.exists() else [sys.executable, "-m", "neardup"]


def unprivileged_prefix() -> list[str]:
    """The command prefix that runs as nobody, or a skip with the reason it cannot."""
    if os.geteuid() != 0:
        return []  # already unprivileged
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop privileges")
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import neardup"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(
            f"the interpreter {os.path.realpath(sys.executable)} (or the installed package) "
            f"cannot be run by an unprivileged user here: {probe.stderr.strip()[-200:]}"
        )
    return prefix


def tree(root: Path) -> set[str]:
    """Every path under ``root`` (relative), without Python's and numba's caches."""
    if not root.exists():
        return set()
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }


STRAY = re.compile(r"(neardup|news)\.db")


def stray_names(folder: Path) -> set[str]:
    """Store files directly in ``folder`` (the filesystem root, the repository, ...)."""
    try:
        return {p.name for p in folder.iterdir() if STRAY.match(p.name)}
    except OSError:
        return set()


class Session:
    """A fresh working folder with its own HOME, and the commands run in it."""

    def __init__(self, base: Path, prefix: list[str], data: Path | None) -> None:
        self.base = base
        self.work = base / "work"
        self.home = base / "home"
        for folder in (self.work, self.home):
            folder.mkdir(parents=True)
        if prefix:
            for folder in (base, self.work, self.home):
                os.chown(folder, NOBODY, NOBODY)
        self.prefix = prefix
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TMPDIR": str(self.home),
            "NEARDUP_DATA": str(data if data is not None else base / "no-shared-data"),
        }

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.prefix, *neardup(), *args],
            cwd=self.work,
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.prefix, sys.executable, "-c", code],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def serve(self, *args: str) -> Iterator[str]:
        port = free_port()
        proc = subprocess.Popen(
            [*self.prefix, *neardup(), "serve", "--port", str(port), *args],
            cwd=self.work,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")
                try:
                    if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "serve did not start in 180 s"
                time.sleep(0.2)
            yield url
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
            if proc.stderr is not None:
                proc.stderr.close()


def first_run(base: Path, prefix: list[str], data: Path | None) -> None:
    session = Session(base, prefix, data)
    watched_repo = stray_names(REPO)

    # README command 1: the service on the default store, preloaded
    preload = "300" if data is not None else "2000"
    server = session.serve("--preload", preload)
    url = next(server)
    try:
        health = httpx.get(url + "/healthz").json()
        assert health["documents"] == (300 if data is not None else len(sample_corpus()))
        page = httpx.get(url + "/").text
        assert 'id="store"' in page and 'id="import"' in page and "/v1/documents" in page
        docs = httpx.get(url + "/docs").text
        assets = re.findall(r'(?:src|href)="([^"]+)"', docs)
        assert assets and all(a.startswith("/") for a in assets), assets  # nothing remote
        for asset in assets:
            assert httpx.get(url + asset).status_code == 200, asset
        stored = httpx.post(url + "/v1/documents", json={"id": "mine", "text": "A first story."})
        assert stored.status_code == 200, stored.text
    finally:
        next(server, None)

    # ingest uses the same default store; the README's Python tour opens a bare path
    rows = "".join(json.dumps(r) + "\n" for r in sample_corpus()[:5])
    (session.work / "more.jsonl").write_text(rows, encoding="utf-8")
    ingest = session.run("ingest", "more.jsonl")
    assert ingest.returncode == 0, ingest.stderr
    tour = session.python(
        "import neardup\n"
        "with neardup.NewsIndex('news.db') as news:\n"
        "    news.ingest(neardup.Article(id='a1', text='Shares rose on Monday.'))\n"
        "with neardup.NewsIndex() as default:\n"
        "    print(len(default))\n"
    )
    assert tour.returncode == 0, tour.stderr
    fresh = 5 if data is not None else 0  # the sample articles are stored already without data
    assert int(tour.stdout) == health["documents"] + 1 + fresh

    made = tree(session.work)
    assert {"neardup.db", "news.db", "more.jsonl"} <= made, made
    assert stray_names(REPO) <= watched_repo
    assert {p.split("/")[0] for p in tree(base)} <= {"work", "home"}
    # HOME may only gain caches (numba's, when the package's own folder is read-only)
    assert all(p.startswith(".cache") for p in tree(session.home)), tree(session.home)


def test_first_run_without_shared_data_keeps_files_in_the_folder(tmp_path: Path) -> None:
    first_run(tmp_path, [], None)


@pytest.mark.slow
def test_first_run_with_shared_data(tmp_path: Path) -> None:
    from conftest import DATA_DIR, data_path

    data_path("reuters21578", "docs.jsonl.gz")
    first_run(tmp_path, [], DATA_DIR)


@pytest.mark.slow  # its first process compiles every kernel into a fresh cache: minutes
def test_first_run_as_an_unprivileged_user() -> None:
    prefix = unprivileged_prefix()
    # pytest's own temporary folders are private to their owner: a folder nobody can reach
    base = Path(tempfile.mkdtemp(prefix="neardup-first-run-"))
    try:
        os.chmod(base, 0o755)
        first_run(base / "nobody", prefix, None)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_no_home_and_a_read_only_install_still_run(tmp_path: Path) -> None:
    # A service account: no writable home.  As root the package folder is writable, so this
    # checks the fallback's decision itself in a clean interpreter.
    code = (
        "import os, neardup; print(os.environ.get('NUMBA_CACHE_DIR', ''));import neardup.similarity"
    )
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent"}
    prefix = unprivileged_prefix() if os.geteuid() == 0 else []
    done = subprocess.run(
        [*prefix, sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/"
    )
    assert done.returncode == 0, done.stderr
    writable_package = os.access(Path(neardup_file()).parent, os.W_OK) and not prefix
    assert (done.stdout.strip() == "") == writable_package


def neardup_file() -> str:
    import neardup

    return str(neardup.__file__)
