"""The report's trace explorer driven in a real browser (headless Chromium via selenium):
load, filter, sort, open a trace, check the highlighted evidence steps and that trace text
stays text.

CI installs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run``), so there this test
must run: it fails instead of skipping when ``CI`` or ``MAST_REQUIRE_BROWSER`` is set.
Locally it skips when Chromium is absent.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mast
from mast.analysis.report import write_report
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector, Outcome, Step, Trace

pytestmark = pytest.mark.slow

EVIL = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def _browser_paths() -> tuple[str, str] | None:
    browser = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    paths = _browser_paths()
    if paths is None:
        if os.environ.get("CI") or os.environ.get("MAST_REQUIRE_BROWSER"):
            pytest.fail("CI must have chromium and chromium-driver (see .ci/run)")
        pytest.skip(
            "Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1300,1800",
        "--disable-background-networking",
    ):
        options.add_argument(flag)
    # A fixed driver path: selenium never tries to download a browser or driver.
    browser = webdriver.Chrome(service=Service(paths[1]), options=options)
    try:
        yield browser
    finally:
        browser.quit()


def _trace(trace_id: str, system: str, outcome: Outcome, texts: list[str]) -> Trace:
    return Trace(
        id=trace_id,
        system=system,
        outcome=outcome,
        steps=[
            Step.make(i, text, agent="user" if i == 0 else "bot") for i, text in enumerate(texts)
        ],
    )


def _annotation(trace_id: str, flagged: dict[str, list[str]], model: str) -> Annotation:
    codes = mast.load_taxonomy().codes
    findings = {
        code: Finding(
            code=code,
            present=True,
            rationale=f"{code} because",
            evidence=[Evidence(step_id=s, grounded=True) for s in steps],
        )
        for code, steps in flagged.items()
    }
    values: dict[str, bool | None] = {c: False for c in codes}
    values.update({c: True for c in flagged})
    values["3.2"] = None  # unknown stays unknown in the page
    return Annotation(
        trace_id=trace_id,
        status="ok",
        taxonomy="MAST 1.0",
        vector=FailureVector(values, codes=codes),
        findings=findings,
        judge={"model": model},
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    traces = [
        _trace(
            "run-2",
            "ag2",
            Outcome.FAILURE,
            ["add 2 and 2", "I will add.", "I will add.", "I will add.", "5"],
        ),
        _trace("run-10", "magentic", Outcome.SUCCESS, ["say hi", "hi"]),
        _trace(f"evil{EVIL}", "ag2", Outcome.FAILURE, ["task", f"{EVIL} text"]),
    ]
    judge_a = [
        _annotation("run-2", {"1.3": ["s2", "s3", "s4"], "3.3": ["s5"]}, "judge-a"),
        _annotation("run-10", {}, "judge-a"),
        _annotation(f"evil{EVIL}", {"2.6": ["s2"]}, "judge-a"),
    ]
    decided = _annotation("run-2", {"1.3": ["s3"]}, "judge-b")
    decided.decisive_error = DecisiveError(
        step_id="s3", agent="bot", modes=["1.3"], reason="repeats instead of adding"
    )
    judge_b = [
        decided,
        _annotation("run-10", {"1.1": ["s2"]}, "judge-b"),
    ]
    reference = {"run-2": {"1.3": True, "3.3": False}, "run-10": {"1.3": False}}
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report(
        {"judge-a": judge_a, "judge-b": judge_b},
        out,
        traces=traces,
        reference=reference,
        reference_name="human",
        bootstrap=0,
    )
    return out


def _load(driver: Any, page: Path, fragment: str = "") -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.as_uri() + fragment)
    WebDriverWait(driver, 20).until(
        lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "1"
    )


def _rows(driver: Any) -> list[str]:
    cells = driver.find_elements("css selector", "#trace-list tbody tr td:first-child")
    return [c.text for c in cells]


def test_list_loads_sorted_and_sorts_on_click(driver: Any, page: Path) -> None:
    _load(driver, page)
    # Natural order: run-2 before run-10 (not completion order, not plain string order).
    assert _rows(driver) == ["evil" + EVIL, "run-2", "run-10"]
    assert driver.find_element("id", "trace-count").text == "3 of 3 traces shown"
    driver.find_element("css selector", 'th[data-sort="id"]').click()
    assert _rows(driver) == ["run-10", "run-2", "evil" + EVIL]
    # Sort by how many modes judge-a flagged: run-10 (0) < evil (1) < run-2 (2).
    driver.find_element("css selector", 'th[data-sort="run:judge-a"]').click()
    assert _rows(driver) == ["run-10", "evil" + EVIL, "run-2"]


def test_filters_by_mode_system_outcome_and_text(driver: Any, page: Path) -> None:
    from selenium.webdriver.support.ui import Select

    _load(driver, page)
    Select(driver.find_element("id", "f-mode")).select_by_value("1.3")
    assert sorted(_rows(driver)) == ["run-2"]  # flagged by both judges and the reference
    Select(driver.find_element("id", "f-mode")).select_by_value("1.1")
    assert _rows(driver) == ["run-10"]  # judge-b only
    Select(driver.find_element("id", "f-run")).select_by_visible_text("judge-a")
    assert _rows(driver) == []  # judge-a never flagged 1.1
    assert driver.find_element("id", "trace-count").text == "0 of 3 traces shown"
    Select(driver.find_element("id", "f-mode")).select_by_value("")
    Select(driver.find_element("id", "f-run")).select_by_value("")
    Select(driver.find_element("id", "f-system")).select_by_visible_text("ag2")
    assert sorted(_rows(driver)) == sorted(["evil" + EVIL, "run-2"])
    Select(driver.find_element("id", "f-outcome")).select_by_visible_text("success")
    assert _rows(driver) == []
    Select(driver.find_element("id", "f-system")).select_by_value("")
    assert _rows(driver) == ["run-10"]
    Select(driver.find_element("id", "f-outcome")).select_by_value("")
    search = driver.find_element("id", "f-text")
    search.send_keys("EVIL")
    assert _rows(driver) == ["evil" + EVIL]


def test_opening_a_trace_highlights_the_evidence_steps(driver: Any, page: Path) -> None:
    _load(driver, page)
    row = driver.find_element("css selector", '#trace-list tr[data-trace] a[href$="t1"]')
    assert row.text == "run-2"
    row.click()
    view = driver.find_element("id", "trace-view")
    assert view.is_displayed()
    assert driver.find_element("id", "trace-title").text == "run-2"
    flagged = {
        el.get_attribute("data-step"): sorted(
            b.text for b in el.find_elements("css selector", '.mode[data-mark="mode"]')
        )
        for el in view.find_elements("css selector", "li.step.flagged")
    }
    # judge-a cites s2-s4 for 1.3 and s5 for 3.3; judge-b cites s3 for 1.3.
    assert flagged == {
        "s2": ["1.3 · judge-a"],
        "s3": ["1.3 · judge-a", "1.3 · judge-b"],
        "s4": ["1.3 · judge-a"],
        "s5": ["3.3 · judge-a"],
    }
    # judge-b's decisive error is marked at its step, in its own colour.
    decisive = view.find_elements("css selector", "li.step.decisive")
    assert [el.get_attribute("data-step") for el in decisive] == ["s3"]
    badge = decisive[0].find_element("css selector", '.mode[data-mark="decisive"]')
    assert badge.text == "decisive error (bot) · judge-b"
    plain = view.find_elements("css selector", "li.step:not(.flagged)")
    assert [el.get_attribute("data-step") for el in plain] == ["s1"]
    # Judge and reference labels side by side; rows where they disagree are marked.
    heads = [th.text for th in view.find_elements("css selector", "table.labels thead th")]
    assert heads == ["mode", "judge-a", "judge-b", "human"]
    row_33 = view.find_element("css selector", 'table.labels tr[data-code="3.3"]')
    assert [td.text for td in row_33.find_elements("css selector", "td")] == ["yes", "no", "no"]
    assert "disagree" in row_33.get_attribute("class")
    row_32 = view.find_element("css selector", 'table.labels tr[data-code="3.2"]')
    assert [td.text for td in row_32.find_elements("css selector", "td")] == ["?", "?", "?"]
    # The evidence link jumps to its step.
    link = view.find_element("css selector", 'a.ev-link[href$="-s5"]')
    link.click()
    assert driver.execute_script("return location.hash").endswith("-s5")


def test_trace_text_stays_text_in_the_browser(driver: Any, page: Path) -> None:
    _load(driver, page, "#trace=t3")
    assert driver.find_element("id", "trace-title").text == "evil" + EVIL
    steps = driver.find_elements("css selector", "#trace-view li.step pre")
    assert steps[1].text == f"{EVIL} text"
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.find_elements("css selector", "#trace-view img") == []
    assert driver.get_log("browser") == []  # no script error, no blocked request


def test_wide_tables_scroll_inside_their_box(driver: Any, page: Path) -> None:
    driver.set_window_size(700, 1200)
    try:
        _load(driver, page)
        overflow = driver.execute_script(
            "return [...document.querySelectorAll('.scroll')]"
            ".map(b => [getComputedStyle(b).overflowX, b.scrollWidth > b.clientWidth])"
        )
        assert overflow and all(kind == "auto" for kind, _ in overflow)
        assert any(wide for _, wide in overflow)  # at least one table is wider than the box
        page_width = driver.execute_script("return document.documentElement.scrollWidth")
        assert page_width <= 700
    finally:
        driver.set_window_size(1300, 1800)
