"""The releases kvcalc read, as data: vLLM's (vllm.py: families and behaviour steps) and LMCache's (lmcache.py: its
config vocabulary per release and its converters). The list of LMCache releases is here, so a vLLM layout names it
without loading LMCache's tables (start-up time is a target)."""

# Every LMCache release read from its wheel (lmcache.py says what differs between them).
LMCACHE_RELEASES = (
    "0.3.10", "0.3.10.post1", "0.3.10.post2", "0.3.11", "0.3.12", "0.3.13", "0.3.14", "0.3.15",
    "0.4.1", "0.4.2", "0.4.3", "0.4.4", "0.4.5", "0.4.6", "0.4.7",
    "0.5.0", "0.5.1", "0.5.2", "0.5.3", "0.5.4", "0.5.5", "0.5.6",
)
DEFAULT_LMCACHE_VERSION = "0.5.6"
