#!/usr/bin/env python3
"""Fetch NVIDIA AIConfigurator's measured per-kernel tables and write compact data files.

Reproducible pipeline (see README.md in this folder):

1. ``pip download --no-deps aiconfigurator-core==0.12.0`` into a temporary directory (pinned
   platform tags, so every host gets the same wheel) and check its sha256 against the pin below.
2. Read the parquet tables under ``aiconfigurator_core/systems/data/<gpu>/<op>/<engine>/<version>/``.
3. Write grid files under ``crates/core/data/kernels/`` (text header + u16 log-encoded latencies; see
   README.md for the format), a manifest and the licence. Output is deterministic: sorted
   tables and axes, a fixed encoding, so a re-run gives byte-identical files.

Nothing is written outside the temporary directory except the output files (and, with
``--inventory``, the inventory listing).

Usage:
    python3 scripts/kernel-data/fetch.py                  # download, check, write crates/core/data/kernels/
    python3 scripts/kernel-data/fetch.py --wheel W.whl    # use a wheel already on disk (sha checked)
    python3 scripts/kernel-data/fetch.py --inventory scripts/kernel-data/inventory.tsv
    python3 scripts/kernel-data/fetch.py --dump crates/core/data/kernels/h100_sxm/trtllm/gemm.bin
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import yaml

PACKAGE = "aiconfigurator-core"
VERSION = "0.12.0"
WHEEL_NAME = "aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "aadc4aad0a00bf8a61c477c62bef43de479849c3aa0b1c3078068e08309eccc4"
DATA_PREFIX = "aiconfigurator_core/systems/data/"
SYSTEMS_PREFIX = "aiconfigurator_core/systems/"

# GPUs we keep (AIConfigurator system names). l4 is requested by the issue but the wheel ships no
# data for it (only a .gitkeep), nor for a100_pcie, h100_pcie and a30.
GPUS = ["a100_sxm", "h100_sxm", "h200_sxm", "b200_sxm", "l40s"]
ENGINES = ["trtllm", "vllm", "sglang"]

# Thinning: drop whole grid planes (one value of one axis) only where log-space multilinear
# interpolation over the kept grid reproduces every measured point of the full grid within this
# relative error.
THIN_TOL = 0.02
# Axes we try to thin, per op (others are kept whole).
THIN_AXES = {
    "gemm": ["m", "n", "k"],
    "context_attention": ["batch_size", "isl"],
    "generation_attention": ["batch_size", "step"],
}

MAGIC = "llm-ledger-kernel-table v1"

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


# --------------------------------------------------------------------------------------------
# Number formatting (deterministic)
# --------------------------------------------------------------------------------------------

# Values are stored as unsigned 16-bit little-endian codes of the log of the latency:
#     latency_us = CODE_BASE_US * exp(code / CODE_SCALE),   code 0xFFFF = not measured.
# Relative rounding error <= exp(0.5 / CODE_SCALE) - 1 = 0.024 %; range 0.001 us .. 7.9e10 us.
CODE_BASE_US = 0.001
CODE_SCALE = 2048
CODE_MISSING = 0xFFFF


def encode(x: float) -> int:
    if x is None or not math.isfinite(x):
        return CODE_MISSING
    c = int(round(math.log(x / CODE_BASE_US) * CODE_SCALE))
    if not 0 <= c < CODE_MISSING:
        raise ValueError(f"latency {x} us out of the encodable range")
    return c


def decode(c: int) -> float:
    return math.nan if c == CODE_MISSING else CODE_BASE_US * math.exp(c / CODE_SCALE)


def quantize(x: float) -> float:
    """The value a reader will decode for x (so thinning is checked against what is stored)."""
    return decode(encode(x))


def fmt(x: float) -> str:
    """4 significant digits, plain decimal notation (used by --dump only)."""
    if x is None or not math.isfinite(x):
        return "-"
    e = math.floor(math.log10(abs(x)))
    decimals = max(0, 3 - e)
    s = f"{round(x, 3 - e):.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def fmt_axis(v) -> str:
    return str(int(v))


# --------------------------------------------------------------------------------------------
# Wheel handling
# --------------------------------------------------------------------------------------------

def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download_wheel(tmp: Path) -> Path:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--only-binary=:all:",
        "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
        "--implementation", "cp", "--abi", "abi3",
        f"{PACKAGE}=={VERSION}", "-d", str(tmp),
    ]
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    path = tmp / WHEEL_NAME
    if not path.exists():
        raise SystemExit(f"expected {WHEEL_NAME} in {tmp}, got {sorted(os.listdir(tmp))}")
    return path


class Wheel:
    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path)
        self.names = sorted(self.zip.namelist())

    def read(self, name: str) -> bytes:
        return self.zip.read(name)

    def table(self, name: str):
        return pq.read_table(io.BytesIO(self.read(name)))

    def yaml(self, name: str):
        return yaml.safe_load(self.read(name))

    def parquets(self):
        return [n for n in self.names if n.startswith(DATA_PREFIX) and n.endswith(".parquet")]

    def copyright_lines(self) -> list[str]:
        lines = set()
        for n in self.names:
            if n.startswith(SYSTEMS_PREFIX) and n.endswith(".yaml"):
                for line in self.read(n).decode("utf-8", "replace").splitlines()[:5]:
                    m = re.match(r"#\s*SPDX-FileCopyrightText:\s*(.*)", line)
                    if m:
                        lines.add(m.group(1).strip())
        return sorted(lines)


# --------------------------------------------------------------------------------------------
# Inventory
# --------------------------------------------------------------------------------------------

def inventory(wheel: Wheel) -> str:
    out = ["# path (under aiconfigurator_core/systems/data/)\trows\tcolumns (name:type)"]
    for n in wheel.parquets():
        md = pq.read_metadata(io.BytesIO(wheel.read(n)))
        schema = md.schema.to_arrow_schema()
        cols = ",".join(f"{f.name}:{f.type}" for f in schema)
        out.append(f"{n[len(DATA_PREFIX):]}\t{md.num_rows}\t{cols}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# Grids and thinning
# --------------------------------------------------------------------------------------------

class Grid:
    """A dense N-d grid of latencies (µs) with NaN for unmeasured cells."""

    def __init__(self, attrs: dict, axes: list[tuple[str, list[int]]], points: dict):
        self.attrs = attrs
        self.axes = axes  # [(name, sorted values)]
        shape = [len(v) for _, v in axes]
        self.values = np.full(shape, np.nan)
        index = [{v: i for i, v in enumerate(vals)} for _, vals in axes]
        for key, lat in points.items():
            self.values[tuple(index[d][key[d]] for d in range(len(axes)))] = lat
        self.keep = [np.ones(len(v), dtype=bool) for _, v in axes]
        self.max_err = 0.0
        self.n_dropped = 0

    @property
    def n_measured(self) -> int:
        return int(np.isfinite(self.values).sum())

    def kept_values(self):
        return self.values[np.ix_(*[np.nonzero(k)[0] for k in self.keep])]

    def n_kept(self) -> int:
        return int(np.isfinite(self.kept_values()).sum())

    def interp_errors(self, keep) -> np.ndarray:
        """Relative error of log-space multilinear interpolation from the kept sub-grid, at every
        measured point of the full grid (NaN-corner interpolation counts as infinite error)."""
        nd = len(self.axes)
        logv = np.log(self.values)
        idx_kept = [np.nonzero(k)[0] for k in keep]
        sub = logv[np.ix_(*idx_kept)]
        lo, hi, w = [], [], []
        for d, (_, vals) in enumerate(self.axes):
            x = np.log(np.asarray(vals, dtype=float))
            xk = x[idx_kept[d]]
            j = np.searchsorted(xk, x, side="right") - 1
            j = np.clip(j, 0, len(xk) - 1)
            j1 = np.clip(j + 1, 0, len(xk) - 1)
            denom = np.where(j1 > j, xk[j1] - xk[j], 1.0)
            wd = np.where(j1 > j, (x - xk[j]) / denom, 0.0)
            wd = np.clip(wd, 0.0, 1.0)
            lo.append(j); hi.append(j1); w.append(wd)
        est = np.zeros(self.values.shape)
        for corner in range(1 << nd):
            idx = []
            weight = np.ones(self.values.shape)
            for d in range(nd):
                use_hi = (corner >> d) & 1
                sel = hi[d] if use_hi else lo[d]
                wd = w[d] if use_hi else 1.0 - w[d]
                shape = [1] * nd
                shape[d] = -1
                idx.append(sel.reshape(shape))
                weight = weight * wd.reshape(shape)
            vals = sub[tuple(idx)]
            # a NaN corner with zero weight does not matter
            contrib = np.where(weight > 0, weight * vals, 0.0)
            est = est + contrib
        measured = np.isfinite(self.values)
        err = np.abs(np.exp(est - logv) - 1.0)
        err = np.where(np.isfinite(err), err, np.inf)
        return err[measured]

    def thin(self, axes_to_thin: list[str], tol: float = THIN_TOL):
        names = [n for n, _ in self.axes]
        keep = [k.copy() for k in self.keep]
        for name in axes_to_thin:
            if name not in names:
                continue
            d = names.index(name)
            for i in range(1, len(keep[d]) - 1):  # never drop the end points
                keep[d][i] = False
                if self.interp_errors(keep).max() > tol:
                    keep[d][i] = True
        self.keep = keep
        errs = self.interp_errors(keep)
        self.max_err = float(errs.max()) if errs.size else 0.0
        self.n_dropped = self.n_measured - self.n_kept()
        self.dropped_errs = errs[errs > 1e-12] if self.n_dropped else np.array([])

    def render_line(self, prev: "Grid | None") -> str:
        """'table KEYVALUES | AXIS0 | AXIS1 ...'; an axis equal to the previous table's is '='."""
        keys = [str(v) for v in self.attrs.values()]
        assert all(k and not any(c.isspace() for c in k) and k not in "|=" for k in keys), keys
        parts = ["table " + " ".join(keys)]
        for d, ((_, vals), k) in enumerate(zip(self.axes, self.keep)):
            kept = [fmt_axis(v) for v, kk in zip(vals, k) if kk]
            if prev is not None and prev.kept_axis(d) == kept:
                parts.append("=")
            else:
                parts.append(" ".join(kept))
        return " | ".join(parts)

    def kept_axis(self, d: int) -> list[str]:
        return [fmt_axis(v) for v, kk in zip(self.axes[d][1], self.keep[d]) if kk]

    def codes(self) -> np.ndarray:
        flat = self.kept_values().reshape(-1)
        return np.array([encode(x) for x in flat], dtype="<u2")


def repeats_note(dups: int) -> list[str]:
    if not dups:
        return []
    return [f"repeated measurements of one point are averaged ({dups} extra source rows)"]


def rows_of(table) -> list[dict]:
    return table.to_pylist()


def build_grids(rows, key_cols, axis_cols, rename=None, value_col="latency"):
    """Group rows by key_cols, make one Grid per group over axis_cols. Latency ms → µs,
    quantised to the stored code. Repeated measurements of one point are averaged; returns the number
    of extra repeats so the header can say so."""
    rename = rename or {}
    raw = defaultdict(lambda: defaultdict(list))
    for r in rows:
        key = tuple(r[c] for c in key_cols)
        pt = tuple(int(r[c]) for c in axis_cols)
        raw[key][pt].append(float(r[value_col]) * 1000.0)
    dups = 0
    groups = {}
    for key, pts in raw.items():
        groups[key] = {}
        for pt, lats in pts.items():
            dups += len(lats) - 1
            # repeated measurements of one point: their mean (order-independent: sorted sum)
            groups[key][pt] = quantize(math.fsum(sorted(lats)) / len(lats))
    grids = []
    for key in sorted(groups, key=lambda k: tuple((str(type(x)), x) for x in k)):
        pts = groups[key]
        axes = [(rename.get(c, c), sorted({p[d] for p in pts})) for d, c in enumerate(axis_cols)]
        attrs = {rename.get(c, c): key[i] for i, c in enumerate(key_cols)}
        grids.append(Grid(attrs, axes, pts))
    return grids, dups


# --------------------------------------------------------------------------------------------
# Selection
# --------------------------------------------------------------------------------------------

def engine_versions(wheel: Wheel) -> dict:
    q = wheel.yaml(SYSTEMS_PREFIX + "query_versions.yaml")
    out = {}
    for gpu in GPUS:
        for eng in ENGINES:
            slot = q.get("overrides", {}).get(gpu, {}).get(eng) or q["defaults"][eng]
            out[(gpu, eng)] = slot["current"]
    return out


def nccl_version(wheel: Wheel, gpu: str) -> str:
    return str(wheel.yaml(f"{SYSTEMS_PREFIX}{gpu}.yaml")["misc"]["nccl_version"])


def device_name(rows) -> str:
    names = sorted({r.get("device") for r in rows if r.get("device")})
    return "; ".join(names) if names else "(not recorded)"


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

class Writer:
    def __init__(self, out: Path, wheel: Wheel, sha: str):
        self.out = out
        self.wheel = wheel
        self.sha = sha
        self.copyright = wheel.copyright_lines()
        self.manifest = []
        self.thin_report = []

    def header(self, src: str, gpu: str, device: str, engine: str, engine_version: str, op: str,
               notes: list[str]) -> list[str]:
        h = [
            "# llm-ledger kernel table. Generated by scripts/kernel-data/fetch.py; do not edit by hand.",
            f"# package: {PACKAGE} {VERSION} (PyPI), wheel {WHEEL_NAME}",
            f"# wheel_sha256: {self.sha}",
            f"# source_path: {src}",
            f"# gpu: {gpu} (device: {device})",
            f"# engine: {engine} {engine_version}",
            f"# op: {op}",
            "# licence: Apache-2.0; " + " / ".join(self.copyright)
            + " Full text: crates/core/data/kernels/LICENSE-aiconfigurator.txt",
            "# unit: latency_us = microseconds per kernel call (source column `latency`, ms, x 1000)",
            "# layout: line 'keys K1 K2 ...' names the table keys, 'axes A1 A2 ...' the grid axes,"
            " 'values COLUMN' the value; then one line per table: 'table k1 k2 ... | a1 values | a2"
            " values ...' ('=' = same axis values as the previous table); then 'data N'",
            f"# encoding: after 'data N' follow N little-endian u16 codes: every table's values in"
            f" table order, row-major over its axes (last axis fastest);"
            f" latency_us = {CODE_BASE_US} * exp(code / {CODE_SCALE}); code {CODE_MISSING} (0xFFFF)"
            " = not measured",
        ]
        return h + [f"# {n}" for n in notes]

    def write(self, relpath: str, header: list[str], grids: list[Grid], value_col: str,
              meta: dict):
        lines = [MAGIC] + list(header)
        lines.append("keys " + " ".join(meta["keys"]))
        lines.append("axes " + " ".join(meta["axes"]))
        lines.append(f"values {value_col}")
        prev = None
        for g in grids:
            assert list(g.attrs) == meta["keys"], (list(g.attrs), meta["keys"])
            assert [n for n, _ in g.axes] == meta["axes"]
            lines.append(g.render_line(prev))
            prev = g
        codes = np.concatenate([g.codes() for g in grids]) if grids else np.zeros(0, "<u2")
        lines.append(f"data {codes.size}")
        blob = ("\n".join(lines) + "\n").encode() + codes.astype("<u2").tobytes()
        path = self.out / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        _, back = read_kernel_file(path)
        for g, (_, axes, _, vals) in zip(grids, back):
            ref = g.kept_values()
            assert np.array_equal(np.isnan(ref), np.isnan(vals)), relpath
            ok = np.isfinite(ref)
            assert np.allclose(ref[ok], vals[ok], rtol=1e-9), relpath
        measured = sum(g.n_measured for g in grids)
        kept = sum(g.n_kept() for g in grids)
        errs = [e for g in grids for e in getattr(g, "dropped_errs", [])]
        entry = dict(meta)
        entry.update({
            "file": relpath,
            "tables": len(grids),
            "rows": kept,
            "source_rows": measured,
            "bytes": len(blob),
            "value_column": value_col,
            "thinned_max_rel_err": round(max(errs), 4) if errs else 0.0,
        })
        self.manifest.append(entry)
        if errs:
            a = np.asarray(errs)
            self.thin_report.append((relpath, measured, kept, float(np.median(a)),
                                     float(np.percentile(a, 95)), float(a.max())))
        print(f"wrote {relpath}: {len(grids)} tables, {kept}/{measured} points, "
              f"{len(blob)} bytes", file=sys.stderr)


def toml_str(s) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_val(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, list):
        return "[" + ", ".join(toml_val(x) for x in v) + "]"
    return toml_str(v)


# --------------------------------------------------------------------------------------------
# Reader (for --dump and the round-trip check; the Rust loader mirrors this)
# --------------------------------------------------------------------------------------------

def read_kernel_file(path: Path):
    """Returns (comment lines, [(attrs, [(axis, values)], value_col, np.ndarray)])."""
    raw = Path(path).read_bytes()
    pos = 0
    comments, tables = [], []
    keys = axes = col = None
    first = True
    while True:
        end = raw.index(b"\n", pos)
        line = raw[pos:end].decode()
        pos = end + 1
        if first:
            assert line == MAGIC, f"{path}: not a kernel table ({line!r})"
            first = False
        elif line.startswith("#"):
            comments.append(line)
        elif line.startswith("keys "):
            keys = line.split()[1:]
        elif line.startswith("axes "):
            axes = line.split()[1:]
        elif line.startswith("values "):
            col = line.split()[1]
        elif line.startswith("table "):
            parts = [p.split() for p in line[len("table "):].split("|")]
            attrs = dict(zip(keys, parts[0]))
            assert len(attrs) == len(keys) and len(parts) == 1 + len(axes), line
            ax = []
            for d, p in enumerate(parts[1:]):
                ax.append((axes[d], tables[-1][1][d][1] if p == ["="] else [int(v) for v in p]))
            tables.append((attrs, ax, col, int(np.prod([len(v) for _, v in ax]))))
        elif line.startswith("data "):
            total = int(line.split()[1])
            break
        else:
            raise ValueError(f"{path}: unexpected line {line!r}")
    codes = np.frombuffer(raw[pos:], dtype="<u2")
    assert codes.size == total == sum(t[3] for t in tables), f"{path}: size mismatch"
    out, off = [], 0
    for attrs, axes, col, count in tables:
        shape = [len(v) for _, v in axes]
        assert int(np.prod(shape)) == count
        c = codes[off:off + count].reshape(shape)
        off += count
        vals = np.where(c == CODE_MISSING, np.nan, CODE_BASE_US * np.exp(c / CODE_SCALE))
        out.append((attrs, axes, col, vals))
    return comments, out


def dump(path: Path) -> str:
    comments, tables = read_kernel_file(path)
    lines = list(comments)
    for attrs, axes, col, vals in tables:
        lines.append("table " + " ".join(f"{k}={v}" for k, v in attrs.items()))
        for name, v in axes:
            lines.append(f"axis {name} " + " ".join(str(x) for x in v))
        lines.append(f"values {col}")
        for row in vals.reshape(-1, vals.shape[-1]):
            lines.append(" ".join(fmt(x) for x in row))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------

def process(wheel: Wheel, sha: str, out: Path, gpus: list[str]):
    if out.exists():
        for p in sorted(out.rglob("*"), reverse=True):
            if p.is_file():
                p.unlink()
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    out.mkdir(parents=True, exist_ok=True)
    w = Writer(out, wheel, sha)
    versions = engine_versions(wheel)
    present = set(wheel.names)

    for gpu in gpus:
        for eng in ENGINES:
            ver = versions[(gpu, eng)]
            base = f"{DATA_PREFIX}{gpu}"

            # GEMM: one grid per dtype over m x n x k.
            src = f"{base}/gemm/{eng}/{ver}/gemm_perf.parquet"
            if src in present:
                rows = rows_of(wheel.table(src))
                grids, dups = build_grids(rows, ["gemm_dtype"], ["m", "n", "k"],
                                          rename={"gemm_dtype": "dtype"})
                for g in grids:
                    g.thin(THIN_AXES["gemm"])
                kernels = sorted({(r["gemm_dtype"], r["kernel_source"]) for r in rows})
                notes = [
                    "columns: dtype (table key); m = tokens (rows of the activation), n = output"
                    " features, k = input features; latency_us",
                    "kernels measured (dtype: kernel_source): "
                    + "; ".join(f"{d}: {k}" for d, k in kernels),
                    f"thinning: whole m/n/k planes dropped only where log-space multilinear"
                    f" interpolation reproduces every dropped measurement within {THIN_TOL:.0%}",
                ]
                w.write(f"{gpu}/{eng}/gemm.bin",
                        w.header(src, gpu, device_name(rows), eng, ver, "gemm", notes + repeats_note(dups)),
                        grids, "latency_us",
                        {"gpu": gpu, "engine": eng, "engine_version": ver, "op": "gemm", "repeats_averaged": dups,
                         "source_path": src, "keys": ["dtype"], "axes": ["m", "n", "k"]})

            # Attention: one grid per series over batch x length.
            for op, lencol in [("context_attention", "isl"), ("generation_attention", "step")]:
                src = f"{base}/attention/{eng}/{ver}/{op}_perf.parquet"
                if src not in present:
                    continue
                rows = rows_of(wheel.table(src))
                for r in rows:
                    r.setdefault("window_size", 0)
                    assert r.get("beam_width", 1) == 1
                keys = ["kernel_source", "attn_dtype", "kv_cache_dtype", "head_dim", "window_size",
                        "num_heads", "num_key_value_heads"]
                grids, dups = build_grids(rows, keys, ["batch_size", lencol],
                                          rename={"num_key_value_heads": "num_kv_heads",
                                                  "kernel_source": "kernel"})
                for g in grids:
                    g.thin(THIN_AXES[op])
                if op == "context_attention":
                    lnote = ("isl = prompt tokens per sequence (prefill, no cached prefix);"
                             " step column of the source is always 0")
                else:
                    lnote = ("step = AIConfigurator's `step`: tokens already in the KV cache when one"
                             " new token per sequence is decoded (measured at 2^j - 1); isl is 1")
                notes = [
                    "keys: kernel, attn_dtype, kv_cache_dtype, head_dim, window_size (0 = full"
                    " attention), num_heads, num_kv_heads (per GPU, i.e. after tensor parallelism)",
                    f"axes: batch_size (sequences), {lencol}. {lnote}",
                    "one latency = the attention kernel of ONE layer (not including QKV/out projections)",
                    f"thinning: whole batch/length lines dropped only where log-space interpolation"
                    f" reproduces every dropped measurement within {THIN_TOL:.0%}",
                ]
                w.write(f"{gpu}/{eng}/{op}.bin",
                        w.header(src, gpu, device_name(rows), eng, ver, op, notes + repeats_note(dups)),
                        grids, "latency_us",
                        {"gpu": gpu, "engine": eng, "engine_version": ver, "op": op, "repeats_averaged": dups,
                         "source_path": src, "keys": ["kernel", "attn_dtype", "kv_cache_dtype",
                                                      "head_dim", "window_size", "num_heads",
                                                      "num_kv_heads"],
                         "axes": ["batch_size", lencol]})

            # MLA (DeepSeek-style multi-head latent attention), small tables: where measured.
            for op, fam, fname, lencol in [
                ("context_mla", "mla", "context_mla_perf", "isl"),
                ("generation_mla", "mla", "generation_mla_perf", "step"),
            ]:
                src = f"{base}/{fam}/{eng}/{ver}/{fname}.parquet"
                if src not in present:
                    continue
                rows = rows_of(wheel.table(src))
                keys = ["kernel_source", "mla_dtype", "kv_cache_dtype", "num_heads", "tp_size"]
                ren = {"kernel_source": "kernel"}
                grids, dups = build_grids(rows, keys, ["batch_size", lencol], rename=ren)
                for g in grids:
                    g.thin(["batch_size", lencol])
                notes = [
                    "keys: kernel, mla_dtype, kv_cache_dtype, num_heads, tp_size (as in the source);"
                    f" axes: batch_size, {lencol} (same meaning as in the attention tables)",
                    "one latency = the MLA attention core of ONE layer",
                    f"thinning: whole batch/length lines dropped only where log-space interpolation"
                    f" reproduces every dropped measurement within {THIN_TOL:.0%}",
                ]
                w.write(f"{gpu}/{eng}/{op}.bin",
                        w.header(src, gpu, device_name(rows), eng, ver, op,
                                 notes + repeats_note(dups)),
                        grids, "latency_us",
                        {"gpu": gpu, "engine": eng, "engine_version": ver, "op": op,
                         "repeats_averaged": dups, "source_path": src,
                         "keys": [ren.get(k, k) for k in keys], "axes": ["batch_size", lencol]})
            src = f"{base}/mla_bmm/{eng}/{ver}/mla_bmm_perf.parquet"
            if src in present:
                rows = rows_of(wheel.table(src))
                keys = ["op_name", "kernel_source", "bmm_dtype", "num_heads"]
                ren = {"kernel_source": "kernel", "bmm_dtype": "dtype"}
                grids, dups = build_grids(rows, keys, ["num_tokens"], rename=ren)
                notes = ["keys: op (mla_gen_pre / mla_gen_post: the batched matmuls around MLA"
                         " decode), kernel, dtype, num_heads; axis: num_tokens", "not thinned"]
                w.write(f"{gpu}/{eng}/mla_bmm.bin",
                        w.header(src, gpu, device_name(rows), eng, ver, "mla_bmm",
                                 notes + repeats_note(dups)),
                        grids, "latency_us",
                        {"gpu": gpu, "engine": eng, "engine_version": ver, "op": "mla_bmm",
                         "repeats_averaged": dups, "source_path": src,
                         "keys": [ren.get(k, k) for k in keys], "axes": ["num_tokens"]})

            # Custom (engine-owned) all-reduce: grid per (kernel, dtype, num_gpus) over message size.
            src = f"{base}/comm/{eng}/{ver}/custom_allreduce_perf.parquet"
            if src in present:
                rows = rows_of(wheel.table(src))
                grids, dups = build_grids(rows, ["op_name", "kernel_source", "allreduce_dtype",
                                                 "num_gpus"], ["message_size"],
                                          rename={"kernel_source": "kernel",
                                                  "allreduce_dtype": "dtype"})
                notes = ["keys: op, kernel (eager / CUDA-graph variants where measured), dtype,"
                         " num_gpus; axis: message_size (elements of dtype, as in the source)",
                         "not thinned"]
                w.write(f"{gpu}/{eng}/custom_allreduce.bin",
                        w.header(src, gpu, device_name(rows), eng, ver, "custom_allreduce", notes + repeats_note(dups)),
                        grids, "latency_us",
                        {"gpu": gpu, "engine": eng, "engine_version": ver,
                         "op": "custom_allreduce", "repeats_averaged": dups, "source_path": src,
                         "keys": ["op_name", "kernel", "dtype", "num_gpus"],
                         "axes": ["message_size"]})

        # NCCL collectives: the system's own NCCL version (misc.nccl_version in <gpu>.yaml).
        nv = nccl_version(wheel, gpu)
        src = f"{DATA_PREFIX}{gpu}/comm/nccl/{nv}/nccl_perf.parquet"
        if src in present:
            rows = rows_of(wheel.table(src))
            grids, dups = build_grids(rows, ["op_name", "nccl_dtype", "num_gpus"], ["message_size"],
                                      rename={"nccl_dtype": "dtype"})
            inner = sorted({str(r.get("version")) for r in rows if r.get("version")})
            notes = ["keys: op (all_gather, all_reduce, alltoall, reduce_scatter), dtype, num_gpus;"
                     " axis: message_size (elements of dtype, as in the source)",
                     f"nccl version: directory {nv} (misc.nccl_version of systems/{gpu}.yaml);"
                     f" the table's own version column says {', '.join(inner) or '(none)'}",
                     "not thinned"]
            w.write(f"{gpu}/nccl.bin",
                    w.header(src, gpu, device_name(rows), "nccl", nv, "nccl", notes + repeats_note(dups)),
                    grids, "latency_us",
                    {"gpu": gpu, "engine": "nccl", "engine_version": nv, "op": "nccl", "repeats_averaged": dups,
                     "source_path": src, "keys": ["op_name", "dtype", "num_gpus"],
                     "axes": ["message_size"]})

    (out / ".gitattributes").write_text("*.bin binary\n")

    # Licence.
    apache = (HERE / "Apache-2.0.txt").read_text()
    lic = ["The files under crates/core/data/kernels/ are derived from NVIDIA AIConfigurator's performance",
           f"database as shipped in the PyPI package {PACKAGE} {VERSION}",
           f"(wheel {WHEEL_NAME}, sha256 {WHEEL_SHA256}),",
           "licensed under the Apache License, Version 2.0 (License-Expression: Apache-2.0 in the",
           "wheel's METADATA; SPDX-License-Identifier: Apache-2.0 in its source files).",
           "The wheel ships no LICENSE or NOTICE file; its files carry these copyright lines:",
           ""] + [f"    {c}" for c in w.copyright] + [
           "",
           "Modifications by llm-ledger (scripts/kernel-data/fetch.py): selected tables were",
           "converted from parquet to grids with a text header and 16-bit log-encoded latencies",
           "(microseconds instead of milliseconds, relative rounding error <= 0.024 %), repeated",
           "measurements of one point averaged, and some grid planes of the attention and MLA",
           "tables dropped where log-space interpolation reproduces them within 2 %.",
           "", "=" * 78, ""]
    (out / "LICENSE-aiconfigurator.txt").write_text("\n".join(lic) + apache)

    # Manifest.
    m = ["# Kernel tables derived from NVIDIA AIConfigurator (Apache-2.0). Generated by",
         "# scripts/kernel-data/fetch.py; do not edit by hand. rows = measured values kept,",
         "# source_rows = measured values in the source table, thinned_max_rel_err = worst",
         "# log-space interpolation error at a dropped point.",
         "",
         "[source]",
         f"package = {toml_str(PACKAGE)}",
         f"version = {toml_str(VERSION)}",
         f"wheel = {toml_str(WHEEL_NAME)}",
         f"wheel_sha256 = {toml_str(sha)}",
         f"license = {toml_str('Apache-2.0')}",
         f"copyright = {toml_val(w.copyright)}",
         f"license_file = {toml_str('LICENSE-aiconfigurator.txt')}",
         f"unit = {toml_str('latency_us: microseconds per call')}",
         f"thinning_tolerance = {THIN_TOL!r}",
         f"value_encoding = {toml_str(f'u16 LE; latency_us = {CODE_BASE_US} * exp(code / {CODE_SCALE}); {CODE_MISSING} = not measured')}",
         "",
         "# Engine versions used per GPU: the 'current' slot of systems/query_versions.yaml;",
         "# nccl = misc.nccl_version of systems/<gpu>.yaml.",
         "[engine_versions]"]
    for gpu in gpus:
        m.append(f"{gpu} = {{ " + ", ".join(
            f"{eng} = {toml_str(versions[(gpu, eng)])}" for eng in ENGINES)
            + f", nccl = {toml_str(nccl_version(wheel, gpu))} }}")
    m.append("")
    for e in sorted(w.manifest, key=lambda e: e["file"]):
        m.append("[[file]]")
        e["columns"] = e["keys"] + e["axes"] + [e["value_column"]]
        for k in ["file", "gpu", "engine", "engine_version", "op", "source_path", "columns", "keys",
                  "axes", "value_column", "tables", "rows", "source_rows", "repeats_averaged", "bytes",
                  "thinned_max_rel_err"]:
            m.append(f"{k} = {toml_val(e[k])}")
        m.append("")
    manifest_text = "\n".join(m)
    tomllib.loads(manifest_text)  # must parse
    (out / "manifest.toml").write_text(manifest_text)

    # Thinning report (stdout, for the README).
    print("| file | source points | kept | dropped | median err of dropped | p95 | max |")
    print("|---|---|---|---|---|---|---|")
    for rel, meas, kept, med, p95, mx in w.thin_report:
        print(f"| {rel} | {meas} | {kept} | {meas - kept} | {med:.2%} | {p95:.2%} | {mx:.2%} |")
    total = sum(e["bytes"] for e in w.manifest)
    print(f"\ntotal bytes of tables: {total}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "crates" / "core" / "data" / "kernels"))
    ap.add_argument("--wheel", help="use this wheel file instead of downloading (sha256 checked)")
    ap.add_argument("--inventory", help="also write the inventory of every parquet table here")
    ap.add_argument("--gpus", default=",".join(GPUS), help="comma-separated subset (testing)")
    ap.add_argument("--dump", help="print a crates/core/data/kernels/*.bin file as text and exit")
    args = ap.parse_args()
    if args.dump:
        sys.stdout.write(dump(Path(args.dump)))
        return

    tmp = Path(tempfile.mkdtemp(prefix="aic-kernel-data-"))
    try:
        if args.wheel:
            wheel_path = Path(args.wheel)
        else:
            wheel_path = download_wheel(tmp)
        sha = sha256_of(wheel_path)
        if sha != WHEEL_SHA256:
            raise SystemExit(f"sha256 mismatch for {wheel_path}: {sha} != pinned {WHEEL_SHA256}")
        print(f"wheel {wheel_path.name} sha256 {sha} (matches pin)", file=sys.stderr)
        wheel = Wheel(wheel_path)
        if args.inventory:
            Path(args.inventory).write_text(inventory(wheel))
        process(wheel, sha, Path(args.out), args.gpus.split(","))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
