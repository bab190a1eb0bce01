"""The steps of `kvcalc plan` between reading the input and writing the report: the plan (or the start-up refusal
under --check), the gates, the release and backend comparisons, --verify."""

from __future__ import annotations

import typer

from ..vocab.errors import KvcalcError, StartupRefusal, UnsupportedError
from .console import name_source, print_json, report_checks

def plan_or_refusal(loaded, check: bool, fmt: str):
    """The plan; or, when the selected release refuses the layout at start-up under --check, the failed startup
    gate (stdout: the refused report as JSON) and exit 1."""
    from ..pipeline import plan as make_plan

    try:
        return make_plan(loaded)
    except StartupRefusal as e:
        if not check:
            name_source(e, loaded.source)
            raise
        from ..report.optional import RefusedReport
        from ..tools.gates import refused

        checks = refused(loaded.vllm_version, e.one_line())
        if fmt == "json":
            print_json(RefusedReport(schema_version=1, vllm_version=loaded.vllm_version, source=loaded.source,
                                      checks=checks))
        report_checks(checks)
        raise typer.Exit(1) from None
    except KvcalcError as e:
        name_source(e, loaded.source)
        raise


def gate(p, loaded, limits: dict):
    """Every gate over the plan (tools/gates), with the limits the flags and the manifest gave."""
    from ..tools.gates import Gates, evaluate, unreadable_env, workers_on_node

    unreadable = unreadable_env(p.pool, limits.pop("env_unknown", {}), limits.pop("env_unread", []))
    return evaluate(p.pool, None if p.logs is None else p.logs.kv_cache_size_tokens, p.behaviour.version,
                    Gates(unreadable=unreadable, **limits), engines_per_node=loaded.parallel.engines_per_node,
                    workers_per_node=workers_on_node(loaded.parallel), shm_checked=p.behaviour.shm_free_space_check,
                    shm_message_named=p.behaviour.shm_message_named)


def releases_of(loaded, compare_versions: str | None):
    """--compare-versions: the same layout on each release (a Plan or that release's refusal)."""
    if compare_versions is None:
        return None
    from ..pipeline import compare

    versions = [v.strip() for v in compare_versions.split(",") if v.strip()]
    if not versions:
        raise KvcalcError("--compare-versions: expected releases such as 0.19.1,0.20.0,0.33.0")
    try:
        return compare(loaded, versions)
    except UnsupportedError as e:
        raise UnsupportedError(f"--compare-versions: {e.one_line()}") from None


def verified(p):
    from ..tools.verify import verify_plan

    return verify_plan(p)


def backends_of(loaded):
    """--compare-backends: every backend's pool for this layout's budget."""
    from ..pipeline import compare_backends as every_backend
    from ..report.report import backend_entries

    if not loaded.offload.budget_given:
        raise KvcalcError(f"{loaded.source}: --compare-backends needs a budget: give --cpu-bytes or "
                          "--kv-offloading-size (or an LMCache config)")
    return backend_entries(every_backend(loaded))
