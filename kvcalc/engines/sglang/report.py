"""An SGLang plan -> its report (JSON: `engine: sglang` and the `sglang` section beside the model and parallelism),
and --compare-engines' entries for either engine's report. Imported only for SGLang plans and --compare-engines
(start-up time is a target). Pure."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ... import __version__
from ...backends.hicache import HiCacheSection
from . import CellSize, SglangGpu
from ...vocab.records import field, record
from ...report.engines import EngineEntry
from ...report.sections import SCHEMA_VERSION, ModelField, ModelSection, ParallelSection
from ...vocab.releases.sglang import sglang_of

if TYPE_CHECKING:
    from ...report.optional import Check


@record
class SglangSection:
    """SGLang's pools: the GPU token pool and HiCache's host pool."""

    version: str = field("the SGLang release")
    version_from: str = field("where the release came from: --sglang-version, 'layout file', an image tag, default")
    mem_fraction_static: float | None = field("the fraction used (null: a budget given in bytes)")
    mem_fraction_static_default: bool = field("true: SGLang's default for the GPU, not a flag")
    min_mem_fraction_static: float | None = field("1 - available / free before the load: SGLang refuses below it")
    cell_size_bytes: list[CellSize] = field("bytes per token, per PP stage and pool")
    max_total_num_tokens: int = field("the GPU token pool")
    page_size: int = field("tokens per page")
    kind: str = field("mha | mla | hybrid_swa: how SGLang sizes this model")
    memory: SglangGpu = field("every term of the budget, with its basis and source")
    hicache: HiCacheSection = field("the host (L2) pool per rank")


@record
class SglangReport:
    """kvcalc plan --format json with engine sglang, schema version 1."""

    schema_version: int = field("1")
    kvcalc_version: str = field("kvcalc release")
    source: str = field("the input file")
    engine: str = field("sglang")
    model: ModelSection = field("the model")
    parallel: ParallelSection = field("parallelism (world size: TP x PP)")
    sglang: SglangSection = field("SGLang's pools")
    notes: list[str] = field("informational notes (also on stderr)")
    warnings: list[str] = field("things to act on (also on stderr)")
    checks: list[Check] | None = field("with --check: the gates", omit_if_none=True, default=None)
    engines: list[EngineEntry] | None = field("with --compare-engines", omit_if_none=True, default=None)
    error: str | None = field("why SGLang would not start", omit_if_none=True, default=None)
    verdict: str = field(json=False)
    # What the vLLM report's readers ask of any report (the table's comparison, --verify): absent here.
    releases = None
    verify = None


def _model(plan) -> ModelSection:
    lay = plan.layout
    m, prov = lay.model, dict(lay.provenance)
    kinds = Counter(m.layer_types)
    rows: list[tuple[str, int | str | list[int]]] = [("dtype", m.dtype)]
    attn = [i for i, k in enumerate(m.layer_types) if k.attention]
    if attn:
        heads = sorted({m.num_kv_heads[i] for i in attn})
        sizes = sorted({m.head_size[i] for i in attn})
        rows += [("num_kv_heads", heads[0] if len(heads) == 1 else heads),
                 ("head_size", sizes[0] if len(sizes) == 1 else sizes)]
    for key in ("sliding_window", "kv_lora_rank", "qk_rope_head_dim"):
        if getattr(m, key) is not None:
            rows.append((key, getattr(m, key)))
    arch = sglang_of(lay).architecture
    return ModelSection(
        name=m.name, num_layers=m.num_layers, dtype=m.dtype,
        layer_kinds={k.value: n for k, n in sorted(kinds.items())},
        layer_kinds_from=prov.get("model.layer_types", "config" if prov else "layout file")
        + (f" (architecture {arch})" if arch else ""),
        fields=[ModelField(field_=k, value=v, from_=prov.get(f"model.{k}", "layout file")) for k, v in rows],
        draft=None)


def build_report(plan, *, checks: list[Check] | None = None, engines: list[EngineEntry] | None = None,
                 **_ignored) -> SglangReport:
    """The report of an SGLang plan (engines/sglang/plan.SglangPlan); the vLLM-only parts a report can carry
    (releases, backends, --verify, limits) are refused before a plan is built (pipeline.require)."""
    lay, par, gpu, sg = plan.layout, plan.layout.parallel, plan.stage.gpu, plan.layout.sglang
    return SglangReport(
        schema_version=SCHEMA_VERSION, kvcalc_version=__version__, source=lay.source, engine="sglang",
        model=_model(plan),
        parallel=ParallelSection(tensor_parallel_size=par.tensor_parallel_size,
                                 pipeline_parallel_size=par.pipeline_parallel_size,
                                 data_parallel_size=par.data_parallel_size, world_size=par.workers_per_engine),
        sglang=SglangSection(
            version=sg.version, version_from=sg.version_from, mem_fraction_static=gpu.mem_fraction_static,
            mem_fraction_static_default=gpu.mem_fraction_static_default,
            min_mem_fraction_static=gpu.min_mem_fraction_static, cell_size_bytes=list(gpu.cell_size_bytes),
            max_total_num_tokens=gpu.max_total_num_tokens, page_size=gpu.page_size, kind=plan.stage.model.kind,
            memory=gpu, hicache=plan.pool.section),
        notes=list(plan.notes), warnings=list(plan.warnings), checks=checks, engines=engines,
        verdict=plan.pool.verdict)


REPORT = SglangReport  # the record `kvcalc schema output` describes for this engine
