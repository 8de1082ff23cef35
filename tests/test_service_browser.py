"""The web page in a real headless browser (Debian's chromium driven by Selenium).

Skips with a reason when chromium, chromedriver or selenium is absent, unless
NEARDUP_REQUIRE_SERVICES is set (install them with ``apt-get install chromium
chromium-driver``; selenium comes with the ``test`` extra).  Saves docs/img/service.png (the
screenshot in the docs).  The first test needs the Reuters sample; the second starts from an
empty store, as on a machine with nothing but neardup: storing, importing, the event view,
the counts, and the API docs served without internet.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from test_service_process import Server
from test_story import story_text

CHROMIUM = os.environ.get("NEARDUP_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("NEARDUP_CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "img" / "service.png"


def need(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("NEARDUP_REQUIRE_SERVICES"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    need(Path(CHROMIUM).exists() or bool(shutil.which("chromium")), f"no chromium at {CHROMIUM}")
    need(Path(CHROMEDRIVER).exists(), f"no chromedriver at {CHROMEDRIVER}")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        need(False, "selenium is not installed (pip install selenium)")
        raise
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1300",
    ):
        options.add_argument(flag)
    # An explicit driver path: Selenium Manager never downloads anything.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from conftest import data_path, read_jsonl_gz

    reuters = data_path("reuters21578", "docs.jsonl.gz")
    store = tmp_path_factory.mktemp("page") / "page.db"
    server = Server(f"sqlite:///{store}", "--preload", "300", "--preload-path", str(reuters))
    docs = [d for d in read_jsonl_gz(reuters, limit=400) if d["text"].strip()][:300]
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            base = max(docs[:100], key=lambda d: len(d["text"]))
            t0 = dt.datetime(1987, 3, 2, 9, tzinfo=dt.UTC)
            story = [
                {
                    "id": f"update-{i}",
                    "text": base["text"] + f" Update {i}: officials said more would follow.",
                    "title": f"{base.get('title') or 'Story'} (update {i})",
                    "date": (t0 + dt.timedelta(minutes=9 * i)).isoformat(),
                    "source": ["Reuters", "AP", "AFP"][i % 3],
                }
                for i in range(18)
            ]
            assert client.post("/v1/documents", json=story).status_code == 200
            # two prose stories (not tables of figures) make the passages easy to see
            first = max(docs[5:60], key=lambda d: len(d["text"]) if d is not base else 0)
            second = max(docs[120:200], key=lambda d: len(d["text"]))
            patchwork = {
                "id": "patchwork-1",
                "title": "A story stitched from two wire reports",
                "date": "1987-03-05T12:00:00Z",
                "text": first["text"][:700]
                + "\n\nOur own reporter adds a paragraph nobody published before, about what"
                " the figures mean for readers here.\n\n" + second["text"][:700],
            }
            assert client.post("/v1/documents", json=patchwork).status_code == 200
            # three reports of one invented story, written independently
            rng = random.Random(5)
            topic = ["harbour", "ferry", "strike", "dockers", "union", "wages", "port"]
            coverage = [
                {
                    "id": f"coverage-{i}",
                    "text": story_text(rng, topic, 160),
                    "title": f"Dockers strike at the ferry harbour ({outlet})",
                    "date": (t0 + dt.timedelta(hours=30 + i)).isoformat(),
                    "source": outlet,
                }
                for i, outlet in enumerate(["Tribune", "Courier", "Herald"])
            ]
            assert client.post("/v1/documents", json=coverage).status_code == 200
        yield {
            "url": server.url,
            "sources": {first["id"], second["id"]},
            "story": story,
            "base": base["id"],
        }
    finally:
        server.stop()


def wait_until(driver: Any, condition: Any, timeout: float = 20) -> Any:
    """``condition(driver)`` once it is truthy; the page re-rendering a list under the test
    (an element going stale) counts as not yet."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(condition)


def wait_for(driver: Any, css: str, count: int = 1, timeout: float = 20) -> list[Any]:
    from selenium.webdriver.common.by import By

    def found(d: Any) -> list[Any] | bool:
        elements = [e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
        return elements if len(elements) >= count else False

    return wait_until(driver, found, timeout)  # type: ignore[no-any-return]


def test_page_marks_copied_passages_links_origins_and_shows_events(
    browser: Any, site: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(site["url"] + "/")
    items = wait_for(driver, "#articles li a", count=50)
    assert any(i.get_attribute("data-id") == "patchwork-1" for i in items)
    assert "articles stored" in driver.find_element(By.ID, "health").text

    # pick the article: its copied passages are highlighted and linked to their origins
    driver.get(site["url"] + "/#doc=patchwork-1")
    marks = wait_for(driver, "#view-text mark.copied a", count=2)
    linked = {m.get_attribute("data-id") for m in marks}
    assert linked == site["sources"], linked
    text = driver.find_element(By.ID, "view-text").text
    assert "Our own reporter adds a paragraph" in text
    assert all("Our own reporter" not in m.text for m in marks)  # the novel part is not marked
    assert "% copied" in driver.find_element(By.ID, "view-summary").text
    origins = wait_for(driver, "#view-origins li a", count=2)
    assert {o.get_attribute("data-id") for o in origins} == site["sources"]

    # comparing with one chosen source marks the aligner's passages, and only them
    chosen = origins[0].get_attribute("data-id")
    aligned = httpx.post(
        site["url"] + "/v1/align", json={"id": "patchwork-1", "source": chosen}
    ).json()["passages"]
    assert aligned
    driver.find_element(By.CSS_SELECTOR, f'#view-origins button[data-source="{chosen}"]').click()
    wait_for(driver, "#view-summary a")
    assert "taken from " + chosen in driver.find_element(By.ID, "view-summary").text
    marks_now = wait_for(driver, "#view-text mark.copied a", count=len(aligned))
    assert {m.get_attribute("data-id") for m in marks_now} == {chosen}
    full = driver.execute_script("return document.getElementById('view-text').textContent")
    got = [m.get_attribute("textContent") for m in marks_now]
    assert got == [full[p["this_offset"] : p["this_offset"] + p["this_length"]] for p in aligned]
    assert all("Our own reporter" not in g for g in got)
    driver.find_element(By.CSS_SELECTOR, "#view-summary a").click()  # back to all origins
    marks = wait_for(driver, "#view-text mark.copied a", count=2)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    wait_for(driver, "#view-similar li")
    driver.save_screenshot(str(SCREENSHOT))

    # following a highlight opens the earlier article it came from
    target = marks[0].get_attribute("data-id")
    marks[0].click()
    wait_for(driver, "#view-meta")
    title_id = driver.find_element(By.ID, "view-meta").text
    assert title_id.startswith(target)

    # a duplicate shows its original among its copies
    driver.get(site["url"] + "/#doc=update-5")
    wait_for(driver, "#view-dups li a")
    # the updates copy a preloaded, earlier article: that one is their original
    first = wait_until(
        driver,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#view-dups li a")[0].get_attribute("data-id"),
    )
    assert first == site["base"]
    assert "original of this article" in driver.find_element(By.ID, "view-dups").text

    # independent reports of one story are more coverage, apart from the copies
    driver.get(site["url"] + "/#doc=coverage-0")
    more = wait_for(driver, "#view-similar li.coverage a", count=2)
    assert {a.get_attribute("data-id") for a in more} == {"coverage-1", "coverage-2"}
    assert "Courier" in driver.find_element(By.ID, "view-similar").text
    assert "coverage-1" not in driver.find_element(By.ID, "view-dups").text

    # the events list opens a timeline: a readable title, first publisher, sources, and
    # each article marked as the first report, an independent report or a copy
    events = wait_for(driver, "#events li a")
    assert "articles" in driver.find_element(By.ID, "events").text
    events[0].click()
    timeline = wait_for(driver, "#event-articles li", count=16)
    assert any("update-0" in li.text or "(update 0)" in li.text for li in timeline)
    bars = wait_for(driver, "#event-growth div")
    assert bars
    meta = driver.find_element(By.ID, "event-meta").text
    assert "first publisher" in meta and "copies" in meta and "sources:" in meta
    title = driver.find_element(By.ID, "event-title").text
    assert title and not title.startswith("Breaking event"), title
    kinds = [li.find_element(By.CSS_SELECTOR, ".kind").text for li in timeline]
    assert kinds[0] == "first report" and any(k.startswith("copy of") for k in kinds)

    # paste a text: traced against every stored article, nothing stored
    driver.get(site["url"] + "/")
    wait_for(driver, "#articles li a")
    story = site["story"][0]["text"]
    area = driver.find_element(By.ID, "text")
    driver.execute_script("arguments[0].value = arguments[1];", area, story[:600])
    driver.find_element(By.ID, "trace").click()
    pasted = wait_for(driver, "#view-text mark.copied")
    assert pasted and "Pasted text" in driver.find_element(By.ID, "view-title").text

    # an unknown article is an error message on the page, not a blank screen
    driver.get(site["url"] + "/#doc=no-such-article")
    error = wait_for(driver, "#error")
    assert "no-such-article" in error[0].text


@pytest.fixture(scope="module")
def empty_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("empty") / "empty.db"
    server = Server(str(store))
    try:
        yield server.url
    finally:
        server.stop()


def counts(driver: Any) -> tuple[int, int]:
    """(articles, events) as the header states them."""
    from selenium.webdriver.common.by import By

    text = driver.find_element(By.ID, "health").text
    found = re.fullmatch(r"(\d+) articles? stored · (\d+) breaking events?", text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


def test_page_stores_imports_and_shows_the_event_on_an_empty_store(
    browser: Any, empty_site: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from neardup.samples import sample_corpus

    driver = browser
    driver.get(empty_site + "/")
    welcome = wait_for(driver, "#welcome")[0]
    assert "This store is empty" in welcome.text and "--preload" in welcome.text
    links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "#welcome a")]
    assert any(link.endswith("/docs#/documents/ingest_v1_documents_post") for link in links)
    assert counts(driver) == (0, 0)

    # store a pasted article: it is added, shown, and counted
    area = driver.find_element(By.ID, "text")
    text = "The lighthouse keeper retired after forty years. A festival will mark the day."
    driver.execute_script("arguments[0].value = arguments[1];", area, text)
    driver.find_element(By.ID, "paste-title").send_keys("Keeper retires")
    driver.find_element(By.ID, "store").click()
    notice = wait_for(driver, "#notice")[0]
    assert notice.text.startswith("Stored as pasted-") and notice.text.endswith(": new.")
    assert driver.find_element(By.ID, "view-title").text == "Keeper retires"
    WebDriverWait(driver, 20).until(lambda d: counts(d) == (1, 0))

    # import a JSON Lines file with two malformed lines and an empty text
    rows = [json.dumps(r) for r in sample_corpus()]
    lines = [*rows[:3], "{broken", *rows[3:], '{"id": "no-text"}', '{"id": "e", "text": " "}']
    upload = tmp_path / "import.jsonl"
    upload.write_text("\n".join(lines) + "\n", encoding="utf-8")
    driver.find_element(By.ID, "import-file").send_keys(str(upload))
    driver.find_element(By.ID, "import-button").click()
    status = WebDriverWait(driver, 120).until(
        lambda d: (
            (t := d.find_element(By.ID, "import-status").text).startswith("import.jsonl:") and t
        )
    )
    numbers = re.match(
        r"import\.jsonl: (\d+) new, (\d+) duplicate, (\d+) partial, (\d+) similar", status
    )
    assert numbers, status
    new, duplicate, partial, similar = map(int, numbers.groups())
    assert new + duplicate + partial + similar == len(rows) and duplicate >= 17 and similar >= 1
    assert "1 article with empty text skipped; 2 lines not imported" in status
    problems = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#import-problems li")]
    assert problems[0].startswith("line 4: not valid JSON") and problems[1].startswith(
        f"line {len(rows) + 2}: "
    )
    WebDriverWait(driver, 20).until(lambda d: counts(d) == (len(rows) + 1, 1))

    # the sidebar's event count is the event view's; the source stands apart from the title
    event = wait_for(driver, "#events li")[0]
    listed = re.search(r"(\d+) articles", event.text)
    assert listed, event.text
    event.find_element(By.CSS_SELECTOR, "a").click()
    meta = wait_for(driver, "#event-meta")[0].text
    assert f" · {listed.group(1)} articles · " in meta
    timeline = wait_for(driver, "#event-articles li", count=int(listed.group(1)))
    assert len(timeline) == int(listed.group(1))
    first = timeline[0]
    source = first.find_element(By.CSS_SELECTOR, ".source").text
    title = first.find_element(By.CSS_SELECTOR, "a").text
    kind = first.find_element(By.CSS_SELECTOR, ".kind").text
    assert source.startswith("· ") and first.text.endswith(f"{title} {source} {kind}")
    assert kind == "first report"
    body = driver.find_element(By.TAG_NAME, "body").text
    assert "+00:00" not in body and " UTC" in body

    # the round-up shows its two copied passages, linked to their sources
    driver.get(empty_site + "/#doc=sample-weekend")
    marks = wait_for(driver, "#view-text mark.copied a", count=2)
    assert {m.get_attribute("data-id") for m in marks} == {"sample-bridge", "sample-library"}

    # the API documentation renders from the service's own files
    driver.get(empty_site + "/docs")
    operations = wait_for(driver, ".opblock", count=5, timeout=30)
    assert any("/v1/documents" in o.text for o in operations)
    scripts = [e.get_attribute("src") for e in driver.find_elements(By.TAG_NAME, "script")]
    assert all(src.startswith(empty_site) for src in scripts if src)
