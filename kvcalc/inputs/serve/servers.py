"""The servers a command line can start, as one table: which words start vLLM's server, which start another
server (named in a refusal, or read by its own engine's reader), which module reads a planned server's line, and
the first words of a line `kvcalc CMD -- LINE` passes on. Serve lines, manifests and the CLI read it alike."""

from __future__ import annotations

import os
from importlib import import_module

# vLLM's command forms: (a word, the word after it (None: any), where the arguments start after the word):
# `vllm serve ...`, `python -m vllm.entrypoints.openai.api_server ...` (its --model is the model),
# `python -m vllm.entrypoints.cli.main serve ...`.
VLLM_FORMS = (("vllm", "serve", 2), ("vllm.entrypoints.openai.api_server", None, 1),
              ("vllm.entrypoints.cli.main", "serve", 2))
VLLM_MODULES = frozenset(w for w, _, _ in VLLM_FORMS if "." in w)  # forms that follow `-m`
# Servers that are not vLLM, by a word of their command line.
OTHER_SERVERS = (("sglang.launch_server", "SGLang"), ("sglang", "SGLang"), ("trtllm-serve", "TensorRT-LLM"),
                 ("text-generation-launcher", "TGI"), ("llama-server", "llama.cpp"), ("ollama", "Ollama"),
                 ("lmdeploy", "LMDeploy"))
# The engines' server lines beside vLLM's, by a word their text holds: the module that reads them (its SOURCE,
# is_line, parse, load_line, image_release). vLLM's (serve/vllm.py) reads every other line.
LINE_READERS = (("sglang", ".sglang"),)
# The first words of a planned server's line (after its environment), for `kvcalc CMD [opts] -- LINE`; and the
# `-m MODULE` forms after a `python*` program.
LINE_STARTS = (("vllm",), ("serve",), ("sglang", "serve"))
MODULE_STARTS = (("-m", "sglang.launch_server"),)


def line_reader(text: str, argv: list[str]):
    """The module that reads this server line (serve/vllm.py or another engine's of LINE_READERS); the marker
    word is looked for first, so a vLLM line imports no other engine's reader."""
    for marker, module in LINE_READERS:
        if marker in text:
            reader = import_module(module, __package__)
            if reader.is_line(argv):
                return reader
    return import_module(".vllm", __package__)


def server_of(words: list[str], within: int | None = None) -> tuple[str, int] | None:
    """(the server, the index its arguments start at) of the first command among the first `within` words (all
    when None) that starts one: one of vLLM's VLLM_FORMS, or another server of OTHER_SERVERS."""
    for i, w in enumerate(words if within is None else words[:within]):
        base = os.path.basename(w)
        for word, then, start in VLLM_FORMS:
            if (base if word not in VLLM_MODULES else w) != word:
                continue
            if then is None and i and words[i - 1] == "-m" or then is not None and words[i + 1:i + 2] == [then]:
                return "vLLM", i + start
        for marker, name in OTHER_SERVERS:
            if base == marker or w.startswith(marker + ".") or (w == marker and i and words[i - 1] == "-m"):
                return name, i + 1
    return None


def starts_line(words: list[str]) -> bool:
    """Whether `words` (a line's environment assignments first, `env` too) start a planned server's line."""
    j = 1 if words[:1] == ["env"] else 0
    while j < len(words) and "=" in words[j] and words[j].split("=", 1)[0].isidentifier():
        j += 1
    if any(tuple(words[j:j + len(s)]) == s for s in LINE_STARTS):
        return True
    return bool(words[j:j + 1]) and words[j].rsplit("/", 1)[-1].startswith("python") and any(
        tuple(words[j + 1:j + 1 + len(s)]) == s for s in MODULE_STARTS)
