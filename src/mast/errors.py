"""The exception tree: every error mast raises on purpose is a :class:`MastError`.

Messages follow one rule: say what was received, what was expected, and how to fix it.
"""

from __future__ import annotations

from pathlib import Path


class MastError(Exception):
    """Base class of every error raised by mast."""


class TaxonomyError(MastError):
    """A taxonomy file (or a draft-version mapping) is missing, malformed or inconsistent."""


class TraceFormatError(MastError):
    """A trace file or record could not be read as the format that was tried.

    The message names the file, the place in it (record index or line), the format tried,
    what was expected and what was found, so the user can fix the input without a debugger.

    >>> err = TraceFormatError("empty file", path="run.json", format="auto", expected="JSON or text")
    >>> print(err)
    run.json: empty file (format 'auto'; expected JSON or text)
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        location: str | None = None,
        format: str | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.location = location
        self.format = format
        self.expected = expected
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path or "<input>"
        if self.location:
            where += f" ({self.location})"
        details = []
        if self.format:
            details.append(f"format {self.format!r}")
        if self.expected:
            details.append(f"expected {self.expected}")
        text = f"{where}: {self.problem}"
        if details:
            text += f" ({'; '.join(details)})"
        if self.hint:
            text += f". {self.hint}"
        return text

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructor: teach pickle (multiprocessing, caches) how to rebuild it.
        return (_rebuild_trace_format_error, (self.problem, self.__dict__.copy()))


def _rebuild_trace_format_error(problem: str, state: dict[str, object]) -> TraceFormatError:
    err = TraceFormatError.__new__(TraceFormatError)
    err.__dict__.update(state)
    Exception.__init__(err, err._render())
    return err


class LabelMappingError(MastError):
    """A human label could not be matched to any mode of its taxonomy version."""
