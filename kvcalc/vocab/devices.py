"""One GPU table for every engine. A row: the device's name as torch prints it (torch.cuda.get_device_name, what
vLLM and SGLang log), short aliases, its compute capability (CUDA) or gfx target (ROCm), the total memory as torch
reports it (`torch.cuda.mem_get_info()[1]`: what vLLM's `MemorySnapshot.total_memory` and so `requested = ceil(total
x utilization)` use), and what nvidia-smi prints as memory.total in MiB (what SGLang's defaults read:
srt/utils/common.py get_nvgpu_memory_capacity), each with its source.

vLLM prints totals rounded to 0.01 GiB (format_gib), so a logged row's bytes are the printed value's and carry
+-0.005 GiB; `--gpu-total-memory` gives the exact figure where it is known. A figure no real log or table shows is
absent (None), never guessed: an engine that needs it refuses the GPU and names the flag that gives it.
"""

from __future__ import annotations

from .records import record


@record
class Device:
    name: str  # as torch prints it (torch.cuda.get_device_name)
    aliases: tuple[str, ...]  # short forms, matched case-insensitively
    capability: str  # CUDA compute capability ("9.0") or ROCm gfx target ("gfx942")
    total_gib: str | None  # the total torch reports, as logged (2 decimals); None: no log shows it
    total_source: str  # the real log or message that prints it
    smi_mib: int | None = None  # nvidia-smi memory.total (MiB); None: no table shows it
    smi_source: str = ""

    @property
    def total_bytes(self) -> int | None:
        """The printed GiB as bytes (exact for the printed value; the device's own figure is within 0.005 GiB)."""
        if self.total_gib is None:
            return None
        whole, _, frac = self.total_gib.partition(".")
        hundredths = int(whole) * 100 + int((frac + "00")[:2])
        return hundredths * (1 << 30) // 100

    @property
    def arch(self) -> str:
        """The architecture as kernels name it: sm90 for capability 9.0, sm100 for 10.0; a gfx target as it is."""
        return self.capability if self.capability.startswith("gfx") else "sm" + self.capability.replace(".", "")


_SMI = "nvidia-smi tables in public repositories"
DEVICES: tuple[Device, ...] = (
    Device(name="NVIDIA H100 80GB HBM3", aliases=("h100", "h100-80gb", "h100-sxm", "h100-sxm5-80gb"),
           capability="9.0", total_gib="79.19",
           total_source="llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/*--h100-80gb--*.log (vLLM "
                        "0.19.0): 'worker init memory snapshot: ... total_memory=79.19GiB'",
           smi_mib=81559, smi_source=f"{_SMI}: 'NVIDIA H100 80GB HBM3 ... 1MiB / 81559MiB'"),
    Device(name="NVIDIA H200", aliases=("h200", "h200-141gb"), capability="9.0", total_gib=None, total_source="",
           smi_mib=143771, smi_source=f"{_SMI}: 'NVIDIA H200 ... 0MiB / 143771MiB'"),
    Device(name="NVIDIA B200", aliases=("b200",), capability="10.0", total_gib=None, total_source="",
           smi_mib=183359, smi_source=f"{_SMI}: 'NVIDIA B200 ... 0MiB / 183359MiB'"),
    Device(name="NVIDIA A100-SXM4-80GB", aliases=("a100-80gb", "a100-sxm4-80gb", "nvidia a100 80gb"),
           capability="8.0", total_gib="79.32",
           total_source="vllm-project/vllm-omni#276 (2x A100 80GB): 'Free memory on device (0.49/79.32 GiB) on "
                        "startup'",
           smi_mib=81920, smi_source=f"{_SMI}: 'NVIDIA A100-SXM4-80GB ... 1MiB / 81920MiB'"),
    Device(name="NVIDIA A100-SXM4-40GB", aliases=("a100-40gb", "a100-sxm4-40gb", "a100-pcie-40gb"),
           capability="8.0", total_gib=None, total_source="",
           smi_mib=40960, smi_source=f"{_SMI}: 'NVIDIA A100-SXM4-40GB ... 0MiB / 40960MiB'"),
    Device(name="NVIDIA L4", aliases=("l4",), capability="8.9", total_gib=None, total_source="",
           smi_mib=23034, smi_source=f"{_SMI}: 'NVIDIA L4 ... 0MiB / 23034MiB'"),
    Device(name="NVIDIA A10", aliases=("a10",), capability="8.6", total_gib="23.72",
           total_source="kaito-project/kaito#1374 (NVIDIA A10): 'Free memory on device (21.37/23.72 GiB) on startup'"),
    Device(name="NVIDIA GB10", aliases=("gb10", "dgx-spark"), capability="12.1", total_gib="121.69",
           total_source="MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47 (DGX Spark GB10): 'Free memory on device "
                        "(110.37/121.69 GiB) on startup'"),
)


def find_device(name: str) -> Device | None:
    """A device by its torch name or a short form (case and spacing ignored), or None."""
    key = " ".join(name.lower().split())
    for d in DEVICES:
        if key == d.name.lower() or key in d.aliases:
            return d
    return None


def known_names(figure: str = "total_gib") -> str:
    """The devices that have `figure` (total_gib: torch's total, for vLLM's budget; smi_mib: nvidia-smi's, for
    SGLang's defaults), with their short forms."""
    return "; ".join(f"{d.name} ({', '.join(d.aliases)})" for d in DEVICES if getattr(d, figure) is not None)
