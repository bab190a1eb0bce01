"""Every option of SGLang 0.5.23's server parser, as data: the flags a `python -m sglang.launch_server` / `sglang serve`
line may hold (inputs/serve/sglang.py refuses any other, naming it, and says which it reads). Read from the wheel:
each `A[T, Arg(...)]` field of srt/arg_groups/fields/*.py is `--field-name` (or its Arg cli_name) plus its aliases
(srt/arg_groups/arg_utils.py:288-330 add_cli_args_from_dataclass); a bool field is a store_true switch; plus the
parser's own registrations in srt/server_args.py:353-431 (--config, --disable-cuda-graph, --enable-dp-attention, ...).
argparse's prefix abbreviations are accepted as SGLang accepts them (`--tp` for --tp-size). Earlier releases
(0.5.14 - 0.5.22) spell their flags the same way for every flag kvcalc reads (--cuda-graph-max-bs is read as
0.5.19's, srt/server_args.py:3929, and as 0.5.23's --cuda-graph-max-bs-decode). Imported only for SGLang lines.
"""

# Switches (store_true: no value).
SWITCHES = frozenset("""
abort-on-priority-when-disabled allow-auto-truncate checkpoint-engine-wait-weights-before-ready
constrained-json-disable-any-whitespace dcp-replicate-q-proj debug-cuda-graph delete-ckpt-after-loading
disable-aiter-allreduce-fusion-in-decode disable-aiter-allreduce-fusion-in-prefill disable-attn-tp-gather
disable-chunked-prefix-cache disable-cuda-graph disable-cuda-graph-padding disable-custom-all-reduce
disable-decode-cuda-graph disable-fast-image-processor disable-flashinfer-autotune
disable-flashinfer-cutlass-moe-fp4-allgather disable-hybrid-swa-memory disable-outlines-disk-cache
disable-overlap-schedule disable-prefill-cuda-graph disable-priority-preemption disable-radix-cache
disable-shared-experts-fusion disable-tokenizer-batch-decode disaggregation-decode-enable-offload-kvcache
disaggregation-decode-enable-radix-cache disaggregation-enable-kv-checksum dllm-fdfo
enable-adaptive-dispatch-to-encoder enable-aiter-allreduce-fusion enable-amd-monokernel
enable-attn-tp-input-scattered enable-broadcast-mm-inputs-process enable-cache-report enable-cp-decode-attn-tp
enable-cudagraph-gc enable-custom-logit-processor enable-decoder-swa-bounded-replay
enable-deepseek-v4-fp4-indexer enable-dense-mlp-attn-tp enable-deterministic-inference enable-dp-attention
enable-dp-attention-local-control-broadcast enable-dp-lm-head enable-draft-weights-cpu-backup
enable-dsa-cache-layer-split enable-dsa-fused-indexer enable-dynamic-batch-tokenizer enable-dynamic-chunking
enable-elastic-expert-backup enable-encoder-swa-bounded-replay enable-eplb enable-flashinfer-allreduce-fusion
enable-flexkv enable-forward-pass-metrics enable-fp32-lm-head enable-fused-moe-sum-all-reduce
enable-fused-qk-norm-rope enable-hicache enable-hierarchical-cache enable-hisparse
enable-http-worker-reuseport enable-http2 enable-int8-mamba-checkpoint enable-kv-cache-sharding
enable-layernorm-sp enable-layerwise-nvtx-marker enable-linear-replayssm enable-linear-replayssm-spec
enable-linker-mla-dedup enable-lmcache enable-mamba-cache-stochastic-rounding enable-megamoe-for-layernorm-sp
enable-memory-saver enable-metrics enable-metrics-for-all-schedulers enable-mfu-metrics enable-mis
enable-mixed-chunk enable-mm-global-cache enable-mscclpp enable-multi-layer-eagle enable-nccl-nvls
enable-nvidia-megakernel enable-p2p-check enable-page-major-kv-layout enable-paged-experts
enable-pd-role-switch enable-pdmux enable-precise-embedding-interpolation enable-prefill-cp
enable-prefill-delayer enable-prefix-mm-cache enable-priority-scheduling enable-profile-cuda-graph
enable-request-time-stats-logging enable-response-store enable-return-aux-hidden-states
enable-return-hidden-states enable-return-indexer-topk enable-return-routed-experts enable-scattered-sconv
enable-session-radix-cache enable-shared-experts-attn-tp enable-single-batch-overlap enable-ssl-refresh
enable-streaming-session enable-strict-thinking enable-symm-mem enable-tf32-matmul
enable-tokenizer-batch-encode enable-torch-compile enable-torch-compile-debug-mode enable-torch-symm-mem
enable-tp-lm-head-all-to-all enable-trace enable-two-batch-overlap enable-unified-cache-external-linker
enable-unified-memory enable-w4a4-mxfp4-megamoe enable-waterfill enable-watermark enable-weights-cpu-backup
encoder-only enforce-disable-flashinfer-allreduce-fusion enforce-shared-experts-fusion
experts-shared-outer-loras export-metrics-to-file flashinfer-mla-disable-ragged grpc-mode
incremental-streaming-output is-embedding language-model-only language-only log-requests lora-strict-loading
lora-use-virtual-experts mlx-enable-sampling mm-enable-dp-encoder ple-offload-embedding pre-warm-nccl
prefill-only-disable-kv-cache quantize-and-serve remote-instance-weight-loader-start-seed-via-transfer-engine
return-input-ids return-output-ids schedule-low-priority-values-first show-time-cost skip-server-warmup
skip-tokenizer-init sleep-on-idle smg-grpc-mode speculative-adaptive
speculative-dspark-align-verify-tokens-to-graph-tier speculative-enable-w4a4-mxfp4-megamoe
speculative-use-block-verification speculative-use-rejection-sampling stream-response-default-include-usage
strip-thinking-cache triton-attention-reduce-in-fp32 trust-mm-content-hashes trust-remote-code
trust-request-chat-template use-ray weight-loader-disable-mmap weight-loader-drop-cache-after-load
weight-loader-prefetch-checkpoints
""".split())

# Options that take a value.
VALUED = frozenset("""
admin-api-key allowed-media-domains api-key asr-max-buffer-seconds asr-max-concurrent-sessions
attention-backend attention-context-parallel-size attention-data-parallel-size attn-cp-size attn-dp-size
base-gpu-id batch-notify-size bf16-gemm-backend boundary-reduction bucket-e2e-request-latency
bucket-inter-token-latency bucket-time-to-first-token c128-page-size chat-template chunked-prefill-size
completion-template config constrained-json-max-whitespace-cnt constrained-json-whitespace-pattern
context-bucket context-length cp-strategy cpu-offload-gb crash-dump-folder cuda-graph-backend-decode
cuda-graph-backend-prefill cuda-graph-bs-decode cuda-graph-bs-prefill cuda-graph-config
cuda-graph-max-bs-decode cuda-graph-max-bs-prefill cuda-graph-max-seq-len-prefill
cuda-graph-prefill-max-context custom-weight-loader data-parallel-size dcp-comm-backend dcp-size
debug-tensor-dump-input-file debug-tensor-dump-layers debug-tensor-dump-output-folder decode-attention-backend
decode-context-parallel-size decode-log-interval decoupled-spec-bind-endpoint decoupled-spec-connect-endpoints
decoupled-spec-rank decoupled-spec-role decrypted-config-file decrypted-draft-config-file deepep-config
deepep-dispatcher-output-dtype deepep-mode deepep-v2-mode default-chat-template-kwargs default-priority-value
detokenizer-worker-num device disaggregation-bootstrap-port disaggregation-decode-allocation-policy
disaggregation-decode-extra-slots disaggregation-decode-host-receive-threshold
disaggregation-decode-polling-interval disaggregation-decode-retraction-backup disaggregation-ib-device
disaggregation-mode disaggregation-transfer-backend dist-init-addr dist-timeout dllm-algorithm
dllm-algorithm-config download-dir dp-size dsa-decode-backend dsa-paged-mqa-logits-backend dsa-prefill-backend
dsa-topk-backend dsa-triton-union dsv4-attn-backend dsv4-prefill-backend dtype dwdp-size
dynamic-batch-tokenizer-batch-size dynamic-batch-tokenizer-batch-timeout elastic-ep-backend
elastic-ep-initial-size elastic-ep-join-mode elastic-ep-join-rank-offset elastic-ep-scale-timeout
enable-lean-attention enable-lora enable-lora-overlap-loading enable-multimodal enable-quant-communications
encoder-bootstrap-port encoder-register-urls encoder-transfer-backend encoder-urls engine-info-bootstrap-port
ep ep-dispatch-algorithm ep-num-redundant-experts ep-size eplb-algorithm
eplb-min-rebalancing-utilization-threshold eplb-rebalance-layers-per-chunk eplb-rebalance-num-iterations
expert-balancedness-report-mode expert-distribution-recorder-buffer-size expert-distribution-recorder-mode
expert-parallel-size export-metrics-to-file-dir extra-metric-labels fastapi-root-path file-storage-path
flashinfer-a2a-dispatch-type flashinfer-allreduce-fusion-backend flashinfer-autotune-skip-ops
flashinfer-mxfp4-moe-precision flexkv-config-file forward-hooks forward-pass-metrics-ipc-name
forward-pass-metrics-worker-id fp4-gemm-backend fp8-gemm-backend fuseep-mode gated-launch-port gc-threshold
gc-warning-threshold-secs generation-tokens-buckets gpu-id-step grammar-backend grpc-http-sidecar-port
grpc-port grpc-response-timeout-secs hf-chat-template-name hicache-host-memory-fraction
hicache-host-memory-mode hicache-io-backend hicache-mem-layout hicache-ratio hicache-size
hicache-storage-backend hicache-storage-backend-extra-config hicache-storage-prefetch-policy
hicache-storage-prefetch-retry-max-attempts hicache-storage-prefetch-retry-poll-interval hicache-write-policy
hierarchical-sparse-attention-extra-config hisparse-config host http2-initial-connection-window-size
http2-max-concurrent-streams image-processor-backend init-expert-location int8-mamba-ckpt-size
json-model-override-args kt-cpuinfer kt-max-deferred-experts-per-token kt-method kt-num-gpu-experts
kt-threadpool-count kt-weight-path kv-cache-dtype kv-canary kv-canary-real-data kv-canary-sweep-interval
kv-events-config limit-mm-data-per-request linear-attn-backend linear-attn-decode-backend
linear-attn-prefill-backend linear-attn-verify-backend linear-replayssm-cache-len lmcache-config-file
load-balance-method load-format load-publish-endpoint load-snapshot-publish-interval log-level log-level-http
log-requests-format log-requests-level log-requests-target lora-backend lora-drain-wait-threshold
lora-eviction-policy lora-paths lora-target-modules mamba-backend mamba-cache-philox-rounds
mamba-full-memory-ratio mamba-max-states-per-path mamba-radix-cache-strategy mamba-ssm-dtype
mamba-track-interval max-ep-size max-loaded-loras max-lora-chunk-size max-lora-rank max-loras-per-batch
max-mamba-cache-size max-prefill-tokens max-queued-requests max-running-requests max-total-tokens
media-url-max-file-size-mb mem-fraction-static min-free-slots-delay mm-attention-backend mm-feature-transport
mm-global-cache-backend mm-io-worker-num mm-preprocess-cache-size-mb mm-process-config mm-processor-worker-num
model model-checksum model-config-parser model-impl model-loader-extra-config model-path modelexpress-config
modelopt-checkpoint-restore-path modelopt-checkpoint-save-path modelopt-export-path modelopt-quant
moe-a2a-backend moe-data-parallel-size moe-dense-tp-size moe-dp-size moe-runner-backend monokernel-backend
mooncake-ib-device msprobe-dump-config nccl-init-addr nccl-port nnodes node-rank num-continuous-decode-steps
num-reserved-decode-tokens numa-node offload-group-size offload-mode offload-num-in-group
offload-prefetch-step optimistic-prefill-attempts otlp-service-name otlp-traces-endpoint page-size
paged-experts-num-resident pdmux-config-path pipeline-parallel-size ple-offload-backend ple-offload-dir port
pp-async-batch-depth pp-max-micro-batch-size pp-size preferred-sampling-params prefill-attention-backend
prefill-decode-interval prefill-decode-interval-min-bs prefill-delayer-forward-passes-buckets
prefill-delayer-max-delay-ms prefill-delayer-max-delay-passes prefill-delayer-queue-min-ratio
prefill-delayer-token-usage-low-watermark prefill-delayer-wait-seconds-buckets prefill-kv-cache-dequant-dtype
prefill-max-requests priority-scheduling-preemption-threshold prompt-tokens-buckets qsa-indexer-dtype
quantization quantization-param-path radix-cache-backend radix-eviction-policy radix-eviction-policy-config
random-seed reasoning-parser remote-instance-weight-loader-backend
remote-instance-weight-loader-seed-instance-ip remote-instance-weight-loader-seed-instance-service-port
remote-instance-weight-loader-send-weights-group-ports retraction-policy return-aux-hidden-state-layer-ids
return-hidden-states-mode revision rl-on-policy-target rl-quant-profile sampling-defaults
sampling-mask-max-tokens schedule-conservativeness schedule-policy scheduler-recv-interval served-model-name
shared-experts-tp-size sidecar sidecar-args sm-group-num smg-http-sidecar-port soft-watchdog-timeout
spec-trace-dir speculative-accept-threshold-acc speculative-accept-threshold-single
speculative-adaptive-config speculative-algorithm speculative-attention-mode speculative-dflash-block-size
speculative-domino-candidate-pool-size speculative-draft-attention-backend speculative-draft-kv-cache-dtype
speculative-draft-load-format speculative-draft-model speculative-draft-model-path
speculative-draft-model-quantization speculative-draft-model-revision speculative-draft-sink-size
speculative-draft-window-size speculative-dsa-topk-backend speculative-dspark-block-size
speculative-dspark-confidence-sts-path speculative-dspark-sps-table-path speculative-eagle-topk
speculative-moe-a2a-backend speculative-moe-runner-backend speculative-ngram-capacity
speculative-ngram-external-corpus-max-tokens speculative-ngram-external-corpus-path
speculative-ngram-external-sam-budget speculative-ngram-match-type speculative-ngram-max-bfs-breadth
speculative-ngram-max-trie-depth speculative-ngram-min-bfs-breadth speculative-num-draft-tokens
speculative-num-steps speculative-token-map ssl-ca-certs ssl-certfile ssl-keyfile ssl-keyfile-password
startup-weight-load-mode stream-interval swa-full-tokens-ratio swa-prefix-tails
tbo-token-distribution-threshold tensor-parallel-size tokenizer-backend
tokenizer-metrics-allowed-custom-labels tokenizer-metrics-custom-labels-header tokenizer-mode tokenizer-path
tokenizer-worker-num tool-call-parser tool-server torch-compile-max-bs tp-size trace-modules
triton-attention-num-kv-splits triton-attention-split-tile-size unified-cache-external-linker-backend
unified-cache-external-linker-config uno-lora-path uvicorn-access-log-exclude-prefixes warmups
watchdog-timeout watermark-config weight-cache-mode weight-cache-socket weight-cache-timeout
weight-loader-prefetch-num-threads weight-version
""".split())
