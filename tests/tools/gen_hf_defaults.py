"""Regenerate kvcalc/inputs/hf_defaults.py from transformers' configuration classes (read as source, never imported).

    pip download transformers==5.24.0 --no-deps -d /tmp/tf && unzip -q /tmp/tf/*.whl 'transformers/models/*' -d /tmp/tf
    python tests/tools/gen_hf_defaults.py /tmp/tf/transformers/models TYPE,TYPE,... kvcalc/inputs/hf_defaults.py

TYPES is the comma list of model_types to keep (those arch_index.MODEL_TYPES names and the ones the readers take).
"""

import ast
import glob
import os
import sys

FIELDS = """num_key_value_heads head_dim tie_word_embeddings sliding_window max_position_embeddings use_sliding_window
max_window_layers sliding_window_pattern global_attn_every_n_layers attention_bias mlp_bias attention_chunk_size
no_rope_layer_interval num_local_experts num_experts n_routed_experts n_shared_experts shared_expert_intermediate_size
first_k_dense_replace decoder_sparse_step num_experts_per_tok kv_lora_rank q_lora_rank qk_rope_head_dim
qk_nope_head_dim v_head_dim index_head_dim index_topk index_n_heads num_nextn_predict_layers mtp_num_hidden_layers
full_attention_interval linear_conv_kernel_dim linear_key_head_dim linear_value_head_dim linear_num_key_heads
linear_num_value_heads ssm_state_size conv_kernel n_groups chunk_size expand state_size num_heads attn_layer_period
attn_layer_offset expert_layer_period expert_layer_offset conv_L_cache num_kv_shared_layers
hidden_size_per_layer_input vocab_size_per_layer_input attention_k_eq_v rotary_dim multi_query_attention
multi_query_group_num kv_channels mamba_d_state mamba_d_conv mamba_expand mamba_dt_rank mamba_n_heads mamba_d_head
mamba_n_groups mamba_d_ssm mamba_chunk_size mamba_num_heads mamba_head_dim mamba_conv_bias mamba_proj_bias
num_mem_blocks attention_head_dim n_mamba_heads use_shared_attention_adapter block_ff_dim linear_num_heads
linear_head_dim swa_num_key_value_heads swa_head_dim swa_v_head_dim sliding_window_size moe_num_experts
moe_num_shared_experts num_shared_experts moe_shared_expert_intermediate_size use_mla mlp_only_layers""".split()
SIZE_FIELDS = ("num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size", "vocab_size")
HEADER = '''"""transformers 5.24.0 configuration classes' defaults for the fields kvcalc reads, and their
attribute_map (a standard name stored under another: GPT-2's n_head), per model_type. Generated from
transformers/models/<type>/configuration_*.py (the class attributes' literal defaults) by
tests/tools/gen_hf_defaults.py; hf_readers.DEFAULTS (hand-checked) wins over these. The model's sizes
(layers, heads, widths, vocabulary) are apart, in SIZES: a multimodal wrapper's sub-config takes them from its class
(llava's text_config names only what differs from LlamaConfig), a top-level config without them is refused."""

from __future__ import annotations
'''


def _value(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        try:
            return eval(compile(ast.Expression(node), "", "eval"), {})  # 4096 * 32 and the like
        except Exception:
            return None


def read_classes(root):
    classes = {}
    for path in glob.glob(os.path.join(root, "*", "configuration_*.py")):
        for node in ast.parse(open(path, encoding="utf-8").read()).body:
            if not isinstance(node, ast.ClassDef):
                continue
            model_type, fields, amap = None, {}, None
            for st in node.body:
                if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                    if st.targets[0].id == "model_type" and isinstance(st.value, ast.Constant):
                        model_type = st.value.value
                    elif st.targets[0].id == "attribute_map":
                        amap = _value(st.value)
                elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    v = _value(st.value)
                    if isinstance(v, (int, float, str, bool)):
                        fields[st.target.id] = v
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            classes[node.name] = (model_type, bases, fields, amap)
    return classes


def resolved(classes, name, seen=()):
    if name not in classes or name in seen:
        return {}
    _, bases, fields, _ = classes[name]
    out = {}
    for b in bases:
        out.update(resolved(classes, b, seen + (name,)))
    out.update(fields)
    return out


def _wrap(text, out):
    while len(text) > 118:
        cut = text.rfind(", ", 0, 117)
        out.append(text[:cut + 1])
        text = "        " + text[cut + 2:]
    out.append(text)


def main(root, types, path):
    classes = read_classes(root)
    by_type = {}
    for name, (model_type, _, _, amap) in classes.items():
        if model_type in types and model_type not in by_type:
            fields = resolved(classes, name)
            by_type[model_type] = ({k: v for k, v in fields.items() if k in FIELDS}, amap or {},
                                   {k: v for k, v in fields.items() if k in SIZE_FIELDS and isinstance(v, int)})
    lines = [HEADER, "CLASS_DEFAULTS: dict[str, dict] = {"]
    for t, (row, _, _) in sorted(by_type.items()):
        _wrap(f"    {t!r}: {{{', '.join(f'{k!r}: {v!r}' for k, v in row.items())}}},", lines)
    lines += ["}", "SIZES: dict[str, dict] = {"]
    for t, (_, _, sizes) in sorted(by_type.items()):
        if sizes:
            _wrap(f"    {t!r}: {{{', '.join(f'{k!r}: {v!r}' for k, v in sizes.items())}}},", lines)
    lines += ["}", "ATTRIBUTE_MAPS: dict[str, dict] = {"]
    for t, (_, amap, _) in sorted(by_type.items()):
        if amap:
            _wrap(f"    {t!r}: {amap!r},", lines)
    lines.append("}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3])
