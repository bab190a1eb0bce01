"""Container images -> the releases they run, as data: one row per image repository (registry prefixes such as
`docker.io/` dropped), with the tag pattern that carries a version and the evidence for the mapping. Extend it by
adding a row; a digest-only reference (`@sha256:…`), `latest` or `nightly` names no release.
"""

from __future__ import annotations

import re

from ..records import record


@record
class ImageRow:
    repository: str  # without registry host, e.g. vllm/vllm-openai
    tag: str  # regex on the tag; group "vllm" (and "lmcache") capture the release
    evidence: str
    by_tag: tuple = ()  # (tag, the vLLM release it ships) where the tag itself names no vLLM release
    entrypoint: tuple = ()  # the image's ENTRYPOINT: a container with `args` only runs it with them


IMAGES = (
    # vLLM's images are tagged with the release they were built from (vllm/vllm-openai:v0.19.1); the image's
    # ENTRYPOINT is `vllm serve` (vllm-project/vllm docker/Dockerfile@dead20ba: `FROM vllm-openai-base AS
    # vllm-openai` / `ENTRYPOINT ["vllm", "serve"]`), so a container with `args` only serves args[0].
    ImageRow(repository="vllm/vllm-openai", tag=r"v?(?P<vllm>\d+\.\d+\.\d+)(?:[-+_.].*)?",
             evidence="tag = the vLLM release; docker/Dockerfile: ENTRYPOINT [\"vllm\", \"serve\"]",
             entrypoint=("vllm", "serve")),
    # AMD's images name the vLLM release inside the tag: rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909.
    ImageRow(repository="rocm/vllm", tag=r".*_vllm_(?P<vllm>\d+\.\d+\.\d+)(?:[._].*)?",
             evidence="tags rocm<ver>_vllm_<release>_<date>"),
    # LMCache's image: the tag is LMCache's release; the vLLM in it is whatever release PyPI had when it was
    # built (LMCache .github/workflows/publish.yml@049f1036, docker/Dockerfile@ab6cf272 stage image-release:
    # `uv pip install --prerelease=allow vllm[runai,tensorizer]`, unpinned), so the tag names no vLLM release.
    # ENTRYPOINT ["/opt/venv/bin/vllm", "serve"] (same Dockerfile).
    ImageRow(repository="lmcache/vllm-openai", tag=r"v?(?P<lmcache>\d+\.\d+\.\d+(?:\.post\d+)?)(?:-.*)?",
             evidence="LMCache docker/Dockerfile image-release: LMCache of the tag, the newest vLLM at build time",
             entrypoint=("/opt/venv/bin/vllm", "serve")),
    # llm-d's CUDA image, where a release names the vLLM inside: v0.5.0 logs "vLLM API server version 0.14.1"
    # (llm-d/llm-d#706); v0.8.0 ships "vLLM v0.23.0, CUDA 13.0.2" (llm-d/llm-d#1819). Other tags: no direct
    # evidence (v0.6.0 -> 0.17.1 and v0.7.0 -> 0.19.1 are inferred from release trackers, not listed).
    ImageRow(repository="llm-d/llm-d-cuda", tag=r"v?\d+\.\d+\.\d+", by_tag=(("v0.5.0", "0.14.1"), ("v0.8.0", "0.23.0")),
             evidence="llm-d/llm-d#706 (v0.5.0: vLLM 0.14.1), #1819 (v0.8.0: vLLM 0.23.0)"),
)


@record
class ImageRelease:
    """What an image reference says: the vLLM (and LMCache) release, how it was found, or why not."""

    image: str
    vllm: str | None
    lmcache: str | None
    how: str  # "image tag v0.19.1 (vllm/vllm-openai)" or why no release was read


_REFERENCE = re.compile(r"^(?:(?P<host>[^/]+\.[^/]+|localhost(?::\d+)?|[^/]+:\d+)/)?(?P<repo>[^:@]+)"
                        r"(?::(?P<tag>[^@]+))?(?:@(?P<digest>.+))?$")


def image_release(image: str) -> ImageRelease:
    """The releases an image reference names, by the IMAGES table."""
    m = _REFERENCE.match(image.strip())
    if not m:
        return ImageRelease(image=image, vllm=None, lmcache=None,
                            how=f"image {image!r} is not a reference kvcalc reads")
    repo = m.group("repo")
    if repo.startswith("library/"):
        repo = repo[8:]
    tag = m.group("tag")
    row = next((r for r in IMAGES if r.repository == repo), None)
    if row is None:
        return ImageRelease(image=image, vllm=None, lmcache=None,
                            how=f"image {repo} is not in kvcalc's image table (vocab/releases/images.py)")
    if tag is None:
        pinned = "pinned by digest only" if m.group("digest") else "no tag (latest)"
        return ImageRelease(image=image, vllm=None, lmcache=None, how=f"image {repo} {pinned}: no release in it")
    got = re.fullmatch(row.tag, tag)
    if not got:
        return ImageRelease(image=image, vllm=None, lmcache=None, how=f"image tag {tag!r} of {repo} names no release")
    groups = got.groupdict()
    lmcache = groups.get("lmcache")
    vllm = groups.get("vllm") or dict(row.by_tag).get(tag)
    how = f"image {repo}:{tag}"
    if not vllm:
        how += (f" (LMCache {lmcache}; " if lmcache else " (") + "the vLLM release inside is not written in the tag)"
    return ImageRelease(image=image, vllm=vllm, lmcache=lmcache, how=how)


def entrypoint(image: str) -> tuple:
    """The image's ENTRYPOINT where the table knows it (a container that gives `args` only runs it), else ()."""
    m = _REFERENCE.match(image.strip())
    repo = (m.group("repo") if m else "").removeprefix("library/")
    return next((r.entrypoint for r in IMAGES if r.repository == repo), ())
