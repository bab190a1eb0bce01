"""records: the compiled __init__ a class switches to after _COMPILE_AFTER instances behaves as the closure."""

import pytest

from kvcalc.vocab import records
from kvcalc.vocab.records import FrozenRecordError, field, record


def make():
    @record
    class R:
        a: int
        b: str = "x"
        c: list = field("a list", factory=list)
        d: int | None = field("omitted when None", omit_if_none=True)

    return R


def check(R):
    r = R(a=1)
    assert (r.a, r.b, r.c, r.d) == (1, "x", [], None)
    assert R(a=1).c is not R(a=1).c  # a fresh factory value each time
    assert R(a=2, b="y", c=[1], d=3) == R(a=2, b="y", c=[1], d=3) != R(a=2)
    with pytest.raises(TypeError):
        R(b="y")  # a: missing
    with pytest.raises(TypeError):
        R(a=1, z=2)  # z: unknown
    with pytest.raises(FrozenRecordError):
        r.a = 5


def test_the_compiled_init_behaves_as_the_closure():
    R = make()
    closure = R.__init__
    check(R)
    before = R(a=7, c=[2])
    for i in range(records._COMPILE_AFTER):
        R(a=i)
    assert R.__init__ is not closure  # switched
    assert R.__init__.__qualname__ == "R.__init__"
    check(R)
    assert R(a=7, c=[2]) == before
