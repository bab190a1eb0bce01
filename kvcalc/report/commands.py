"""Rich renderables for the commands other than `plan`: versions, boundaries, a sweep's table, the check tables,
the text of vllm-args. They never print; the CLI owns the console."""

from __future__ import annotations

import os

from rich import box
from rich.table import Table

from .fit import FitTable

from ..vocab.releases.vllm import RELEASE_TUPLES, FAMILIES, RELEASES, STEPS


def _table(title: str, columns: tuple[str, ...], plain: bool | None = None) -> Table:
    """A left-titled table that never cuts a number (report/fit.py: one block per row when the width is too
    small); `plain` None: no box at all, else the heavy head unless plain."""
    t = FitTable(title=title, title_justify="left", box=None if plain is None or plain else box.HEAVY_HEAD)
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def render_boundaries(rows: list[dict], plain: bool) -> Table:
    """`kvcalc versions --boundaries`: every behaviour flag's steps."""
    t = _table("Behaviour boundaries (each verified in the releases' wheels)",
               ("flag", "value", "first", "last", "evidence"), plain)
    for r in rows:
        t.add_row(r["flag"], str(r["value"]), r["first"] or "", r["last"] or "", r["evidence"])
    return t


def render_families(rows: list[dict], default_version: str, plain: bool) -> Table:
    """`kvcalc versions`: the families, what changed, which releases were read."""
    t = _table(f"vLLM families (default --vllm-version {default_version})",
               ("family", "releases", "CPU count", "what to do", "read"), plain)
    for r in rows:
        t.add_row(r["family"], r["versions"], r["formula"], r["action"], ", ".join(r["releases_read"]))
    return t


SWEEP_TABLE_ROWS = 1000  # a table is laid out whole (column widths): past this, csv and jsonl stream


def render_models(doc: dict, plain: bool) -> Table:
    """`kvcalc models`: every architecture of one release's registry, mapped or not and why."""
    t = _table(f"Architectures in vLLM {doc['vllm_version']}'s registry", ("architecture", "registry", "status",
               "KV layers / reason"), plain)
    for r in doc["architectures"]:
        t.add_row(r["architecture"], r["registry"], r["status"], r["kv_layers"] or r["reason"] or "")
    return t


def models_counts_line(doc: dict) -> str:
    """The per-registry counts under `kvcalc models`' table."""
    parts = [f"{reg}: " + ", ".join(f"{n} {status}" for status, n in c.items() if status != "total" and n) +
             f", of {c['total']}" for reg, c in doc["counts"].items()]
    return "; ".join(parts) + "\n"


def render_sweep(rows, columns: list[str], source: str, total: int) -> Table:
    """`kvcalc sweep --format table`: the axes that vary and the result columns a person reads; the first
    SWEEP_TABLE_ROWS points only (the rest are not planned), and the caption says so."""
    shown = min(total, SWEEP_TABLE_ROWS)
    # The CSV / JSON names with spaces for underscores: a heading wraps between its words (cpu blocks / worst
    # worker) where `cpu_blocks_worst_worker` would widen its column to 23 characters.
    t = _table(f"sweep of {source}: {total:,} point(s)" + (f", the first {shown:,} shown" if shown < total else ""),
               tuple(c.replace("_", " ") for c in columns))
    for i, row in enumerate(rows):
        if i == shown:
            break
        t.add_row(*("" if row[c] is None else (f"{row[c]:,}" if isinstance(row[c], int) and not
                                                isinstance(row[c], bool) else str(row[c])) for c in columns))
    if shown < total:
        t.caption = (f"{total - shown:,} more point(s) not planned: a table stops at {SWEEP_TABLE_ROWS:,} rows; "
                     "--format csv or jsonl streams every point")
    return t


def render_metrics_check(result: dict, metrics: str, layout_source: str) -> Table:
    """`kvcalc check --metrics`: each scraped label against the prediction."""
    # File names, not paths, in the title (the JSON has the paths): a long path folds mid-word at any width.
    t = _table(f"{os.path.basename(metrics)} against {os.path.basename(layout_source)} (vLLM {result['vllm_version']})",
               ("series", "engine", "label", "predicted", "scraped", "match"))
    for r in result["rows"]:
        match = (("yes" if r["match"] else "NO")
                 + (" (taken from the scrape: not a check)" if r.get("from_scrape") else
                    f" (predicted: within ±{r['tolerance']:,})" if r.get("tolerance") else ""))
        t.add_row(r["series"], r["engine"], r["label"], r["expected"], str(r["found"]), match)
    return t


def render_log_check(result: dict, log: str, layout_source: str) -> Table:
    """`kvcalc check --log`: each logged quantity against the prediction."""
    t = _table(f"{os.path.basename(log)} against {os.path.basename(layout_source)} (vLLM {result['vllm_version']}; "
               f"memory: {result['memory']})",
               ("quantity", "predicted", "logged", "match"))
    for r in result["rows"]:
        t.add_row(r["quantity"], r["predicted"], r["logged"], {True: "yes", False: "NO"}[r["match"]])
    stages = result.get("stages") or []
    least = min((s["num_blocks"][0] for s in stages), default=None)
    for s in stages if len(stages) > 1 else ():  # PP > 1: each stage's own count; the engine keeps the smallest
        lo, hi = s["num_blocks"]
        t.add_row(f"PP stage {s['pp_rank']} blocks (its budget)", f"{lo:,}" if lo == hi else f"{lo:,}..{hi:,}",
                  s["memory"], "the min" if lo == least else "")
    return t


def pod_block(pod: dict) -> str:
    """The container's resources and the /dev/shm volume a pod needs for one engine's CPU tier (YAML to paste);
    the memory limit still needs the process's own memory on top (weights staging, CUDA context, Python)."""
    lines = ["# the CPU tier's share; add the process's own memory (a few GiB) to the limit",
             "resources:", "  limits:", f"    memory: {pod['memory_limit']}"]
    if pod["shm_size_limit"]:
        lines += ["volumeMounts:", "  - {name: dshm, mountPath: /dev/shm}",
                  "volumes:", f"  - {{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {pod['shm_size_limit']}}}}}"]
    return "\n".join(lines) + "\n"


def vllm_args_text(doc: dict, source: str, k8s: bool) -> str:
    """`kvcalc vllm-args`: the whole command lines to paste (tools/serve_line.py; under a given line, what kvcalc
    added, changed or dropped), then any connector config and pod block."""
    out = []
    for entry in doc["commands"]:
        out.append(entry["command"] + "\n")
        mark = command_marks(entry)
        if mark:
            out.append(mark + "\n")
    if doc.get("server_command"):
        out.append("# the LMCache server (one per node, started before vLLM):\n" + doc["server_command"] + "\n")
    if doc["lmcache_yaml"]:
        out.append("# LMCache config (the file LMCACHE_CONFIG_FILE names):\n" + doc["lmcache_yaml"])
        out.append("# or as environment variables:\n" + "\n".join(doc["lmcache_env"]) + "\n")
    if k8s and doc["pod"]:
        out.append(pod_block(doc["pod"]))
    return "".join(out)


def _short_flag(text: str) -> str:
    """An option as the comment names it: whole when short, else its name (the line above shows the value)."""
    return text if len(text) <= 40 else text.split("=", 1)[0].split(" ", 1)[0]


def command_marks(entry: dict) -> str | None:
    """The comment line under a given line's command: what kvcalc added, changed and dropped."""
    if not entry["line_given"]:
        return None
    parts = []
    if entry["added"]:
        parts.append("added " + ", ".join(map(_short_flag, entry["added"])))
    if entry["changed"]:
        parts.append("changed " + ", ".join(f"{_short_flag(c['flag'])} (was {_short_flag(c['was'])})"
                                            for c in entry["changed"]))
    if entry["dropped"]:
        parts.append("dropped " + ", ".join(map(_short_flag, entry["dropped"])) + " (kvcalc's flag spells the budget)")
    return "# kvcalc: " + ("; ".join(parts) + "; every other flag as given" if parts else
                           "nothing changed: the line as given")


# ---------------------------------------------------------------------------------------------------------
# The release table, as `kvcalc versions` and the README show it.

def boundaries() -> list[dict]:
    """Every behaviour flag's steps: value, first and last release, evidence (`kvcalc versions --boundaries`)."""
    rows: list[dict] = []
    for fam in FAMILIES.values():
        rs = fam.releases if fam.rule is not None else ()
        rows.append({"flag": "family", "value": fam.id, "first": rs[0] if rs else None,
                     "last": rs[-1] if rs else "0.13.0", "evidence": fam.evidence})
    from ..vocab.releases.simple import FIRST, SIMPLE_STEPS  # SimpleCPUOffloadConnector's, as simple.<behaviour>

    # The connector's own behaviours start with the connector (0.19.0); only its availability has a row before.
    steps_of = [(name, steps, (0, 0, 0)) for name, steps in STEPS.items()] + \
        [(f"simple.{name}", steps, (0, 0, 0) if name == "available" else FIRST) for name, steps in SIMPLE_STEPS.items()]
    for name, steps, floor in steps_of:
        for i, step in enumerate(steps):
            first = next((r for r, t in zip(RELEASES, RELEASE_TUPLES) if t >= max(step.first, floor)), None)
            nxt = steps[i + 1].first if i + 1 < len(steps) else None
            last = [r for r, t in zip(RELEASES, RELEASE_TUPLES) if t >= step.first and (nxt is None or t < nxt)]
            rows.append({"flag": name, "value": step.value if not isinstance(step.value, tuple) else list(step.value),
                         "first": first, "last": last[-1] if last else None, "evidence": step.evidence})
    return rows


def families_markdown() -> str:
    """The README's families table, from the records (a test checks the README against it)."""
    rows = ["| family | releases | CPU count | what to do |", "|---|---|---|---|"]
    for f in FAMILIES.values():
        versions = f.versions.replace(" - ", " – ").replace("<= ", "≤ ")
        rows.append(f"| `{f.id}` | {versions} | {f.readme_formula} | {f.readme_action} |")
    return "\n".join(rows) + "\n"


def releases_table() -> list[dict]:
    """For `kvcalc versions`: each family, its releases, what changed, and which releases were read."""
    rows = []
    for fam in FAMILIES.values():
        read = list(fam.releases) if fam.rule is not None else ["0.12.0", "0.13.0"]
        rows.append({"family": fam.id, "versions": fam.versions, "formula": fam.summary, "action": fam.action,
                     "releases_read": read})
    return rows


def gpu_size_text(doc: dict) -> str:
    """`kvcalc size --gpu-tokens / --concurrency`: the blocks, the budget flag, the utilization, the parallelism."""
    tokens, conc = doc["gpu_tokens"], doc["concurrency"]
    target = f"{tokens:,} GPU KV cache tokens" if tokens is not None else \
        f"{conc:g} concurrent requests of {doc['max_model_len']:,} tokens"
    lines = [f"To hold {target} on vLLM {doc['vllm_version']}: {doc['num_gpu_blocks']:,} GPU blocks "
             f"({doc['kv_cache_size_tokens']:,} tokens, {doc['max_concurrency']:.2f}x)",
             f"--kv-cache-memory-bytes {doc['kv_cache_memory_bytes']} (per GPU)"]
    if doc["gpu_memory_utilization"] is not None:
        lines.append(f"--gpu-memory-utilization {doc['gpu_memory_utilization']} on this GPU "
                     f"({doc['utilization_note']})")
    elif doc["utilization_note"]:
        lines.append(f"no utilization reaches it on this GPU: {doc['utilization_note']}")
    par = doc["smallest_parallel"]
    if par is not None:
        lines.append(f"smallest TP x PP at the layout's utilization: TP {par['tensor_parallel_size']} x PP "
                     f"{par['pipeline_parallel_size']} ({par['kv_cache_size_tokens']:,} tokens)")
    return "\n".join(lines) + "\n"


def versions_output(fmt: str, show_boundaries: bool, plain: bool) -> tuple[int, list]:
    """`kvcalc versions`: (console width, [text or table, ...]) for the format asked for."""
    import json

    from ..vocab.releases.lmcache import DEFAULT_LMCACHE_VERSION, LMCACHE_RELEASES
    from ..vocab.releases.vllm import DEFAULT_VERSION

    if show_boundaries:
        rows = boundaries()
        if fmt == "json":
            return 160, [json.dumps({"boundaries": rows}, indent=2) + "\n"]
        return 160, [render_boundaries(rows, plain)]
    if fmt == "markdown":
        return 120, [families_markdown()]
    rows = releases_table()
    if fmt == "json":
        return 120, [json.dumps({"default_version": DEFAULT_VERSION, "families": rows,
                                 "lmcache": {"default_version": DEFAULT_LMCACHE_VERSION,
                                             "releases_read": list(LMCACHE_RELEASES)}}, indent=2) + "\n"]
    return 120, [render_families(rows, DEFAULT_VERSION, plain),
                 f"LMCache releases read (--lmcache-version, default {DEFAULT_LMCACHE_VERSION}): "
                 f"{', '.join(LMCACHE_RELEASES)}\n"]
