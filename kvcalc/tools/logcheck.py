"""Compare kvcalc's prediction with what a vLLM server logged at startup (section 7's lines). Pure: text in.

The log is read by inputs/logs/vllm.py (every format 0.14 - 0.33). The run's own settings come from the log where it
states them and no flag set them: its release, max_model_len (the concurrency line), max_num_batched_tokens, and the
engine config line's TP, PP, KV cache dtype, model dtype and prefix caching (a sliding-window model's concurrency
depends on several of them).

vLLM logs the available KV memory rounded to 0.01 GiB, so the exact byte count is unknown within +-0.005 GiB;
kvcalc tries every GPU block count that interval allows and keeps those that reproduce every logged number (the
"GPU KV cache size" line pins the count up to the group count): the smallest of them is reported, with the range.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil, floor

from ..engines.vllm.tensors import log_numbers
from ..inputs.logs.vllm import StartupLog, parse as parse_log
from ..pipeline import plan_vllm as plan  # vLLM's operation: its plan
from ..vocab.errors import KvcalcError, UnsupportedError, known
from ..vocab.layout import NO_CONNECTOR, Layout
from ..vocab.records import replace

MAX_CANDIDATES = 4096
# vLLM's arguments that configure a KV connector (engine/arg_utils.py): any of them in the log's non-default args.
CONNECTOR_ARGS = ("kv_transfer_config", "kv_offloading_size", "kv_offloading_backend")


def _blocks_for(layout: Layout, memory: int | tuple[int, ...]) -> int | None:
    per = memory if isinstance(memory, tuple) else (memory,)
    p = plan(replace(layout, cache=replace(layout.cache, kv_cache_memory=per, num_gpu_blocks_override=None)))
    return p.gpu.num_blocks


def _release(logged: StartupLog) -> str | None:
    """The log's release when kvcalc models it (a dev build or an unknown string: None)."""
    from ..vocab.releases.vllm import behaviour_for

    v = logged.vllm_version or logged.tag_release
    if not v:
        return None
    base = v.split("rc")[0].split(".dev")[0].split("+")[0]
    try:
        behaviour_for(base)
    except UnsupportedError:
        return None
    return base


def _bool(text) -> bool | None:
    return {"True": True, "False": False, True: True, False: False}.get(text)


def with_log_settings(layout: Layout, logged: StartupLog, given: frozenset[str]) -> tuple[Layout, list[str]]:
    """The layout with the run's settings the log states (those no flag set: `given`, key paths), and what was
    taken, for a note."""
    taken: list[str] = []
    args = dict(logged.args)
    if args and not any(k in args for k in CONNECTOR_ARGS) and layout.offload != NO_CONNECTOR \
            and "offload.cpu_bytes_to_use" not in given and "offload.kv_offloading_size" not in given:
        # The log's non-default args name every setting the user gave: no connector among them, none ran.
        layout = replace(layout, offload=NO_CONNECTOR)
        taken.append("no KV connector (its non-default args name none)")
    cache, par, model = layout.cache, layout.parallel, layout.model
    version = _release(logged)
    if version and "vllm.version" not in given and version != layout.vllm_version:
        layout = replace(layout, vllm_version=version, vllm_version_from="the log's banner" if logged.vllm_version
                         else "the log's gpu_worker.py tag")
        taken.append(f"vLLM {version}" + ("" if logged.vllm_version else " (its Available line's gpu_worker.py tag)"))
    changes: dict = {}
    if logged.max_model_len is not None and "cache.max_model_len" not in given:
        changes["max_model_len"] = logged.max_model_len
    mnbt = logged.setting("max_num_batched_tokens") or logged.max_num_batched_tokens
    if isinstance(mnbt, int) and "cache.max_num_batched_tokens" not in given:
        changes["max_num_batched_tokens"] = mnbt
    kv = logged.setting("kv_cache_dtype")
    if isinstance(kv, str) and kv and "cache.kv_cache_dtype" not in given:
        changes["kv_cache_dtype"] = kv.strip("'")
    prefix = _bool(logged.setting("enable_prefix_caching"))
    if prefix is not None and "cache.enable_prefix_caching" not in given:
        changes["enable_prefix_caching"] = prefix
    block = logged.setting("block_size")
    if isinstance(block, int) and "cache.block_size" not in given:
        changes["block_size"] = block
    changes = {k: v for k, v in changes.items() if getattr(cache, k) != v}
    if changes:
        layout = replace(layout, cache=replace(cache, **changes))
        taken += [f"{k} {v}" for k, v in changes.items()]
    sizes = {}
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = logged.setting(key)
        value = int(value) if isinstance(value, str) and value.isdigit() else value
        if isinstance(value, int) and f"parallel.{key}" not in given and value != getattr(par, key):
            sizes[key] = value
    if sizes:
        layout = replace(layout, parallel=replace(par, **sizes))
        taken += [f"{k} {v}" for k, v in sizes.items()]
    batches = _in_flight(layout, logged)
    if batches is not None and "cache.in_flight_batches" not in given and batches != layout.cache.in_flight_batches:
        layout = replace(layout, cache=replace(layout.cache, in_flight_batches=batches))
        taken.append(f"{batches} batches in flight (async scheduling {'on' if logged.async_scheduling else 'off'}"
                     f"{', V2 runner' if logged.v2_runner else ''})")
    backend = logged.setting("attention_backend")  # --attention-backend, in the non-default args
    if isinstance(backend, str) and backend.strip("'") and "vllm.attention_backend" not in given \
            and backend.strip("'") != layout.attention_backend:
        layout = replace(layout, attention_backend=backend.strip("'").upper())
        taken.append(f"attention_backend {layout.attention_backend}")
    dtype = str(logged.setting("dtype") or "").removeprefix("torch.")
    if dtype in ("bfloat16", "float16", "float32") and "model.dtype" not in given and dtype != model.dtype:
        layout = replace(layout, model=replace(model, dtype=dtype))
        taken.append(f"dtype {dtype}")
    return _with_logged_draft_tokens(layout, logged, given, taken)


def logged_speculation(logged: StartupLog) -> tuple[str | None, int | None]:
    """The drafter's method and speculative tokens the log states: the non-default args' dict
    ({'method': 'mtp', 'num_speculative_tokens': 3}) or the engine line's repr, which vLLM writes as
    `SpeculativeConfig(method='mtp', model=..., num_spec_tokens=3)` (config/speculative.py:1262-1276 @0.25.1)."""
    import re

    spec = logged.setting("speculative_config")
    if isinstance(spec, dict):
        method, n = spec.get("method"), spec.get("num_speculative_tokens")
        return (method if isinstance(method, str) else None), (n if isinstance(n, int) else None)
    if not isinstance(spec, str):
        return None, None
    found = re.search(r"method['\"]?\s*[:=]\s*['\"]([\w-]+)", spec)
    count = re.search(r"num_spec(?:ulative)?_tokens['\"]?\s*[:=]\s*(\d+)", spec)
    return (found.group(1) if found else None), (int(count.group(1)) if count else None)


def _with_logged_draft_tokens(layout: Layout, logged: StartupLog, given: frozenset[str],
                              taken: list[str]) -> tuple[Layout, list[str]]:
    """The log's speculative token count for the layout's drafter, unless given: it sets the Mamba conv rows
    (mamba_utils.py gated_delta_net_state_shape: conv_kernel_size - 1 + num_spec, @0.25.1:213-227) and so the
    hybrid block size."""
    draft = layout.model.draft
    _method, n = logged_speculation(logged)
    if draft is None or n is None or "model.draft.num_speculative_tokens" in given \
            or n == draft.num_speculative_tokens:
        return layout, taken
    layout = replace(layout, model=replace(layout.model, draft=replace(draft, num_speculative_tokens=n)))
    return layout, [*taken, f"num_speculative_tokens {n}"]


def _in_flight(layout: Layout, logged: StartupLog) -> int | None:
    """VllmConfig.max_concurrent_batches of the logged run (0.26.0 config/vllm.py:512-522): async scheduling gives
    PP + 1 batches on the V2 model runner, 2 on the V1 runner at PP 1; otherwise PP. None: the log does not say."""
    from ..vocab.releases.vllm import behaviour_for

    if logged.async_scheduling is None or not behaviour_for(layout.vllm_version).in_flight_reserve:
        return None  # before 0.26.0 a window keeps one batch's tokens whatever is in flight
    pp = layout.parallel.pipeline_parallel_size
    if logged.async_scheduling and logged.v2_runner:
        return pp + 1
    return 2 if logged.async_scheduling and pp <= 1 else pp


def _unmodelled_run(layout: Layout, logged: StartupLog, source: str) -> None:
    """Refuse a log whose server ran what the layout lacks and kvcalc cannot add: a drafter of a method kvcalc does
    not model (its KV layers count in the logged numbers), or, for DeepSeek-V4, the MXFP4 indexer cache."""
    method, _n = logged_speculation(logged)
    if method and layout.model.draft is None and method not in ("ngram", "suffix"):
        spec = str(logged.setting("speculative_config"))
        raise UnsupportedError(f"{source}: the server ran a {method} drafter ({spec[:80]}), whose KV layers "
                               "the logged numbers include; the layout has none (give --speculative / "
                               "--draft-config where kvcalc models the method)")
    from ..vocab.releases.vllm import behaviour_for

    fp4 = logged.fp4_indexer or "use_fp4_indexer_cache=True" in str(logged.args)
    if layout.model.is_dsv4 and fp4 and behaviour_for(layout.vllm_version).dsv4_fp4_indexer_row:
        raise UnsupportedError(f"{source}: the server ran DeepSeek-V4 with use_fp4_indexer_cache (the MXFP4 68-byte "
                               "indexer row, models/deepseek_v4/attention.py:1019-1023 @0.33.0): not modelled")


# The run's settings the log states, by layout key path (_stated).
STATED = ("cache.max_model_len", "cache.max_num_batched_tokens", "cache.kv_cache_dtype", "cache.enable_prefix_caching",
          "cache.block_size", "model.dtype", "parallel.tensor_parallel_size", "parallel.pipeline_parallel_size")


def _stated(logged: StartupLog) -> dict:
    prefix = _bool(logged.setting("enable_prefix_caching"))
    dtype = str(logged.setting("dtype") or "").removeprefix("torch.") or None
    kv = logged.setting("kv_cache_dtype")
    out = {"cache.max_model_len": logged.max_model_len,
           "cache.max_num_batched_tokens": logged.setting("max_num_batched_tokens") or logged.max_num_batched_tokens,
           "cache.kv_cache_dtype": kv.strip("'") if isinstance(kv, str) and kv else None,
           "cache.enable_prefix_caching": prefix, "cache.block_size": logged.setting("block_size"),
           "model.dtype": dtype if dtype in ("bfloat16", "float16", "float32") else None}
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = logged.setting(key)
        out[f"parallel.{key}"] = int(value) if isinstance(value, str) and value.isdigit() else value
    return {k: v for k, v in out.items() if v is not None and not isinstance(v, str) or isinstance(v, str) and v}


def contradicted(layout: Layout, logged: StartupLog, given: frozenset[str]) -> list[dict]:
    """A mismatch row for every setting the user gave (a flag, a layout key, a server line's flag: `given` and
    Layout.written) that the log's run states otherwise: the log is not this deployment's."""
    rows = []
    for path, stated in _stated(logged).items():
        if path not in given and path not in layout.written:
            continue
        section, leaf = path.split(".")
        mine = getattr(getattr(layout, section), leaf)
        if mine is not None and str(mine) != str(stated):
            rows.append({"quantity": leaf, "predicted": f"{mine} (set by the user)", "logged": str(stated),
                         "match": False})
    return rows


def _memory_range(layout: Layout, logged: StartupLog, source: str) -> tuple[int | None, int | None, str, list]:
    """(the smallest and largest GPU block count the log's memory allows, where the memory came from, each
    worker's budget when the log names them: tools/logstages.py)."""
    from ..vocab.releases.vllm import behaviour_for
    from .logstages import estimate_missing, worker_budgets

    budgets = None if logged.reserved_gib and not logged.available_gib else worker_budgets(
        layout, logged, behaviour_for(layout.vllm_version).memory_budget in ("C", "D"))
    if budgets is not None:
        budgets, notes = estimate_missing(layout, budgets)
        n_lo = _blocks_for(layout, tuple(max(b.lo, 1) for b in budgets))
        n_hi = _blocks_for(layout, tuple(b.hi for b in budgets))
        bind = min(budgets, key=lambda b: b.lo)
        what = (f"PP stage {bind.pp_rank}'s budget, the smallest: {bind.text}" if len({b.pp_rank for b in budgets}) > 1
                else f"{bind.text}")
        return n_lo, n_hi, what, [budgets, notes]
    gibs = logged.available_gib or ((logged.reserved_gib,) if logged.reserved_gib else ())
    if gibs:
        # The smallest worker's memory bounds the engine's block count (the min over workers).
        gib = min(Fraction(g) for g in gibs)
        lo, hi = (gib - Fraction(1, 200)) * (1 << 30), (gib + Fraction(1, 200)) * (1 << 30)
        n_lo, n_hi = _blocks_for(layout, max(ceil(lo), 1)), _blocks_for(layout, floor(hi))
        what = "Available KV cache memory" if logged.available_gib else "kv_cache_memory_bytes reserved"
        return n_lo, n_hi, f"{min(gibs, key=Fraction)} GiB logged ({what}, +-0.005 GiB)", []
    if layout.cache.kv_cache_memory is not None or layout.cache.num_gpu_blocks_override is not None:
        n = plan(layout).gpu.num_blocks
        return n, n, "the layout's KV memory", []
    raise KvcalcError(f"{source}: no 'Available KV cache memory' line, and the layout gives no KV memory")


def _stage_rows(layout: Layout, budgets) -> list[dict]:
    """Each PP stage's budget and the block count it alone would give (the engine keeps the smallest)."""
    if not budgets:
        return []

    def workers(memory: tuple[int, ...]):
        return plan(replace(layout, cache=replace(layout.cache, kv_cache_memory=memory,
                                                  num_gpu_blocks_override=None))).gpu.workers

    per_lo, per_hi = workers(tuple(max(b.lo, 1) for b in budgets)), workers(tuple(b.hi for b in budgets))
    tp = layout.parallel.tensor_parallel_size
    out = []
    for w_lo, w_hi in zip(per_lo, per_hi):
        b = min(budgets[w_lo.pp_rank * tp:(w_lo.pp_rank + 1) * tp], key=lambda x: x.lo)
        out.append({"pp_rank": w_lo.pp_rank, "memory": b.text, "basis": b.basis,
                    "memory_bytes": [b.lo, b.hi], "bytes_per_block": w_lo.bytes_per_block,
                    "num_blocks": [w_lo.num_blocks_before_min, w_hi.num_blocks_before_min]})
    return out


def check(layout: Layout, text: str, *, source: str, version_given: bool = False,
          given: frozenset[str] = frozenset()) -> dict:
    """The prediction against the log's numbers. The release is the flag's (`version_given`: --vllm-version set
    it), else the one the log names, else the layout's; `given`: the key paths flags set (the log does not
    override them)."""
    from ..pipeline import require
    from .logstages import attention_rows

    require(layout, "check-log", "check --log")
    logged = parse_log(text, source)
    # The layout offloads, the log's non-default args name no connector setting: the server ran without one.
    connector_missing = (layout.offload.budget_given and layout.offload != NO_CONNECTOR and bool(logged.args)
                         and not any(k in dict(logged.args) for k in CONNECTOR_ARGS))
    against = contradicted(layout, logged, given)
    # The layout's own settings stay (a contradiction is a row above); its release and offloading the log may set
    # (the release's rules are the log's unless --vllm-version names one; a connector the log's run did not start
    # is its own row below).
    kept = frozenset(p for p in layout.written if p in STATED)
    layout, taken = with_log_settings(layout, logged, given | kept | ({"vllm.version"} if version_given else set()))
    _unmodelled_run(layout, logged, source)
    n_lo, n_hi, memory_source, staged = _memory_range(layout, logged, source)
    if n_lo is None or n_hi is None or n_hi - n_lo > MAX_CANDIDATES:
        raise KvcalcError(f"{source}: the logged memory allows too many GPU block counts to check")
    stated = logged.num_gpu_blocks
    if stated is not None:
        candidates = [stated] if n_lo <= stated <= n_hi else []
    else:
        candidates = list(range(n_lo, n_hi + 1))
    base = plan(replace(layout, cache=replace(layout.cache, num_gpu_blocks_override=n_lo)))
    n_best, rows, matching = _best_count(base, logged, candidates, n_lo)
    p = base if n_best == n_lo else plan(replace(layout, cache=replace(layout.cache, num_gpu_blocks_override=n_best)))
    if stated is not None and not candidates:
        rows.insert(0, {"quantity": "num_gpu_blocks", "predicted": f"{n_lo:,}..{n_hi:,}",
                        "logged": f"{stated:,}", "match": False})
    rows[:0] = against + attention_rows(p.layers.attention, p.layers.block_size, logged,
                                        layout.parallel.pipeline_parallel_size)
    if connector_missing:
        rows.insert(0, {"quantity": "KV connector", "predicted": "the layout's offloading connector",
                        "logged": "none (the non-default args name no kv_transfer_config or kv_offloading_size)",
                        "match": False})
    notes = [f"taken from the log: {', '.join(taken)}"] if taken else []
    notes += staged[1] if staged else []
    if logged.profiling_override is not None:
        o = logged.profiling_override
        notes.append(f"line {o.line} (Overriding num_gpu_blocks=0 with num_gpu_blocks_override={o.override}) is "
                     "CUDA-graph memory profiling's minimal KV cache (vLLM 0.18 - 0.19.1), not the plan's count")
    if logged.vllm_version and not _release(logged):
        notes.append(f"the log's version {logged.vllm_version!r} is no release kvcalc models: vLLM "
                     f"{layout.vllm_version}'s rules are used")
    return {"source": source, "vllm_version": p.behaviour.version, "memory": memory_source,
            "num_gpu_blocks": p.gpu.num_blocks, "num_gpu_blocks_range": [n_lo, n_hi],
            "num_gpu_blocks_matching": [matching[0], matching[-1]] if matching else None, "notes": notes,
            "stages": _stage_rows(layout, staged[0]) if staged else [],
            "rows": rows, "match": all(r["match"] is not False for r in rows) and any(r["match"] is True for r in rows)}


def _best_count(base, logged: StartupLog, candidates: list[int], n_lo: int) -> tuple[int, list[dict], list[int]]:
    """(the count that reproduces the most logged lines, its rows, every count that reproduces them all). The
    logged numbers depend on the block count alone once the layout is fixed, so the layout is planned once and each
    candidate count only re-derives rank 0's log numbers (no plan per candidate)."""
    worker, usage = base.gpu.workers[0], base.layers.usage
    family, device = base.behaviour.log_family, base.logs.device if base.logs else None
    best, matching = None, []
    for n in candidates or [n_lo]:
        logs = log_numbers(replace(worker, num_blocks=n), usage, family, device, base.behaviour.concurrency_sum)
        rows = _compare(logs, base.layout.cache.max_model_len, logged, n)
        score = sum(r["match"] is True for r in rows)
        if candidates and all(r["match"] is not False for r in rows):
            matching.append(n)
            score += len(rows) + 1  # a count that reproduces every line beats one that reproduces more of them
        if best is None or score > best[0]:
            best = (score, n, rows)
    _, n_best, rows = known(best, "the best candidate")  # one candidate at least
    return n_best, rows, matching


def _compare(logs, max_model_len: int, logged: StartupLog, n: int) -> list[dict]:
    rows = []
    if logs is None:  # no KV cache layers: nothing vLLM would log to compare
        return [{"quantity": "GPU KV cache size (tokens)", "predicted": "none (no KV cache layers)",
                 "logged": str(logged.kv_cache_size_tokens), "match": False}]
    stated = logged.num_gpu_blocks
    if stated is not None:
        rows.append({"quantity": "num_gpu_blocks", "predicted": f"{n:,}", "logged": f"{stated:,}",
                     "match": n == stated})
    if logged.kv_cache_size_tokens is not None:
        rows.append({"quantity": "GPU KV cache size (tokens)", "predicted": f"{logs.kv_cache_size_tokens:,}",
                     "logged": f"{logged.kv_cache_size_tokens:,}",
                     "match": logs.kv_cache_size_tokens == logged.kv_cache_size_tokens})
    if logged.max_concurrency is not None:
        predicted = f"{logs.max_concurrency:.2f}"
        rows.append({"quantity": f"maximum concurrency ({max_model_len:,} tokens)",
                     "predicted": predicted + "x", "logged": logged.max_concurrency + "x",
                     "match": predicted == logged.max_concurrency})
    return rows


# Settings that change the non-KV memory: a log measured under other values cannot give this run's budget.
NOT_REUSABLE = {"parallel.tensor_parallel_size": "tensor_parallel_size",
                "parallel.pipeline_parallel_size": "pipeline_parallel_size", "model.dtype": "dtype",
                "gpu.quantization": "quantization", "cache.max_num_seqs": "max_num_seqs",
                "gpu.enforce_eager": "enforce_eager", "cache.max_num_batched_tokens": "max_num_batched_tokens"}
# Settings that keep the budget and change only the block arithmetic (the budget is reused in bytes).
REBLOCK = ("cache.kv_cache_dtype", "cache.block_size", "gpu.memory_utilization")


def _refuse_changed(layout: Layout, logged: StartupLog, given: frozenset[str], source: str) -> None:
    for path, key in NOT_REUSABLE.items():
        stated = logged.setting(key)
        if path not in given and path not in layout.written or stated is None:
            continue
        section, leaf = path.split(".")
        mine = getattr(getattr(layout, section), leaf)
        if str(stated).removeprefix("torch.").strip("'") != str(mine):
            raise KvcalcError(f"{source}: --kv-cache-memory-from-log: the log's budget was measured with {key} "
                              f"{stated}; {mine} changes the memory besides the KV cache: predict it with --gpu "
                              "instead")


def gpu_blocks_from_log(layout: Layout, text: str, source: str, given: frozenset[str] = frozenset()
                        ) -> tuple[Layout, str]:
    """The GPU side of a real start: the block count the log's lines allow (check's candidates, the one that
    reproduces every logged number), as num_gpu_blocks_override; or, when a flag changes the KV dtype, the block
    size or the utilization, the budget in bytes those counts imply (moved by exactly ceil(T u') - ceil(T u) for a
    new utilization), with a note saying how it was pinned. The plan keeps the layout's release and max_model_len."""
    from ..pipeline import require

    require(layout, "kv-cache-memory-from-log", "--kv-cache-memory-from-log")
    if "Available KV cache memory" not in text:
        raise KvcalcError(f"{source}: --kv-cache-memory-from-log: no 'Available KV cache memory' line")
    logged = parse_log(text, source)
    _refuse_changed(layout, logged, given, source)
    # A layout key that differs from the log's run counts as a flag would (a TP 2 / fp8 layout is not the TP 1 /
    # bf16 run the log measured).
    stated = _stated(logged)
    given = given | {p for p in REBLOCK if p in layout.written and p in stated and
                     str(getattr(layout.cache, p.split(".")[1])) != str(stated[p])}
    probe = replace(layout, cache=replace(layout.cache, kv_cache_memory=None, num_gpu_blocks_override=None))
    if any(path in given for path in REBLOCK):  # the log's own run, to read its budget
        keep = given - set(REBLOCK) | {"vllm.version"}
        probe, _ = with_log_settings(replace(probe, cache=replace(probe.cache, kv_cache_dtype="auto", block_size=None)),
                                     logged, keep)
    result = check(probe, text, source=source)
    lo, hi = result["num_gpu_blocks_range"]
    n = result["num_gpu_blocks"]
    match = result["num_gpu_blocks_matching"]
    pinned = ("matched by its KV cache size line" + (f" ({match[0]:,}..{match[1]:,} all match)" if match and
                                                      match[0] != match[1] else "")) if result["match"] else (
        f"the smallest of {lo:,}..{hi:,} its 0.01 GiB rounding allows" if lo != hi else "exact")
    if not any(path in given for path in REBLOCK):
        note = f"{n:,} GPU blocks from {source} ({result['memory']}; {pinned})"
        return replace(layout, cache=replace(layout.cache, kv_cache_memory=None, num_gpu_blocks_override=n)), note
    return _budget_from_log(layout, logged, probe, match or [n, n], given, source, pinned)


def _budget_from_log(layout, logged: StartupLog, probe, match, given, source, pinned) -> tuple[Layout, str]:
    """The budget in bytes the matching counts imply on the log's own layout, moved for a new utilization."""
    per_block = plan(replace(probe, cache=replace(probe.cache, num_gpu_blocks_override=match[0]))).gpu.workers[0]
    budget = match[0] * per_block.bytes_per_block
    top = (match[1] + 1) * per_block.bytes_per_block - 1
    moved = ""
    if "gpu.memory_utilization" in given:
        if logged.total_gib is None or logged.utilization is None:
            raise KvcalcError(f"{source}: --kv-cache-memory-from-log with --gpu-memory-utilization: the log states no "
                              "device total and utilization (DEBUG 'worker init memory snapshot' / 'Requested memory' "
                              "lines, or the 0.26+ 'Free memory on device' line)")
        total = int(Fraction(logged.total_gib) * (1 << 30))
        old, new = float(logged.utilization), layout.gpu.memory_utilization
        delta = ceil(total * new) - ceil(total * old)  # v1/worker/utils.py request_memory, both sides
        budget, top = budget + delta, top + delta
        moved = f", moved by ceil(T x {new}) - ceil(T x {old}) = {delta:,} B (T = {logged.total_gib} GiB logged)"
    note = (f"KV budget {budget:,}..{top:,} B from {source} ({pinned}{moved}); the smallest is planned with this "
            "run's KV dtype and block size")
    return replace(layout, cache=replace(layout.cache, kv_cache_memory=(budget,), num_gpu_blocks_override=None)), note
