"""Layout keys of the architectures whose KV caches or start-up checks go beyond one attention per decoder layer
(inputs/hf/shapes.py sets them from a config), as rows the key table (vocab/keys.py) builds in its place."""

from __future__ import annotations

# (path, kind, the row's fields), in the key table's order.
MODEL_SHAPE_ROWS: tuple[tuple[str, str, dict], ...] = (
    ("model.mla_per_layer", "int", {"doc": "MLA attentions in every mla layer, each with its own KV cache "
                                           "(LongCat-Flash: 2)", "default": 1, "minimum": 1, "maximum": 2}),
    ("model.index_skip_layers", "ints", {"doc": "mla layers without their own indexer cache (HY-V4's shared "
                                                "indexer layers reuse an earlier layer's top-k)", "minimum": 0}),
    ("model.sink_len", "int", {"doc": "static sink tokens every attention layer prepends (openPangu's "
                                      "param_sink_number): vLLM refuses a block size that does not divide it",
                               "minimum": 1, "nullable": True}),
    ("model.pipeline_parallel", "bool", {"doc": "false when vLLM's model class does not implement SupportsPP: vLLM "
                                                "refuses parallel.pipeline_parallel_size above 1 at start-up "
                                                "(config/model.py:1569-1576 @0.33.0)", "default": True}),
    ("model.tp_must_divide", "int", {"doc": "vLLM's model refuses a tensor_parallel_size that does not divide this "
                                            "(Dory: 1; Bailing-V2.5's linear attention: group_norm_size)",
                                     "minimum": 1, "nullable": True}),
    ("model.requires_backend", "str", {"doc": "the attention backend the model's layers assert (Flint: FLASHINFER): "
                                              "vLLM refuses to start on another", "nullable": True}),
    ("model.head_size_v_since", "str", {"doc": "the first vLLM release whose attention keeps head_size_v; earlier "
                                               "ones zero-pad V to the K head size (MiMo-V2: 0.20.0)",
                                        "nullable": True}),
    ("model.registered_since", "str", {"doc": "the first vLLM release whose model registry lists the architecture: "
                                              "an earlier release refuses it", "nullable": True}),
)
