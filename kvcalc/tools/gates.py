"""--check gates over a plan's pool. Every gate is reported every time, each with its status: `pass`, `fail`,
`unknown` (asked for, by a flag or a manifest, but something it needs cannot be read: it does not pass) or
`skipped` (nothing asked for it: listed with what would turn it on). A gate that compares against a limit names
the limit, where the limit came from, what is needed and the margin. They read the `Pool` a backend gives
(backends/base.py), never a backend's own detail. Pure; the CLI sets the exit code (1 when any gate is `fail`
or `unknown`)."""

from __future__ import annotations

# The process overhead, the busiest node's workers and vLLM's /dev/shm preflight live with the Pool (backends/base.py):
# the report's verdict reads them too, and the report comes before tools.
from ..backends.base import OVERHEAD_BASIS, OVERHEAD_PER_WORKER, Pool, shm_refusal, workers_on_node  # noqa: F401
from ..report.optional import Check
from ..vocab.limits import Limit  # noqa: F401 - the gates' limits, named here too
from ..vocab.errors import known
from ..vocab.records import record, replace
from ..vocab.units import format_bytes

GATES = ("startup", "out_of_bounds", "zero_cpu_blocks", "cpu_smaller_than_gpu", "host_memory", "shm", "min_cpu_tokens")


@record
class Gates:
    """What the gates compare against. A limit of None: not asked for."""

    host_memory: Limit | None = None
    # the LMCache MP server's container (or host): --server-memory, a sidecar's limit
    server_memory: Limit | None = None
    shm: Limit | None = None
    min_cpu_tokens: int | None = None
    overhead: int | None = None  # --host-overhead, bytes per node; None: the estimate
    unreadable: tuple = ()  # inputs the pool depends on that could not be read (an envFrom elsewhere in the cluster)
    weights_per_worker: int = 0  # --cpu-offload-gb: the weights each GPU worker pins in host memory, bytes


def unreadable_env(pool: Pool, unknown: dict, unread: list) -> tuple[str, ...]:
    """The manifest's variables the pool depends on (Pool.env_dependent) that kvcalc cannot read, and envFrom
    sources it cannot read (any of them could set one)."""
    deps = pool.env_dependent
    if not deps:
        return ()
    out = [f"{name} ({why})" for name, why in unknown.items() if name.startswith(deps)]
    out += [f"{src}: it may set {' / '.join(d + ('*' if d.endswith('_') else '') for d in deps)}" for src in unread]
    return tuple(out)


def refused(version: str, reason: str, engine: str = "vLLM") -> list[Check]:
    """The checks when the selected release refuses the layout before any number exists: startup fails and every
    other gate is reported as not evaluated."""
    prefix = f"{engine} {version} refuses to start: "
    if engine != "vLLM" and reason.startswith(prefix):  # SGLang's refusals already name the release
        reason = reason[len(prefix):]
    out = [_check("startup", "fail", f"{prefix}{reason}")]
    out += [_check(name, "unknown", f"not evaluated: {engine} does not start, so there is nothing to measure")
            for name in GATES[1:]]
    return out


def evaluate(pool: Pool, gpu_tokens: int | None, version: str, gates: Gates, *, engines_per_node: int = 1,
             workers_per_node: int = 1, shm_checked: bool = False, shm_message_named: bool = False,
             engine: str = "vLLM") -> list[Check]:
    """Every gate. `gpu_tokens`: the GPU KV cache size in tokens (None when unknown); `shm_checked`: the release
    refuses to start when /dev/shm is short (0.28+); `shm_message_named`: its message names the allocation (0.31+);
    `engine`: how the startup gate names the engine (vLLM, SGLang)."""
    if pool.not_modelled is not None:
        # The pool lives outside the engine and its settings were not given: nothing can pass, nothing failed.
        nm = pool.not_modelled
        unknown = f"not evaluated: vLLM hands offloading to {nm.connector}, whose pool lives in {nm.home}"
        return [_check(name, "unknown", unknown) for name in GATES]
    if pool.startup_error:
        return refused(version, pool.startup_error)
    shm = gates.shm
    startup = _check("startup", "pass", f"{engine} {version} starts {pool.connector} with this layout")
    if shm is not None and shm.value is not None and shm_checked and pool.shm_bytes_per_engine:
        why = shm_refusal(pool.shm_bytes_per_engine, engines_per_node, shm.value, version, shm_message_named)
        if why:
            startup = _check("startup", "fail", f"vLLM {version} refuses to start: {why}")
    elif shm is not None and shm.value is None and shm_checked and pool.shm_bytes_per_engine:
        startup = _check("startup", "unknown", f"vLLM {version} checks /dev/shm at start-up and its size is unknown: "
                                               f"{shm.source}")
    checks = [startup, _out_of_bounds(pool), _zero(pool), _cpu_vs_gpu(gpu_tokens, pool.tokens),
              _host_memory(pool, gates, workers_per_node, engines_per_node), _shm_gate(pool, shm, checked=shm_checked),
              _min_tokens(pool, gates.min_cpu_tokens)]
    if gates.unreadable:
        # The pool's own settings are partly unknown: no figure of it can pass a gate (LMCache's 5 GiB default in
        # place of a ConfigMap's value would pass min_cpu_tokens as readily as host_memory).
        why = "not evaluated: the pool's settings depend on what kvcalc cannot read: " + "; ".join(gates.unreadable)
        checks = [c if c.name == "startup" or c.status == "skipped" else _check(c.name, "unknown", why)
                  for c in checks]
    return checks


def _check(name: str, status: str, reason: str, **numbers) -> Check:
    # passed is true only for a gate that passed: a CI reading it alone is never told a skipped or unknown gate
    # passed (issue 35); `status` says which.
    return Check(name=name, passed=status == "pass", status=status, reason=reason, **numbers)


def _measured(name: str, need: int, limit: Limit, what: str) -> Check:
    value = known(limit.value, "a gate's limit")  # its caller turned an unknown limit into an unknown status
    margin = value - need
    ok = margin >= 0
    return _check(name, "pass" if ok else "fail",
                  f"{what}; {limit.source}: {value:,} B ({format_bytes(value)}); "
                  + (f"margin {margin:,} B ({format_bytes(margin)})" if ok else
                     f"short by {-margin:,} B ({format_bytes(-margin)})"),
                  limit=value, limit_from=limit.source, need=need, margin=margin)


def _out_of_bounds(pool: Pool) -> Check:
    if not pool.splits_scheduler:
        return _check("out_of_bounds", "pass", "one count: the scheduler hands out what the workers allocated")
    ids = pool.out_of_bounds
    if ids is None:
        return _check("out_of_bounds", "pass", "every worker allocated at least the scheduler's CPU count")
    return _check("out_of_bounds", "fail", f"the scheduler can hand out CPU {pool.unit} {ids.first:,}..{ids.last:,} "
                                           f"that pipeline stage {ids.pp_rank}'s workers never allocated")


def _zero(pool: Pool) -> Check:
    if pool.empty:
        return _check("zero_cpu_blocks", "fail", f"{pool.nothing}: offloading is configured but stores nothing")
    return _check("zero_cpu_blocks", "pass", pool.stored)


def _cpu_vs_gpu(gpu_tokens: int | None, cpu: int | None) -> Check:
    """cpu_smaller_than_gpu: the CPU tier's tokens against the GPU KV cache size (both vLLM's group-aware counts)."""
    if gpu_tokens is None or cpu is None:
        return _check("cpu_smaller_than_gpu", "skipped", "GPU KV cache size unknown: give --kv-cache-memory (or "
                                                         "--kv-cache-memory-from-log) to compare the tiers")
    ok = cpu >= gpu_tokens
    return _check("cpu_smaller_than_gpu", "pass" if ok else "fail",
                  f"CPU tier holds {cpu:,} tokens, GPU tier {gpu_tokens:,}"
                  + ("" if ok else ": the CPU tier cannot hold what the GPU evicts"),
                  limit=cpu, limit_from="the CPU tier's tokens", need=gpu_tokens, margin=cpu - gpu_tokens)


def _host_memory(pool: Pool, gates: Gates, workers_per_node: int, engines_per_node: int) -> Check:
    """The node's (or vLLM pod's) memory, and the memory of a standalone server's own container where the pool is
    that server's (its pinned bytes are charged to its own cgroup, not vLLM's pod)."""
    limit, server = gates.host_memory, _server_memory(pool, gates.server_memory)
    if limit is None:
        return server or _check("host_memory", "skipped", "no limit given: --host-memory SIZE (a node), or --k8s with "
                                                          "a memory limit")
    if limit.value is None:
        return _check("host_memory", "unknown", f"not evaluated: {limit.source}")
    weights = gates.weights_per_worker * workers_per_node
    if pool.resident_bytes_per_node is None and not weights:
        return _check("host_memory", "skipped", "no CPU pool: nothing resident to gate")
    if gates.overhead is None:
        overhead, basis = OVERHEAD_PER_WORKER * workers_per_node, f"{workers_per_node} worker(s), {OVERHEAD_BASIS}"
    else:
        overhead, basis = gates.overhead, "--host-overhead"
    resident = pool.resident_bytes_per_node or 0
    elsewhere = limit.pod and pool.server_resident_bytes is not None  # a vLLM pod's limit: the server pins apart
    pooled = 0 if elsewhere else resident
    where = "the pod" if limit.pod else "the node"
    if pool.resident_bytes_per_node is None:
        kept = "keep no CPU KV pool"
    elif elsewhere:
        kept = (f"keep {pooled:,} B ({format_bytes(pooled)}) (the LMCache server's L1 is its own container's"
                f"{'' if server else ': not gated (--server-memory)'})")
    else:
        kept = f"keep {pooled:,} B ({format_bytes(pooled)}) {pool.kept}"
    what = (f"{engines_per_node} engine(s) in {where} {kept}, plus {overhead:,} B "
            f"({format_bytes(overhead)}) of process memory ({basis})")
    if weights:
        # vLLM's UVA offloader pins up to --cpu-offload-gb of each rank's parameters in host memory (0.33.0
        # model_executor/offloader/uva.py:84-116, cpu_offload_max_bytes = int(X * 1024**3), offloader/base.py:174).
        what += (f", plus {weights:,} B ({format_bytes(weights)}) of weights --cpu-offload-gb pins "
                 f"({workers_per_node} worker(s) x {format_bytes(gates.weights_per_worker)})")
    node = _measured("host_memory", pooled + overhead + weights, limit, what)
    if server is None or node.status == "fail":
        return node
    return server if server.status != "pass" else replace(node, reason=f"{node.reason}; {server.reason}")


def _server_memory(pool: Pool, limit: Limit | None) -> Check | None:
    """A standalone server's pinned pool against its own container's (or host's) memory limit."""
    need = pool.server_resident_bytes
    if limit is None or need is None:
        return None
    if limit.value is None:
        return _check("host_memory", "unknown", f"not evaluated: {limit.source}")
    return _measured("host_memory", need, limit, f"the standalone server's pool: {need:,} B ({format_bytes(need)}) "
                                                 f"{pool.kept}")


def _shm_gate(pool: Pool, shm: Limit | None, *, checked: bool) -> Check:
    need = pool.shm_bytes_per_node
    if not need:
        return _check("shm", "pass", f"no /dev/shm region: {pool.shm_none}")
    if shm is None:
        return _check("shm", "skipped", f"the node's /dev/shm regions take {need:,} B ({format_bytes(need)}); no size "
                                        "given: --shm-size SIZE, or --k8s")
    if shm.value is None:
        return _check("shm", "unknown", f"not evaluated: the /dev/shm regions take {need:,} B ({format_bytes(need)}); "
                                        f"{shm.source}")
    what = f"the node's /dev/shm regions take {need:,} B ({format_bytes(need)})"
    if not checked:
        what += " (this release does not check at start-up: workers die with SIGBUS when /dev/shm fills)"
    return _measured("shm", need, shm, what)


def _min_tokens(pool: Pool, wanted: int | None) -> Check:
    if wanted is None:
        return _check("min_cpu_tokens", "skipped", "no target given: --min-cpu-tokens N")
    tokens = pool.tokens or 0
    ok = tokens >= wanted
    return _check("min_cpu_tokens", "pass" if ok else "fail",
                  f"{tokens:,} CPU tokens {pool.tokens_holder}; at least {wanted:,} wanted",
                  limit=wanted, limit_from="--min-cpu-tokens", need=wanted, margin=tokens - wanted)
