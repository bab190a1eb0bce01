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
    total_basis: str = "logged"  # logged | estimate (a sibling's total: no log shows this device's)
    total_error_gib: str | None = None  # an estimate's uncertainty (+- GiB)
    smi_mib: int | None = None  # nvidia-smi memory.total (MiB; ROCm: rocminfo Pool 1); None: no table shows it
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
    def total_text(self) -> str:
        """Where the total comes from, as the plan's source says it: logged, or an estimate with its error."""
        if self.total_basis == "estimate":
            return (f"{self.name}: {self.total_gib} GiB, an estimate (+-{self.total_error_gib} GiB: no log shows this "
                    f"device's total; {self.total_source})")
        return f"{self.name}: {self.total_gib} GiB as logged ({self.total_source})"

    @property
    def rocm(self) -> bool:
        """An AMD GPU (a gfx target): vLLM runs its ROCm platform."""
        return self.capability.startswith("gfx")

    @property
    def arch(self) -> str:
        """The architecture as kernels name it: sm90 for capability 9.0, sm100 for 10.0; a gfx target as it is."""
        return self.capability if self.capability.startswith("gfx") else "sm" + self.capability.replace(".", "")


# The fleet operators deploy (issue 29). Sources: real logs and tables in public repositories and issue threads; a
# "search index id" names a public GitHub file the look-up found whose repository the index does not expose. vLLM
# prints round(x, 2) without trailing zeros: the H200's 139.80 appears as "139.8". Totals shift with the driver by
# up to ~0.2 GiB (T4 14.57 / 14.75, A100 80GB 79.15 - 79.33): give --gpu-total-memory for your machine's figure.
# A row whose total no log shows copies a sibling with the same memory: total_basis "estimate", with its error.
# ROCm: SGLang reads rocminfo's Pool 1 size (KiB / 1024) where CUDA has nvidia-smi's memory.total.
DEVICES: tuple[Device, ...] = (
    Device(name="Tesla T4", aliases=("t4", "tesla-t4",), capability="7.5", total_gib="14.57", total_source="a public GitHub file (search index id 71609078484) (torch 2.14+cu130 benchmark notes): 'T4 gru 200/16 ...: OutOfMemoryError(... GPU 0 has a total capacity of 14.57 GiB ...'; same regime: a public GitHub file (search index id 12462193998) \"_CudaDeviceProperties(name='Tesla T4', major=7, minor=5, total_memory=14930MB\" (14.58)", smi_mib=15360, smi_source="a public GitHub file (search index id 7115706768) nvidia-smi: '| 0 Tesla T4 ... | 2MiB / 15360MiB |' (also ids 43633585443, 38944044183)"),
    Device(name="NVIDIA A10", aliases=("a10",), capability="8.6", total_gib="22.06", total_source="a public GitHub file (search index id 71609078484): 'A10 ...: OutOfMemoryError(... GPU 0 has a total capacity of 22.06 GiB ...' (ECC on, the 23,028 MiB card; with ECC off it reads 23.72 GiB: kaito-project/kaito#1374 'Free memory on device (21.37/23.72 GiB) on startup', give --gpu-total-memory)", smi_mib=23028, smi_source="a public GitHub file (search index id 12209728316) nvidia-smi: '| 0 NVIDIA A10 ... | 0MiB / 23028MiB |' (also ids 31786522330, 8826784830)"),
    Device(name="NVIDIA A10G", aliases=("a10g", "aws-a10g", "g5",), capability="8.6", total_gib="22.06", total_source="a public GitHub file (search index id 67234836605): \"_CudaDeviceProperties(name='NVIDIA A10G', major=8, minor=6, total_memory=22587MB\"; vLLM on A10G: a public GitHub file (search index id 53045148724) 'Model loading took 16.48 GiB ... GPU 0 has a total capacity of 22.06 GiB'", smi_mib=23028, smi_source="a public GitHub file (search index id 566308614) nvidia-smi: '| 0 NVIDIA A10G ... | 0MiB / 23028MiB |' (also 15240524890, 29447340209)"),
    Device(name="NVIDIA A30", aliases=("a30",), capability="8.0", total_gib="23.50", total_source="JakeFlasher/benchmark_flash_attention results_kvcache/deepseek-r1.md (nvbench device header, cudaMemGetInfo = torch's total): '## [0] `NVIDIA A30` ... * Global Memory: 23805 MiB Free / 24060 MiB Total' (24060 MiB = 23.496 GiB)", smi_mib=24576, smi_source="a public GitHub file (search index id 32194825337) nvidia-smi: '| 0 NVIDIA A30 ... | 0MiB / 24576MiB |' (also 16841056064, 26030154796); older drivers 24258MiB (3920055581)"),
    Device(name="NVIDIA A40", aliases=("a40",), capability="8.6", total_gib="44.35", total_source="a public GitHub file (search index id 31219571458): \"GPU名称: NVIDIA A40, GPU属性: _CudaDeviceProperties(name='NVIDIA A40', major=8, minor=6, total_memory=45416MB, multi_processor_count=84)\"", smi_mib=46068, smi_source="a public GitHub file (search index id 17170663353) nvidia-smi: '| 0 NVIDIA A40 ... | 0MiB / 46068MiB |' (also 2475744650, 29934243570)"),
    Device(name="NVIDIA L4", aliases=("l4", "gcp-g2", "aws-g6",), capability="8.9", total_gib="22.04", total_source="a public GitHub file (search index id 59672298265) (A10G vs L4 vLLM notes): 'L4 한 장에서도 ... 가용 메모리가 22.06GiB에서 22.04GiB로 바뀌는 것 말고는 메시지가 같다' (OOM 'total capacity of 22.04 GiB')", smi_mib=23034, smi_source="nvidia-smi tables in public repositories: 'NVIDIA L4 ... 0MiB / 23034MiB'"),
    Device(name="NVIDIA L40", aliases=("l40",), capability="8.9", total_gib="44.39", total_source="no L40 torch total found; L40S (same 48 GB GDDR6 with ECC, same 46068 MiB) logs 44.39", total_basis="estimate", total_error_gib="0.1", smi_mib=46068, smi_source="a public GitHub file (search index id 15020386292) nvidia-smi: '| 0 NVIDIA L40 ... | 5MiB / 46068MiB |' (also 42914656906, 21580086933); ECC off: 49140MiB (52496202912)"),
    Device(name="NVIDIA L40S", aliases=("l40s", "aws-g6e",), capability="8.9", total_gib="44.39", total_source="a public GitHub file (search index id 57465200396) (vLLM on L40S): 'roughly half of each L40S ... `Free memory on device (16.17/44.39 GiB) on startup is less than desired GPU memory utilization (0.6, 26.64 GiB)`'; also a public GitHub file (search index id 67366471984) '48 GB L40S (g6e.4xlarge) ... GPU 0 has a total capacity of 44.39 GiB'", smi_mib=46068, smi_source="a public GitHub file (search index id 70529004214) nvidia-smi: '| 0 NVIDIA L40S ... | 0MiB / 46068MiB |' (also 56165644656, 23231067603)"),
    Device(name="NVIDIA A100-SXM4-40GB", aliases=("a100-40gb", "a100-sxm4-40gb",), capability="8.0", total_gib="39.49", total_source="a public GitHub file (search index id 58263135842) (NERSC Perlmutter, A100-SXM4-40GB nodes): '[rank0]: torch.OutOfMemoryError: ... GPU 0 has a total capacity of 39.49 GiB'", smi_mib=40960, smi_source="nvidia-smi tables in public repositories: 'NVIDIA A100-SXM4-40GB ... 0MiB / 40960MiB'"),
    Device(name="NVIDIA A100-PCIE-40GB", aliases=("a100-pcie-40gb",), capability="8.0", total_gib="39.39", total_source="39.39 GiB is printed in unnamed A100-40GB-class OOMs (a public GitHub file (search index id 11002089872), 66850652250); no PCIe-named torch total found", total_basis="estimate", total_error_gib="0.15", smi_mib=40960, smi_source="estimate: same 40 GB HBM2 as the SXM4 part (40960 MiB); no PCIe nvidia-smi table looked up"),
    Device(name="NVIDIA A100-SXM4-80GB", aliases=("a100-80gb", "a100-sxm4-80gb", "nvidia a100 80gb",), capability="8.0", total_gib="79.32", total_source="vllm-project/vllm-omni#276 (2x A100 80GB): 'Free memory on device (0.49/79.32 GiB) on startup'; the SXM4 part named: LukeJYK/AutoScientists vllm.log@e3133549 (vLLM 0.26.1 dev) 'Free memory on device (78.84/79.25 GiB)': drivers differ by ~0.1 GiB", smi_mib=81920, smi_source="nvidia-smi tables in public repositories: 'NVIDIA A100-SXM4-80GB ... 1MiB / 81920MiB'"),
    Device(name="NVIDIA A100 80GB PCIe", aliases=("a100-pcie-80gb", "a100-80gb-pcie",), capability="8.0", total_gib="79.15", total_source="a public GitHub file (search index id 12686617020) 'GPU 0 has a total capacity of 79.15 GiB ...' next to nvidia-smi '0MiB / 81920MiB' (A100 80GB, variant not named); vLLM prints 79.15 too (a public GitHub file (search index id 57013055120))", total_basis="estimate", total_error_gib="0.2", smi_mib=81920, smi_source="estimate: 80 GB HBM2e = 81920 MiB as on the SXM4 part (not looked up for PCIe)"),
    Device(name="NVIDIA H100 PCIe", aliases=("h100-pcie",), capability="9.0", total_gib="79.11", total_source="a public GitHub file (search index id 33356850601): \"# _CudaDeviceProperties(name='NVIDIA H100 PCIe', major=9, minor=0, total_memory=81008MB, multi_processor_count=114)\"", smi_mib=81559, smi_source="estimate: H100 PCIe 80 GB HBM2e; nvidia-smi 81559MiB is what the H800 PCIe prints (a public GitHub file (search index id 69706101187) '| 0 NVIDIA H800 PCIe ... 4MiB / 81559MiB')"),
    Device(name="NVIDIA H100 80GB HBM3", aliases=("h100", "h100-80gb", "h100-sxm", "h100-sxm5-80gb",), capability="9.0", total_gib="79.19", total_source="llm-d-incubation/llm-d-planner accuracy/results/v0.19.0/logs/*--h100-80gb--*.log (vLLM 0.19.0): 'worker init memory snapshot: ... total_memory=79.19GiB'", smi_mib=81559, smi_source="nvidia-smi tables in public repositories: 'NVIDIA H100 80GB HBM3 ... 1MiB / 81559MiB'"),
    Device(name="NVIDIA H100 NVL", aliases=("h100-nvl", "h100-94gb", "h100-96gb",), capability="9.0", total_gib="93.09", total_source="a public GitHub file (search index id 70792423305): '**v9 OOM on H100 NVL with 17.75 MiB Free** ... GPU 0 has a total capacity of 93.09 GiB of which 17.75 MiB is free.'", smi_mib=95830, smi_source="a public GitHub file (search index id 18074975848) nvidia-smi: '| 0 NVIDIA H100 NVL ... | 75079MiB / 95830MiB |' (also 5717978066, 63110634515)"),
    Device(name="NVIDIA H800", aliases=("h800", "h800-sxm",), capability="9.0", total_gib="79.19", total_source="no H800 torch total found; same 80 GB HBM3 board and same nvidia-smi total as the H100 SXM (79.19 GiB)", total_basis="estimate", total_error_gib="0.1", smi_mib=81559, smi_source="a public GitHub file (search index id 39089211520) nvidia-smi: '| 0 NVIDIA H800 ... | 4MiB / 81559MiB |' (also 70396795401, 41507333121)"),
    Device(name="NVIDIA H20", aliases=("h20",), capability="9.0", total_gib="95.00", total_source="a public GitHub file (search index id 16061001073) (Triton kernel comment): \"# _CudaDeviceProperties(name='NVIDIA H20', major=9, minor=0, total_memory=97285MB, multi_processor_count=78)\" (97285 MiB = 95.005 GiB)", smi_mib=97871, smi_source="a public GitHub file (search index id 69782509629) nvidia-smi: '| 0 NVIDIA H20 ... | 3MiB / 97871MiB |' (also 53244009727, 10232534572)"),
    Device(name="NVIDIA H200", aliases=("h200", "h200-141gb",), capability="9.0", total_gib="139.80", total_source="a public GitHub file (search index id 59734064623) (vLLM on H200): 'ValueError: Free memory on device cuda:0 (116.87/139.81 GiB) on startup ...' with nvidia-smi '120,429/143,771 MiB'; 139.80 in a public GitHub file (search index id 47349552184) '... on 8xH200: ... GPU 5 has a total capacity of 139.80 GiB'", smi_mib=143771, smi_source="nvidia-smi tables in public repositories: 'NVIDIA H200 ... 0MiB / 143771MiB'"),
    Device(name="NVIDIA H200 NVL", aliases=("h200-nvl",), capability="9.0", total_gib="139.80", total_source="no H200 NVL torch total found; same 141 GB HBM3e and the same 143771 MiB as the H200 SXM", total_basis="estimate", total_error_gib="0.1", smi_mib=143771, smi_source="a public GitHub file (search index id 52951295611) nvidia-smi: '| 0 NVIDIA H200 NVL ... | 0MiB / 143771MiB |' (also 58509401182, 57754680604)"),
    Device(name="NVIDIA GH200 480GB", aliases=("gh200", "gh200-96gb",), capability="9.0", total_gib="94.50", total_source="94.50 GiB is printed by 96 GB Hopper parts not named GH200 in the excerpt: a public GitHub file (search index id 57122334058) ('[Bug]: Llama-3.2-11B-Vision gives OOM error on 96GB H100 ... GPU 0 has a total capacity of 94.50 GiB') and 67650789906", total_basis="estimate", total_error_gib="0.1", smi_mib=97871, smi_source="a public GitHub file (search index id 54538862760) nvidia-smi: '| 0 NVIDIA GH200 480GB ... | 1MiB / 97871MiB |' (also 47182422736, 25187769457)"),
    Device(name="NVIDIA B200", aliases=("b200",), capability="10.0", total_gib="178.35", total_source="a public GitHub file (search index id 53753063886) (B200 on Modal): 'torch.OutOfMemoryError: Tried to allocate 768.00 MiB. GPU 0 has a total capacity of 178.35 GiB'; vLLM: a public GitHub file (search index id 57688774351) 'ValueError: Free memory on device cuda:0 (41.24/178.35 GiB) on startup'", smi_mib=183359, smi_source="nvidia-smi tables in public repositories: 'NVIDIA B200 ... 0MiB / 183359MiB'"),
    Device(name="NVIDIA B300 SXM6 AC", aliases=("b300", "b300-sxm6",), capability="10.3", total_gib="267.69", total_source="a public GitHub file (search index id 63390294774) (vLLM 0.26.0 on 1x B300; logs/deepseek-v4-flash-0731-b300-tp1-v0.26.0.log): 'Free memory on device (267.08/267.69 GiB) on startup. Desired GPU memory utilization is (0.92, 246.27 GiB)'", smi_mib=275040, smi_source="same file a public GitHub file (search index id 63390294774) nvidia-smi: '| 0 NVIDIA B300 SXM6 AC ... | 0MiB / 275040MiB |' (also 51978882626, 63125688786)"),
    Device(name="NVIDIA GB200", aliases=("gb200", "gb200-nvl72",), capability="10.0", total_gib="184.31", total_source="a public GitHub file (search index id 53295161045): 'Symptom (seen on GB200 decode, EP=8, VLLM_DEEPSEEK_V4_USE_MEGA_MOE=1): torch.OutOfMemoryError: Tried to allocate 1008.00 MiB. GPU 0 has a total capacity of 184.31 GiB'", smi_mib=189471, smi_source="a public GitHub file (search index id 51864327511) nvidia-smi: '| 0 NVIDIA GB200 ... | 0MiB / 189471MiB |' (also 56854586700, 58750094259)"),
    Device(name="NVIDIA GB300", aliases=("gb300", "gb300-nvl72",), capability="10.3", total_gib="276.50", total_source="GPU not named in the excerpts, only the GB300 class has ~277 GiB: a public GitHub file (search index id 55106805727) ('GPU 0 has a total capacity of 276.50 GiB ... PyTorch ... won't reach into CPU RAM and has a hard stop at the size of HBM') and 69276532955", smi_mib=284208, smi_source="a public GitHub file (search index id 66256874927) nvidia-smi: '| 0 NVIDIA GB300 ... | 0MiB / 284208MiB |' (also 51884305790, 52252791387)"),
    Device(name="NVIDIA GB10", aliases=("gb10", "dgx-spark",), capability="12.1", total_gib="121.69", total_source="MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47 (DGX Spark GB10): 'Free memory on device (110.37/121.69 GiB) on startup'"),
    Device(name="NVIDIA GeForce RTX 4090", aliases=("rtx4090", "4090",), capability="8.9", total_gib="23.52", total_source="a public GitHub file (search index id 70322061394) (self-test fixture of a forensics tool): '_FORENSICS = \"NVIDIA GeForce RTX 4090, 24564 MiB, 595.84, 3, 16\"' with '_OOM = (\"CUDA out of memory. ... GPU 0 has a total capacity of 23.52 GiB ...'", smi_mib=24564, smi_source="vllm-project/vllm#7553 (4x RTX 4090): 'Memory-Usage showed by nvidia-smi is 23859MiB / 24564MiB on each card'"),
    Device(name="NVIDIA GeForce RTX 5090", aliases=("rtx5090", "5090",), capability="12.0", total_gib="31.36", total_source="a public GitHub file (search index id 57035389060): '# wan2.2 SGLang generate.log — CUDA OOM on RTX 5090 32GB ... GPU 0 has a total capacity of 31.36 GiB'; vLLM: a public GitHub file (search index id 56144132466)", smi_mib=32607, smi_source="a public GitHub file (search index id 54072508781): '显卡：`NVIDIA GeForce RTX 5090` - 总显存：`32607MiB`' (also 11564912287, 59230063610)"),
    Device(name="NVIDIA RTX 6000 Ada Generation", aliases=("rtx6000-ada", "rtx-6000-ada",), capability="8.9", total_gib="47.48", total_source="a public GitHub file (search index id 23688622983): \"torch.cuda.get_device_properties() = (name='NVIDIA RTX 6000 Ada Generation', major=8, minor=9, total_memory=48622MB, multi_processor_count=142)\"", smi_mib=49140, smi_source="a public GitHub file (search index id 69525018277) nvidia-smi: '| 0 NVIDIA RTX 6000 Ada Generation ... | 8192MiB / 49140MiB |' (ECC off, the default)"),
    Device(name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition", aliases=("rtx-pro-6000", "rtx-pro-6000-ws", "pro6000",), capability="12.0", total_gib="94.97", total_source="ESTIMATE from the Server Edition (same 96 GB GDDR7, same 97887 MiB): 94.97; unnamed 96 GB Blackwell OOMs print 94.97 (a public GitHub file (search index id 56272186476) '... 94.97 GiB ... our 95 GB Blackwell budget')", total_basis="estimate", total_error_gib="0.05", smi_mib=97887, smi_source="a public GitHub file (search index id 70545271188): \"name='NVIDIA RTX PRO 6000 Blackwell Workstation Edition', memory_total_mib=97887\""),
    Device(name="NVIDIA RTX PRO 6000 Blackwell Server Edition", aliases=("rtx-pro-6000-server", "rtx-pro-6000-se", "gcp-g4",), capability="12.0", total_gib="94.97", total_source="a public GitHub file (search index id 63089480649): \"[H3-GPU] device0 name='NVIDIA RTX PRO 6000 Blackwell Server Edition' capability=12.0 vram=97250MB\" (97250 MiB = 94.97 GiB); vLLM on a 94.97 GiB card: 2215860382/VedioSifter train_run_20260421_065709.log 'Free memory on device (93.47/94.97 GiB) on startup' (v0.12, GPU not named)", smi_mib=97887, smi_source="a public GitHub file (search index id 54916593241): '6 x NVIDIA RTX PRO 6000 Blackwell Server Edition / 97887 MiB per GPU / Driver 595.71.05' (also 71483614771: vLLM 0.26.0 env json '97887 MiB')"),
    Device(name="AMD Instinct MI210", aliases=("mi210",), capability="gfx90a", total_gib="63.98", total_source="same 64 GB HBM2e as one MI250X GCD, whose torch total is 65520 MB = 63.98 GiB (see MI250X); no MI210 torch total found", total_basis="estimate", total_error_gib="0.05", smi_mib=65520, smi_source="rocminfo on 8x MI210 (quoted in a public GitHub file (search index id 56810016388)): 'Marketing Name: AMD Instinct MI210 ... Pool 1 ... Size: 67092480(0x3ffc000) KB' -> 67092480/1024 = 65520 MiB"),
    Device(name="AMD Instinct MI250X/MI250", aliases=("mi250x", "mi250",), capability="gfx90a", total_gib="63.98", total_source="a public GitHub file (search index id 6974116335): \"_CudaDeviceProperties(name='AMD Instinct MI250X', major=9, minor=0, gcnArchName='gfx90a:sramecc+:xnack-', total_memory=65520MB, multi_processor_count=110)\"; a public GitHub file (search index id 5556608319) \"name='AMD Instinct MI250X/MI250', ... gcnArchName='gfx90a', total_memory=65520MB\"", smi_mib=65520, smi_source="estimate: rocminfo Pool 1 = torch total in MiB (as on MI300X and MI210, whose 64 GB HBM2e is one MI250X GCD's): 65520 MB -> 65520 MiB"),
    Device(name="AMD Instinct MI300X", aliases=("mi300x",), capability="gfx942", total_gib="191.98", total_source="ROCm/ROCm#4203 (quoted in a public GitHub file (search index id 56715879733)): \"_CudaDeviceProperties(name='AMD Instinct MI300X', major=9, minor=4, gcnArchName='gfx942:sramecc+:xnack-', total_memory=196592MB, multi_processor_count=304\"; vLLM: a public GitHub file (search index id 70296656876) 'Free memory on device cuda:0 (8.08/191.98 GiB) on startup'", smi_mib=196592, smi_source="SGLang reads rocminfo, not nvidia-smi: 'Pool 1 ... Size: 201310208(0xbffc000) KB' (a public GitHub file (search index id 57974917807); 192 GB class) -> 201310208/1024 = 196592 MiB"),
    Device(name="AMD Instinct MI308X", aliases=("mi308x",), capability="gfx942", total_gib="191.98", total_source="192 GB HBM3 like the MI300X (compute-reduced China SKU); no MI308X torch total found", total_basis="estimate", total_error_gib="0.05", smi_mib=196592, smi_source="estimate: rocminfo Pool 1 as on MI300X (201310208 KB -> 196592 MiB)"),
    Device(name="AMD Instinct MI325X", aliases=("mi325x",), capability="gfx942", total_gib="255.98", total_source="a public GitHub file (search index id 57044329709) (vLLM rocm_aiter_mla_sparse path): 'HIP out of memory. Tried to allocate 13.54 GiB. GPU 0 has a total capacity of 255.98 GiB' (GPU not named; only the 256 GB MI325X fits)", smi_mib=262128, smi_source="estimate: rocminfo Pool 1 = torch total in MiB (as on MI300X): 255.98 GiB = 262128 MiB"),
    Device(name="AMD Instinct MI350X", aliases=("mi350x",), capability="gfx950", total_gib="287.98", total_source="288 GB HBM3E like the MI355X (same memory, lower clocks/TBP)", total_basis="estimate", total_error_gib="0.05", smi_mib=294896, smi_source="estimate: rocminfo Pool 1 = torch total in MiB: 287.98 GiB = 294896 MiB"),
    Device(name="AMD Instinct MI355X", aliases=("mi355x",), capability="gfx950", total_gib="287.98", total_source="a public GitHub file (search index id 61205771843) (SGLang on ROCm bench notes): 'torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.75 GiB. GPU 1 has a total capacity of 287.98 GiB' (also 69068205465, 59947289381 'TP8 attempts ... GPU N has a total capacity of 287.98 GiB'); GPU inferred (HIP + 288 GB = MI350 series)", smi_mib=294896, smi_source="estimate: rocminfo Pool 1 = torch total in MiB: 287.98 GiB = 294896 MiB"),
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
