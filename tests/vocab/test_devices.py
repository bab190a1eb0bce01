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
    assert "NVIDIA GB10 (" in known_names("total_gib")  # vLLM's budget: torch's total (logged)
    assert "NVIDIA GB10 (" not in known_names("smi_mib")  # nvidia-smi prints 'Not Supported' on GB10's unified memory
    assert "NVIDIA H200 (" in known_names("smi_mib")


def test_the_architecture_follows_the_capability():
    assert find_device("h100").arch == "sm90"  # 9.0
    assert find_device("b200").arch == "sm100"  # 10.0


FLEET = ("t4", "a10", "a10g", "a30", "a40", "l4", "l40", "l40s", "a100-40gb", "a100-pcie-40gb", "a100-80gb",
         "a100-pcie-80gb", "h100-pcie", "h100", "h100-nvl", "h800", "h20", "h200", "h200-nvl", "gh200", "b200", "b300",
         "gb200", "gb300", "gb10", "rtx4090", "rtx5090", "rtx6000-ada", "rtx-pro-6000", "rtx-pro-6000-server",
         "mi210", "mi250x", "mi300x", "mi308x", "mi325x", "mi350x", "mi355x")  # issue 29's fleet


def test_every_gpu_of_the_fleet_has_a_row_with_a_total():
    missing = [n for n in FLEET if find_device(n) is None or find_device(n).total_bytes is None]
    assert missing == []


def test_an_amd_gpu_plans_vllm_on_rocm_and_an_estimate_says_so(capsys):
    import json

    from kvcalc.cli import main

    llama = "tests/fixtures/models/llama-3.1-8b.json"
    assert main(["plan", llama, "--gpu", "mi300x", "--vllm-version", "0.19.0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # 191.98 GiB = 19,198 hundredths x 2^30 // 100 (ROCm/ROCm#4203 total_memory=196592MB; vLLM prints 191.98)
    assert doc["gpu"]["memory"]["total_bytes"] == 19198 * (1 << 30) // 100
    assert main(["plan", llama, "--gpu", "l40", "--vllm-version", "0.19.0", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "NVIDIA L40's total is an estimate (+-0.1 GiB" in captured.err  # a sibling's (L40S) total


def test_sglang_reads_rocminfo_on_an_amd_gpu(capsys):
    import json

    from kvcalc.cli import main

    code = main(["plan", "tests/fixtures/models/llama-3.1-8b.json", "--engine", "sglang", "--gpu", "mi355x",
                 "--weights-bytes", "16G", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    # rocminfo's Pool 1 in MiB (SGLang's get_amdgpu_memory_capacity): 287.98 GiB x 1024 = 294,896 MiB (the row's)
    assert doc["sglang"]["memory"]["capacity_mib"] == 294896
