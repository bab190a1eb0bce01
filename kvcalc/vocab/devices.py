"""GPUs by name: the total memory torch reports for each (`torch.cuda.mem_get_info()[1]`, what vLLM's
`MemorySnapshot.total_memory` and so `requested = ceil(total x utilization)` use), each row cited to a real start-up
log or error message that prints it. vLLM prints totals rounded to 0.01 GiB (format_gib), so a row's bytes are the
printed value's and carry +-0.005 GiB; `--gpu-total-memory` gives the exact figure where it is known.

A name not in the table is refused with the list: a guessed total would pass for a measured one.
"""

from __future__ import annotations

from .records import record


@record
class Device:
    name: str  # as torch prints it (torch.cuda.get_device_name)
    aliases: tuple[str, ...]  # short forms, matched case-insensitively
    total_gib: str  # as logged, 2 decimals
    source: str  # the real log or message that prints it

    @property
    def total_bytes(self) -> int:
        """The printed GiB as bytes (exact for the printed value; the device's own figure is within 0.005 GiB)."""
        whole, _, frac = self.total_gib.partition(".")
        hundredths = int(whole) * 100 + int((frac + "00")[:2])
        return hundredths * (1 << 30) // 100


DEVICES: tuple[Device, ...] = (
    Device(name="NVIDIA H100 80GB HBM3", aliases=("h100", "h100-80gb", "h100-sxm", "h100-sxm5-80gb"),
           total_gib="79.19",
           source="llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/*--h100-80gb--*.log (vLLM 0.19.0): "
                  "'worker init memory snapshot: ... total_memory=79.19GiB'"),
    Device(name="NVIDIA A100 80GB", aliases=("a100-80gb", "a100-sxm4-80gb", "nvidia a100-sxm4-80gb"),
           total_gib="79.32",
           source="vllm-project/vllm-omni#276 (2x A100 80GB): 'Free memory on device (0.49/79.32 GiB) on startup'"),
    Device(name="NVIDIA A10", aliases=("a10",), total_gib="23.72",
           source="kaito-project/kaito#1374 (NVIDIA A10): 'Free memory on device (21.37/23.72 GiB) on startup'"),
    Device(name="NVIDIA GB10", aliases=("gb10", "dgx-spark"), total_gib="121.69",
           source="MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47 (DGX Spark GB10): 'Free memory on device "
                  "(110.37/121.69 GiB) on startup'"),
)


def find_device(name: str) -> Device | None:
    """A device by its torch name or a short form (case and spacing ignored), or None."""
    key = " ".join(name.lower().split())
    for d in DEVICES:
        if key == d.name.lower() or key in d.aliases:
            return d
    return None


def known_names() -> str:
    return "; ".join(f"{d.name} ({', '.join(d.aliases)})" for d in DEVICES)
