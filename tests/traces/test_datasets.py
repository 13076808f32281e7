from __future__ import annotations

import json
from pathlib import Path

import pytest

import mast
from mast.traces.loaders import LabelMappingWarning
from mast.traces.segment import reassemble, squash


def test_mad_human_sample_labels_land_on_final_codes(fixtures: Path) -> None:
    traces = {
        t.id: t for t in mast.traces.datasets.load_mad_human(fixtures / "mad" / "human_sample.json")
    }
    assert list(traces) == ["mad-human/2", "mad-human/7", "mad-human/4", "mad-human/16"]

    round1 = traces["mad-human/4"]  # MetaGPT, Round 1: "2.2 Step repetition" is yes for all
    for annotator in ("annotator_1", "annotator_2", "annotator_3"):
        vector = round1.labels[annotator]
        assert vector["1.3"] is True  # Round 1 2.2 Step repetition
        assert vector["2.1"] is True  # Round 1 2.4 Conversation reset
        assert vector["1.2"] is True  # Round 1 2.6 Disobey role specification
        assert vector["3.2"] is True and vector["3.3"] is True  # 4.3 and 4.2
        assert vector["2.2"] is False  # Round 1 1.4 Fail to elicit clarification
        assert None not in vector.values()
        source = round1.label_sources[annotator]
        assert source.taxonomy_version == "round1" and source.kind == "human"
        assert "Round 1" in (source.origin or "")
        # Draft modes without a final counterpart stay visible, with their values.
        assert source.unmapped["3.4 Waiting for known information"] is True
        assert len(source.unmapped) == 4

    round2 = traces["mad-human/7"]
    assert round2.label_sources["annotator_1"].taxonomy_version == "rounds2-3"
    # Rounds 2-3 draft 3.3 "Lack of result verification" (checking left out) is final 3.2.
    assert round2.labels["annotator_1"].positives == ["3.2"]
    assert len(round2.label_sources["annotator_1"].unmapped) == 3

    final = traces["mad-human/16"]
    assert final.label_sources["annotator_2"].taxonomy_version == "final"
    assert final.labels["annotator_1"].positives == ["1.1", "3.2", "3.3"]
    # The final round prints the "result verification" text under 3.3: read by text, 3.2.
    assert final.labels["annotator_2"].positives == ["3.2"]
    assert final.label_sources["annotator_1"].unmapped == {}
    assert final.system == "MetaGPT" and final.benchmark == "MMLU"
    assert traces["mad-human/2"].labels["annotator_3"].positives == ["1.5", "2.5"]


def test_mad_human_nan_tokens_are_unknown_not_no(fixtures: Path) -> None:
    path = fixtures / "mad" / "human_with_nan.json"
    assert "NaN" in path.read_text()  # strict JSON parsers reject this file
    first, second = mast.traces.datasets.load_mad_human(path)
    assert first.labels["annotator_2"]["1.1"] is None
    assert first.labels["annotator_1"]["1.1"] is True
    assert second.labels["annotator_1"]["3.2"] is None  # Rounds 2-3 "3.3" maps to final 3.2


def test_mad_human_swapped_fields_are_put_back(tmp_path: Path, fixtures: Path) -> None:
    record = json.loads((fixtures / "mad" / "human_sample.json").read_text())[3]
    record["mas_name"], record["benchmark_name"] = "MMLU", "MetaGPT"  # as records 17 and 18
    path = tmp_path / "swapped.json"
    path.write_text(json.dumps([record]))
    (trace,) = mast.traces.datasets.load_mad_human(path)
    assert (trace.system, trace.benchmark) == ("MetaGPT", "MMLU")
    assert trace.metadata["quirks"] == ["mas_name and benchmark_name were swapped"]


def test_mad_human_unmatched_label_is_kept_and_warned(tmp_path: Path, fixtures: Path) -> None:
    record = json.loads((fixtures / "mad" / "human_sample.json").read_text())[3]
    record["annotations"][0]["failure mode"] = "1.1 Something nobody defined\n\ntext"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps([record]))
    with pytest.warns(LabelMappingWarning, match="matches no mode of final"):
        (trace,) = mast.traces.datasets.load_mad_human(path)
    assert trace.labels["annotator_1"]["1.1"] is None  # unknown, never a silent "no"
    assert trace.label_sources["annotator_1"].unmapped == {"1.1 Something nobody defined": True}


def test_mad_full_record_with_o1_labels(fixtures: Path) -> None:
    (trace,) = mast.traces.datasets.load_mad(fixtures / "mad" / "full_record_chatdev.json")
    raw = json.loads((fixtures / "mad" / "full_record_chatdev.json").read_text())
    assert trace.id == "mad/ChatDev_ProgramDev_GPT4o/5"
    assert (trace.system, trace.model, trace.benchmark) == ("ChatDev", "GPT-4o", "ProgramDev")
    assert trace.labels["o1"].to_dict() == {k: bool(v) for k, v in raw["mast_annotation"].items()}
    assert trace.label_sources["o1"].kind == "llm"
    assert trace.segmented and len({s.agent for s in trace.steps}) > 3
    assert squash(reassemble(trace.steps)) == squash(raw["trace"]["trajectory"])


def test_mad_full_array_streams_and_null_labels_stay_unknown(fixtures: Path) -> None:
    stream = mast.traces.datasets.load_mad(fixtures / "mad" / "full_array.json", stream=True)
    assert not isinstance(stream, list)
    first = next(stream)
    second = next(stream)
    assert first.labels["o1"]["1.1"] is True
    assert list(second.labels["o1"].values()) == [None] * 14
    assert second.source.endswith("#record 1")
    assert next(stream, None) is None


def test_mad_full_bad_record_does_not_lose_the_good_one(tmp_path: Path, fixtures: Path) -> None:
    good = json.loads((fixtures / "mad" / "full_record_chatdev.json").read_text())
    path = tmp_path / "mad.json"
    path.write_text(json.dumps([{"mast_annotation": {}, "trace": 3}, good]))
    errors: list[mast.TraceFormatError] = []
    traces = list(mast.load_traces(path, on_error="skip", errors=errors))
    assert [t.id for t in traces] == ["mad/ChatDev_ProgramDev_GPT4o/5"]
    assert errors[0].location == "record 0" and errors[0].format == "mad-full"


def test_bundled_examples() -> None:
    traces = mast.traces.datasets.example_traces()
    assert len(traces) == 7
    assert sum("annotator_1" in t.labels for t in traces) == 4
