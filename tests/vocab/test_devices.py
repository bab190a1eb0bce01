"""The one GPU table (vocab/devices.py, issue 28): a new GPU is one row, and these tests say what the row needs."""

import re

import pytest

from kvcalc.vocab.devices import DEVICES, find_device, known_names


@pytest.mark.parametrize("d", DEVICES, ids=lambda d: d.name)
def test_a_row_names_its_device_and_cites_every_figure(d):
    assert re.fullmatch(r"\d+\.\d|gfx9[0-9a-f]{2}", d.capability), d.capability  # "9.0" or "gfx942"
    assert d.aliases, d.name
    assert all(a == a.lower() for a in d.aliases), d.aliases  # matched case-insensitively
    assert d.total_gib is None or re.fullmatch(r"\d+\.\d\d", d.total_gib), d.total_gib  # as vLLM prints it
    assert (d.total_gib is None) == (d.total_source == ""), d.name  # a total carries its source
    assert (d.smi_mib is None) == (d.smi_source == ""), d.name  # and nvidia-smi's capacity too
    assert d.total_gib is not None or d.smi_mib is not None, d.name  # a row with no figure plans nothing


def test_names_and_aliases_find_one_row_each():
    spellings = [s for d in DEVICES for s in (d.name.lower(), *d.aliases)]
    assert len(spellings) == len(set(spellings))  # no spelling names two rows
    for d in DEVICES:
        assert find_device(d.name.upper()) is d  # torch's name, any case
        assert all(find_device(a) is d for a in d.aliases)


def test_a_total_of_79_19_gib_is_its_printed_bytes():
    # 79.19 GiB = 7,919 hundredths x 2^30 // 100 = 85,030,489,210 B (the printed value's bytes).
    assert find_device("h100").total_bytes == 7919 * (1 << 30) // 100


def test_each_engine_lists_the_rows_that_have_its_figure():
    assert "NVIDIA A10 " in known_names("total_gib") + " "  # vLLM's budget: torch's total (logged)
    assert "NVIDIA A10 (" not in known_names("smi_mib")  # SGLang's defaults: nvidia-smi's MiB (none known)
    assert "NVIDIA H200 (" in known_names("smi_mib")


def test_the_architecture_follows_the_capability():
    assert find_device("h100").arch == "sm90"  # 9.0
    assert find_device("b200").arch == "sm100"  # 10.0
