"""The demo page in a real browser: headless Chromium (Debian's ``chromium``, driven by
Playwright) opens ``/demo`` on a real ``iglearn serve --demo`` process and plays 60
rounds, drawing a tick on the canvas when the word names the shape's colour and a cross when
it does not. That rule lives in this test and in the page's score display only: the test
checks that the page sends the service nothing but the shape and the strokes, and counts
the right words itself. Screenshots of rounds 1, 30 and 60 (each with its gesture drawn,
before it is sent) are saved under ``test-artifacts/demo/`` at the repository root.

The run is reproducible on one machine: the page draws its shapes from a seeded generator
(``?seed=``), the service's exploration has a seed, the strokes come from a seeded
generator, and the page waits for each due re-fit before asking for the next word (re-fits
are due by count only here). How often a run grounds the code across seeds is what
``benchmarks/demo_rounds.py`` measures.

Shorter tests: a tab whose pending word a reset in another tab forgot begins a new round; a
re-fit held back is not announced as the model that answers; a tap is not sent as a gesture
and a drawing of thousands of points is thinned before it is sent; a reload keeps the tab's
score until a reset."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from iglearn.service.demo import demo_tables, simulated_stroke
from iglearn.service.process import ServiceProcess, free_port, write_config

CHROMIUM = os.environ.get("IGLEARN_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "demo"
ROUNDS, SHOTS = 60, (1, 30, 60)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"no Chromium at {CHROMIUM} (apt-get install chromium, "
                                        f"or set IGLEARN_CHROMIUM)")]


def draw(page, stroke: np.ndarray) -> None:
    """Draw ``stroke`` (points in canvas pixels) on the page's canvas with the mouse."""
    box = page.locator("#canvas").bounding_box()
    scale = box["width"] / 320
    points = [(box["x"] + x * scale, box["y"] + y * scale) for x, y in stroke]
    page.mouse.move(*points[0])
    page.mouse.down()
    for point in points[1:]:
        page.mouse.move(*point)
    page.mouse.up()


def test_a_person_grounds_the_learner_in_the_browser(tmp_path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tables = demo_tables(seed=0)
    tables["exploration"]["seed"] = 0
    tables["learning"]["refit_seconds"] = 3600.0  # re-fits by count only: reproducible
    config = write_config(tmp_path / "demo.toml", tables)
    rng = np.random.default_rng(7)
    sent: list[dict] = []
    right: list[bool] = []
    shots: list[Path] = []
    start = time.monotonic()
    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             headless=True)
        page = browser.new_page(viewport={"width": 1150, "height": 900})
        page.on("request", lambda r: sent.append(
            {"url": r.url, "body": json.loads(r.post_data)}) if r.method == "POST" else None)
        page.goto(service.url + "/demo/?seed=1")
        for r in range(1, ROUNDS + 2):
            try:
                page.wait_for_function(f"document.body.dataset.state === 'ready' && "
                                       f"document.body.dataset.round === '{r}'",
                                       timeout=60000)
            except Exception:
                pytest.fail(f"round {r} did not begin; the page says "
                            f"{page.locator('#status').inner_text()!r}; the service's log: "
                            f"{service.log.read_text()[-2000:]}")
            if r > ROUNDS:
                break
            colour = int(page.locator("#shape").get_attribute("data-colour"))
            action = int(page.locator("#word").get_attribute("data-action"))
            right.append(action == colour)
            draw(page, simulated_stroke("tick" if right[-1] else "cross", rng, size=320,
                                        points=24))
            if r in SHOTS:
                shots.append(ARTIFACTS / f"round-{r:03d}.png")
                page.screenshot(path=shots[-1], full_page=True)
            page.click("#send")
        shown = page.locator("#rounds").inner_text()
        reward = page.locator("#reward").get_attribute("data-value")
        browser.close()
    seconds = time.monotonic() - start

    curve = [float(np.mean(right[lo:lo + 10])) for lo in range(0, ROUNDS, 10)]
    print(f"\nscreenshots: {', '.join(map(str, shots))}\nright per 10 rounds: {curve}; "
          f"{seconds:.0f} s")
    assert shown == str(ROUNDS)
    assert reward not in (None, "")
    # the service received the shape and the strokes, nothing of the rule
    assert {tuple(sorted(s["body"])) for s in sent} == {("colour", "shape"),
                                                        ("event_id", "stroke")}
    assert np.mean(right[-20:]) >= 0.8, curve
    assert all(p.stat().st_size > 0 for p in shots)


def test_a_tab_whose_word_a_reset_forgot_begins_a_new_round(tmp_path):
    """A reset in one tab forgets the decision another tab is waiting to send a gesture for:
    that tab says so and begins a new round, whose gesture is stored."""
    from playwright.sync_api import sync_playwright

    config = write_config(tmp_path / "demo.toml", demo_tables(seed=0))
    rng = np.random.default_rng(3)
    ready = "document.body.dataset.state === 'ready' && document.body.dataset.round === '1'"
    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             headless=True)
        first, second = (browser.new_page(viewport={"width": 1150, "height": 900})
                         for _ in range(2))
        for page in (first, second):
            page.goto(service.url + "/demo?seed=1")
            page.wait_for_function(ready, timeout=60000)
        first.click("#reset")
        first.wait_for_function(
            "document.getElementById('status').textContent.includes('forgot everything')",
            timeout=60000)
        draw(second, simulated_stroke("tick", rng, size=320, points=24))
        second.click("#send")
        second.wait_for_function(
            "document.getElementById('status').textContent.includes('reset elsewhere')",
            timeout=60000)
        second.wait_for_function(ready, timeout=60000)
        draw(second, simulated_stroke("tick", rng, size=320, points=24))
        second.click("#send")
        second.wait_for_function("document.getElementById('rounds').textContent === '1'",
                                 timeout=60000)
        browser.close()


def test_the_page_says_a_held_back_refit_is_not_the_model_answering(tmp_path):
    """A re-fit stored but held back (``last_refit.held_back``) is not called the fitted
    model: the page names the version that still answers, or says the words stay random."""
    from playwright.sync_api import sync_playwright

    config = write_config(tmp_path / "demo.toml", demo_tables(seed=0))
    reason = "not identified: indicator 0.1000 is not above the restart threshold 0.4500"
    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             headless=True)
        page = browser.new_page()
        page.goto(service.url + "/demo/?seed=1")
        page.wait_for_function("document.body.dataset.state === 'ready'", timeout=60000)
        said = {}
        for served in (2, 0):
            status = page.evaluate("fetch('/demo/api/status').then((r) => r.json())")
            status |= {"model_version": served, "refit_pending": False,
                       "last_refit": {"version": 3, "learnable": 20, "seconds": 0.2,
                                      "error": None, "held_back": reason}}
            page.evaluate("(s) => showStatus(s)", status)
            said[served] = page.locator("#status").inner_text()
        browser.close()
    assert said[2] == (f"Model version 3, fitted on 20 rounds, is held back ({reason}); "
                       f"version 2 still answers.")
    assert said[0].endswith("the words stay random tries until a fit is served.")


def test_a_tap_is_not_sent_and_a_long_drawing_is_thinned(tmp_path):
    """A tap (a drawing a few pixels across) is not sent as a gesture; a drawing of more
    points than the service takes is thinned to at most 2,000 before it is sent, and stored."""
    from playwright.sync_api import sync_playwright

    config = write_config(tmp_path / "demo.toml", demo_tables(seed=0))
    strokes: list[list] = []
    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             headless=True)
        page = browser.new_page(viewport={"width": 1150, "height": 900})
        page.on("request", lambda r: strokes.append(json.loads(r.post_data)["stroke"])
                if r.url.endswith("/demo/api/feedback") else None)
        page.goto(service.url + "/demo/?seed=1")
        page.wait_for_function("document.body.dataset.state === 'ready'", timeout=60000)
        draw(page, np.array([[100.0, 100.0], [101.0, 100.0], [101.0, 101.0]]))
        page.click("#send")
        said = page.locator("#status").inner_text()
        # a pen that reports 8,000 points along a long scribble
        t = np.linspace(0, 40 * np.pi, 8000)
        scribble = np.stack([160 + 120 * np.sin(t), 160 + 120 * np.cos(1.1 * t)], 1)
        page.evaluate("(points) => { state.strokes = [points]; return send(); }",
                      scribble.tolist())
        page.wait_for_function("document.getElementById('rounds').textContent === '1'",
                               timeout=60000)
        browser.close()
    assert "tap" in said and len(strokes) == 1
    (sent,) = strokes
    assert 2 <= len(sent) <= 2000
    assert np.allclose(sent[0], scribble[0]) and np.allclose(sent[-1], scribble[-1])


def test_a_reload_keeps_the_tabs_score_until_a_reset(tmp_path):
    """The page's score of its rounds (the ✓ / ✗ list, the share recently right, the round
    number) survives a reload of the tab, and a reset clears it."""
    from playwright.sync_api import sync_playwright

    config = write_config(tmp_path / "demo.toml", demo_tables(seed=0))
    rng = np.random.default_rng(5)

    def score(page) -> tuple[str, int, str]:
        return (page.locator("#accuracy").inner_text(),
                page.locator("#history li").count(), page.locator("#round").inner_text())

    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             headless=True)
        page = browser.new_page(viewport={"width": 1150, "height": 900})
        page.goto(service.url + "/demo/?seed=1")
        for r in (1, 2, 3):
            page.wait_for_function(f"document.body.dataset.state === 'ready' && "
                                   f"document.body.dataset.round === '{r}'", timeout=60000)
            if r < 3:
                draw(page, simulated_stroke("tick" if r == 1 else "cross", rng, size=320,
                                            points=24))
                page.click("#send")
        before = score(page)
        page.reload()
        page.wait_for_function("document.body.dataset.state === 'ready' && "
                               "document.body.dataset.round === '3'", timeout=60000)
        after = score(page)
        page.click("#reset")
        page.wait_for_function("document.body.dataset.state === 'ready' && "
                               "document.body.dataset.round === '1'", timeout=60000)
        cleared = score(page)
        browser.close()
    assert before[1] == 2 and before[2] == "3" and before[0] != "–"
    assert after == before
    assert cleared[1] == 0 and cleared[0] == "–"
