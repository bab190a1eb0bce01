"""`kvcalc models`: every architecture one vLLM release's registry lists, mapped or not and why, and the README's
supported-architectures table, both from the architecture table's records (arch_table, arch_wrappers) and the
registry listings (arch_releases)."""

from __future__ import annotations

from ...vocab.releases.vllm import behaviour_for
from .index import arch_index
from ...vocab.releases.archs import CATEGORIES, previously_supported, registry_of
from .table import Arch

MAPPED, NOT_MODELLED, NO_KV, REFUSED, NOT_READ = "mapped", "not modelled", "no KV cache", "refused by vLLM", "not read"
STATUSES = (MAPPED, NOT_MODELLED, NO_KV, REFUSED, NOT_READ)
_POOLING = ("a pooling model (vLLM's embedding / classification / reward registries): it runs no generation, "
            "and kvcalc plans a generating server's KV cache")


_SPECIAL = {
    "mla": "`kv_lora_rank` + `qk_rope_head_dim` (one latent head on every rank)",
    "mla_indexer": "MLA, and an indexer cache of `index_head_dim` in every layer",
    "longcat": "`num_layers` (two MLA attentions each), `kv_lora_rank` + `qk_rope_head_dim`",
    "deepseek_v4": "`compress_ratios` (or `layer_types` + `compress_rates`), `head_dim`, `sliding_window`, "
                   "`index_head_dim`",
    "falcon": "`num_kv_heads` / `multi_query` / `new_decoder_architecture`; head hidden / heads; the model dtype",
    "llama4_text": "`no_rope_layers` / `no_rope_layer_interval`, `attention_chunk_size`",
    "deci": "`block_configs` (`n_heads_in_group`, `no_op`) or `num_key_value_heads_per_layer`",
    "jamba": "`attn_layer_period` / `attn_layer_offset`; `mamba_expand`, `mamba_d_state`, `mamba_d_conv`",
    "mamba1": "`intermediate_size`, `state_size`, `conv_kernel`",
    "mamba2": "`num_heads`, `head_dim`, `n_groups`, `state_size`, `conv_kernel`, `expand`",
    "nemotron_h": "`hybrid_override_pattern` / `layers_block_type`; `mamba_*`, `ssm_state_size`",
    "falcon_h1": "`mamba_d_ssm`, `mamba_n_heads`, `mamba_d_head`, `mamba_d_state`, ...",
    "qwen3_next": "`layer_types` / `full_attention_interval`; `linear_*` (gated delta net)",
    "granite_hybrid": "; Mamba-2: `mamba_n_heads`, `mamba_d_head`, `mamba_expand`, `mamba_d_state`",
    "lfm2": "; short convolution: `conv_dim`, `conv_L_cache`",
    "gdn_hybrid": "; gated delta net: `linear_*`; MTP: `mtp_num_hidden_layers`",
    "gemma3n": "; the last `num_kv_shared_layers` share KV",
    "gemma4": "; full layers `global_head_dim` (`num_global_key_value_heads` with `attention_k_eq_v`); the last "
              "`num_kv_shared_layers` share KV",
}
_HEADS = {"kv": "`num_key_value_heads`", "mha": "one per query head", "1": "one", "aliases": "vLLM's generic keys",
          "chatglm": "`multi_query_group_num`", "step1": "`num_attention_groups` / `num_key_value_heads` / 1"}
_HEAD = {"head_dim": "`head_dim` or hidden / heads", "hidden": "hidden / heads", "head_dim!": "`head_dim`",
         "generic": "`head_dim`, `hidden_size_per_head` or hidden / heads",
         "qk": "`qk_nope_head_dim` + `qk_rope_head_dim`"}


def describe(row: Arch) -> str:
    """What kvcalc reads for a mapped row, in a few words."""
    if row.reader == "wrapper":
        return f"the language model under `{row.text}`"
    rule = row.rule
    if rule is None:
        return _SPECIAL.get(row.reader, row.kv)
    window = f"`sliding_window`{' + 1' if rule.plus_one else ''} on `{rule.slides}` layers" if rule.layer_types \
        else "no per-layer window"
    if not rule.cache_window:
        window += " (no model-level window)"
    tp = "; no head replication" if not rule.replicate else ""
    return (f"KV heads {_HEADS.get(rule.heads, f'`{rule.heads}`')}; head {_HEAD.get(rule.head, f'`{rule.head}`')}; "
            f"{window}{tp}{_SPECIAL.get(row.reader, '')}")


def _entry(name: str, letter: str) -> dict:
    row = arch_index().get(name)
    out = {"architecture": name, "registry": CATEGORIES[letter], "vllm_class": row.vllm if row else None}
    if row is not None and row.mapped:
        return {**out, "status": MAPPED, "kv_layers": row.kv, "reads": describe(row), "evidence": row.cite,
                "reason": None}
    if row is not None:
        status = NO_KV if row.reason.startswith("no KV") else REFUSED if row.reason.startswith("vLLM refuses") \
            else NOT_MODELLED
        return {**out, "status": status, "kv_layers": None, "reads": None, "evidence": None, "reason": row.reason}
    if letter == "p":
        return {**out, "status": NO_KV, "kv_layers": None, "reads": None, "evidence": None, "reason": _POOLING}
    if name in registry_of((0, 33, 0)):
        return {**out, "status": NOT_READ, "kv_layers": None, "reads": None, "evidence": None,
                "reason": "no row in kvcalc's architecture table"}
    last = previously_supported().get(name)
    why = "not in vLLM 0.33.0's registry" + (f" (0.33.0 lists it as served up to {last})" if last else "") + \
          ": kvcalc maps architectures from 0.33.0's model files"
    return {**out, "status": NOT_READ, "kv_layers": None, "reads": None, "evidence": None, "reason": why}


def models(version: str) -> dict:
    """Every architecture `version`'s registry lists, as `kvcalc models --format json` prints it."""
    behaviour = behaviour_for(version)
    listed = registry_of(behaviour.release)
    rows = [_entry(name, letter) for name, letter in sorted(listed.items(), key=lambda kv: kv[0].lower())]
    counts: dict = {}
    for r in rows:
        per = counts.setdefault(r["registry"], {**dict.fromkeys(STATUSES, 0), "total": 0})
        per[r["status"]] += 1
        per["total"] += 1
    return {"vllm_version": behaviour.version, "counts": counts, "architectures": rows}


def architectures_markdown() -> str:
    """The README's supported-architectures table: vLLM 0.33.0's text-generation architectures kvcalc maps, grouped
    by what kvcalc reads (a test checks the README against it; `kvcalc models --format markdown` prints it)."""
    doc = models("0.33.0")
    groups: dict[tuple[str, str], list[str]] = {}
    for r in doc["architectures"]:
        if r["status"] == MAPPED and r["registry"] in (CATEGORIES["t"], CATEGORIES["T"]):
            groups.setdefault((r["kv_layers"], r["reads"]), []).append(f"`{r['architecture']}`")
    lines = ["| KV layers | architectures | what kvcalc reads |", "|---|---|---|"]
    for (kv, reads), names in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        lines.append(f"| {kv} | {', '.join(names)} | {reads} |")
    lines.append("")
    for registry, c in doc["counts"].items():
        lines.append(f"- {registry}: {c[MAPPED]} mapped, {c[NOT_MODELLED]} not modelled, {c[NO_KV]} without a KV "
                     f"cache, {c[REFUSED]} refused by vLLM with a KV connector, of {c['total']}")
    return "\n".join(lines) + "\n"
