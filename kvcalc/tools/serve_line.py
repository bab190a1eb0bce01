"""vllm-args' whole command line (issue 35): the serve line as the operator gave it (a --serve line, `-- vllm serve
...`, a manifest's container command), every option kvcalc does not spell kept as written (--trust-remote-code,
--enable-expert-parallel, the drafter's --speculative-config, --port ...), the ones it spells put in place of the
given ones, and what it added, changed or dropped listed beside the line. From a layout file or a config.json there
is no line to keep: the model is the config's directory (a model directory's config.json) or `<model>`. Pure."""

from __future__ import annotations

import os
import shlex

from ..inputs.serve.vllm import assignments, option_value
from ..inputs.serve.vllm_args import serve_words, spans
from ..vocab.layout import Layout

# The options that spell the CPU budget and its connector: a line spelt with one of them drops the given others
# (vLLM's --kv-offloading-size wins over a --kv-transfer-config, and kvcalc's second line spells the config).
BUDGET = ("--kv-offloading-size", "--kv-transfer-config", "--kv-offloading-backend")
SPELLINGS = (("args_kv_offloading_size", "kv_offloading_size"), ("args_kv_transfer_config", "kv_transfer_config"))


def _model_word(source: str, notes: list[str]) -> str:
    """A layout's model, spelt for `vllm serve`: a model directory's config.json names its directory; any other
    file names no model (examples/configs/ holds unrelated configs side by side): `<model>`, and a note."""
    if os.path.basename(source) == "config.json":
        return shlex.quote(os.path.dirname(source) or ".")
    if source.endswith(".json"):
        notes.append(f"replace <model> with the model to serve ({source} is not a model directory's config.json)")
    return "<model>"


def _env_words(env: dict[str, str]) -> str:
    return "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())


def _merge(release: str, given: list[tuple[str | None, list[str]]], mine: list[tuple[str | None, list[str]]]):
    """The given spans with kvcalc's in their place (a value kvcalc spells alike, `128K` for 131072, is kept as
    written), kvcalc's others appended; and what was added, changed and dropped."""
    ours = {name: toks for name, toks in mine}
    last = {name: toks for name, toks in given}  # argparse: the last of a repeated option wins
    budget = any(name in BUDGET for name in ours)
    out: list[str] = []
    added, changed, dropped, seen = [], [], [], set()
    for name, toks in given:
        if name in ours:
            if name in seen:
                continue
            seen.add(name)
            was, new = last[name], ours[name]
            value = option_value(release, was)
            if value is not None and value == option_value(release, new):
                out += was
            else:
                out += new
                changed.append({"flag": " ".join(new), "was": " ".join(was)})
        elif budget and name in BUDGET:
            dropped.append(" ".join(toks))
        else:
            out += toks
    for name, toks in mine:
        if name not in seen:
            out += toks
            added.append(" ".join(toks))
    return out, added, changed, dropped


def commands(doc: dict, layout: Layout) -> list[dict]:
    """One entry per spelling of the budget: the whole command line and, for a given line, what kvcalc changed."""
    release, notes = doc["vllm_version"], doc["notes"]
    out = []
    if layout.serve_argv is None:
        model = _model_word(layout.source, notes)
        for key, spelling in SPELLINGS:
            if doc[key]:
                env = doc.get("env_kv_offloading_size") or {} if spelling == "kv_offloading_size" else {}
                out.append({"spelling": spelling, "command": _env_words(env) + f"vllm serve {model} "
                            + " ".join(shlex.quote(a) for a in doc[key]), "line_given": False,
                            "added": None, "changed": None, "dropped": None})
        return out
    env, words = assignments(list(layout.serve_argv))
    args = serve_words(words)
    prefix = words[:len(words) - len(args)]
    given = spans(release, args)
    if any(name == "--speculative-config" for name, _ in given):  # the line keeps its drafter
        notes[:] = [n for n in notes if not n.startswith("add --speculative-config")]
    for key, spelling in SPELLINGS:
        if not doc[key]:
            continue
        line_env = {**env, **(doc.get("env_kv_offloading_size") or {})} if spelling == "kv_offloading_size" else env
        tokens, added, changed, dropped = _merge(release, given, spans(release, doc[key]))
        out.append({"spelling": spelling, "command": _env_words(line_env) + shlex.join(prefix + tokens),
                    "line_given": True, "added": added, "changed": changed, "dropped": dropped})
    return out

