"""Read limits: a compressed bomb, an endless line, a huge trace are one error each."""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from mast.errors import TraceFormatError
from mast.traces.limits import ReadLimitError, ReadLimits, parse_size, read_limits
from mast.traces.loaders import load_trace, load_traces

CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def _gzip_line(path: Path, size: int) -> None:
    chunk = b"a" * 2**20
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b'{"role": "user", "content": "')
        for _ in range(size // len(chunk)):
            out.write(chunk)
        out.write(b'"}\n{"role": "assistant", "content": "x"}\n')


def test_a_gzip_bomb_is_stopped_at_the_file_limit(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    _gzip_line(bomb, 4 * 2**20)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(CHAT), encoding="utf-8")
    errors: list[TraceFormatError] = []
    with read_limits(ReadLimits(file_bytes=2**20)):
        traces = list(load_traces([bomb, good], on_error="skip", errors=errors))
    assert [t.id for t in traces] == ["good"]  # the other file is still read
    assert len(errors) == 1 and isinstance(errors[0], ReadLimitError)
    message = str(errors[0])
    assert str(bomb) in message and "decompressed file is over the limit of 1 MiB" in message
    assert "--max-file-size" in message


def test_a_plain_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(CHAT * 100), encoding="utf-8")
    with pytest.raises(ReadLimitError, match="the file is over the limit of 1,000"):
        load_trace(path, limits=ReadLimits(file_bytes=1000))
    assert len(load_trace(path).steps) == 200  # the defaults read it


def test_line_trace_and_step_limits(tmp_path: Path) -> None:
    lines = tmp_path / "run.jsonl"
    lines.write_text(
        "\n".join(json.dumps(m) for m in [*CHAT, {"role": "user", "content": "z" * 5000}]),
        encoding="utf-8",
    )
    with pytest.raises(ReadLimitError, match="line 3 is over the limit of 4 KiB"):
        list(load_traces(lines, limits=ReadLimits(line_bytes=4096)))
    with pytest.raises(ReadLimitError, match=r"text of trace run \(5,007 characters\)"):
        list(load_traces(lines, limits=ReadLimits(trace_bytes=5000)))
    with pytest.raises(ReadLimitError, match="has 3 steps, which is over the limit of 2"):
        load_trace(lines, limits=ReadLimits(steps=2))
    # limits given to load_traces hold only while it reads: the caller's are back between items
    assert len(load_trace(lines).steps) == 3


def test_sizes_and_the_command_line_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mast.cli import main

    assert parse_size("64M") == 64 * 2**20 and parse_size("2GiB") == 2 * 2**30
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(json.dumps(CHAT * 50).encode()))
    assert main(["inspect", str(path), "--max-file-size", "1K"]) == 1
    err = capsys.readouterr().err
    assert "over the limit of 1 KiB" in err and "Traceback" not in err
    assert main(["inspect", str(path)]) == 0  # the option did not outlive its command


@pytest.mark.slow
def test_a_gigabyte_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # the adversarial case: 1 GiB of one line in a ~1 MB file, read by the CLI in a child
    # process capped at 2 GiB of address space; it must end in one error line, no traceback
    bomb = tmp_path / "bomb.jsonl.gz"
    _gzip_line(bomb, 2**30)
    assert bomb.stat().st_size < 8 * 2**20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    # the child's own high-water mark from /proc (ru_maxrss may carry this process's)
    child = (
        "import sys\n"
        "from mast.cli import main\n"
        "code = main(['inspect', sys.argv[1]])\n"
        "with open('/proc/self/status') as f:\n"
        "    hwm = [line.split()[1] for line in f if line.startswith('VmHWM')]\n"
        "print('VmHWM', *hwm, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(bomb)],
        capture_output=True,
        text=True,
        preexec_fn=cap,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "over the limit of 256 MiB" in done.stderr
    peak_kib = int(done.stderr.split("VmHWM")[1].split()[0])
    assert peak_kib < 1_000_000  # about one limit's worth (measured: ~300 MB; before: 4.2 GB)
