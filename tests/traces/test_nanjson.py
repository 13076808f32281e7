from __future__ import annotations

import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mast.traces.loaders._nanjson import NanToNullReader

_json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _nan_to_none(value: object) -> object:
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(value=_json_values, chunk=st.integers(min_value=1, max_value=9))
def test_nan_tokens_become_null_and_strings_stay_intact(value: object, chunk: int) -> None:
    text = json.dumps(value, ensure_ascii=False).encode()  # json.dumps writes bare NaN
    rewritten = NanToNullReader(io.BytesIO(text), chunk_size=chunk).read()
    assert json.loads(rewritten) == _nan_to_none(value)


def test_nan_inside_strings_is_untouched() -> None:
    raw = b'{"a": NaN, "s": "x = NaN; \\"NaN\\" \\\\", "b": [NaN]}'
    reader = NanToNullReader(io.BytesIO(raw), chunk_size=2)
    assert json.loads(reader.read()) == {"a": None, "s": 'x = NaN; "NaN" \\', "b": [None]}
    assert reader.replaced == 2
