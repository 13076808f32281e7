"""Benchmark inputs, built from the real MAD trajectories in ``tests/fixtures/mad_frameworks``.

* :func:`write_mad_sized` writes N traces in the MAD full-dataset format whose sizes follow
  MAD's shape (median about 10k characters, long tail, a few of about 1 MB).
* :func:`write_mad_file` writes a MAD-format file of a given size by repeating the shared
  records with new ids (for the memory benchmark).

Traces are cut from real trajectories at line boundaries, so every framework's log layout
(and so its segmenter) is exercised. A trace is cut from a trajectory at least as long as it
(the frameworks are taken in turn, skipping those too short), so nothing is repeated inside a
trace, except in the ~1 MB traces: no real trajectory here is that long (the longest, ChatDev,
is 173k characters), so those repeat it about six times, and compact rendering shows the
repeats once. The benchmarks say so where it matters (cost). Labels are random 0/1 (the
benchmarks never score them).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mad_frameworks"
CODES = ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]
CODES += ["3.1", "3.2", "3.3"]

# fixture folder -> (mas_name, benchmark_name, llm_name) as the MAD full file spells them
# (the human file swaps mas_name and benchmark for Magentic and OpenManus; we do not).
_SOURCES = {
    "ag2": ("AG2", "GSM-Plus", "GPT-4o"),
    "appworld": ("AppWorld", "Test-C", "GPT-4o"),
    "chatdev": ("ChatDev", "ProgramDev", "GPT-4o"),
    "hyperagent": ("HyperAgent", "SWE-Bench-Lite", "Claude-3.5-Sonnet"),
    "magentic_one_gaia": ("Magentic", "GAIA", "GPT-4o"),
    "metagpt": ("MetaGPT", "MMLU", "GPT-4o"),
    "openmanus": ("OpenManus", "GAIA", "GPT-4o"),
}

MEDIAN_CHARS = 10_000
BIG_CHARS = 1_000_000


@dataclass(frozen=True)
class Source:
    mas_name: str
    benchmark: str
    llm: str
    text: str


def sources() -> list[Source]:
    """One real trajectory per framework, in a fixed order."""
    out = []
    for folder, (mas, bench, llm) in _SOURCES.items():
        (path,) = sorted((FIXTURES / folder).glob("*.trajectory.txt"))
        out.append(Source(mas, bench, llm, path.read_text(encoding="utf-8")))
    return out


def _sized(text: str, size: int, rng: random.Random) -> str:
    """About ``size`` characters of ``text`` from a random line on, cut at a line end, so no
    two traces are the same (``text`` repeated only when it is shorter than ``size``)."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    # A start that leaves room for the whole cut, so a text long enough is never wrapped.
    room = [i for i in starts if i + size <= len(text)]
    start = rng.choice(room or starts[: max(1, len(starts) - 1)])
    repeats = math.ceil((size + start) / (len(text) + 1)) + 1
    body = "\n".join([text] * repeats)[start:]
    cut = body.rfind("\n", 0, size)
    return body[: cut if cut > size // 2 else size]


def source_for(src: list[Source], i: int, size: int) -> Source:
    """The ``i``-th framework in turn, or the next one long enough for ``size`` characters
    (the longest when none is)."""
    turn = [src[(i + k) % len(src)] for k in range(len(src))]
    fits = [s for s in turn if len(s.text) >= size]
    return fits[0] if fits else max(src, key=lambda s: len(s.text))


def record(source: Source, trace_id: int, text: str, rng: random.Random) -> dict[str, Any]:
    """One record in the MAD full-dataset layout."""
    key = f"{source.mas_name}_{source.benchmark}_{source.llm}".replace(" ", "")
    return {
        "mas_name": source.mas_name,
        "llm_name": source.llm,
        "benchmark_name": source.benchmark,
        "trace_id": trace_id,
        "trace": {"key": key, "index": trace_id, "trajectory": text},
        "mast_annotation": {code: int(rng.random() < 0.2) for code in CODES},
    }


def sizes(n: int, *, seed: int = 0, big: int | None = None) -> list[int]:
    """MAD-like trace lengths: log-normal around 10k characters, plus ``big`` ones of about
    1 MB (default: 1 in 50, at least one)."""
    rng = random.Random(seed)
    big = max(1, round(n / 50)) if big is None else big
    out = [int(min(150_000, max(1_500, rng.lognormvariate(math.log(MEDIAN_CHARS), 0.9))))]
    out += [
        int(min(150_000, max(1_500, rng.lognormvariate(math.log(MEDIAN_CHARS), 0.9))))
        for _ in range(n - big - 1)
    ]
    out += [BIG_CHARS] * big
    rng.shuffle(out)
    return out


def mad_sized_records(n: int, *, seed: int = 0, big: int | None = None) -> list[dict[str, Any]]:
    rng = random.Random(seed + 1)
    src = sources()
    out = []
    for i, size in enumerate(sizes(n, seed=seed, big=big)):
        source = source_for(src, i, size)
        out.append(record(source, 100_000 + i, _sized(source.text, size, rng), rng))
    return out


def write_mad_sized(path: Path, n: int, *, seed: int = 0, big: int | None = None) -> dict[str, Any]:
    """Write ``n`` MAD-sized traces as a MAD full-format JSON array; returns size stats."""
    records = mad_sized_records(n, seed=seed, big=big)
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    lengths = sorted(len(r["trace"]["trajectory"]) for r in records)
    return {
        "traces": n,
        "median_chars": lengths[len(lengths) // 2],
        "max_chars": lengths[-1],
        "total_chars": sum(lengths),
        "file_bytes": path.stat().st_size,
    }


def write_long(path: Path, n: int, *, seed: int = 0) -> dict[str, Any]:
    """``n`` synthetic traces of about 1 MB (no real trajectory is that long: the longest,
    ChatDev's, is repeated about six times), as a MAD full-format file; returns size stats."""
    rng = random.Random(seed + 1)
    src = sources()
    records = []
    for i in range(n):
        source = source_for(src, i, BIG_CHARS)
        records.append(record(source, 400_000 + i, _sized(source.text, BIG_CHARS, rng), rng))
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    lengths = sorted(len(r["trace"]["trajectory"]) for r in records)
    return {
        "traces": n,
        "median_chars": lengths[len(lengths) // 2],
        "max_chars": lengths[-1],
        "file_bytes": path.stat().st_size,
    }


def write_uniform(path: Path, n: int, chars: int, *, seed: int = 0) -> None:
    """``n`` traces of about ``chars`` characters each (cut from every framework in turn)."""
    rng = random.Random(seed)
    src = sources()
    records = []
    for i in range(n):
        source = source_for(src, i, chars)
        records.append(record(source, 200_000 + i, _sized(source.text, chars, rng), rng))
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")


def _repeated(target_bytes: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    src = sources()
    written = 0
    i = 0
    while written < target_bytes:
        item = json.dumps(
            record(src[i % len(src)], 300_000 + i, src[i % len(src)].text, rng),
            ensure_ascii=False,
        )
        written += len(item.encode("utf-8")) + 2
        i += 1
        yield item


def write_mad_file(path: Path, target_bytes: int, *, seed: int = 0) -> dict[str, Any]:
    """A MAD full-format file of about ``target_bytes``: the shared records, new ids."""
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for i, item in enumerate(_repeated(target_bytes, seed)):
            fh.write(",\n" if i else "\n")
            fh.write(item)
            count += 1
        fh.write("\n]\n")
    return {"records": count, "file_bytes": path.stat().st_size}
