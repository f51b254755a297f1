#!/usr/bin/env python3
"""Recompose AIConfigurator's per-operator breakdown for Llama-3.1-8B from crates/core/data/kernels/.

A check of the data files, not part of the ledger: for each SILICON breakdown in
../shared/research/peers-aiconfigurator/ (or the folder given as the first argument), look up the
GEMM and attention tables this project now owns, interpolating in log space (multilinear; linear
extrapolation from the edge segment outside the grid), and print AIConfigurator's figure beside
ours. Llama-3.1-8B: hidden 4096, 32 heads, 8 KV heads, head_dim 128, FFN 14336, vocab 128256,
32 layers, bf16 weights/activations/KV, TP 1.

Usage: python3 scripts/kernel-data/check_breakdown.py [PEERS_DIR]
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # leave no __pycache__ in the repository
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch import read_kernel_file  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "crates" / "core" / "data" / "kernels"
PEERS = REPO.parent.parent / "shared" / "research" / "peers-aiconfigurator"

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 32, 4096, 32, 8, 128, 14336, 128256
QKV_N = (HEADS + 2 * KV_HEADS) * HEAD_DIM

_cache: dict = {}


def tables(path: Path):
    if path not in _cache:
        _cache[path] = read_kernel_file(path)[1]
    return _cache[path]


def find(path: Path, **want):
    for attrs, axes, _, vals in tables(path):
        if all(attrs.get(k) == str(v) for k, v in want.items()):
            return axes, vals
    raise KeyError(f"{path}: no table {want}")


def interp(axes, vals, point) -> float:
    """Log-space multilinear interpolation; outside the grid, extrapolate the edge segment."""
    lo, w = [], []
    for (_, xs), x in zip(axes, point):
        lx = np.log(np.asarray(xs, float))
        t = math.log(x)
        if len(lx) == 1:
            lo.append(0); w.append(0.0); continue
        j = int(np.clip(np.searchsorted(lx, t, side="right") - 1, 0, len(lx) - 2))
        lo.append(j); w.append((t - lx[j]) / (lx[j + 1] - lx[j]))
    logv = np.log(vals)
    acc = 0.0
    for corner in range(1 << len(axes)):
        idx, wt = [], 1.0
        for d in range(len(axes)):
            hi = (corner >> d) & 1
            if len(axes[d][1]) == 1:
                if hi:
                    wt = 0.0
                idx.append(0); continue
            idx.append(lo[d] + hi)
            wt *= w[d] if hi else 1.0 - w[d]
        if wt != 0.0:
            acc += wt * logv[tuple(idx)]
    return math.exp(acc)


def gemm(gpu, eng, m, n, k):
    axes, vals = find(DATA / gpu / eng / "gemm.bin.zst", dtype="bfloat16")
    return interp(axes, vals, (m, n, k))


def attention(gpu, eng, op, batch, length):
    path = DATA / gpu / eng / f"{op}.bin.zst"
    for attrs, axes, _, vals in tables(path):
        if (attrs["attn_dtype"], attrs["kv_cache_dtype"], attrs["head_dim"], attrs["window_size"],
                attrs["num_heads"], attrs["num_kv_heads"]) == (
                "bfloat16", "bfloat16", str(HEAD_DIM), "0", str(HEADS), str(KV_HEADS)):
            return interp(axes, vals, (batch, length)), attrs["kernel"]
    raise KeyError(path)


def ours(gpu, eng, bs, isl):
    t = bs * isl
    us = {
        "context_qkv_gemm": LAYERS * gemm(gpu, eng, t, QKV_N, HIDDEN),
        "context_proj_gemm": LAYERS * gemm(gpu, eng, t, HIDDEN, HIDDEN),
        "context_gate_ffn1_gemm": LAYERS * gemm(gpu, eng, t, 2 * FFN, HIDDEN),
        "context_ffn2_gemm": LAYERS * gemm(gpu, eng, t, HIDDEN, FFN),
        "context_logits_gemm": gemm(gpu, eng, bs, VOCAB, HIDDEN),
        "context_attention": LAYERS * attention(gpu, eng, "context_attention", bs, isl)[0],
        "generation_qkv_gemm": LAYERS * gemm(gpu, eng, bs, QKV_N, HIDDEN),
        "generation_proj_gemm": LAYERS * gemm(gpu, eng, bs, HIDDEN, HIDDEN),
        "generation_gate_ffn1_gemm": LAYERS * gemm(gpu, eng, bs, 2 * FFN, HIDDEN),
        "generation_ffn2_gemm": LAYERS * gemm(gpu, eng, bs, HIDDEN, FFN),
        "generation_logits_gemm": gemm(gpu, eng, bs, VOCAB, HIDDEN),
        "generation_attention": LAYERS * attention(gpu, eng, "generation_attention", bs, isl)[0],
    }
    return {k: v / 1000.0 for k, v in us.items()}  # ms


def main():
    peers = Path(sys.argv[1]) if len(sys.argv) > 1 else PEERS
    print("| run | op | AIC ms | ours ms | ours/AIC |")
    print("|---|---|---|---|---|")
    ratios = []
    for f in sorted(peers.glob("*SILICON.txt")):
        m = re.search(r"llama3\.1-8b_(\w+?_sxm)_(?:(vllm|sglang)_)?static_bs(\d+)_isl(\d+)", f.name)
        gpu, eng, bs, isl = m.group(1), m.group(2) or "trtllm", int(m.group(3)), int(m.group(4))
        text = f.read_text()
        aic = {mm.group(1): float(mm.group(2)) for mm in
               re.finditer(r"^\s+((?:context|generation)_\w+)\s+([0-9.]+) ms", text, re.M)}
        mine = ours(gpu, eng, bs, isl)
        for op, v in mine.items():
            r = v / aic[op]
            ratios.append((op, r))
            print(f"| {gpu} {eng} bs{bs} isl{isl} | {op} | {aic[op]:.3f} | {v:.3f} | {r:.3f} |")
    by_op: dict = {}
    for op, r in ratios:
        by_op.setdefault(op, []).append(r)
    print("\n| op | runs | min ratio | median | max |")
    print("|---|---|---|---|---|")
    for op, rs in sorted(by_op.items()):
        print(f"| {op} | {len(rs)} | {min(rs):.3f} | {np.median(rs):.3f} | {max(rs):.3f} |")


if __name__ == "__main__":
    main()
