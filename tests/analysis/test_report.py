"""``mast report``: sections, escaping of trace-derived text, embedded figures, the CLI, and
(when Chromium is installed) rendering in a real headless browser."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import mast
from mast import analysis
from mast.analysis.report import _outcomes, render_report
from mast.bulk.store import ResultsStore
from mast.cli import main
from mast.judge.annotation import Annotation
from mast.judge.verdict import Evidence, Finding
from mast.traces.model import FailureVector, Outcome, Step, Trace

pytest.importorskip("matplotlib")

SECTIONS = ("summary", "profiles", "cooccurrence", "outcomes", "traces", "evidence", "excluded")
EVIL = "<script>alert('x')</script>"


def _evil_trace() -> Trace:
    return Trace(
        id=f"evil{EVIL}",
        system='<img src=x onerror="alert(2)">',
        outcome=Outcome.FAILURE,
        steps=[
            Step.make(0, "please add the numbers", agent="user"),
            Step.make(1, f"{EVIL} I will </pre> repeat myself", agent=f"bot{EVIL}"),
        ],
    )


def _evil_annotation(trace: Trace) -> Annotation:
    finding = Finding(
        code="1.3",
        present=True,
        evidence=[Evidence(step_id="s2", quote=EVIL, grounded=True)],
        rationale=f"<b>loud</b> {EVIL}",
    )
    vector = FailureVector({"1.3": True, "1.5": False}, codes=mast.load_taxonomy().codes)
    return Annotation(
        trace_id=trace.id,
        status="ok",
        taxonomy="MAST 1.0",
        vector=vector,
        findings={"1.3": finding},
        summary=f"summary {EVIL}",
        judge={"model": f"judge{EVIL}"},
    )


def _runs() -> tuple[dict[str, list[Annotation]], list[Trace]]:
    traces = [*mast.traces.datasets.example_traces(), _evil_trace()]
    judge = mast.Judge("heuristic")
    anns = [judge.annotate(t) for t in traces[:-1]]
    anns.append(_evil_annotation(traces[-1]))
    anns.append(
        Annotation(
            trace_id="lost",
            status="error",
            error=f"provider said {EVIL}",
            taxonomy="MAST 1.0",
            vector=FailureVector({}),
        )
    )
    return {f"run{EVIL}": anns}, traces


@pytest.fixture(scope="module")
def html() -> str:
    runs, traces = _runs()
    human = [t for t in traces if t.format == "mad-human"]
    return render_report(
        runs,
        traces=traces,
        reference=mast.labels_of(human, "annotator_1"),
        reference_name="annotator_1",
        bootstrap=20,
        title=f"report {EVIL}",
    )


def test_every_section_is_there(html: str) -> None:
    for anchor in (*SECTIONS, "agreement"):
        assert f'id="{anchor}"' in html, anchor
    # The agreement table carries the numbers a pooled kappa must be read beside (issue 17).
    for needle in ("cells scored / asked", "constant judge {", "chance at reference"):
        assert needle in html, needle
    # One macro row (issue 32): the table's own, with the number of modes it averages.
    section = html[html.index('id="agreement"') :]
    macro_rows = re.findall(r"<tr><td>macro[^<]*</td><td>([^<]*)</td><td[^>]*>([^<]*)<", section)
    assert macro_rows == [("modes w/ both ref. classes", "2")]
    assert "3.2∨3.3" in html and "unknown read as no" in html
    assert "Failures by reason" in html and "Outcome analysis" in html
    assert "L2-penalized logistic regression" in html or "no regression" in html


def test_trace_derived_text_is_escaped(html: str) -> None:
    # Exactly our two script elements (the explorer's data and its code); none injected.
    assert html.lower().count("<script") == 2
    assert '<script type="application/json" id="mast-data">' in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html  # the page title
    assert "<img src=x" not in html and "<b>loud</b>" not in html
    # Inside the inline JSON every "<" is escaped, so trace text cannot close the element.
    data = html[html.index('id="mast-data">') : html.index("</script>")]
    assert "<" not in data.split(">", 1)[1] and "\\u003cscript\\u003e" in data
    assert "I will \\u003c/pre\\u003e repeat myself" in data


def test_figures_are_embedded_pngs(html: str) -> None:
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) >= 5
    assert all(base64.b64decode(img).startswith(b"\x89PNG\r\n\x1a\n") for img in images)
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing loaded from elsewhere


def test_explorer_data_ties_flagged_modes_to_their_evidence_steps() -> None:
    from mast.analysis.explorer import explorer_data

    runs, traces = _runs()
    data = explorer_data(runs, traces)
    (evil,) = [t for t in data["traces"] if t["id"] == f"evil{EVIL}"]
    (run,) = evil["runs"].values()
    assert run["vector"]["1.3"] is True and run["vector"]["1.1"] is None
    assert run["findings"]["1.3"]["evidence"][0]["step"] == "s2"
    assert [s["id"] for s in evil["steps"]] == ["s1", "s2"]
    (lost,) = [t for t in data["traces"] if t["id"] == "lost"]
    assert lost["steps"] is None and lost["runs"][f"run{EVIL}"]["status"] == "error"
    # The MAD human sample carries three annotators: each, and their majority, is shown.
    human = next(t for t in data["traces"] if t["id"].startswith("mad-human"))
    assert {"annotator_1", "annotator_2", "annotator_3", "majority"} <= set(human["refs"])


def test_failed_records_are_counted_with_their_reason(html: str) -> None:
    assert "provider said &lt;script&gt;" in html
    assert "record(s) with status &#39;error&#39;: lost" in html


def test_outcome_section_says_why_it_is_skipped() -> None:
    # The bundled MetaGPT records say nothing about their outcome (the AG2 ones do).
    human = [
        t
        for t in mast.traces.datasets.example_traces()
        if t.format == "mad-human" and t.system == "MetaGPT"
    ]
    judge = mast.Judge("heuristic")
    page = render_report([judge.annotate(t) for t in human], traces=human, bootstrap=0)
    assert "Outcomes need both failed and successful runs" in page
    assert "unknown: 2" in page
    without_traces = analysis.collect({"t1": {"1.1": True}})
    assert "--traces" in str(_outcomes(without_traces, 0, 0).skipped)


def test_several_runs_side_by_side_and_trace_statistics_per_run() -> None:
    traces = [t for t in mast.traces.datasets.example_traces() if t.format == "ag2"]
    judge = mast.Judge("heuristic")
    anns = [judge.annotate(t) for t in traces]
    page = render_report({"before": anns, "after": anns}, traces=traces, bootstrap=0)
    assert "before: share of traces" in page and "after: share of traces" in page
    # The same traces in two runs: outcomes are analysed run by run, never pooled.
    assert "before: Per mode (odds ratio" in page and "after: Per mode (odds ratio" in page
    # ... and compared with each other.
    assert 'id="runs"' in page and "Pooled Cohen&#39;s kappa between runs" in page
    assert "before vs after, per mode" in page


def test_excluded_section_never_contradicts_the_sections_above(html: str) -> None:
    tail = html[html.index('id="excluded"') :]
    assert "Nothing was left out" not in tail  # a failed record is listed in the summary
    assert "Exclusions specific to a section are listed in it: Run summary" in tail


def test_ci_option_reaches_the_prevalence_intervals(tmp_path: Path) -> None:
    results = _results_file(tmp_path)
    out = tmp_path / "wilson.html"
    assert (
        main(["report", str(results), "--out", str(out), "--ci", "wilson", "--bootstrap", "0"]) == 0
    )
    page = out.read_text(encoding="utf-8")
    assert "prevalence intervals: wilson" in page
    assert "use ci=&#39;wilson&#39;" not in page  # the hint names the CLI option instead


def test_wide_tables_scroll_inside_their_box(html: str) -> None:
    assert html.count('<div class="scroll">') >= 5
    assert ".scroll { overflow-x: auto" in html


def _results_file(tmp_path: Path) -> Path:
    path = tmp_path / "heuristic.jsonl"
    judge = mast.Judge("heuristic")
    with ResultsStore(path, fsync=False) as store:
        for trace in mast.traces.datasets.example_traces():
            store.append(judge.annotate(trace))
    return path


def test_cli_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _results_file(tmp_path)
    examples = mast.traces.datasets.examples_path()
    out = tmp_path / "out" / "report.html"
    code = main(
        [
            "report",
            str(results),
            "--traces",
            str(examples),
            "--reference",
            str(examples / "mad_human_sample.json"),
            "--reference-annotator",
            "annotator_2",
            "--bootstrap",
            "20",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert "Agreement with annotator_2" in page and 'id="outcomes"' in page
    assert "report written to" in capsys.readouterr().out


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (optional)")
def test_report_renders_in_headless_chromium(tmp_path: Path, html: str) -> None:
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    browser = _chromium()
    assert browser is not None
    flags = [
        *("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"),
        *("--disable-component-update", "--disable-sync", "--no-first-run"),
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    for anchor in (*SECTIONS, "agreement"):
        assert f'id="{anchor}"' in dom, anchor
    assert dom.count("<img") >= 5
    assert dom.lower().count("<script") == 2  # ours only: the escaped text stayed text
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes().startswith(b"\x89PNG")


def test_docstring_example_runs() -> None:
    import doctest

    import mast.analysis.explorer
    import mast.analysis.report
    import mast.analysis.report_runs

    for module in (mast.analysis.report, mast.analysis.explorer, mast.analysis.report_runs):
        result = doctest.testmod(module, raise_on_error=False)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_repeated_runs_show_self_consistency_and_grounded_share() -> None:
    human = mast.datasets.example_traces()
    judge = mast.Judge("heuristic")
    first = [judge.annotate(t) for t in human]
    # a second sample that flips one answer of the first trace
    second = []
    for i, ann in enumerate(first):
        vector = ann.vector.to_dict()
        if i == 0:
            vector["2.1"] = not vector.get("2.1")
        second.append(
            ann.model_copy(
                update={
                    "judge": {**ann.judge, "sample": 1},
                    "vector": mast.FailureVector(vector, codes=list(ann.vector)),
                    "findings": {},
                }
            )
        )
    page = render_report({"samples": first + second}, traces=human, bootstrap=0)
    assert "Self-consistency of the runs in samples" in page
    # agreement is scored per judge run, not on the last record of each trace
    reference = mast.labels_of(human, "annotator_1")
    page = render_report({"samples": first + second}, traces=human, reference=reference,
                         reference_name="annotator_1", bootstrap=0)  # fmt: skip
    assert "samples: heuristic against annotator_1" in page
    assert "samples: heuristic#1 against annotator_1" in page
    assert "no agreement report" not in page and "not compared" not in page
    assert "heuristic#1" in page and "beside the agreement with people" in page
    assert "Positive answers with grounded evidence, per mode" in page
    assert "samples fuzzy" not in page and ">off-agent<" in page  # one run: plain headers
