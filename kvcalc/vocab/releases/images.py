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
    vllm_of_lmcache: tuple = ()  # (LMCache release, the vLLM release its image ships) for images that name LMCache's


IMAGES = (
    # vLLM's release workflow pushes vllm/vllm-openai:v<release> (and -cu* / -aarch64 variants of the same release):
    # vllm-project/vllm .buildkite/release-pipeline.yaml, "docker push vllm/vllm-openai:v$(buildkite-agent meta-data
    # get release-version)".
    ImageRow(repository="vllm/vllm-openai", tag=r"v?(?P<vllm>\d+\.\d+\.\d+(?:\.\d+)?)(?:[-+_.].*)?",
             evidence="vllm-project/vllm .buildkite/release-pipeline.yaml: vllm/vllm-openai:v<release>"),
    ImageRow(repository="vllm/vllm-openai-rocm", tag=r"v?(?P<vllm>\d+\.\d+\.\d+)(?:[-+_.].*)?",
             evidence="vllm-project/vllm .buildkite/release-pipeline.yaml: the ROCm image of the same release"),
    ImageRow(repository="vllm/vllm-openai-cpu", tag=r"v?(?P<vllm>\d+\.\d+\.\d+)(?:[-+_.].*)?",
             evidence="vllm-project/vllm .buildkite/release-pipeline.yaml: the CPU image of the same release"),
    # AMD's images name the vLLM release inside the tag: rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909.
    ImageRow(repository="rocm/vllm", tag=r".*_vllm_(?P<vllm>\d+\.\d+\.\d+)(?:[._].*)?",
             evidence="hub.docker.com/r/rocm/vllm tags: rocm<ver>_vllm_<release>_<date>"),
    # LMCache's image: the tag is LMCache's release; which vLLM it ships is a table (vllm_of_lmcache) where known.
    ImageRow(repository="lmcache/vllm-openai", tag=r"v?(?P<lmcache>\d+\.\d+\.\d+(?:\.post\d+)?)",
             evidence="LMCache docker/Dockerfile: FROM vllm/vllm-openai plus the lmcache wheel of the tag's release"),
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
        return ImageRelease(image=image, vllm=None, lmcache=None, how=f"image {image!r} is not a reference kvcalc reads")
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
    vllm = groups.get("vllm") or dict(row.vllm_of_lmcache).get(lmcache)
    how = f"image {repo}:{tag}"
    if lmcache and not vllm:
        how += f" (LMCache {lmcache}; the vLLM release it ships is not in kvcalc's table)"
    return ImageRelease(image=image, vllm=vllm, lmcache=lmcache, how=how)
