"""Compare a vLLM `/metrics` scrape (Prometheus text format) with kvcalc's prediction. Pure: text in.

vLLM 0.33.0 publishes the CPU tier on `vllm:kv_offload_config_info` (offloading/metrics.py; labels from
v1/kv_offload/cpu/common.py CPUOffloadingInfo: cpu_num_chunks, cpu_blocks_per_chunk, cpu_kv_cache_size_bytes,
cpu_kv_cache_size_tokens, a None value written "None") and the cache config on `vllm:cache_config_info`
(v1/metrics/loggers.py log_metrics_info: every CacheConfig field as str(value), among them num_gpu_blocks and
block_size). Both are gauges set to 1, one series per engine (label `engine`).
"""

from __future__ import annotations


from ..backends.base import backend
from ..vocab.errors import LayoutError, UnsupportedError
from ..vocab.layout import Layout
from ..pipeline import Plan, plan_vllm as plan  # vLLM's operation: its plan
from ..vocab.records import replace

OFFLOAD_INFO = "vllm:kv_offload_config_info"
CACHE_INFO = "vllm:cache_config_info"
OFFLOAD_LABELS = ("cpu_num_chunks", "cpu_blocks_per_chunk", "cpu_kv_cache_size_bytes", "cpu_kv_cache_size_tokens")
CACHE_LABELS = ("num_gpu_blocks", "block_size")
MAX_LABELS = 1000
PREDICTED_TOLERANCE_PCT = 2  # a predicted num_gpu_blocks matches a scrape within 2% (check(): the real starts)


class _Bad(ValueError):
    pass


def _labels(text: str, line_no: int) -> dict[str, str]:
    """`a="x",b="y\\"z"` -> {a: x, b: y"z} (the exposition format's escapes: \\\\, \\", \\n)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0:
            raise _Bad(f"line {line_no}: a label without '='")
        name = text[i:eq].strip()
        if not name or not (name.replace("_", "a").isalnum() and not name[0].isdigit()):
            raise _Bad(f"line {line_no}: label name {name[:40]!r}")
        i = eq + 1
        if i >= n or text[i] != '"':
            raise _Bad(f"line {line_no}: label {name!r} has no quoted value")
        i += 1
        value = []
        while i < n and text[i] != '"':
            if text[i] == "\\" and i + 1 < n:
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(text[i + 1], text[i + 1]))
                i += 2
            else:
                value.append(text[i])
                i += 1
        if i >= n:
            raise _Bad(f"line {line_no}: label {name!r}: unterminated value")
        i += 1
        if name in out:
            # Prometheus refuses a sample with a label given twice (the text parser's "duplicate label names");
            # keeping either value would check the scrape against a number it does not say once.
            raise _Bad(f"line {line_no}: label {name!r} given twice")
        out[name] = "".join(value)
        if len(out) > MAX_LABELS:
            raise _Bad(f"line {line_no}: more than {MAX_LABELS} labels")
    return out


def parse(text: str, *, source: str) -> dict[str, list[tuple[int, dict[str, str]]]]:
    """The series of the two info metrics: name -> [(line number, labels)]. Refuses text that is no scrape."""
    found: dict[str, list[tuple[int, dict[str, str]]]] = {OFFLOAD_INFO: [], CACHE_INFO: []}
    samples = 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        name = line[:brace] if brace >= 0 else line.split()[0]
        if not name or any(c.isspace() for c in name):
            raise LayoutError(source, f"line {no}", "a Prometheus sample line: name{labels} value", raw[:60])
        samples += 1
        if name not in found:
            continue
        close = line.rfind("}")
        if brace < 0 or close < brace:
            raise LayoutError(source, f"line {no}", f"{name} with its labels in braces", raw[:60])
        try:
            found[name].append((no, _labels(line[brace + 1:close], no)))
        except _Bad as e:
            raise LayoutError(source, f"line {no}", "well-formed labels", detail=str(e)) from None
    if not found[OFFLOAD_INFO] and not found[CACHE_INFO]:
        raise LayoutError(source, "", f"a vLLM /metrics scrape with {OFFLOAD_INFO} or {CACHE_INFO}",
                          detail=f"{samples} sample line(s), none of them those series")
    return found


def _predicted(p: Plan) -> dict[str, dict[str, str | None]]:
    out: dict[str, dict[str, str | None]] = {CACHE_INFO: {
        "num_gpu_blocks": None if p.gpu.num_blocks is None else str(p.gpu.num_blocks),
        "block_size": str(p.layers.block_size),
    }}
    c = p.pool.capacity
    if c is not None:
        out[OFFLOAD_INFO] = {"cpu_num_chunks": str(c.cpu_num_chunks),
                             "cpu_blocks_per_chunk": str(c.cpu_blocks_per_chunk),
                             "cpu_kv_cache_size_bytes": str(c.cpu_kv_cache_size_bytes),
                             "cpu_kv_cache_size_tokens": "None" if c.cpu_kv_cache_size_tokens is None
                             else str(c.cpu_kv_cache_size_tokens)}
    return out


def _from_scrape(layout: Layout, found: dict) -> tuple[Layout, list[str], set[str]]:
    """What the layout leaves open, taken from the scrape (one engine's value): the GPU block count without KV
    memory, the CPU budget without one. The labels taken are returned: their rows compare the scrape with itself."""
    notes: list[str] = []
    taken: set[str] = set()
    if layout.cache.kv_cache_memory is None and layout.cache.num_gpu_blocks_override is None \
            and not layout.gpu.predicts:  # with a GPU the count is predicted and compared (issue 35)
        blocks = {s.get("num_gpu_blocks") for _, s in found[CACHE_INFO]}
        if len(blocks) == 1 and (b := blocks.pop()) and b.isascii() and b.isdigit() and len(b) <= 30:
            layout = replace(layout, cache=replace(layout.cache, num_gpu_blocks_override=int(b)))
            taken.add("num_gpu_blocks")
            notes.append(f"num_gpu_blocks {int(b):,} taken from the scrape (the layout gives no KV memory)")
    if layout.offload.cpu_bytes_to_use is None:
        sizes = {s.get("cpu_kv_cache_size_bytes") for _, s in found[OFFLOAD_INFO]}
        if len(sizes) == 1 and (b := sizes.pop()) and b.isascii() and b.isdigit() and len(b) <= 30:
            # The tier's bytes are whole chunks of the budget: as a budget they give the same chunk count.
            layout = replace(layout, offload=replace(layout.offload, cpu_bytes_to_use=int(b),
                                                     cpu_bytes_source="the scrape"))
            taken.add("cpu_kv_cache_size_bytes")
            notes.append(f"cpu_bytes_to_use {int(b):,} taken from the scrape's cpu_kv_cache_size_bytes (the layout "
                         "gives no budget)")
    return layout, notes, taken


def _within(got: str | None, want: str, tolerance: int) -> bool:
    if not tolerance:
        return got == want
    if got is None or not (got.isascii() and got.isdigit() and len(got) <= 30):
        return False
    return abs(int(got) - int(want)) <= tolerance


def _rows(found: dict, expected: dict, taken: set[str], tolerance: int) -> list[dict]:
    """One row per predicted label of every scraped series."""
    rows: list[dict] = []
    for name in (CACHE_INFO, OFFLOAD_INFO):
        labels = CACHE_LABELS if name == CACHE_INFO else OFFLOAD_LABELS
        for line, series in found[name]:
            engine = series.get("engine", "")
            for label in labels:
                want = expected.get(name, {}).get(label) if name in expected else None
                got = series.get(label)
                if want is None and name == OFFLOAD_INFO and name not in expected:
                    want = "(no CPU tier: the connector would not start)"
                if want is None:
                    continue  # not predicted (no KV memory): nothing to compare
                tol = tolerance if label == "num_gpu_blocks" else 0
                rows.append({"series": name, "engine": engine, "line": line, "label": label, "expected": want,
                             "found": got, "match": _within(got, want, tol), "from_scrape": label in taken,
                             "tolerance": tol})
    return rows


def check(layout: Layout, text: str, *, source: str) -> dict:
    """Rows of (series, label, expected, found, match) for every label of every engine's series. A value kvcalc
    took from the scrape itself (the GPU block count, the CPU budget) is marked `from_scrape` and proves nothing:
    the scrape matches only when some other row compares a prediction."""
    from ..pipeline import require

    require(layout, "check-metrics", "check --metrics")
    if layout.vllm_version_from == "default":
        # vLLM's /metrics names no release (0.33.0 v1/metrics/loggers.py publishes no version or build info).
        raise LayoutError(source, "", "a release to compare against: a scrape names none, give --vllm-version (or "
                                      "vllm.version)", detail=f"kvcalc would assume {layout.vllm_version}")
    found = parse(text, source=source)
    planned_as: list[str] = []
    own = backend(layout.offload.backend)
    if own.no_offload_info and found[OFFLOAD_INFO] and not layout.offload.budget_given:
        # A layout without a connector, a scrape of a server that ran one: plan the connector the scrape describes
        # (its budget from the scrape below).
        layout = own.with_budget(layout, 0, "the scrape")
        layout = replace(layout, offload=replace(layout.offload, cpu_bytes_to_use=None))
        planned_as.append(f"the scrape has {OFFLOAD_INFO}: planned with vLLM's offloading connector")
    unpublished = backend(layout.offload.backend).no_offload_info
    if unpublished and found[OFFLOAD_INFO]:  # a GPU-only scrape compares vllm:cache_config_info alone
        raise UnsupportedError(f"{layout.source}: check --metrics compares the native connector's {OFFLOAD_INFO}; "
                               f"{unpublished}")
    layout, notes, taken = _from_scrape(layout, found)
    notes = planned_as + notes
    p = plan(layout)
    if found[OFFLOAD_INFO] and not p.behaviour.capacity_metric:
        # The series exists from 0.33.0 (versions.STEPS capacity_metric); a scrape that has it came from a later
        # release than the one selected, and every label would "mismatch" for the wrong reason.
        raise LayoutError(source, f"line {found[OFFLOAD_INFO][0][0]}",
                          f"a release that publishes {OFFLOAD_INFO} (0.33.0 or later; pass --vllm-version)",
                          p.behaviour.version)
    expected = _predicted(p)
    tolerance = 0
    if p.memory is not None and p.memory.source == "predicted" and p.gpu.num_blocks is not None:
        # A predicted budget rests on estimated terms (the profile run's activation, CUDA graphs): its block count
        # is compared within PREDICTED_TOLERANCE of itself (the real H100 0.19.0 starts: Llama-3.1-8B 0.08% off,
        # Gemma-3-12B 1.18%), never taken from the scrape.
        tolerance = max(1, -(-p.gpu.num_blocks * PREDICTED_TOLERANCE_PCT // 100))
        notes.append(f"num_gpu_blocks predicted from the GPU ({p.gpu.num_blocks:,}): compared within "
                     f"{PREDICTED_TOLERANCE_PCT}% ({tolerance:,} blocks; the budget's activation and CUDA-graph "
                     "terms are estimates)")
    rows = []
    if OFFLOAD_INFO in expected and not found[OFFLOAD_INFO] and p.behaviour.capacity_metric:
        # The layout offloads on a release that publishes the CPU tier: a server without the series has no
        # offloading connector running.
        rows.append({"series": OFFLOAD_INFO, "engine": "", "line": 0, "label": "(series)",
                     "expected": "present (the layout offloads)", "found": "absent: offloading is not on",
                     "match": False, "from_scrape": False, "tolerance": 0})
    rows += _rows(found, expected, taken, tolerance)
    evidence = [r for r in rows if not r["from_scrape"]]
    if rows and not evidence:
        notes.append("every compared value was taken from the scrape itself: nothing was checked (give the KV "
                     "memory or the CPU budget)")
    return {"source": source, "vllm_version": p.behaviour.version, "rows": rows, "notes": notes,
            "match": bool(evidence) and all(r["match"] for r in rows)}
