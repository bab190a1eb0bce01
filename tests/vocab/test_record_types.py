"""records: type checkers see `record` as a dataclass transform (frozen, keyword-only, `field` gives defaults)."""

import sys

import pytest

from kvcalc.vocab.records import field, record


@pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.dataclass_transform exists from Python 3.11")
def test_record_is_marked_as_a_frozen_keyword_only_dataclass_transform():
    spec = record.__dataclass_transform__
    frozen = spec.get("frozen_default", spec.get("kwargs", {}).get("frozen_default"))  # 3.11 keeps it in kwargs
    assert spec["kw_only_default"] is True
    assert frozen is True
    assert field in spec["field_specifiers"]


def test_the_marker_leaves_record_behaviour_alone():
    @record(cache_hash=True)
    class R:
        a: int
        b: int = field("b", default=2)

    assert R(a=1) == R(a=1, b=2)
    assert hash(R(a=1)) == hash(R(a=1, b=2))
