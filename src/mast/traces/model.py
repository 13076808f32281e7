"""The normalized trace model every loader produces and every judge reads (no I/O here).

>>> t = Trace(id="demo", steps=[Step.make(0, "Solve 2+2", agent="user", role="user"),
...                             Step.make(1, "4", agent="solver", role="assistant")])
>>> [s.id for s in t.steps], t.outcome
(['s1', 's2'], <Outcome.UNKNOWN: 'unknown'>)
>>> Trace.model_validate_json(t.model_dump_json()) == t
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import core_schema

SCHEMA_VERSION = 1


class Outcome(str, Enum):
    """Whether the traced run achieved its task, when that is known."""

    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class StepKind(str, Enum):
    """What a step is: a message, a tool call or its result, system text, or log noise."""

    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    SYSTEM = "system"
    LOG = "log"


class FailureVector(Mapping[str, "bool | None"]):
    """One verdict per failure-mode code: ``True`` (present), ``False`` (absent) or ``None``.

    ``None`` means *unknown* (not answered, unreadable, unlabelled) and is never the same as
    ``False``. A vector always holds every code it was built with, so ``vector[code]`` never
    raises for a code of its taxonomy.

    >>> v = FailureVector({"1.1": True, "1.2": False}, codes=["1.1", "1.2", "1.3"])
    >>> v["1.3"] is None, v.positives, v.unknown
    (True, ['1.1'], ['1.3'])
    """

    __slots__ = ("_values",)

    def __init__(
        self,
        values: Mapping[str, bool | None] | None = None,
        *,
        codes: Iterable[str] | None = None,
    ) -> None:
        values = dict(values or {})
        for code, value in values.items():
            if value is not None and not isinstance(value, bool):
                raise TypeError(
                    f"failure vector value for {code!r} must be True, False or None, "
                    f"got {value!r}; convert 0/1 labels with FailureVector.from_labels"
                )
        if codes is not None:
            code_list = list(codes)
            unknown = sorted(set(values) - set(code_list))
            if unknown:
                raise KeyError(f"codes {unknown} are not in the taxonomy codes {code_list}")
            values = {code: values.get(code) for code in code_list}
        self._values: dict[str, bool | None] = values

    @classmethod
    def from_labels(
        cls, labels: Mapping[str, object], *, codes: Iterable[str] | None = None
    ) -> FailureVector:
        """Build from loose labels: 1/0, "yes"/"no", booleans; null/NaN/"" become ``None``.

        >>> FailureVector.from_labels({"1.1": 1, "1.2": "no", "1.3": float("nan")})["1.3"] is None
        True
        """
        return cls({code: to_bool(value) for code, value in labels.items()}, codes=codes)

    def __getitem__(self, code: str) -> bool | None:
        try:
            return self._values[code]
        except KeyError:
            raise KeyError(
                f"no failure mode {code!r} in this vector; its codes are {list(self._values)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"FailureVector({self._values!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._values) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking mapping: not hashable

    @property
    def positives(self) -> list[str]:
        """Codes judged present."""
        return [c for c, v in self._values.items() if v is True]

    @property
    def unknown(self) -> list[str]:
        """Codes with no usable answer (``None``)."""
        return [c for c, v in self._values.items() if v is None]

    def to_dict(self) -> dict[str, bool | None]:
        """A plain ``{code: True | False | None}`` dict."""
        return dict(self._values)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        from_dict = core_schema.no_info_after_validator_function(
            cls,
            core_schema.dict_schema(
                core_schema.str_schema(),
                core_schema.nullable_schema(core_schema.bool_schema(strict=True)),
            ),
        )
        return core_schema.json_or_python_schema(
            json_schema=from_dict,
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), from_dict]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda v: v.to_dict()),
        )


_TRUE_WORDS = {"true", "yes", "y", "1", "present"}
_FALSE_WORDS = {"false", "no", "n", "0", "absent"}


def to_bool(value: object) -> bool | None:
    """Read one loose label as ``True``/``False``; anything unreadable is ``None``.

    >>> to_bool(1), to_bool("No "), to_bool(None), to_bool(float("nan")), to_bool("maybe")
    (True, False, None, None, None)
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if value != value:  # NaN
            return None
        return True if value == 1 else False if value == 0 else None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


class LabelSource(BaseModel):
    """Where one annotator's labels on a trace came from."""

    model_config = ConfigDict(extra="forbid")

    annotator: str
    kind: str = Field(default="human", description='"human", "llm" or "rules".')
    taxonomy_version: str | None = Field(
        default=None, description='Label version the source used, e.g. "round1", "final".'
    )
    origin: str | None = Field(default=None, description="Dataset, file or round it came from.")
    verification: str | None = Field(
        default=None,
        description='Convention of the codes 3.2/3.3: "paper" (3.2 no or incomplete, 3.3 '
        'incorrect) or "official" (3.2 weak, 3.3 no or incorrect); None when unknown.',
    )
    unmapped: dict[str, bool | None] = Field(
        default_factory=dict,
        description="Draft-mode labels with no final counterpart, by draft label name.",
    )


class Step(BaseModel):
    """One step of a trace: a message, tool call, tool result, system text or log entry.

    ``id`` is ``"s<index+1>"``: stable for the same input, so evidence can cite it.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    index: int = Field(ge=0, description="0-based position in the trace.")
    agent: str | None = Field(default=None, description="Who produced it (agent name).")
    role: str | None = Field(default=None, description="Chat role: user/assistant/system/tool…")
    kind: StepKind = StepKind.MESSAGE
    content: str = ""
    tool_name: str | None = None
    tool_args: Any = None
    timestamp: str | None = Field(default=None, description="As written in the source.")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def make(cls, index: int, content: str, **fields: Any) -> Step:
        """Build the step at ``index`` with its canonical id."""
        return cls(id=f"s{index + 1}", index=index, content=content, **fields)


class Trace(BaseModel):
    """One run of an agent system, normalized: ordered steps, task, outcome and labels."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    id: str
    task: str | None = Field(default=None, description="The task or question the run was given.")
    system: str | None = Field(default=None, description="Agent system / framework name.")
    model: str | None = Field(default=None, description="LLM behind the agents, if known.")
    benchmark: str | None = None
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome = Outcome.UNKNOWN
    labels: dict[str, FailureVector] = Field(
        default_factory=dict, description="Annotator name -> failure vector."
    )
    label_sources: dict[str, LabelSource] = Field(default_factory=dict)
    segmented: bool = Field(default=True, description="False when the raw log is one unsplit step.")
    source: str | None = Field(default=None, description="File (and record) it was loaded from.")
    format: str | None = Field(default=None, description="Loader format that produced it.")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def text_length(self) -> int:
        """Total characters of step content."""
        return sum(len(s.content) for s in self.steps)

    def step(self, step_id: str) -> Step:
        """The step with this id."""
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(f"trace {self.id!r} has no step {step_id!r} (it has {len(self.steps)})")
