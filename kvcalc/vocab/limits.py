"""A gate's limit, as the inputs find it (a flag, a pod's grant) and the gates compare against it."""

from __future__ import annotations

from .records import record


@record
class Limit:
    """A gate's limit: its value (None: asked for, but its size cannot be read) and where it came from."""

    value: int | None
    source: str  # "--host-memory", "the pod's memory limit (manifest: …)", …
    pod: bool = False  # a pod's limit (an OOM kill past it), not a node's memory
