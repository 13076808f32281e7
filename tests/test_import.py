"""``import mast`` loads only the version and the errors; every public name still resolves
(``mast.X``, ``from mast import X``, ``mast.<stage>.<module>``), in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import mast


def fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_mast_loads_no_stage() -> None:
    out = fresh(
        "import sys, mast\n"
        "print(sorted(m for m in sys.modules if m.startswith('mast')))\n"
        "print([m for m in ('pydantic', 'yaml', 'jinja2', 'numpy', 'openai') if m in sys.modules])"
    )
    assert out.splitlines() == ["['mast', 'mast._version', 'mast.errors']", "[]"]


def test_every_public_name_resolves_on_first_use() -> None:
    out = fresh(
        "import mast\n"
        "from mast import Judge, load_traces, agreement, RetryPolicy, itbench\n"
        "assert all(hasattr(mast, n) for n in mast.__all__), "
        "[n for n in mast.__all__ if not hasattr(mast, n)]\n"
        "print(len(mast.traces.datasets.example_traces()), mast.privacy.redact.Redactor.__name__, "
        "itbench.__name__, Judge('heuristic').model)"
    )
    assert out.split() == ["7", "Redactor", "mast.traces.itbench", "heuristic"]
    assert set(mast.__all__) <= set(dir(mast))


def test_an_unknown_name_is_an_attribute_error() -> None:
    for owner, name in ((mast, "nope"), (mast.traces, "nope"), (mast.judge, "__wrapped__")):
        try:
            getattr(owner, name)
        except AttributeError:
            continue
        raise AssertionError(f"{owner.__name__}.{name} resolved")


def test_the_command_line_help_loads_no_stage() -> None:
    out = fresh(
        "import sys, contextlib, io\n"
        "from mast.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print([m for m in ('pydantic', 'pandas', 'numpy', 'jinja2', 'mast.judge', 'mast.traces')"
        " if m in sys.modules])"
    )
    assert out.strip() == "[]"
