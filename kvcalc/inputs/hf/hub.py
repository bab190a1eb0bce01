"""A model id -> its config.json in the local Hugging Face cache (offline: looked up, never fetched), as the hub
client lays the cache out. A revision is a ref name or a commit hash, never a path; every read is bounded."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...vocab.errors import LayoutError

if TYPE_CHECKING:
    from collections.abc import Mapping


def fail(key: str, expected: str, got: Any = None, detail: str = "") -> LayoutError:
    """A serve line's bad input (serve.py, serve_args.py and the model lookup name it alike)."""
    return LayoutError("vllm serve", key, expected, got, detail=detail)


def hub_cache_dirs(env: dict[str, str] | None = None) -> list[str]:
    """Where huggingface_hub keeps its cache: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    found: Mapping[str, str] = os.environ if env is None else env
    if found.get("HF_HUB_CACHE"):
        return [found["HF_HUB_CACHE"]]
    if found.get("HF_HOME"):
        return [os.path.join(found["HF_HOME"], "hub")]
    return [os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub")]


def resolve_model(model: str, *, revision: str | None = None, flag: str = "MODEL",
                  env: dict[str, str] | None = None) -> str:
    """A local directory (or config.json), or a hub id in the local cache -> the config.json path. The hub
    client's layout: models--ORG--NAME/refs/<revision> holds a commit hash, snapshots/<hash>/config.json the file
    (often a symlink into blobs/); a revision that is a commit hash names the snapshot directly."""
    if os.path.isdir(model):
        return os.path.join(model, "config.json")
    if model.endswith(".json") and os.path.isfile(model):
        return model
    tried = []
    rev = revision or "main"
    # A revision is a ref name (main, v1.0, refs/pr/1) or a commit hash: never a path out of the cache (a serve
    # line or a manifest someone else wrote must not make kvcalc read, or print, another file).
    if not _REF.fullmatch(rev) or ".." in rev.split("/") or rev.startswith("/"):
        raise fail("--revision", "a branch, tag or commit hash", rev[:60])
    if not _REPO.fullmatch(model):
        raise fail(flag, "a local model directory or a hub id such as org/name", model[:80])
    for cache in hub_cache_dirs(env):
        repo = os.path.join(cache, "models--" + model.replace("/", "--"))
        ref = os.path.join(repo, "refs", rev)
        commit = rev
        if os.path.isfile(ref):
            commit = _ref_commit(ref)
        path = os.path.join(repo, "snapshots", commit, "config.json")
        tried.append(path)
        if os.path.isfile(path):
            return path
    raise fail(flag, f"a local model directory or a model in the Hugging Face cache (tried {', '.join(tried)})",
                model, detail=f"fetch its config with: huggingface-cli download {model} config.json"
                              + (f" --revision {revision}" if revision else ""))


_REF = __import__("re").compile(r"[A-Za-z0-9._-][A-Za-z0-9._/-]{0,200}")
_REPO = __import__("re").compile(r"[A-Za-z0-9._-]{1,96}(/[A-Za-z0-9._-]{1,96})?")
_COMMIT = __import__("re").compile(r"[0-9A-Za-z]{1,64}")  # the hub writes 40 hex digits; no path characters


def _ref_commit(path: str) -> str:
    """The commit hash a refs/<name> file of the cache holds (the hub client writes 40 hex digits); anything else
    is refused without echoing it."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(81)
    except OSError as e:
        raise fail("--revision", "a readable ref in the Hugging Face cache", detail=f"{path}: {e.strerror}") from None
    text = raw.decode("ascii", "replace").strip()
    if not _COMMIT.fullmatch(text):
        raise fail("--revision", "a ref file holding a commit hash", detail=path)
    return text


