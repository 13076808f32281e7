"""Who and when in the HTML report: the decisive error beside the evidence, the Who&When
label beside it (explorer data, and the page in headless Chromium when it is installed)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mast
from mast.analysis.explorer import explorer_data
from mast.analysis.report import write_report
from mast.judge.annotation import Annotation
from mast.judge.attribution import DecisiveError
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector, Trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "whoandwhen_attr"


@pytest.fixture(scope="module")
def runs() -> list[Trace]:
    return mast.datasets.load_whoandwhen(FIXTURES / "Hand-Crafted")


def _annotation(trace: Trace, error: DecisiveError | None) -> Annotation:
    codes = mast.load_taxonomy().codes
    finding = Finding(
        code="3.2",
        present=True,
        rationale="answered without the data",
        evidence=[Evidence(step_id="s5", grounded=True)],
        first_step="s5",
        agent="WebSurfer",
    )
    values: dict[str, bool | None] = {c: False for c in codes}
    values["3.2"] = True
    return Annotation(
        trace_id=trace.id,
        status="ok",
        taxonomy="MAST 1.0",
        vector=FailureVector(values, codes=codes),
        findings={"3.2": finding},
        decisive_error=error,
        judge={"model": "judge"},
    )


ERROR = DecisiveError(
    agent="Orchestrator (-> WebSurfer)",
    step_id="s4",
    modes=["3.2"],
    reason="asked for the wrong search",
    grounded=True,
)


def test_explorer_data_carries_the_decisive_error_and_the_label(runs: list[Trace]) -> None:
    h48 = next(t for t in runs if t.id.endswith("/48"))
    cut = next(t for t in runs if t.id.endswith("/33-cut"))
    data = explorer_data({"judge": [_annotation(h48, ERROR), _annotation(cut, None)]}, [h48, cut])
    by_id = {t["id"]: t for t in data["traces"]}
    entry = by_id[h48.id]
    decisive = entry["runs"]["judge"]["decisive"]
    assert decisive["text"] == "Orchestrator (-> WebSurfer) at s4 (starts 3.2)"
    assert decisive["reason"] == "asked for the wrong search" and decisive["grounded"] is True
    assert entry["label"]["text"] == "WebSurfer at s5" and entry["label"]["past_end"] is False
    assert entry["extra"] == {
        "decisive": "Orchestrator (-> WebSurfer) at s4",
        "labelled": "WebSurfer at s5",
    }
    assert [c["title"] for c in data["columns"]] == ["decisive error", "labelled error"]
    # A run that names no decisive error shows none; a label past the end says so.
    other = by_id[cut.id]
    assert other["runs"]["judge"]["decisive"] is None
    assert other["label"]["text"] == "WebSurfer at s9 (past the end of the trace)"


def test_traces_without_labels_have_none() -> None:
    trace = mast.datasets.example_traces()[0]
    ann = mast.Judge("heuristic").annotate(trace)
    (entry,) = explorer_data({"h": [ann]}, [trace])["traces"]
    assert entry["label"] is None and entry["extra"]["labelled"] is None


def _browser() -> tuple[str, str] | None:
    names = ("chromium", "chromium-browser", "google-chrome")
    browser = next((p for p in map(shutil.which, names) if p), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    paths = _browser()
    if paths is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium and chromium-driver (see .ci/run)")
        pytest.skip("Chromium and chromedriver are not installed")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(paths[1]), options=options)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.mark.slow
def test_page_shows_who_and_when_next_to_the_evidence(
    driver: Any, runs: list[Trace], tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    h48 = next(t for t in runs if t.id.endswith("/48"))
    out = write_report({"judge": [_annotation(h48, ERROR)]}, tmp_path / "r.html", traces=[h48],
                       bootstrap=0)  # fmt: skip
    html = out.read_text()
    payload = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)
    assert payload is not None and json.loads(payload.group(1))["traces"][0]["label"]
    driver.get(out.as_uri() + "#trace=t1")
    WebDriverWait(driver, 20).until(
        lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "1"
    )
    view = driver.find_element("id", "trace-view")
    decisive = view.find_element("css selector", ".run-findings .decisive-line")
    assert decisive.text.startswith(
        "Decisive error: Orchestrator (-> WebSurfer) at s4 (starts 3.2) — asked for the wrong"
    )
    label = view.find_element("css selector", ".run-findings .label-line")
    assert label.text.startswith("Who&When label: WebSurfer at s5 — ")
    # The who/when lines come before the mode evidence, in the same run block.
    block = view.find_element("css selector", ".run-findings").text
    assert block.index("Decisive error") < block.index("3.2 ")
    steps = {
        el.get_attribute("data-step"): el.get_attribute("class")
        for el in view.find_elements("css selector", "li.step")
    }
    assert "decisive" in steps["s4"] and "labelled" in steps["s5"]
    assert "labelled" not in steps["s4"]
    cells = [td.text for td in driver.find_elements("css selector", "#trace-list tbody td")]
    assert "Orchestrator (-> WebSurfer) at s4" in cells and "WebSurfer at s5" in cells
