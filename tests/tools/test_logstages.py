"""check --log with PP > 1 (issue 29, item 3) and the attention lines (item 2): every stage's memory lines read,
the engine's count the smallest stage's, and the backend / block size vLLM logged against the attention plan. The
logs are real (llm-d-planner's vLLM 0.19.0 H100 accuracy campaign, each fixture's header names its file and
commit); the expected numbers are the logs' own lines and hand arithmetic on them."""

import os

from conftest import run
from kvcalc.inputs.layout.read import layout_from_dict
from kvcalc.inputs.logs.vllm import parse
from kvcalc.tools.logcheck import check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOGS = os.path.join(ROOT, "tests", "fixtures", "logs")
PP2 = os.path.join(LOGS, "llama-3.1-8b-h100-tp1-pp2-v0.19.0-debug-excerpt.log")
PP4 = os.path.join(LOGS, "llama-3.1-8b-h100-tp1-pp4-v0.19.0-debug-excerpt.log")
DSV2 = os.path.join(LOGS, "deepseek-v2-lite-h100-tp1-v0.19.0-debug-excerpt.log")
LLAMA_8B = {"model": {"name": "Llama-3.1-8B", "num_layers": 32, "num_kv_heads": 8, "head_size": 128,
                      "max_position_embeddings": 131072}}
GIB, MIB = 1 << 30, 1 << 20


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _blocks(gib_lo, gib_hi, block_bytes):
    """The block counts a budget in [lo, hi] GiB gives (hand arithmetic: floor(bytes / block))."""
    return int(gib_lo * GIB) // block_bytes, int(gib_hi * GIB) // block_bytes


def test_every_stage_memory_line_is_read_per_worker():
    logged = parse(_read(PP2))
    assert [(w.pp_rank, w.name, w.pid) for w in logged.workers] == [(0, "Worker_PP0", 442), (1, "Worker_PP1", 443)]
    stage0, stage1 = logged.workers
    # "Available KV cache memory: 66.54 GiB" is printed by rank 0 only (info_once, scope local)
    assert (stage0.available_gib, stage1.available_gib) == ("66.54", None)
    # "Requested memory: 0.950000 (util), 75.23 GiB"; "Total non KV cache memory: 8.69GiB" / "9.6GiB"
    assert (stage0.requested_gib, stage1.requested_gib) == ("75.23", "75.23")
    assert (stage0.non_kv_gib, stage1.non_kv_gib) == ("8.69", "9.6")
    assert stage1.cudagraph_estimate_gib == "0.54"  # "Estimated CUDA graph memory: 0.54 GiB total"
    assert logged.backends == ("FLASH_ATTN",)


def test_pp2_the_last_stage_binds_and_agrees():
    # 16 layers a stage x 16 tokens x 2 (K, V) x 8 heads x 128 x 2 B = 1 MiB a block on each stage. Rank 0's
    # 66.54 GiB alone gives 68,131..68,142 blocks; stage 1's 75.23 - 9.6 = 65.63 GiB (+-0.01: two rounded terms,
    # the CUDA-graph estimate not subtracted on 0.19: 66.54 = 75.23 - 8.69 on rank 0) gives 67,194..67,215, and
    # the engine's count is the smaller: the log's "num_gpu_blocks is: 67207".
    result = check(layout_from_dict(LLAMA_8B), _read(PP2), source="pp2.log")
    assert result["match"] is True, result["rows"]
    assert result["num_gpu_blocks"] == 67_207 == 1_075_312 // 16
    stage0, stage1 = result["stages"]
    assert stage0["bytes_per_block"] == stage1["bytes_per_block"] == 16 * 16 * 2 * 8 * 128 * 2 == MIB
    assert stage1["num_blocks"] == list(_blocks(65.62, 65.64, MIB)) == [67_194, 67_215]
    assert stage0["num_blocks"][0] > 67_207  # rank 0's budget alone (the old reading) misses the logged count
    assert (stage0["basis"], stage1["basis"]) == ("logged", "derived")
    assert result["memory"].startswith("PP stage 1's budget, the smallest")


def test_pp4_the_last_stage_binds_and_agrees():
    # 8 layers a stage: 512 KiB a block. Stage 3 (the sampler's logits: 6.34 GiB non-KV) has 75.23 - 6.34 = 68.89
    # GiB; stages 1 and 2 75.23 - 4.4 = 70.83; rank 0 logs 69.8. The log: "num_gpu_blocks is: 141079".
    result = check(layout_from_dict(LLAMA_8B), _read(PP4), source="pp4.log")
    assert result["match"] is True, result["rows"]
    assert result["num_gpu_blocks"] == 141_079 == 2_257_264 // 16
    assert [s["pp_rank"] for s in result["stages"]] == [0, 1, 2, 3]
    assert result["stages"][3]["num_blocks"] == list(_blocks(68.88, 68.90, MIB // 2)) == [141_066, 141_107]
    assert result["stages"][1]["num_blocks"] == list(_blocks(70.82, 70.84, MIB // 2))


def test_an_info_log_with_pp_says_the_other_stages_are_not_logged():
    # The same real log without its DEBUG lines: only rank 0's budget is printed. kvcalc says so and, with no way
    # to weigh the model, assumes rank 0's for stage 1: the logged tokens (stage 1's count) then disagree.
    info = "\n".join(line for line in _read(PP2).splitlines() if " DEBUG " not in line)
    result = check(layout_from_dict(LLAMA_8B), info, source="pp2-info.log")
    assert any("PP stage(s) 1: no memory line" in n for n in result["notes"])
    assert result["stages"][1]["basis"] == "estimate"
    assert result["match"] is False
    tokens = next(r for r in result["rows"] if r["quantity"] == "GPU KV cache size (tokens)")
    assert tokens["logged"] == "1,075,312"
    assert tokens["match"] is False


def test_the_logged_backend_agrees_on_a_real_mla_log():
    # DeepSeek-V2-Lite on vLLM 0.19.0, H100: "Using FLASH_ATTN_MLA attention backend ..." and 16-token blocks:
    # "num_gpu_blocks is: 94097", "GPU KV cache size: 1,505,552 tokens" = 94,097 x 16.
    lay = layout_from_dict({"model": {"hf_config": os.path.join(ROOT, "tests", "fixtures", "hf",
                                                                 "deepseek-v2-lite.json")},
                            "gpu": {"name": "H100"}}, source="dsv2.yaml")
    result = check(lay, _read(DSV2), source="dsv2.log")
    assert result["match"] is True, result["rows"]
    backend = next(r for r in result["rows"] if r["quantity"] == "attention backend")
    assert backend["logged"] == "FLASH_ATTN_MLA"
    assert backend["match"] is True
    assert result["num_gpu_blocks"] == 94_097 == 1_505_552 // 16


def test_another_backend_or_block_size_in_the_log_is_a_mismatch_row(tmp_path, capsys):
    # Beside the real log: its backend line naming FLASHMLA, and a block-size line for 64 tokens (what FLASHMLA would
    # have set): both rows fail, exit 1, the row named on stderr's table.
    text = _read(DSV2).replace("Using FLASH_ATTN_MLA attention backend", "Using FLASHMLA attention backend")
    text += ("(EngineCore pid=243) INFO 04-22 00:47:01 [platforms/interface.py:469] Setting kv cache block size to 64 "
             "for FLASHMLA backend.\n")
    lay = layout_from_dict({"model": {"hf_config": os.path.join(ROOT, "tests", "fixtures", "hf",
                                                                 "deepseek-v2-lite.json")}}, source="dsv2.yaml")
    rows = {r["quantity"]: r for r in check(lay, text, source="x.log")["rows"]}
    assert rows["attention backend"]["match"] is False
    assert rows["attention backend"]["logged"] == "FLASHMLA"
    assert rows["KV cache block size"]["match"] is False
    assert rows["KV cache block size"]["predicted"].startswith("16 ")
    path = tmp_path / "x.log"
    path.write_text(text)
    code, out, err = run(capsys, "check", os.path.join(ROOT, "tests", "fixtures", "hf", "deepseek-v2-lite.json"),
                         "--log", str(path))
    assert code == 1
    assert "attention backend" in out
    assert "NO" in out
    assert "check failed" in err


def test_pp_check_in_the_cli_shows_each_stage(capsys):
    code, out, _ = run(capsys, "check", os.path.join(ROOT, "tests", "fixtures", "models", "llama-3.1-8b.json"),
                       "--log", PP2)
    assert code == 0, out
    assert "PP stage 1 blocks (its budget)" in out
    assert "the min" in out
