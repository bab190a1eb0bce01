"""The releases kvcalc read, as data: vLLM's (vllm.py: families and behaviour steps), LMCache's (lmcache.py: its
config vocabulary per release and its converters) and SGLang's (sglang.py: its pool rules per release). The lists of
LMCache and SGLang releases are here, so a vLLM layout names them without loading their tables (start-up time is a
target)."""

# Every LMCache release read from its wheel (lmcache.py says what differs between them).
LMCACHE_RELEASES = (
    "0.3.10", "0.3.10.post1", "0.3.10.post2", "0.3.11", "0.3.12", "0.3.13", "0.3.14", "0.3.15",
    "0.4.1", "0.4.2", "0.4.3", "0.4.4", "0.4.5", "0.4.6", "0.4.7",
    "0.5.0", "0.5.1", "0.5.2", "0.5.3", "0.5.4", "0.5.5", "0.5.6",
)
DEFAULT_LMCACHE_VERSION = "0.5.6"

# Every SGLang release read from its wheel (sglang.py says what differs between them); older ones are refused.
SGLANG_RELEASES = (
    "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22",
    "0.5.23",
)
DEFAULT_SGLANG_VERSION = "0.5.23"
