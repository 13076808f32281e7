"""Other people's label tables: FM-x.y / x.y / name columns, id maps, and the headline line
that says when columns were dropped (issue 32 item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast.agree.ids import id_map_file, id_pattern
from mast.cli import main
from mast.traces.datasets import examples_path

SAMPLE = str(examples_path() / "mad_human_sample.json")
PEER = (
    "trace_id,FM-1.3,fm_1.5,3.2 No or Incomplete Verification,Step Repetition,confidence\n"
    "mad-2,0,1,0,0,0.9\nmad-7,0,1,1,0,0.8\nmad-4,0,1,1,0,0.7\nmad-16,1,1,1,1,0.2\n"
)


def _agree(tmp_path: Path, *extra: str) -> tuple[int, dict[str, object], str]:
    """Run ``mast agree`` on the peer table against annotator_1 of the bundled sample."""
    table = tmp_path / "peer.csv"
    table.write_text(PEER, encoding="utf-8")
    argv = ["agree", "--reference", SAMPLE, "--reference-annotator", "annotator_1"]
    argv += ["--candidate", str(table), "--bootstrap", "0", "--format", "json", *extra]
    code = main(argv)
    return code, {}, str(table)


def test_peer_columns_and_an_id_pattern_score_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = _agree(tmp_path, "--id-pattern", "mad-{n}=mad-human/{n}")
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 0 and data["n_traces"] == 4
    rows = {r["row"]: r for r in data["rows"]}
    assert all(rows[c]["n"] > 0 for c in ("1.3", "1.5", "3.2"))  # read from FM-/fm_/names
    assert rows["1.1"]["n"] == 0  # no column for it
    assert data["excluded"]["ignored_fields"] == {"candidate": ["confidence"]}
    assert "4 of 4 trace id(s) renamed by the id map" in captured.err


def test_an_id_map_file_and_the_headline_names_dropped_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = tmp_path / "ids.csv"
    pairs = "".join(f"mad-{n},mad-human/{n}\n" for n in (2, 7, 4, 16))
    ids.write_text("peer_id,trace_id\n" + pairs, encoding="utf-8")
    table = tmp_path / "peer.csv"
    table.write_text(PEER.replace("fm_1.5", "Flagged Loop"), encoding="utf-8")
    argv = ["agree", "--reference", SAMPLE, "--reference-annotator", "annotator_1"]
    argv += ["--candidate", str(table), "--bootstrap", "0", "--id-map", str(ids)]
    assert main(argv) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    assert headline.startswith("Agreement of peer with annotator_1: 4 trace(s)")
    assert "2 column(s) of peer dropped (Flagged Loop, confidence): see Excluded" in headline


def test_id_maps_are_checked() -> None:
    assert id_pattern("run-{k}.json=mad-human/{k}")("run-12.json") == "mad-human/12"
    with pytest.raises(Exception, match="same one placeholder"):
        id_pattern("mad-{n}=mad-human/{m}")
    with pytest.raises(Exception, match="expected FROM=TO"):
        id_pattern("mad-{n}")


def test_an_id_map_that_merges_two_traces_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps({"mad-2": "mad-human/2", "mad-7": "mad-human/2"}))
    assert id_map_file(ids)("mad-4") == "mad-4"
    code, _, _ = _agree(tmp_path, "--id-map", str(ids))
    assert code == 2 and "the same trace id 'mad-human/2'" in capsys.readouterr().err


def test_label_version_file_changes_a_draft_round_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundled = Path(__file__).resolve().parents[2] / "taxonomy" / "versions" / "round1.yaml"
    text = bundled.read_text(encoding="utf-8")
    line = '{code: "2.3", name: Backtracking interruption, maps_to: "1.4"}'
    assert line in text
    mine = tmp_path / "round1-unmapped.yaml"
    mine.write_text(text.replace(line, line.replace('"1.4"', "null")), encoding="utf-8")
    argv = ["agree", "--among", SAMPLE, "--bootstrap", "0", "--format", "json", "--modes", "1.4"]
    assert main(argv) == 0
    before = json.loads(capsys.readouterr().out)["overall"]
    assert main([*argv, "--label-version", str(mine)]) == 0
    captured = capsys.readouterr()
    after = json.loads(captured.out)["overall"]
    assert "label version 'round1' read from --label-version" in captured.err
    unmapped = json.dumps(after["excluded"])
    assert "Backtracking interruption" in unmapped
    assert "Backtracking interruption" not in json.dumps(before["excluded"])


def test_report_names_only_the_option_it_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 11: mast report suggested --candidate-annotator, which it rejects."""
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path / "cache"))
    results = tmp_path / "r.jsonl"
    assert main(["annotate", SAMPLE, "--model", "heuristic", "--out", str(results), "-q"]) == 0
    capsys.readouterr()
    code = main(["report", str(results), "--reference", SAMPLE, "--out", str(tmp_path / "x.html")])
    err = capsys.readouterr().err
    assert code == 2 and "say which one with --reference-annotator (or" in err
    assert "--candidate-annotator" not in err
