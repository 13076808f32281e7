"""Tests of ``mast agree``: the MAD human sample, results stores, label tables, errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import mast
from mast.agree import agreement, agreement_among, labels_of
from mast.agree.stats import UndefinedMetricWarning
from mast.cli import main

CODES = mast.load_taxonomy().codes


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["agree", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def human_file(fixtures: Path) -> Path:
    return fixtures / "mad" / "human_sample.json"


@pytest.fixture
def human(human_file: Path) -> list[mast.Trace]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="trace kept unsegmented")
        return mast.traces.datasets.load_mad_human(human_file)


def test_pair_of_annotators_on_the_mad_human_sample(
    capsys: pytest.CaptureFixture[str], human_file: Path
) -> None:
    code, out, err = run(
        capsys,
        "--reference", str(human_file), "--reference-annotator", "annotator_1",
        "--candidate", str(human_file), "--candidate-annotator", "annotator_2",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Agreement of annotator_2 with annotator_1: 4 trace(s) x 14")
    assert "pooled Cohen's kappa = 0.900 over 56 cells, 95% CI [" in lines[1]
    header = next(line for line in lines if line.startswith("mode "))
    assert "kappa" in header and "95% CI" in header and "F1 CI" in header
    rows = {line.split()[0] for line in lines if line[:1].isdigit() or line.startswith("p")}
    assert set(CODES) <= rows and {"3.2∨3.3", "pooled"} <= rows
    assert "3.4 Waiting for known information (2)" in out  # unmapped draft mode, counted
    assert "undefined on this data" in err and "kappa for 1.4, 2.2, 2.4, 3.1" in err


def test_json_output_is_the_library_report(
    capsys: pytest.CaptureFixture[str], human_file: Path, human: list[mast.Trace]
) -> None:
    code, out, _ = run(
        capsys,
        "--reference", str(human_file), "--reference-annotator", "annotator_1",
        "--candidate", str(human_file), "--candidate-annotator", "annotator_3",
        "--format", "json", "--bootstrap", "300", "--seed", "9", "--ci", "bca",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        rep = agreement(
            labels_of(human, "annotator_1"),
            labels_of(human, "annotator_3"),
            bootstrap=300,
            seed=9,
            ci="bca",
        )
    assert data["pooled"] == json.loads(rep.to_json())["pooled"]
    assert data["pooled"]["kappa"] == 1.0 and data["settings"]["ci"] == "bca"


def test_markdown_and_selected_modes(capsys: pytest.CaptureFixture[str], human_file: Path) -> None:
    code, out, _ = run(
        capsys,
        "--reference", str(human_file), "--reference-annotator", "annotator_1",
        "--candidate", str(human_file), "--candidate-annotator", "annotator_2",
        "--format", "markdown", "--modes", "1.5,3.2", "3.3", "--bootstrap", "0",
    )  # fmt: skip
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    split = next(i for i, line in enumerate(lines) if line.startswith("| system |"))
    table, systems = lines[:split], lines[split:]
    # The per-system table follows (AG2 and MetaGPT runs in the sample).
    assert [row.split(" | ")[0] for row in systems[2:]] == ["| AG2", "| MetaGPT"]
    assert table[0].startswith("| mode | name | n | kappa |")
    assert [row.split(" | ")[0] for row in table[2:]] == [
        "| 1.5",
        "| 3.2",
        "| 3.3",
        "| 3.2∨3.3",
        "| pooled",
        "| macro",
    ]


def test_among_on_the_mad_human_sample_with_versions(
    capsys: pytest.CaptureFixture[str], human_file: Path, human: list[mast.Trace]
) -> None:
    code, out, _ = run(capsys, "--among", str(human_file), "--bootstrap", "200")
    assert code == 0
    assert out.startswith("Agreement among 3 annotators (annotator_1, annotator_2, annotator_3)")
    assert "pooled Fleiss' kappa = 0.934" in out
    assert "Pairwise agreement" in out
    version_table = out[out.index("Among-annotator agreement per taxonomy version") :]
    for version in ("round1", "rounds2-3", "final", "overall"):
        assert f"\n{version} " in version_table
    assert "3.4 Waiting for known information" in version_table
    assert "=== round1 ===" not in out  # full per-version tables only with --by-version
    code, out, _ = run(capsys, "--among", str(human_file), "--bootstrap", "0", "--by-version")
    assert "=== round1 ===" in out and "=== final ===" in out

    code, out, _ = run(capsys, "--among", str(human_file), "--format", "json", "--bootstrap", "100")
    data = json.loads(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected = agreement_among(human, bootstrap=100)
    assert data["overall"]["pooled"] == json.loads(expected.to_json())["pooled"]
    assert list(data["by_version"]["reports"]) == ["round1", "rounds2-3", "final", "overall"]


def write_results(path: Path) -> None:
    """A results store: one parse error, a retried error, and a torn last line."""
    records = [
        {"trace_id": "t1", "status": "ok", "vector": {"1.1": True, "1.2": False}},
        {"trace_id": "t2", "status": "ok", "vector": {"1.1": False, "1.2": None}},
        {"trace_id": "t3", "status": "parse_error", "vector": {"1.1": None, "1.2": None}},
        {"trace_id": "t4", "status": "error", "vector": {"1.1": None, "1.2": None}},
        {"trace_id": "t4", "status": "ok", "vector": {"1.1": True, "1.2": True}},
        {"trace_id": "t5", "status": "ok", "vector": {"1.1": False, "1.2": False}},
    ]
    lines = [json.dumps(r) for r in records] + ['{"trace_id": "t6", "status": "o']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_csv_reference_against_a_results_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    human = tmp_path / "human.csv"
    human.write_text(
        "trace_id,1.1,1.2,notes\nt1,1,0,x\nt2,0,1,\nt3,1,1,\nt4,yes,,\nt5,0,0,\nt9,1,0,\n",
        encoding="utf-8",
    )
    results = tmp_path / "results.jsonl"
    write_results(results)
    code, out, err = run(
        capsys,
        "--reference", str(human), "--candidate", str(results),
        "--modes", "1.1", "1.2", "--format", "json", "--bootstrap", "0",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["reference"] == "human" and data["candidate"] == "results"
    assert data["trace_ids"] == ["t1", "t2", "t4", "t5"]
    excluded = data["excluded"]
    assert excluded["failed"]["candidate"] == {"parse_error": ["t3"]}
    assert excluded["missing"]["candidate"] == ["t9"]
    assert excluded["duplicates"] == {"candidate": 1}
    assert excluded["ignored_fields"] == {"reference": ["notes"]}
    assert excluded["unknown_cells"] == {
        "reference": {"1.1": 0, "1.2": 1},
        "candidate": {"1.1": 0, "1.2": 1},
    }
    rows = {r["row"]: r for r in data["rows"]}
    assert (rows["1.1"]["tp"], rows["1.1"]["tn"], rows["1.1"]["n"]) == (2, 2, 4)
    assert "skipped 1 unreadable line(s) (line 7) — a torn last line" in err


def test_among_with_one_file_per_annotator_and_a_long_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = {
        "ann_a": ["t1,1,0", "t2,0,0", "t3,1,1", "t4,0,1"],
        "ann_b": ["t1,1,0", "t2,0,1", "t3,1,1", "t4,0,1"],
        "ann_c": ["t1,1,0", "t2,0,0", "t3,0,1", "t4,0,1"],
    }
    paths = []
    for name, lines in rows.items():
        path = tmp_path / f"{name}.csv"
        path.write_text("trace_id,1.1,1.2\n" + "\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    code, out, _ = run(capsys, "--among", *paths, "--modes", "1.1,1.2", "--format", "json")
    assert code == 0
    per_file = json.loads(out)
    assert per_file["overall"]["annotators"] == ["ann_a", "ann_b", "ann_c"]
    assert per_file["by_version"] is None

    long = tmp_path / "long.csv"
    long.write_text(
        "trace_id,annotator,1.1,1.2\n"
        + "\n".join(
            f"{line.split(',')[0]},{n},{line.split(',', 1)[1]}" for n in rows for line in rows[n]
        )
        + "\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "--among", str(long), "--modes", "1.1,1.2", "--format", "json")
    assert code == 0
    assert json.loads(out)["overall"]["pooled"] == per_file["overall"]["pooled"]


def test_label_mapping_json_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    labels = {"t1": {"1.1": True}, "t2": {"1.1": False}, "t3": {"1.1": True}}
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels), encoding="utf-8")
    code, out, _ = run(
        capsys, "--reference", str(path), "--candidate", str(path), "--modes", "1.1",
        "--format", "json", "--bootstrap", "0",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["pooled"]["kappa"] == 1.0


def test_plot_option_writes_a_figure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, human_file: Path
) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "forest.png"
    code, _, err = run(
        capsys,
        "--reference", str(human_file), "--reference-annotator", "annotator_1",
        "--candidate", str(human_file), "--candidate-annotator", "annotator_2",
        "--bootstrap", "50", "--plot", str(png),
    )  # fmt: skip
    assert code == 0 and png.stat().st_size > 1000 and "forest plot written" in err


def test_errors_exit_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, human_file: Path
) -> None:
    code, _, err = run(capsys, "--reference", str(human_file), "--candidate", str(human_file))
    assert code == 2
    assert "labels from 3 annotators ['annotator_1', 'annotator_2', 'annotator_3']" in err
    code, _, err = run(capsys, "--reference", str(tmp_path / "nope.csv"), "--candidate", "x.csv")
    assert code == 2 and "nope.csv" in err
    code, _, err = run(capsys, "--reference", str(human_file))
    assert code == 2 and "give --reference FILE and --candidate FILE" in err
    code, _, err = run(capsys, "--among", str(human_file), "--candidate", str(human_file))
    assert code == 2 and "not both" in err
    single = tmp_path / "one.csv"
    single.write_text("trace_id,1.1\nt1,1\n", encoding="utf-8")
    code, _, err = run(capsys, "--among", str(single))
    assert code == 2 and "one file per annotator" in err
    code, _, err = run(
        capsys, "--reference", str(single), "--candidate", str(single), "--modes", "9.9"
    )
    assert code == 2 and "modes must be distinct codes" in err


def test_no_common_trace_id_is_an_error_naming_ids_from_both_sides(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text("trace_id,1.1\nmad-human/1,1\nmad-human/2,0\n", encoding="utf-8")
    b.write_text("trace_id,1.1\n1,1\n2,1\n", encoding="utf-8")
    code, out, err = run(capsys, "--reference", str(a), "--candidate", str(b), "--modes", "1.1")
    assert code == 2 and out == ""
    assert "share no trace id" in err and "'mad-human/1'" in err and "'1'" in err
    assert "different id schemes" in err


def test_nothing_comparable_with_common_ids_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text("trace_id,1.1\nt1,\n", encoding="utf-8")
    b.write_text("trace_id,1.1\nt1,1\n", encoding="utf-8")
    code, _, err = run(capsys, "--reference", str(a), "--candidate", str(b), "--modes", "1.1")
    assert code == 1 and "no trace x mode cell could be compared" in err


def test_help_lists_the_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["agree", "--help"])
    assert info.value.code == 0
    assert "--reference-annotator" in capsys.readouterr().out
