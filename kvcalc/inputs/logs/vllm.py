"""A vLLM start-up log -> the numbers and settings it states (`StartupLog`). Pure: text in.

Every format vLLM 0.14.0 - 0.33.0 prints, INFO and DEBUG, one or many workers: each line is matched on its message
text wherever it sits (the `(EngineCore pid=N)` / `(Worker_TP1 pid=N)` prefixes, the 0.31+ `(process pid=N)` form
and the `[file:line]` tags move between releases). Formats (vLLM's own format strings, file:line per release in
/work/stage/gpu-memory/log-formats.md):

- `Available KV cache memory: X GiB` (v1/worker/gpu_worker.py, every release; `format_gib`: Python round(x, 2));
- `GPU KV cache size: N tokens` (0.14 - 0.27, its own line; 0.28+ `GPU KV cache size: N tokens, Maximum
  concurrency for L tokens per request: Cx`; 0.30+ `%s KV cache size`), `Maximum concurrency for L tokens per
  request: Cx`;
- `Overriding num_gpu_blocks=X with num_gpu_blocks_override=Y` (v1/core/kv_cache_utils.py): with X = 0 it is the
  minimal KV cache of CUDA-graph memory profiling (0.18.0 - 0.19.1, Y the largest capture size), not the plan;
  otherwise the user's override (Y the count used, X the count memory gave);
- `vllm cache_config_info with initialization after num_gpu_blocks is: N` (v1/metrics/loggers.py, per engine at
  DEBUG, aggregated at INFO);
- `Model loading took X GiB [memory] and S seconds`, `worker init memory snapshot: ... free_memory=FGiB,
  total_memory=TGiB ...` and `worker requested memory: RGiB` (DEBUG), `Memory profiling takes ... torch peak memory
  increase: XGiB; non-torch forward increase memory: XGiB` (<= 0.26) / `total consumed (from mem_get_info): XGiB`
  (0.27+) (DEBUG), `Estimated CUDA graph memory: X GiB total` (0.18+), `CUDA graph pool memory: A GiB (actual), E
  GiB (estimated)`, `Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (u, R GiB)`
  (DEBUG <= 0.25, INFO 0.26+), `reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes`;
- the engine's settings: `Initializing a V1 LLM engine (vX) with config: key=value, ...` and `non-default args:
  {...}` (entrypoints), the banner's `version X`;
- the attention backend each worker selected (platforms/cuda.py get_attn_backend_cls' info_once: `Using X attention
  backend out of potential backends: [...]` / `(...)` 0.14-0.15, `Using AttentionBackendEnum.X backend.` for a named
  one; platforms/rocm.py `Using X backend out of ...`) and the block size it set (`Forcing kv cache block size to N
  for X backend.` 0.14-0.17 platforms/cuda.py check_and_update_config, `Setting kv cache block size to N for X
  backend.` 0.18+ / `backend(s).` 0.31+ platforms/interface.py update_block_size_for_backend, `Setting attention
  block size to N tokens to ensure that attention page size is >= mamba page size.` config/vllm.py and
  model_executor/models/config.py, the hybrid alignment).

Each worker's memory lines are kept per process (`WorkerLines`): with PP > 1 only the first local rank prints the
INFO `Available KV cache memory` (logger.info_once, scope "local": vllm/logger.py _should_log_with_scope), and every
other stage's budget is its DEBUG `Requested memory` less its `Total non KV cache memory` (less its `Estimated CUDA
graph memory` where the release subtracts it: gpu_worker.py determine_available_memory, e.g. :417-421 @0.19.0).
"""

from __future__ import annotations

import re
from typing import Any

from ...vocab.records import field, record, replace

_NUM = r"(-?[0-9]+(?:\.[0-9]+)?)"
_INT = r"([0-9][0-9,]*)"
# (name, pattern): the first group of each is the value; a name listed in _EVERY keeps every match, the others the
# first.
_PATTERNS = {
    # The three a check compares are read leniently and then checked (a malformed number is bad input, naming the
    # line), the others strictly.
    "available_gib": re.compile(r"Available KV cache memory:\s*([0-9.,-]+)\s*GiB"),
    "reserved_gib": re.compile(r"reserved " + _NUM + r" GiB memory for\s*KV Cache as specified by kv_cache_memory"),
    "kv_tokens": re.compile(r"\b(?:[A-Z]{2,4}(?: \+ host)?) KV cache size:\s*([0-9,]+)\s*tokens"),
    "concurrency": re.compile(r"Maximum concurrency for\s*([0-9,]+)\s*tokens per request:\s*([0-9.]+)x"),
    "mnbt": re.compile(r"max_num_batched_tokens(?:=| to )([0-9]+)"),
    "override": re.compile(r"Overriding num_gpu_blocks=" + _INT + " with num_gpu_blocks_override=" + _INT),
    "blocks_is": re.compile(r"after num_gpu_blocks is:\s*" + _INT),
    "weights_gib": re.compile(r"Model loading took " + _NUM + r" GiB"),
    "snapshot": re.compile(r"worker init memory snapshot: .*?free_memory=" + _NUM + r"GiB, total_memory=" + _NUM),
    "requested_gib": re.compile(r"worker requested memory: " + _NUM + "GiB"),
    "initial": re.compile(r"Initial free memory: " + _NUM + r" GiB; Requested memory: " + _NUM + r" \(util\), "
                          + _NUM + " GiB"),
    "profile": re.compile(r"Total non KV cache memory: " + _NUM + r"GiB; torch peak memory increase: " + _NUM
                          + r"GiB; (non-torch forward increase memory|total consumed \(from mem_get_info\)): "
                          + _NUM + r"GiB; weights memory: " + _NUM),
    "cudagraph_estimate_gib": re.compile(r"Estimated CUDA graph memory: " + _NUM + " GiB total"),
    "cudagraph_pool": re.compile(r"CUDA graph pool memory: " + _NUM + r" GiB \(actual\), " + _NUM
                                 + r" GiB \(estimated\)"),
    "graph_capture_gib": re.compile(r"Graph capturing finished in [0-9]+ secs, took " + _NUM + " GiB"),
    "summary": re.compile(r"Free memory on device \(" + _NUM + "/" + _NUM + r" GiB\) on startup\. Desired GPU memory "
                          r"utilization is \(" + _NUM + ", " + _NUM + " GiB"),
    "engine": re.compile(r"Initializing a V1 LLM engine \(v([^)\s]+)\) with config: (.*)$"),
    "args": re.compile(r"non-default args: (\{.*\})\s*$"),
    "version": re.compile(r"(?:vLLM API server version|\bversion) v?([0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+]*)"),
    "backend": re.compile(r"Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) (?:attention )?backend(?:\.| out of)"),
    "block_line": re.compile(r"(?:Setting|Forcing) kv cache block size to ([0-9]+) for ([A-Za-z0-9_/]+) backend"),
    "hybrid_block": re.compile(r"Setting attention block size to ([0-9]+) tokens to ensure that attention page size"),
    # 0.26.0 config/vllm.py:1109-1111 and v1/worker/gpu_worker.py:378: how many batches are in flight (tools/logcheck)
    "async_scheduling": re.compile(r"Asynchronous scheduling is (enabled|disabled)\."),
    "v2_runner": re.compile(r"Using (V2) Model Runner"),
    "fp4_indexer": re.compile(r"Using (MXFP4) indexer cache for Lightning Indexer"),  # attention.py:694 @0.26.0
}
_EVERY = {"available_gib", "weights_gib", "graph_capture_gib"}
# The lines kept per worker process (WorkerLines): the pattern and the group of the value.
_PER_WORKER = {"available_gib": 1, "requested_gib": 1, "initial": 3, "profile": 1, "cudagraph_estimate_gib": 1}
# "(Worker_PP1_TP0 pid=443)", "(VllmWorker TP1 pid=4251)", "(Worker pid=442)" before the rename
# (v1/executor/multiproc_executor.py: Worker + _DP / _PP / _PCP / _TP / _DCP / _EP ranks above size 1).
_PROCESS = re.compile(r"\(((?:Vllm)?Worker[A-Za-z0-9_ ]*) pid=([0-9]+)\)")
_TAG = re.compile(r"\[(?:v1/worker/)?gpu_worker\.py:([0-9]+)\]")
# The `[gpu_worker.py:N]` tag of the "Available KV cache memory" line per release: the logger call's line in each
# wheel's v1/worker/gpu_worker.py (log-formats.md section 6.3, W:359 @0.14.0 ... W:773 @0.33.0, less one: the tag is
# the call's first line, as the real logs show, :436 @0.19.0). Only used when a log names no version (an excerpt).
AVAILABLE_TAGS = {358: "0.14.0", 356: "0.15.0", 373: "0.16.0", 424: "0.17.0", 456: "0.18.0", 436: "0.19.0",
                  440: "0.20.0", 462: "0.21.0", 466: "0.22.0", 480: "0.23.0", 508: "0.24.0", 538: "0.25.0",
                  560: "0.26.0", 563: "0.27.0", 578: "0.28.0", 625: "0.29.0", 640: "0.30.0", 692: "0.31.0",
                  759: "0.32.0", 772: "0.33.0"}


@record
class LoggedOverride:
    """An `Overriding num_gpu_blocks=X with num_gpu_blocks_override=Y` line."""

    computed: int = field("X: the count memory gave (0: CUDA-graph profiling's minimal cache, 0.18 - 0.19.1)")
    override: int = field("Y: the count used")
    line: int = field("its line number")


@record
class WorkerLines:
    """One worker process's memory lines, as printed (GiB rounded to 0.01)."""

    pid: int
    name: str  # its logged process name (the most specific one: Worker_PP1 over Worker)
    pp_rank: int  # 0 when the name has no _PP rank (PP 1)
    tp_rank: int
    dp_rank: int
    available_gib: str | None = None  # "Available KV cache memory" (the first local rank only)
    requested_gib: str | None = None  # "worker requested memory" / "Requested memory: u (util), R GiB" (DEBUG)
    non_kv_gib: str | None = None  # "Total non KV cache memory" (DEBUG)
    cudagraph_estimate_gib: str | None = None  # "Estimated CUDA graph memory: X GiB total" (0.18+)


@record
class StartupLog:
    """What one start-up log states. Numbers are as printed (GiB rounded to 0.01 by vLLM's format_gib)."""

    source: str
    vllm_version: str | None = None  # as printed: a release, or a dev build string
    available_gib: tuple[str, ...] = ()  # every "Available KV cache memory" (one per worker that prints it)
    reserved_gib: str | None = None  # the --kv-cache-memory-bytes path's "reserved X GiB"
    kv_cache_size_tokens: int | None = None
    max_model_len: int | None = None  # the concurrency line's tokens per request
    max_concurrency: str | None = None  # as printed, 2 decimals
    overrides: tuple[LoggedOverride, ...] = ()
    blocks_is: int | None = None  # the metrics logger's num_gpu_blocks
    weights_gib: tuple[str, ...] = ()  # "Model loading took" (one per worker that prints it)
    free_gib: str | None = None  # free memory at the init snapshot
    total_gib: str | None = None  # the device total torch reports (mem_get_info)
    requested_gib: str | None = None
    utilization: str | None = None
    non_kv_gib: str | None = None
    torch_peak_gib: str | None = None
    non_torch_gib: str | None = None  # <= 0.26: non-torch forward increase
    total_consumed_gib: str | None = None  # 0.27+: total consumed (from mem_get_info)
    cudagraph_estimate_gib: str | None = None
    cudagraph_actual_gib: str | None = None
    max_num_batched_tokens: int | None = None  # "Chunked prefill is enabled with max_num_batched_tokens=N" & co.
    tag_release: str | None = None  # the release the Available line's [gpu_worker.py:N] tag belongs to
    engine: tuple[tuple[str, str], ...] = ()  # the engine config line's key=value pairs
    args: tuple[tuple[str, Any], ...] = ()  # non-default args
    workers: tuple[WorkerLines, ...] = ()  # every worker process that printed a memory line, by (DP, PP, TP) rank
    backends: tuple[str, ...] = ()  # the attention backends the "Using X ... backend" lines name, in order
    block_lines: tuple[tuple[int, str, int], ...] = ()  # (size, backend, line) of each kv cache block size line
    hybrid_block: tuple[int, int] | None = None  # (size, line): the last "Setting attention block size" line
    async_scheduling: bool | None = None  # "Asynchronous scheduling is enabled." / "disabled."
    v2_runner: bool = False  # "Using V2 Model Runner"
    fp4_indexer: bool = False  # DeepSeek-V4's "Using MXFP4 indexer cache for Lightning Indexer."

    @property
    def num_gpu_blocks(self) -> int | None:
        """The engine's real block count when the log states it: the metrics logger's line, or a user override
        (never CUDA-graph profiling's minimal cache)."""
        if self.blocks_is is not None:
            return self.blocks_is
        real = [o for o in self.overrides if o.computed > 0]
        return real[-1].override if real else None

    @property
    def profiling_override(self) -> LoggedOverride | None:
        """The 0.18 - 0.19.1 CUDA-graph profiling line (`Overriding num_gpu_blocks=0 ...`), if printed."""
        return next((o for o in self.overrides if o.computed == 0), None)

    def setting(self, key: str) -> Any:
        """An engine setting: the non-default args' value, else the engine config line's (text), else None."""
        args = dict(self.args)
        if key in args:
            return args[key]
        return dict(self.engine).get(key)


def split_config(text: str) -> tuple[tuple[str, str], ...]:
    """`a=1, b='x, y', c={'d': [1, 2]}` -> (("a", "1"), ("b", "'x, y'"), ("c", "{'d': [1, 2]}")): top-level commas
    only (brackets and quotes nest)."""
    out, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text + ","):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth <= 0:
            key, eq, value = text[start:i].strip().partition("=")
            if eq and key.isidentifier():
                out.append((key, value.strip()))
            start = i + 1
    return tuple(out)


def _args(text: str) -> tuple[tuple[str, Any], ...]:
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ()
    return tuple(value.items()) if isinstance(value, dict) else ()


def _int(text: str) -> int:
    return int(text.replace(",", ""))


_DECIMAL = re.compile(r"-?[0-9]{1,12}(\.[0-9]{1,6})?")
_GROUPED = re.compile(r"[0-9]{1,3}(,[0-9]{3}){0,6}|[0-9]{1,21}")  # 602,368 or 602368, at most 10^21
_CHECKED = {"available_gib": ((1, _DECIMAL, "a number of GiB such as 37.79"),),
            "kv_tokens": ((1, _GROUPED, "a token count such as 602,368"),),
            "concurrency": ((1, _GROUPED, "a token count such as 131,072"),
                            (2, _DECIMAL, "a concurrency such as 4.60"))}


def _check(name: str, m: re.Match, source: str, no: int) -> None:
    """A number as vLLM prints it, or a LayoutError naming the log's line (1.2.3 GiB is no number)."""
    from ...vocab.errors import LayoutError

    for group, pattern, what in _CHECKED.get(name, ()):
        if not pattern.fullmatch(m.group(group)):
            raise LayoutError(source, f"line {no}", what, m.group(group))
    if name == "concurrency" and _int(m.group(1)) < 1:
        raise LayoutError(source, f"line {no}", "a max_model_len of at least 1 token", m.group(1))


def parse(text: str, source: str = "<log>") -> StartupLog:
    """Every line of the log -> a StartupLog (the first match of each kind, every match of the per-worker ones)."""
    found: dict[str, Any] = {}
    every: dict[str, list[str]] = {k: [] for k in _EVERY}
    overrides: list[LoggedOverride] = []
    procs: dict[int, dict[str, Any]] = {}  # pid -> its name and memory lines
    seen: dict[str, list] = {"backend": [], "block_line": [], "hybrid_block": []}
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            continue  # a fixture's source header; vLLM's lines never start with '#'
        if "GiB" not in line and "tokens" not in line and "num_gpu_blocks" not in line and "config" not in line \
                and "version" not in line and "args" not in line and "batched" not in line and "backend" not in line \
                and "scheduling" not in line and "Runner" not in line and "Indexer" not in line:
            continue  # most lines of a DEBUG log hold none of them
        proc = _process(line, procs)
        for name, pattern in _PATTERNS.items():
            m = pattern.search(line)
            if m is None:
                continue
            _check(name, m, source, no)
            if proc is not None and name in _PER_WORKER:
                proc.setdefault(name, m.group(_PER_WORKER[name]))
            if name in seen:
                seen[name].append((m, no))
            elif name == "override":
                overrides.append(LoggedOverride(computed=_int(m.group(1)), override=_int(m.group(2)), line=no))
            elif name in every:
                every[name].append(m.group(1))
                if name == "available_gib" and "tag" not in found and (t := _TAG.search(line)):
                    found["tag"] = t
            elif name not in found:
                found[name] = m
    logged = _record(source, found, every, overrides)
    backends = tuple(dict.fromkeys(m.group(1) for m, _ in seen["backend"]))
    hybrid = seen["hybrid_block"][-1] if seen["hybrid_block"] else None
    return replace(logged, workers=_workers(procs), backends=backends,
                   block_lines=tuple((int(m.group(1)), m.group(2), no) for m, no in seen["block_line"]),
                   hybrid_block=None if hybrid is None else (int(hybrid[0].group(1)), hybrid[1]))


def _process(line: str, procs: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """The worker process a line comes from (its record in `procs`), or None (the engine core, the API server)."""
    found = _PROCESS.findall(line)
    if not found:
        return None
    name, pid = found[-1]
    proc = procs.setdefault(int(pid), {"name": name})
    if len(name) > len(proc["name"]):
        proc["name"] = name  # Worker_PP1 (after decorate_logs) over Worker (before it)
    return proc


def _rank(name: str, tag: str) -> int:
    m = re.search(r"[_ ]" + tag + r"([0-9]+)", name)
    return int(m.group(1)) if m else 0


def _workers(procs: dict[int, dict[str, Any]]) -> tuple[WorkerLines, ...]:
    out = []
    for pid, p in procs.items():
        if not any(k in p for k in _PER_WORKER):
            continue
        out.append(WorkerLines(pid=pid, name=p["name"], pp_rank=_rank(p["name"], "PP"), tp_rank=_rank(p["name"], "TP"),
                               dp_rank=_rank(p["name"], "DP"), available_gib=p.get("available_gib"),
                               requested_gib=p.get("requested_gib") or p.get("initial"),
                               non_kv_gib=p.get("profile"), cudagraph_estimate_gib=p.get("cudagraph_estimate_gib")))
    return tuple(sorted(out, key=lambda w: (w.dp_rank, w.pp_rank, w.tp_rank, w.pid)))


def _record(source: str, found: dict, every: dict, overrides: list) -> StartupLog:
    def g(name: str, i: int = 1) -> str | None:
        return found[name].group(i) if name in found else None

    def at(name: str, i: int = 1) -> str:  # a line that was found: its group
        return found[name].group(i)

    engine = split_config(at("engine", 2)) if "engine" in found else ()
    conc = found.get("concurrency")
    profile, snap, summary, init = (found.get(k) for k in ("profile", "snapshot", "summary", "initial"))
    consumed = profile is not None and profile.group(3).startswith("total")
    return StartupLog(
        source=source, vllm_version=g("engine") or g("version"), available_gib=tuple(every["available_gib"]),
        reserved_gib=g("reserved_gib"),
        kv_cache_size_tokens=None if "kv_tokens" not in found else _int(at("kv_tokens")),
        max_model_len=None if conc is None else _int(conc.group(1)), max_concurrency=None if conc is None
        else conc.group(2), overrides=tuple(overrides),
        blocks_is=None if "blocks_is" not in found else _int(at("blocks_is")),
        weights_gib=tuple(every["weights_gib"]),
        free_gib=snap.group(1) if snap else summary.group(1) if summary else init.group(1) if init else None,
        total_gib=snap.group(2) if snap else summary.group(2) if summary else None,
        requested_gib=g("requested_gib") or (init.group(3) if init else summary.group(4) if summary else None),
        utilization=summary.group(3) if summary else init.group(2) if init else None,
        non_kv_gib=profile.group(1) if profile else None, torch_peak_gib=profile.group(2) if profile else None,
        non_torch_gib=profile.group(4) if profile and not consumed else None,
        total_consumed_gib=profile.group(4) if profile and consumed else None,
        cudagraph_estimate_gib=g("cudagraph_estimate_gib"),
        cudagraph_actual_gib=g("cudagraph_pool") or (every["graph_capture_gib"][-1] if every["graph_capture_gib"]
                                                     else None),
        max_num_batched_tokens=None if "mnbt" not in found else int(at("mnbt")),
        async_scheduling=None if "async_scheduling" not in found else at("async_scheduling") == "enabled",
        v2_runner="v2_runner" in found, fp4_indexer="fp4_indexer" in found,
        tag_release=AVAILABLE_TAGS.get(int(at("tag"))) if "tag" in found else None,
        engine=engine, args=_args(at("args")) if "args" in found else ())
