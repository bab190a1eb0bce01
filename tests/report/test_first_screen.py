"""The first screen of `kvcalc plan` (issue 21): the old / fixed columns each on its own release, a release that
refuses shown by its refusal, the Summary in GiB, the Verdict's pod memory and /dev/shm, --summary. Tables on a
fixed-width colourless console (COLUMNS, a pipe)."""

import json
import os

from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
GPT_OSS = os.path.join(EX, "gpt-oss-120b.yaml")
L4 = os.path.join(EX, "llama-4-scout-tp4.yaml")
KIMI = os.path.join(EX, "kimi-k2.5-eagle3-tp4.yaml")


def table(capsys, monkeypatch, *argv, width=80):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = run(capsys, *argv)
    return code, out, err


def test_old_and_fixed_columns_agree_with_the_release_by_release_table(capsys, monkeypatch):
    # The issue's gpt-oss case: the old column was the old formula on 0.33.0's layout (hybrid manager on, 2 groups:
    # 116,508 blocks, 1,864,128 tokens) while the release-by-release table's 0.19.1 said half. Now the old column
    # is 0.19.1 planned whole: the hybrid manager is off with a connector before 0.22.0, the sliding layers fold
    # into one group of 36 full-attention layers, 36 tensors of a 16,384 B page (16 tokens x 4 heads at TP 2 x
    # 64 x 2 x 2 B): page x len(tensors) x world = 16,384 x 36 x 2 = 1,179,648 B -> 68,719,476,736 // 1,179,648
    # = 58,254 blocks of 16 tokens = 932,064 tokens.
    argv = ["plan", GPT_OSS, "--vllm-version", "0.33.0", "--kv-offloading-size", "64",
            "--compare-versions", "0.19.1,0.23.0,0.33.0"]
    code, out, err = run(capsys, *argv, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    off = doc["offload"]
    by_release = {r["vllm_version"]: r["offload"] for r in doc["releases"]}
    assert off["old"]["vllm_version"] == "0.19.1"
    assert off["old"]["num_blocks_scheduler"] == 68719476736 // (16384 * 36 * 2) == 58254
    assert off["old"]["cpu_tokens_safe"] == 58254 * 16 == 932064
    assert off["old"]["cpu_tokens_safe"] == by_release["0.19.1"]["cpu_tokens_safe"]
    assert off["fixed"]["vllm_version"] == "0.23.0"
    assert off["fixed"]["cpu_tokens_safe"] == by_release["0.23.0"]["cpu_tokens_safe"]
    assert off["selected"]["cpu_tokens_safe"] == by_release["0.33.0"]["cpu_tokens_safe"]
    code, out, err = table(capsys, monkeypatch, *argv, width=100)
    summary = out.split("Verdict:")[0]
    assert "old 0.19.1" in summary
    assert "fixed 0.23.0" in summary
    assert "932,064" in summary
    assert "1,864,128" not in out  # the old formula on 0.33.0's layout is no column any more


def test_a_release_that_refuses_shows_its_refusal_not_numbers(capsys, monkeypatch):
    # Llama-4-Scout's chunked-local groups on 0.28.0 start; 0.23.0 (the fixed column) runs the hybrid manager with
    # the connector and its offloading scheduler asserts on them at start-up (STEPS offload_refuses_chunked_local).
    code, out, err = run(capsys, "plan", L4, "--vllm-version", "0.28.0", "--format", "json")
    assert code == 0, err
    off = json.loads(out)["offload"]
    assert off["fixed"] is None
    assert off["errors"]["fixed"].startswith("vLLM 0.23.0 would not start the offloading connector: ")
    assert "chunked-local" in off["errors"]["fixed"]
    code, out, err = table(capsys, monkeypatch, "plan", L4, "--vllm-version", "0.28.0", width=100)
    summary = out.split("Verdict:")[0].splitlines()
    head = next(i for i, line in enumerate(summary) if "fixed 0.23.0" in line)
    column = summary[head].index("fixed 0.23.0")
    cells = [line[column:column + 12].strip() for line in summary[head + 1:head + 7]]
    assert cells[:5] == ["—", "—", "—", "—", "—"]
    assert cells[5].startswith("refused")
    assert any(line.startswith("fixed 0.23.0: vLLM 0.23.0 would not start the offloading connector") for line in summary)


# Kimi-K2.5 (61 MLA layers) at TP 4 on 0.33.0 stores each chunk once: 73,728 B x 61 = 4,497,408 B a chunk,
# 64 GiB // that = 15,279 chunks in one /dev/shm region (tests/inputs/test_k8s.py).
REGION = 15279 * 4497408
GIB = 1 << 30


def manifest(tmp_path, name, **subst):
    """A manifest of tests/fixtures/k8s with its model path pointing at Kimi-K2.5's config (as test_k8s.py)."""
    import shutil

    model = tmp_path / "kimi-k2.5"
    model.mkdir(exist_ok=True)
    shutil.copy(os.path.join(EX, "configs", "kimi-k2.5.json"), model / "config.json")
    with open(os.path.join(ROOT, "tests", "fixtures", "k8s", name)) as fh:
        text = fh.read().replace("/models/kimi-k2.5", str(model))
    for old, new in subst.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def verdict_of(out: str) -> str:
    return " ".join(out.split("Verdict:", 1)[1].split("\nLayout")[0].split())


def test_the_summary_is_in_gib_and_fits_80_columns(capsys, monkeypatch, tmp_path):
    path = manifest(tmp_path, "deployment-helm.yaml")
    code, out, err = table(capsys, monkeypatch, "plan", "--k8s", path)
    assert code == 0, err
    first = out.split("\nLayout")[0].splitlines()
    assert all(len(line) <= 80 for line in first)
    assert first[2].startswith("GPU KV cache: ")  # the first answer (issue 35), then the Summary
    assert first[3] == "Summary: 64.00 GiB CPU budget per engine"
    rows = {line[:33].strip(): line[33:].split() for line in first[4:11]}
    # 0.33.0's column: the region, 68,715,896,832 B = 63.997 GiB -> 64.00 GiB, resident and in /dev/shm alike.
    assert REGION / GIB == 68715896832 / GIB
    assert rows["host memory resident, node"][-2:] == ["64.00", "GiB"]
    assert rows["/dev/shm region, node"][-2:] == ["64.00", "GiB"]
    assert rows["/dev/shm region, node"][:2] == ["none", "none"]  # 0.19.1 and 0.23.0 pin private tensors
    assert "68,715,896,832" not in "\n".join(first)  # exact bytes: the JSON and the offload table below
    assert "68,715,896,832" in out


def test_the_verdict_names_what_the_pod_needs_and_what_the_manifest_grants(capsys, monkeypatch, tmp_path):
    # deployment-helm.yaml grants 96Gi of memory and an 80Gi memory-backed /dev/shm. One node's pod needs the
    # region resident (68,715,896,832 B) + 4 workers x 3 GiB = 81,600,798,720 B = 76.00 GiB, and /dev/shm 64.00 GiB.
    need = REGION + 4 * 3 * GIB
    assert f"{need / GIB:.2f}" == "76.00"
    code, out, err = table(capsys, monkeypatch, "plan", "--k8s", manifest(tmp_path, "deployment-helm.yaml"))
    text = verdict_of(out)
    assert text.startswith("safe on vLLM 0.33.0: 15,279 CPU chunks")
    assert ("Needs per node (the pod): memory 76.00 GiB = 64.00 GiB resident CPU tier + 12.00 GiB for 4 GPU worker "
            "process(es)") in text
    assert "/dev/shm 64.00 GiB for the offload's shared region" in text
    assert "Granted: memory 96.00 GiB from the pod's memory limit" in text
    assert "/dev/shm 80 GiB (emptyDir 'dshm' (medium: Memory) sizeLimit 80Gi): enough" in text
    # 70Gi is 6.00 GiB short of 76.00: the verdict is not "safe" although the pool's counts are.
    path = manifest(tmp_path, "deployment-helm.yaml", **{"memory: 96Gi": "memory: 70Gi"})
    text = verdict_of(table(capsys, monkeypatch, "plan", "--k8s", path)[1])
    assert text.startswith("UNSAFE in this pod on vLLM 0.33.0")
    assert "memory 70.00 GiB from the pod's memory limit" in text
    assert "short by 6.00 GiB, the pod is OOM-killed" in text
    assert "safe on" not in text


def test_a_pod_with_the_runtimes_64_mib_dev_shm_is_not_safe_on_0_33(capsys, monkeypatch, tmp_path):
    # lws.yaml (a LeaderWorkerSet) mounts nothing at /dev/shm: the container runtime's default 64 MiB. 0.33.0's
    # start-up preflight (gates.shm_refusal) refuses a 65,533 MiB region there: the verdict must not say "safe".
    path = manifest(tmp_path, "lws.yaml")
    code, out, err = table(capsys, monkeypatch, "plan", "--k8s", path)
    assert code == 0, err
    text = verdict_of(out)
    assert "safe" not in text.replace("unsafe", "").lower()
    assert text.startswith("WOULD NOT START in this pod on vLLM 0.33.0")
    assert f"{REGION / (1 << 20):.0f}" == "65533"  # vLLM's own message rounds the MiB (shm_broadcast.py)
    assert ("/dev/shm 64 MiB (nothing mounted at /dev/shm: the runtime's default 64 MiB): too small, vLLM 0.33.0 "
            "refuses to start: \"Insufficient space in /dev/shm for CPU KV offload shared region in /dev/shm: 65533 "
            "MiB required, 64 MiB free.") in text
    # lws.yaml's limit is 200G = 200 x 10^9 B = 186.26 GiB: enough for 76.00 GiB.
    assert "memory 186.26 GiB from the pod's memory limit" in text
    # 0.27.0 does not check /dev/shm at start-up: it starts, and its workers die with SIGBUS once the region fills.
    code, out, err = table(capsys, monkeypatch, "plan", "--k8s", path, "--vllm-version", "0.27.0")
    text = verdict_of(out)
    assert text.startswith("UNSAFE in this pod on vLLM 0.27.0")
    assert "die with SIGBUS" in text


def test_the_verdict_reads_the_flags_limits_and_overhead(capsys, monkeypatch):
    # Kimi-K2.5 + EAGLE3 on 0.33.0 without a manifest: --host-memory is a node's; --host-overhead replaces the
    # estimate. The node keeps the 0.33.0 column's resident bytes (the Summary's) + 8 GiB.
    argv = ["plan", KIMI, "--vllm-version", "0.33.0", "--host-memory", "64GiB", "--host-overhead", "8GiB"]
    code, out, err = run(capsys, *argv, "--format", "json")
    resident = json.loads(out)["offload"]["selected"]["host"]["resident_bytes_per_node"]
    need = resident + 8 * GIB
    code, out, err = table(capsys, monkeypatch, *argv)
    text = verdict_of(out)
    assert "+ 8.00 GiB for --host-overhead" in text
    assert f"memory {(need * 100 + GIB // 2) // GIB / 100:.2f} GiB =" in text
    assert "memory 64.00 GiB from --host-memory (a node): short by" in text
    assert "the node runs out of memory" in text


def test_summary_prints_the_first_screen_only(capsys, monkeypatch):
    code, full, err = table(capsys, monkeypatch, "plan", KIMI, "--compare-versions", "0.19.1,0.33.0")
    code, out, err = table(capsys, monkeypatch, "plan", KIMI, "--compare-versions", "0.19.1,0.33.0", "--summary")
    assert code == 0, err
    assert full.startswith(out)  # the same first screen, cut after the Verdict
    assert out.splitlines()[0].startswith("Kimi-K2.5 + EAGLE3 — vLLM 0.19.1")
    assert "Summary: 64.00 GiB CPU budget per engine" in out
    assert "Verdict: UNSAFE on vLLM 0.19.1" in out
    for detail in ("Layout", "KV cache groups", "CPU offload:", "Memory tiers", "release by release"):
        assert detail in full
        assert detail not in out
    code, out, err = table(capsys, monkeypatch, "plan", KIMI, "--check", "--host-memory", "512GiB", "--summary")
    assert code == 1  # the gates still decide the exit code
    assert "Checks (--check" in out
    assert out.rstrip().splitlines()[-1].startswith("min_cpu_tokens")


def test_summary_with_json_is_one_line_exit_2(capsys):
    code, out, err = run(capsys, "plan", KIMI, "--summary", "--format", "json")
    why = "--summary shortens the table (--format table): the JSON document is always whole"
    assert code == 2
    assert err == f"kvcalc: error: {why}\n"
    assert json.loads(out) == {"schema_version": 1, "error": why, "exit_code": 2}  # every json exit 2 (README)


GLOSSARY_TERMS = ("engine", "TP, PP, DP, world", "worker", "PP stage", "scheduler, worst worker", "Out of bounds",
                  "family", "representative", "UniformType", "blocks, chunks", "copies", "CPU tokens held",
                  "chunks per max_model_len request", "pinned, resident", "Budget unused", "rounding",
                  "/dev/shm region (shm)", "node, pod", "process memory", "hybrid KV cache manager", "KV cache groups",
                  "Mamba mode", "L1, L2, L3", "GPU line", "budget formula A – D", "GiB flag",
                  "needs, limit, margin, limit from")


def glossary() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    return text.split("### Glossary\n", 1)[1].split("\n## ", 1)[0]


def test_every_term_on_the_first_screen_is_in_the_readme_glossary(capsys, monkeypatch):
    words = glossary()
    missing = [t for t in GLOSSARY_TERMS if f"**{t}**" not in words]
    assert missing == []
    for family in ("old", "fixed", "packed", "config", "replicated", "single-alloc"):
        assert f"`{family}`" in words, family
    for rounding in ("power_of_two", "none", "threshold:N"):
        assert f"`{rounding}`" in words, rounding
    # The words on screen the glossary explains, where they appear (a renamed label must rename its entry).
    code, out, err = table(capsys, monkeypatch, "plan", os.path.join(EX, "qwen3-next-80b-tp4.yaml"),
                           "--vllm-version", "0.33.0", width=120)
    for shown in ("CPU blocks/chunks, scheduler", "worst worker", "CPU tokens held", "resident", "/dev/shm region",
                  "copies of each block", "chunks per max_model_len request", "hybrid KV cache manager",
                  "KV cache groups (hybrid)", "mode align", "rule L3", "family single-alloc", "budget unused"):
        assert shown in out, shown


def test_the_unexplained_words_are_gone(capsys, monkeypatch):
    # Issue 21: `PP stage 0` at PP 1, `copies (world or 1)`, "none rounding", "is above".
    for argv in (["plan", KIMI], ["plan", os.path.join(EX, "llama-3.1-8b.yaml"), "--check", "--host-memory", "1TiB",
                                  "--vllm-version", "0.33.0"],
                 ["plan", os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json"), "--gpu", "H100"]):
        code, out, err = table(capsys, monkeypatch, *argv, width=120)
        assert "Verdict: " in out, err
        text = out + err
        for gone in ("PP stage 0", "stage 0", "world or 1", "none rounding", "is above"):
            assert gone not in text, (argv, gone)
    code, out, err = table(capsys, monkeypatch, "plan", KIMI, "--pp", "2", width=120)
    assert "KV cache tensors, PP stage 1" in out  # named where there are stages
