"""The web page in a real headless browser (Debian's chromium driven by Selenium).

Skips with a reason when chromium, chromedriver or selenium is absent, unless
NEARDUP_REQUIRE_SERVICES is set.  Saves docs/img/service.png (the screenshot in the docs).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from test_service_process import Server

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
        yield {
            "url": server.url,
            "sources": {first["id"], second["id"]},
            "story": story,
            "base": base["id"],
        }
    finally:
        server.stop()


def wait_for(driver: Any, css: str, count: int = 1, timeout: float = 20) -> list[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d: Any) -> list[Any] | bool:
        elements = [e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
        return elements if len(elements) >= count else False

    return WebDriverWait(driver, timeout).until(found)  # type: ignore[no-any-return]


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

    # a duplicate shows its original; the events list opens a timeline
    driver.get(site["url"] + "/#doc=update-5")
    dups = wait_for(driver, "#view-dups li a")
    # the updates copy a preloaded, earlier article: that one is their original
    assert dups[0].get_attribute("data-id") == site["base"]
    events = wait_for(driver, "#events li a")
    events[0].click()
    timeline = wait_for(driver, "#event-articles li", count=16)
    assert any("update-0" in li.text or "(update 0)" in li.text for li in timeline)
    bars = wait_for(driver, "#event-growth div")
    assert bars
    assert "first publisher" in driver.find_element(By.ID, "event-meta").text

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
