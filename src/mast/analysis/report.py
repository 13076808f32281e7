"""``mast report``: one self-contained HTML page from results files.

The page has the run summary (records, statuses, failures by reason, cost and tokens),
failure profiles (per mode and per category, with intervals), modes per trace,
co-occurrence, the outcome analysis when outcomes are known (from ``--traces``), agreement
with a reference when one is given, several runs compared with each other, and an
interactive trace explorer: a sortable, filterable trace list and, per trace, the labels of
every run and reference side by side and a step timeline with the flagged modes marked at
the steps their evidence cites.  Figures are embedded as base64 PNG and the explorer is a
small vanilla script with its data inline: no external resource and no network, so the file
can be mailed or archived as is.  Everything that comes from a trace or an annotation is
escaped (jinja2 autoescaping in the HTML, ``\u003c`` escapes in the inline JSON, and the
script writes it with ``textContent``): trace text is data, never markup.

>>> import mast, tempfile, pathlib
>>> traces = mast.traces.datasets.example_traces()[:3]
>>> judge = mast.Judge("heuristic")
>>> html = render_report({"heuristic": [judge.annotate(t) for t in traces]}, traces=traces,
...                      bootstrap=50)
>>> "<h2 id=\\"summary\\">Run summary</h2>" in html, "data:image/png;base64," in html
(True, True)
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mast.privacy.redact import Redactor
from mast.traces.model import Trace

if TYPE_CHECKING:
    from mast.analysis.data import VectorData
from mast.analysis.explorer import embed_json, explorer_data
from mast.analysis.redaction import redact_runs, redact_traces, shown_redactor
from mast.analysis.report_runs import runs_compared
from mast.analysis.report_sections import (
    Results,
    _agreement,
    _cooccurrence,
    _frame,
    _group_field,
    _outcomes,
    _per_run,
    _profiles,
    _runs,
    _Section,
    _summary,
    judge_runs,
)

__all__ = ["render_report", "write_report"]

_TEMPLATES = Path(__file__).resolve().parent / "templates"


def render_report(
    results: Results,
    *,
    traces: Iterable[Trace] | None = None,
    reference: Any = None,
    reference_name: str = "reference",
    title: str | None = None,
    inputs: Sequence[str] = (),
    bootstrap: int = 1000,
    seed: int = 0,
    ci: Literal["bootstrap", "wilson"] = "bootstrap",
    resample: Literal["auto", "traces", "blocks"] = "auto",
    redact: bool | Redactor = True,
) -> str:
    """The report as an HTML string.

    ``results``: results file path(s) (one run per file, named by the file), a list of
    annotations, or ``{run name: annotations}``.  ``traces``: the annotated traces, for
    trace fields (system, model, benchmark, outcome) and the text of cited steps.
    ``reference``: labels to measure agreement against (any source
    :func:`mast.agreement` takes); the explorer also shows the labels the traces carry.
    ``ci``: the interval of the prevalence tables (``"wilson"`` stays informative at 0 % and
    100 %, where a bootstrap interval collapses).  ``resample``: the bootstrap unit of the
    agreement section, as in :func:`mast.agreement`.  ``redact``: trace text and what the
    judges wrote about it (summaries, rationales, quotes, errors) pass through
    :mod:`mast.privacy` before they reach the page (``True``, default); ``False`` shows the raw
    text and says so at the top of the page; or a
    :class:`~mast.privacy.redact.Redactor` of your own.
    """
    import jinja2

    from mast._version import __version__
    from mast.analysis.data import collect

    # Figures are matplotlib Figure objects saved to PNG (the Agg canvas), without pyplot:
    # nothing is shown and no global backend is changed.
    redactor = shown_redactor(redact)
    runs = redact_runs(_runs(results), redactor)
    trace_list, secrets = redact_traces(traces or [], redactor)
    frame = _frame(runs)
    sections: list[_Section] = [_summary(runs, trace_list)]
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = collect(frame, traces=trace_list or None) if len(frame) else None
        if data is not None and len(data):
            by = _group_field(data, runs)
            sections.append(_profiles(data, by, bootstrap, seed, ci))
            # Runs may annotate the same traces (two judges): pooling them would count a
            # trace twice in statistics about traces, so these two are computed per run.
            sections.append(_per_run(data, runs, _cooccurrence))
            sections.append(_per_run(data, runs, lambda d: _outcomes(d, bootstrap, seed)))
        else:
            sections.append(
                _Section("Failure profiles", "profiles", skipped="No usable annotation.")
            )
        judged = judge_runs(runs)  # agreement is per judge run (sample, model), not per file
        if reference is not None:
            sections.append(
                _agreement(judged, reference, reference_name, bootstrap, seed, resample)
            )
        if len(judged) > 1:
            sections.append(runs_compared(judged, bootstrap=bootstrap, seed=seed))
        explorer = explorer_data(
            judged, trace_list, reference=reference, reference_name=reference_name
        )
    messages += sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,  # everything from traces and annotations is escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template("report.html.j2")
    return template.render(
        title=title or "mast report",
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        inputs=list(inputs) or list(runs),
        settings=f"bootstrap {bootstrap} resamples, seed {seed}, prevalence intervals: {ci}",
        sections=sections,
        explorer=explorer,
        explorer_json=embed_json(explorer),
        script=(_TEMPLATES / "report.js").read_text(encoding="utf-8"),
        explorer_css=(_TEMPLATES / "report_explorer.css").read_text(encoding="utf-8"),
        messages=messages,
        redacted=redactor.enabled,
        secrets=secrets,
        excluded=_excluded(data),
        elsewhere=_exclusions_elsewhere(sections, runs),
    )


def _excluded(data: VectorData | None) -> list[str]:
    if data is None:
        return []
    unknown = {c: int((data.values[:, j] < 0).sum()) for j, c in enumerate(data.codes)}
    lines: list[str] = data.excluded.replace(unknown_cells=unknown).lines()
    return lines


def _exclusions_elsewhere(sections: Sequence[_Section], runs: Results) -> list[str]:
    """Titles of the sections that list their own exclusions, so the closing "Excluded"
    list never claims that nothing was left out while a section above says otherwise."""
    named = []
    for section in sections:
        text = " ".join([*section.notes, *(t[0] for t in section.tables)]).lower()
        if any(word in text for word in ("excluded", "left out", "no statistic", "unknown")):
            named.append(section.title)
    return named


def write_report(results: Results, out: str | Path, **options: Any) -> Path:
    """Render the report (see :func:`render_report`) and write it to ``out``."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(results, **options), encoding="utf-8")
    return path
