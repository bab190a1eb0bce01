"""The engine door: what every serving engine gives the rest of kvcalc, and the registry that finds it.

An engine is one package, `engines/<name>/` (vLLM, SGLang), whose `ENGINE` record says what kvcalc needs to know of
it by name: its title, which layout fields name its release, the host-pool backend that plans its host side, the
operations it offers. Its later-stage parts live beside it as hook modules, found by name: `plan.py` (the pipeline
stage: its Plan type, `plan()`, and the operations only it offers), `report.py` (the report stage: its report,
built from the Plan; the renderer hooks `render`, `render_summary`) and `tools.py` (the tools stage: `size_gpu`,
`sweep_row`, `sweep_plan`). Nothing outside an engine's package compares an engine's name: the pipeline, report,
tools and CLI ask the engine through `engine(name)` / `hook(name, part)`. A third engine is one package here plus its
release table in vocab/releases/ and its name in vocab.layout.ENGINES.

Stage order holds inside an engine package too: its stage modules import nothing of its hook modules, `plan.py`
nothing of `report.py` or `tools.py`, `report.py` nothing of `tools.py` (tests/test_architecture.py).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Callable

from ..vocab.records import record

if TYPE_CHECKING:
    from ..vocab.layout import Layout

# An engine's hook modules and the stage each belongs to (the architecture test reads this table).
HOOKS = {"plan": "pipeline", "report": "report", "table": "report", "tools": "tools"}


@record
class Engine:
    """One serving engine, as the rest of kvcalc sees it."""

    name: str  # its key (vocab.layout.ENGINES, the layout's `engine`)
    title: str  # how a sentence names it: "vLLM", "SGLang"
    # Operations only some engines offer (a vLLM log, vllm-args, --compare-versions, ...): the ones this one does.
    operations: frozenset[str]
    release_key: str  # the layout key path of its release ("vllm.version", "sglang.version")
    release_flag: str  # the flag that names it ("--vllm-version")
    # layout -> (the release planned, where it came from: a flag, "layout file", an image tag; "default" when
    # nothing named one and kvcalc planned its newest)
    releases: Callable[[Layout], tuple[str, str]]
    offers_text: str = ""  # what to use instead when an operation is refused (see require)
    # --check gates a host budget this engine's layout must give (vLLM's CPU offload budget): the refusal's text
    # when none is given, or None when the engine's pool needs none (SGLang's HiCache may be off)
    budget_refusal: str | None = None
    # `kvcalc init`: (the layout section of its host pool, the commented hint written when the input has none)
    init_hint: tuple[str, str] | None = None

    def release(self, layout: Layout) -> str:
        return self.releases(layout)[0]

    def release_from(self, layout: Layout) -> str:
        return self.releases(layout)[1]

    def checkable(self, layout: Layout) -> None:
        """--check gates one named release, and a budget where the engine needs one: refuse the layout otherwise."""
        from ..vocab.errors import KvcalcError

        version, source = self.releases(layout)
        if source == "default":
            raise KvcalcError(f"{layout.source}: --check gates one {self.title} release and none is named (no "
                              f"{self.release_flag}, {self.release_key} or image tag): give {self.release_flag} "
                              f"(kvcalc would assume {version})")
        if self.budget_refusal is not None and not layout.offload.budget_given:
            raise KvcalcError(f"{layout.source}: {self.budget_refusal}")

    def require(self, layout: Layout, operation: str, what: str) -> None:
        """Refuse `what` (an operation of another engine's) on a layout this engine plans, naming what to use."""
        if operation not in self.operations:
            from ..vocab.errors import UnsupportedError

            raise UnsupportedError(f"{layout.source}: {what} reads vLLM's plan, and this layout is planned by "
                                   f"{self.title}'s rules (engine {self.name}): {self.offers_text}")


# Operations a serving engine may offer (Engine.operations names them).
OPERATIONS = ("compare-versions", "compare-backends", "check-log", "check-metrics", "kv-cache-memory-from-log",
              "verify", "vllm-args")

_LOADED: dict[str, Engine] = {}
_HOOKS: dict[tuple[str, str], Any] = {}


def engine(name: str) -> Engine:
    """The engine of that name (vocab.layout.ENGINES), imported on first use: a vLLM plan never loads SGLang's
    modules (start-up time is a target)."""
    found = _LOADED.get(name)
    if found is None:
        found = _LOADED[name] = import_module(f"{__package__}.{name}").ENGINE
    return found


def hook(name: str, part: str) -> Any:
    """An engine's hook module (`plan`, `report`, `table`, `tools`: HOOKS), imported on first use."""
    found = _HOOKS.get((name, part))
    if found is None:
        if part not in HOOKS:
            raise KeyError(part)
        found = _HOOKS[(name, part)] = import_module(f"{__package__}.{name}.{part}")
    return found
