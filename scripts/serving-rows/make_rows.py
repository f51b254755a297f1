#!/usr/bin/env python3
"""Writes crates/cli/tests/data/serving/serving-rows.csv: published serving measurements, each with
the llm-ledger command that models it (PROVENANCE.md beside the CSV gives every source).

The measured numbers are copied from the sources by hand (below, with their URLs); the only thing
computed here is the scheduler limits trtllm-bench picks for the TensorRT-LLM rows, by the
heuristic of `tensorrt_llm/bench/build/tuning.py` (`calc_engine_setting`, `finetune_setting`) and
`tensorrt_llm/bench/benchmark/utils/general.py` (`get_settings`: without chunked prefill,
max_num_tokens is raised to at least the longest prompt plus max_batch_size).

Run from the repository root: python3 scripts/serving-rows/make_rows.py
"""
import csv
import math
import sys

GIB = 1024**3

# ---------------------------------------------------------------------------------------------
# TensorRT-LLM performance overview (trtllm-bench throughput, PyTorch backend, all requests queued
# at once; "Total Output Throughput (tokens/sec)").
TRT_URL = ("https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/"
           "docs/source/performance/perf-overview.md")
# The CUDA graphs the page's `llm_options.yml` captures (`cuda_graph_config.batch_sizes`, with
# `enable_padding: true`: a generation-only batch runs the graph of the next size up).
TRT_GRAPHS = "1,2,4,8,16,32,64,128,256,384,512,1024,2048,4096,8192"
ISL_OSL = [(128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (1000, 2000), (2048, 128),
           (2048, 2048), (5000, 500), (20000, 2000)]
# Requests per ISL/OSL pair, the page's `$num_requests` table.
NUM_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500,
                (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000,
                (500, 2000): 3000, (20000, 2000): 1000}
# Model: (tool preset, layers, KV heads, head size, parameters, embedding + LM-head parameters).
MODELS = {
    "Llama 3.1 8B": ("llama-3-8b", 32, 8, 128, 8.03e9, 2 * 128256 * 4096),
    "Llama 3.3 70B": ("llama-3.1-70b", 80, 8, 128, 70.6e9, 2 * 128256 * 8192),
    "Llama 3.1 405B": ("llama-3.1-405b", 126, 8, 128, 405.9e9, 2 * 128256 * 16384),
    # The router (48 × 128 × 2048) is left unquantised too; 12.6 M parameters, within rounding.
    "Qwen3-30B-A3B": ("qwen3-30b-a3b", 48, 4, 128, 30.5e9, 2 * 151936 * 2048),
}


def safetensors_param_count(model, prec):
    """The parameter count trtllm-bench reads from the checkpoint's safetensors metadata
    (`ModelConfig.get_param_count`: elements of every tensor). An FP8 checkpoint stores one
    element per weight (its scales are scalars); an NVFP4 checkpoint stores the linear layers'
    weights two to a uint8 element with one FP8 scale per 16 weights, and the embedding and LM
    head unquantised."""
    _, _, _, _, params, unquantised = MODELS[model]
    if prec == "FP8":
        return params
    linear = params - unquantised
    return linear / 2 + linear / 16 + unquantised
# GPU: (tool name, memory NVML reports, GiB).
GPUS = {"H100": ("h100-sxm", 81559 / 1024), "H200": ("h200", 143771 / 1024),
        "B200": ("b200", 183359 / 1024), "GB200": ("gb200", 189471 / 1024),
        # 97887 MiB, as nvidia-smi reports it on AIConfigurator's collection host
        # (systems/rtx_pro_6000_server.yaml at commit 095f58a5).
        "RTX PRO 6000": ("rtx-pro-6000", 97887 / 1024)}
# The page's tables: model -> [(GPU, TP, precision, [tok/s per ISL/OSL or None])].
TRT = {
    "Llama 3.3 70B": [
        ("B200", 1, "FP4", [11147, 9922, 6831, 7762, 7007, 6271, 1339, 4783, 1459, 665]),
        ("GB200", 1, "FP4", [12189, 11309, 7849, 9028, 7326, 6513, 1450, 5646, 1602, 755]),
        ("H200", 1, "FP8", [3803, 4336, 2872, 3666, 2909, 2994, 442, 2003, 566, 283]),
        ("H100", 2, "FP8", [6378, 6651, 4199, 5222, 4205, 4146, 762, 3082, 898, 437]),
    ],
    "Llama 3.1 405B": [
        ("B200", 4, "FP4", [6281, 8020, 6345, 6244, 5209, 4933, 749, 4212, 1048, 672]),
        ("GB200", 4, "FP4", [6740, 8151, 6608, 6540, 5389, 5135, 797, 4407, 1112, 739]),
        ("H200", 8, "FP8", [3814, 5348, 4741, 4724, 3330, 3722, 456, 2948, 650, 505]),
        ("H100", 8, "FP8", [3627, 4340, 3116, 3994, 2919, 2895, 453, 2296, 610, 345]),
    ],
    "Llama 3.1 8B": [
        ("H200", 1, "FP8", [27911, 26221, 18027, 20770, 17744, 16828, 3538, 12194, 3902, 1804]),
        ("H100", 1, "FP8", [28312, 22714, 14325, 17660, 15220, 13899, 3450, 9305, 3459, 1351]),
    ],
}


# Added later (numbered after the rows above, so that their ids stay): the page's one-GPU columns
# for the RTX 6000 Pro Blackwell Server Edition and for Qwen3-30B-A3B. The page runs its MoE models
# with `enable_attention_dp` and `--ep`, which on one GPU change nothing (one attention replica, one
# expert group). Its multi-GPU RTX columns are pipeline-parallel (left out) and its multi-GPU Qwen3
# columns use attention data parallelism (left out).
TRT_ONE_GPU = {
    "Llama 3.3 70B": [
        ("RTX PRO 6000", 1, "FP4", [3264, 2422, 1349, 1856, 1787, 1594, 393, 1074, 401, 142]),
    ],
    "Qwen3-30B-A3B": [
        ("B200", 1, "FP4", [39827, 37844, 24953, 27817, 25828, 22051, 6251, 17554, 6142, 2944]),
        ("GB200", 1, "FP4", [24107, 31311, 26337, 20604, 17481, 17177, 6595, 14719, 5908, 3203]),
        ("RTX PRO 6000", 1, "FP4", [28011, 12540, 7491, 10695, 9910, 8378, 3257, 5908, 2530, 871]),
    ],
}


def trtllm_bench_settings(model, gpu, tp, prec, isl, osl, kv_fraction=0.90):
    """(max_batch_size, max_num_tokens) as trtllm-bench computes them (FP8 KV cache: the
    checkpoints' `kv_cache_quant_algo`; 0.90, `--kv_cache_free_gpu_mem_fraction`'s default)."""
    _, layers, kv_heads, head, _, _ = MODELS[model]
    byte_per_elem = {"FP8": 1.0, "FP4": 0.5}[prec]
    byte_per_token = 2 * layers * max(tp, kv_heads) * head * 1.0 / GIB
    engine_size = safetensors_param_count(model, prec) * byte_per_elem / GIB
    available = GPUS[gpu][1] * tp - engine_size
    kv_requests = available * kv_fraction / (byte_per_token * (isl + osl))
    raw_bs = min(kv_requests, 4096)
    raw_token = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_token < 4096:
        tok = max(2048, 256 * math.ceil(raw_token / 256))
    elif raw_token < 8192:
        tok = 512 * math.ceil(raw_token / 512)
    else:
        tok = 1024 * math.ceil(raw_token / 1024)
    # Chunked prefill off (trtllm-bench's default): every prompt must fit one step.
    tok = max(tok, isl + bs)
    return bs, tok


def trt_rows():
    tables = [(model, cols) for table in (TRT, TRT_ONE_GPU) for model, cols in table.items()]
    for model, cols in tables:
        preset = MODELS[model][0]
        for gpu, tp, prec, values in cols:
            for (isl, osl), v in zip(ISL_OSL, values):
                if v is None:
                    continue
                bs, tok = trtllm_bench_settings(model, gpu, tp, prec, isl, osl)
                n = NUM_REQUESTS[(isl, osl)]
                w = "-w fp8 --gemm-activations fp8" if prec == "FP8" else "-w nvfp4 --gemm-activations fp4"
                tp_flag = f" --tp {tp}" if tp > 1 else ""
                cmd = (f"llm-ledger simulate -m {preset} -g {GPUS[gpu][0]}{tp_flag} {w} -k fp8 --arrivals closed "
                       f"--concurrency {n} --requests {n} --prompt {isl} --output {osl} --max-seqs {bs} "
                       f"--max-batched-tokens {tok} --cuda-graphs {TRT_GRAPHS} --engine trtllm")
                yield dict(
                    regime="offline", metric="throughput",
                    source=f"TensorRT-LLM perf-overview (v1.0, trtllm-bench throughput, PyTorch backend), {model} {prec}, {gpu} TP{tp}",
                    what=f"total output tok/s, {n} requests of {isl} in / {osl} out, all queued at once",
                    unit="tok/s", measured=v, scenario_command=cmd,
                    how_to_compare="simulate → summary.output_tokens_per_s",
                    note=(f"trtllm-bench heuristic: max_batch_size {bs}, max_num_tokens {tok} (chunked prefill off); "
                          f"CUDA graphs padded to the page's llm_options.yml sizes; FP8 KV cache (the checkpoint's); "
                          f"kv_cache_free_gpu_mem_fraction 0.90-0.95 on the page, the tool's KV capacity is its memory model's; {TRT_URL}"))


# ---------------------------------------------------------------------------------------------
# NVIDIA NIM 1.8.0, Llama-3.3-70B-Instruct FP8 on 2x H100 TP2 (genai-perf closed loops).
NIM_URL = "https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md"
NIM_5000_500 = [  # concurrency, TTFT ms, ITL ms, throughput tok/s
    (1, 406.77, 18.58, 51.67), (5, 546.7, 21.83, 218.48), (25, 688.69, 38.75, 623.4),
    (50, 834.51, 59.73, 814.37), (100, 7996.25, 92.91, 917.26), (150, 34794.22, 92.86, 920.9),
    (200, 61680.22, 93.06, 920.54), (250, 88605.32, 93.2, 920.12)]
# Already in e2e-rows.csv (docs/fidelity.md): ITL at 1-100 and TTFT at 1, and the 500/2000 rows at 1.
IN_E2E = {("itl", 1), ("itl", 5), ("itl", 25), ("itl", 50), ("itl", 100), ("ttft", 1)}


def nim_cmd(c, isl, osl):
    n = max(100, 20 * c)
    return (f"llm-ledger simulate -m llama-3.1-70b -g h100-sxm --tp 2 -w fp8 --gemm-activations fp8 -k fp8 "
            f"--arrivals closed --concurrency {c} --requests {n} --prompt {isl} --output {osl} --engine trtllm")


def nim_rows():
    src = "NVIDIA NIM 1.8.0 (TRT-LLM), Llama-3.3-70B-Instruct FP8, 2xH100 TP2"
    note = ("genai-perf closed loop (no warm-up requests: its default; every completed request counted); the tool runs "
            "20 x concurrency requests (at least 100), as rows 4.16-4.19 of docs/fidelity.md do; "
            f"FP8 KV cache (NIM's FP8 profiles; not stated by the source); {NIM_URL}")
    for c, ttft, itl, tput in NIM_5000_500:
        for metric, v, unit, how in [("ttft", ttft, "ms", "simulate → summary.ttft_s.mean"),
                                     ("itl", itl, "ms", "simulate → summary.itl_s.mean"),
                                     ("throughput", tput, "tok/s", "simulate → summary.output_tokens_per_s")]:
            if (metric, c) in IN_E2E:
                continue
            yield dict(regime="closed-loop", metric=metric, source=src,
                       what=f"{metric.upper() if metric != 'throughput' else 'output tok/s'}, concurrency {c}, 5000 in / 500 out",
                       unit=unit, measured=v, scenario_command=nim_cmd(c, 5000, 500), how_to_compare=how, note=note)
    yield dict(regime="closed-loop", metric="ttft", source=src, what="TTFT, concurrency 5, 500 in / 2000 out",
               unit="ms", measured=126.53, scenario_command=nim_cmd(5, 500, 2000),
               how_to_compare="simulate → summary.ttft_s.mean", note=note)


# ---------------------------------------------------------------------------------------------
# Oracle Cloud, Llama 3.1 405B FP8 on 8x MI300X with vLLM (October 2024: vLLM 0.6, the V0 engine).
OCI_URL = "https://blogs.oracle.com/cloud-infrastructure/post/serving-llama-31-405b-model-with-amd-mi300x-gpus"
OCI_LATENCY = [(1, 3.530), (2, 3.583), (4, 3.734), (8, 3.974), (16, 4.375), (32, 5.130), (64, 6.919),
               (128, 10.340), (256, 17.750)]
OCI_THROUGHPUT = [(128, 128, 1993), (128, 2048, 2794)]


def oci_rows():
    src = "Oracle Cloud blog (2024-10-10), Llama 3.1 405B FP8, 8x MI300X TP8, vLLM (V0)"
    base = "llm-ledger simulate -m llama-3.1-405b -g mi300x --tp 8 -w fp8 --gemm-activations fp8"
    sched = "--max-seqs 256 --max-batched-tokens 131072 --schedule prefill-first --engine vllm@0.6"
    for b, s in OCI_LATENCY:
        yield dict(regime="fixed-batch", metric="e2el", source=src,
                   what=f"mean latency of a batch of {b}, 128 in / 128 out (benchmark_latency.py)", unit="s", measured=s,
                   scenario_command=f"{base} --arrivals closed --concurrency {b} --requests {b} --prompt 128 --output 128 {sched}",
                   how_to_compare="simulate → summary.e2e_s.mean",
                   note=("vLLM benchmark_latency.py: one generate call of the batch; chunked prefill off (its flag's default), "
                         "max_num_seqs 256, the prompt budget max_model_len; vLLM version and KV precision not stated "
                         f"(October 2024: vLLM 0.6, V0); {OCI_URL}"))
    for isl, osl, v in OCI_THROUGHPUT:
        yield dict(regime="offline", metric="throughput", source=src,
                   what=f"output tok/s, 1000 requests of {isl} in / {osl} out (benchmark_throughput.py)", unit="tok/s",
                   measured=v,
                   scenario_command=f"{base} --arrivals closed --concurrency 1000 --requests 1000 --prompt {isl} --output {osl} {sched}",
                   how_to_compare="simulate → summary.output_tokens_per_s",
                   note=("vLLM benchmark_throughput.py: 1000 prompts (its default) in one generate call; chunked prefill off, "
                         f"max_num_seqs 256; vLLM version and KV precision not stated (October 2024: vLLM 0.6, V0); {OCI_URL}"))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "crates/cli/tests/data/serving/serving-rows.csv"
    cols = ["id", "regime", "metric", "source", "what", "unit", "measured", "scenario_command", "how_to_compare", "note"]
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for prefix, rows in [("trt", trt_rows()), ("nim", nim_rows()), ("oci", oci_rows())]:
            for i, r in enumerate(rows, 1):
                w.writerow(dict(id=f"S.{prefix}.{i:02d}", **r))


if __name__ == "__main__":
    main()
