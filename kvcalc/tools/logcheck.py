"""Compare kvcalc's prediction with what a vLLM server logged at startup (section 7's lines). Pure: text in.

vLLM logs the available KV memory rounded to 0.01 GiB, so the exact byte count is unknown within
+-0.005 GiB; kvcalc tries every GPU block count that interval allows and reports a match when one of them
reproduces every logged number.
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import ceil, floor

from ..vocab.errors import KvcalcError, LayoutError
from ..vocab.layout import Layout
from ..pipeline import plan
from ..vocab.records import replace
from ..engines.vllm.tensors import log_numbers

_AVAILABLE = re.compile(r"Available KV cache memory:\s*([0-9.,]+)\s*GiB")
_TOKENS = re.compile(r"\b([A-Z]{2,4}) KV cache size:\s*([0-9,]+)\s*tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for\s*([0-9,]+)\s*tokens per request:\s*([0-9.]+)x")
_BLOCKS = re.compile(r"num_gpu_blocks(?:\s+is)?\s*[:=]\s*([0-9,]+)")
_VERSION = re.compile(r"(?:vLLM API server version|LLM engine \(v|vLLM version)\s*v?([0-9]+\.[0-9]+(?:\.[0-9]+)?)")
MAX_CANDIDATES = 4096


_DECIMAL = re.compile(r"[0-9]{1,12}(\.[0-9]{1,6})?")
_GROUPED = re.compile(r"[0-9]{1,3}(,[0-9]{3}){0,6}|[0-9]{1,21}")  # 602,368 or 602368, at most 10^21


def _number(text: str, pattern: re.Pattern, source: str, no: int, what: str) -> str:
    """A number as vLLM prints it, or a LayoutError naming the log's line (1.2.3 GiB is no number)."""
    if not pattern.fullmatch(text):
        raise LayoutError(source, f"line {no}", what, text)
    return text


def parse(text: str, source: str = "<log>") -> dict:
    out: dict = {"available_gib": [], "kv_cache_size_tokens": None, "max_model_len": None, "max_concurrency": None,
                 "num_gpu_blocks": None, "vllm_version": None}
    for no, line in enumerate(text.splitlines(), 1):
        if m := _AVAILABLE.search(line):
            out["available_gib"].append(_number(m.group(1), _DECIMAL, source, no, "a number of GiB such as 37.79"))
        if (m := _TOKENS.search(line)) and out["kv_cache_size_tokens"] is None:
            out["kv_cache_size_tokens"] = int(_number(m.group(2), _GROUPED, source, no, "a token count such as "
                                                      "602,368").replace(",", ""))
        if (m := _CONCURRENCY.search(line)) and out["max_concurrency"] is None:
            mml = int(_number(m.group(1), _GROUPED, source, no, "a token count such as 131,072").replace(",", ""))
            if mml < 1:
                raise LayoutError(source, f"line {no}", "a max_model_len of at least 1 token", m.group(1))
            out["max_model_len"] = mml
            out["max_concurrency"] = _number(m.group(2), _DECIMAL, source, no, "a concurrency such as 4.60")
        if (m := _BLOCKS.search(line)) and out["num_gpu_blocks"] is None:
            out["num_gpu_blocks"] = int(_number(m.group(1), _GROUPED, source, no, "a block count such as "
                                                "9,412").replace(",", ""))
        if (m := _VERSION.search(line)) and out["vllm_version"] is None:
            out["vllm_version"] = m.group(1)
    return out


def _blocks_for(layout: Layout, memory: int) -> int | None:
    p = plan(replace(layout, cache=replace(layout.cache, kv_cache_memory=(memory,), num_gpu_blocks_override=None)))
    return p.gpu.num_blocks


def check(layout: Layout, text: str, *, source: str, version_given: bool = False) -> dict:
    """The prediction against the log's numbers. The release is the flag's (`version_given`: --vllm-version set
    it), else the one the log names, else the layout's."""
    logged = parse(text, source)
    if logged["vllm_version"] and not version_given and layout.vllm_version != logged["vllm_version"]:
        layout = replace(layout, vllm_version=logged["vllm_version"], vllm_version_from=f"{source}: the log's banner")
    if logged["max_model_len"] is not None and logged["max_model_len"] != layout.cache.max_model_len:
        layout = replace(layout, cache=replace(layout.cache, max_model_len=logged["max_model_len"]))
    if logged["available_gib"]:
        # The smallest worker's memory bounds the engine's block count (the min over workers).
        gib = min(Fraction(g) for g in logged["available_gib"])
        lo, hi = (gib - Fraction(1, 200)) * (1 << 30), (gib + Fraction(1, 200)) * (1 << 30)
        n_lo, n_hi = _blocks_for(layout, max(ceil(lo), 1)), _blocks_for(layout, floor(hi))
        memory_source = f"{min(logged['available_gib'], key=Fraction)} GiB logged (+-0.005 GiB)"
    elif layout.cache.kv_cache_memory is not None or layout.cache.num_gpu_blocks_override is not None:
        n_lo = n_hi = plan(layout).gpu.num_blocks
        memory_source = "the layout's KV memory"
    else:
        raise KvcalcError(f"{source}: no 'Available KV cache memory' line, and the layout gives no KV memory")
    if n_lo is None or n_hi - n_lo > MAX_CANDIDATES:
        raise KvcalcError(f"{source}: the logged memory allows too many GPU block counts to check")
    if logged["num_gpu_blocks"] is not None:
        candidates = [logged["num_gpu_blocks"]] if n_lo <= logged["num_gpu_blocks"] <= n_hi else []
    else:
        candidates = list(range(n_lo, n_hi + 1))
    # The logged numbers depend on the block count alone once the layout is fixed, so the layout is planned
    # once and each candidate count only re-derives rank 0's log numbers (no plan per candidate).
    base = plan(replace(layout, cache=replace(layout.cache, num_gpu_blocks_override=n_lo)))
    worker, usage = base.gpu.workers[0], base.layers.usage
    family, device = base.behaviour.log_family, base.logs.device if base.logs else None
    best = None
    for n in candidates or [n_lo]:
        logs = log_numbers(replace(worker, num_blocks=n), usage, family, device)
        rows = _compare(logs, base.layout.cache.max_model_len, logged, n)
        if best is None or sum(r["match"] is True for r in rows) > sum(r["match"] is True for r in best[1]):
            best = (n, rows)
        if all(r["match"] is not False for r in rows) and candidates:
            best = (n, rows)
            break
    n_best, rows = best
    p = base if n_best == n_lo else plan(replace(layout, cache=replace(layout.cache, num_gpu_blocks_override=n_best)))
    if logged["num_gpu_blocks"] is not None and not candidates:
        rows.insert(0, {"quantity": "num_gpu_blocks", "predicted": f"{n_lo:,}..{n_hi:,}",
                        "logged": f"{logged['num_gpu_blocks']:,}", "match": False})
    return {"source": source, "vllm_version": p.behaviour.version, "memory": memory_source,
            "num_gpu_blocks": p.gpu.num_blocks,
            "num_gpu_blocks_range": [n_lo, n_hi], "rows": rows,
            "match": all(r["match"] is not False for r in rows) and any(r["match"] is True for r in rows)}


def _compare(logs, max_model_len: int, logged: dict, n: int) -> list[dict]:
    rows = []
    if logs is None:  # no KV cache layers: nothing vLLM would log to compare
        return [{"quantity": "GPU KV cache size (tokens)", "predicted": "none (no KV cache layers)",
                 "logged": str(logged["kv_cache_size_tokens"]), "match": False}]
    if logged["num_gpu_blocks"] is not None:
        rows.append({"quantity": "num_gpu_blocks", "predicted": f"{n:,}", "logged": f"{logged['num_gpu_blocks']:,}",
                     "match": n == logged["num_gpu_blocks"]})
    if logged["kv_cache_size_tokens"] is not None:
        rows.append({"quantity": "GPU KV cache size (tokens)", "predicted": f"{logs.kv_cache_size_tokens:,}",
                     "logged": f"{logged['kv_cache_size_tokens']:,}",
                     "match": logs.kv_cache_size_tokens == logged["kv_cache_size_tokens"]})
    if logged["max_concurrency"] is not None:
        predicted = f"{logs.max_concurrency:.2f}"
        rows.append({"quantity": f"maximum concurrency ({max_model_len:,} tokens)",
                     "predicted": predicted + "x", "logged": logged["max_concurrency"] + "x",
                     "match": predicted == logged["max_concurrency"]})
    return rows


def gpu_blocks_from_log(layout: Layout, text: str, source: str) -> tuple[Layout, str]:
    """The GPU side of a real start: the block count the log's lines allow (check's candidates, the one that
    reproduces every logged number), as num_gpu_blocks_override, and a note saying how it was pinned; the plan
    itself keeps the layout's release and max_model_len."""
    if "Available KV cache memory" not in text:
        raise KvcalcError(f"{source}: --kv-cache-memory-from-log: no 'Available KV cache memory' line")
    probe = replace(layout, cache=replace(layout.cache, kv_cache_memory=None, num_gpu_blocks_override=None))
    # The block count is the logged run's: its release and max_model_len (when the log names them) decide which
    # candidate reproduces the logged lines.
    result = check(probe, text, source=source)
    lo, hi = result["num_gpu_blocks_range"]
    n = result["num_gpu_blocks"]
    pinned = "matched by its KV cache size line" if result["match"] else (
        f"the smallest of {lo:,}..{hi:,} its 0.01 GiB rounding allows" if lo != hi else "exact")
    note = f"{n:,} GPU blocks from {source} ({result['memory']}; {pinned})"
    return replace(layout, cache=replace(layout.cache, kv_cache_memory=None, num_gpu_blocks_override=n)), note
