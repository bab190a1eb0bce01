import pytest

from kvcalc.vocab.units import SizeError, cdiv, format_bytes, gib_float_to_bytes, parse_size, round_up


@pytest.mark.parametrize("text,expected", [
    ("64G", 64 * 2**30), ("64Gi", 64 * 2**30), ("64GiB", 64 * 2**30), ("64gib", 64 * 2**30),
    ("64GB", 64 * 10**9), ("64gb", 64 * 10**9), ("68719476736", 68719476736), ("68719476736B", 68719476736),
    ("68_719_476_736", 68719476736), (68719476736, 68719476736), ("1.5GiB", 1610612736),
    ("0.1G", 107374182), ("40 GiB", 42949672960), ("1T", 2**40), ("512MiB", 2**29), (6.4e10, 64 * 10**9),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["64g", "64k", "1.5", "64 gigs", "", "-1G", True, None, float("nan"), 1.5, -3, [1]])
def test_parse_size_refuses(bad):
    with pytest.raises(SizeError):
        parse_size(bad)


def test_lowercase_message_names_both_readings():
    with pytest.raises(SizeError, match="GiB.*GB"):
        parse_size("64g")


@pytest.mark.parametrize("gib,expected", [(64, 68719476736), (1.5, 1610612736), (0.1, 107374182)])
def test_kv_offloading_size_conversion(gib, expected):
    # units.md: int(X * 2**30), a float product truncated.
    assert gib_float_to_bytes(gib) == expected


def test_helpers():
    assert cdiv(131072, 272) == 482
    assert round_up(1124352, 4096) == 1126400
    assert format_bytes(68719476736) == '64 GiB'
    assert format_bytes(3242196992) == '3.02 GiB'
    assert format_bytes(1023) == "1023 B"


@pytest.mark.parametrize("text,parts", [
    ("64GiB", ("64", "GiB")), (" 1.5 G ", ("1.5", "G")), ("1_000", ("1_000", "")), (".5Ti", (".5", "Ti")),
    ("64 GB", ("64", "GB")), ("\u0663", None), ("6e4", None), ("-1G", None), ("", None), ("G", None),
])
def test_split_size_reads_number_and_unit(text, parts):
    # The grammar of units.md: digits (underscores allowed, ASCII only), an optional fraction, then letters.
    from kvcalc.vocab.units import split_size

    assert split_size(text) == parts, text
