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
    # repo mode: a commit of the git repository (no network), all ten GPUs, moe.bin, outliers.tsv
    python3 scripts/kernel-data/fetch.py --repo GIT_DIR --commit SHA --out /tmp/kernels-out
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
import textwrap
import tomllib
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np
import zstandard
import pyarrow.parquet as pq
import yaml

PACKAGE = "aiconfigurator-core"
VERSION = "0.12.0"
WHEEL_NAME = "aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "aadc4aad0a00bf8a61c477c62bef43de479849c3aa0b1c3078068e08309eccc4"
DATA_PREFIX = "aiconfigurator_core/systems/data/"
SYSTEMS_PREFIX = "aiconfigurator_core/systems/"

# Repo mode (--repo GIT_DIR --commit SHA): the same tables read from a commit of the public
# AIConfigurator git repository, where the package lives under aic-core/src/.
REPO_URL = "github.com/ai-dynamo/aiconfigurator"
REPO_DATA_PREFIX = "aic-core/src/aiconfigurator_core/systems/data/"
REPO_SYSTEMS_PREFIX = "aic-core/src/aiconfigurator_core/systems/"
# The collector's manifest: the default runtime version per framework (plus per-family
# overrides). Used for the 'current' version where systems/query_versions.yaml is absent.
REPO_FRAMEWORK_MANIFEST = "collector/framework_manifest.yaml"

# GPUs we keep (AIConfigurator system names). l4 is requested by the issue but the wheel ships no
# data for it (only a .gitkeep), nor for a100_pcie, h100_pcie and a30.
GPUS = ["a100_sxm", "h100_sxm", "h200_sxm", "b200_sxm", "l40s"]
# Every GPU with data (the default in repo mode). b60 is Intel (vllm only; oneCCL, not NCCL).
ALL_GPUS = ["a100_sxm", "b200_sxm", "b300_sxm", "b60", "gb200", "gb300", "h100_sxm", "h200_sxm",
            "l40s", "rtx_pro_6000_server"]
ENGINES = ["trtllm", "vllm", "sglang"]
# The op families whose tables the 8 existing file kinds (and moe.bin) read, with their tables.
FAMILY_TABLES = {
    "gemm": ["gemm_perf"],
    "attention": ["context_attention_perf", "generation_attention_perf"],
    "mla": ["context_mla_perf", "generation_mla_perf"],
    "mla_bmm": ["mla_bmm_perf"],
    "comm": ["custom_allreduce_perf"],
    "moe": ["moe_perf"],
}
# Outliers (report only): a measured point whose log-latency is off the log-space interpolation of
# its two measured neighbours by more than this factor along EVERY axis where it has two.
OUTLIER_FACTOR = 3.0
# MoE: the routing distribution kept (AIConfigurator's uniform one).
MOE_DISTRIBUTION = "balanced"

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
    kind = "wheel"
    data_prefix = DATA_PREFIX
    systems_prefix = SYSTEMS_PREFIX

    def __init__(self, path: Path, sha: str = ""):
        self.zip = zipfile.ZipFile(path)
        self.names = sorted(self.zip.namelist())
        self.sha = sha
        self._names = set(self.names)

    def exists(self, name: str) -> bool:
        return name in self._names

    def provenance_lines(self) -> list[str]:
        return [f"# package: {PACKAGE} {VERSION} (PyPI), wheel {WHEEL_NAME}",
                f"# wheel_sha256: {self.sha}"]

    def manifest_source(self) -> list[str]:
        return [f"package = {toml_str(PACKAGE)}",
                f"version = {toml_str(VERSION)}",
                f"wheel = {toml_str(WHEEL_NAME)}",
                f"wheel_sha256 = {toml_str(self.sha)}"]

    def licence_intro(self, copyright: list[str]) -> list[str]:
        return (["The files under crates/core/data/kernels/ are derived from NVIDIA AIConfigurator's performance",
                 f"database as shipped in the PyPI package {PACKAGE} {VERSION}",
                 f"(wheel {WHEEL_NAME}, sha256 {self.sha}),",
                 "licensed under the Apache License, Version 2.0 (License-Expression: Apache-2.0 in the",
                 "wheel's METADATA; SPDX-License-Identifier: Apache-2.0 in its source files).",
                 "The wheel ships no LICENSE or NOTICE file; its files carry these copyright lines:",
                 ""] + [f"    {c}" for c in copyright])

    def licence_text(self) -> str:
        return (HERE / "Apache-2.0.txt").read_text()

    def read(self, name: str) -> bytes:
        return self.zip.read(name)

    def table(self, name: str):
        return pq.read_table(io.BytesIO(self.read(name)))

    def yaml(self, name: str):
        return yaml.safe_load(self.read(name))

    def parquets(self):
        return [n for n in self.names if n.startswith(self.data_prefix) and n.endswith(".parquet")]

    def copyright_lines(self) -> list[str]:
        lines = set()
        for n in self.names:
            if n.startswith(self.systems_prefix) and n.endswith(".yaml"):
                for line in self.read(n).decode("utf-8", "replace").splitlines()[:5]:
                    m = re.match(r"#\s*SPDX-FileCopyrightText:\s*(.*)", line)
                    if m:
                        lines.add(m.group(1).strip())
        return sorted(lines)


class GitRepo(Wheel):
    """The same interface over one commit of a git directory (bare or not): every file is read
    with `git cat-file --batch` from that commit's tree; nothing else is touched, no network."""

    kind = "repo"
    data_prefix = REPO_DATA_PREFIX
    systems_prefix = REPO_SYSTEMS_PREFIX

    def __init__(self, git_dir: Path, commit: str):
        self.git_dir = str(git_dir)
        self.commit = self._git("rev-parse", "--verify", f"{commit}^{{commit}}").strip()
        ls = self._git("ls-tree", "-r", "-z", "--full-tree", self.commit)
        self.blobs = {}
        for entry in ls.split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            _mode, typ, oid = meta.split()
            if typ == "blob":
                self.blobs[path] = oid
        self.names = sorted(self.blobs)
        self._names = set(self.names)
        self.sha = self.commit
        self._cat = subprocess.Popen(["git", "--git-dir", self.git_dir, "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _git(self, *args) -> str:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True,
                              capture_output=True).stdout.decode()

    def read(self, name: str) -> bytes:
        oid = self.blobs[name]
        self._cat.stdin.write(oid.encode() + b"\n")
        self._cat.stdin.flush()
        head = self._cat.stdout.readline().split()
        assert len(head) == 3 and head[1] == b"blob", (name, head)
        size = int(head[2])
        data = self._cat.stdout.read(size)
        self._cat.stdout.read(1)  # the newline after the object
        if data.startswith(b"version https://git-lfs"):
            raise SystemExit(f"{name} is a Git LFS pointer in {self.git_dir}, not the file")
        return data

    def provenance_lines(self) -> list[str]:
        return [f"# source: git repository {REPO_URL}, commit {self.commit}",
                "# (read from the commit's tree with git cat-file; licence: LICENSE at the repository root)"]

    def manifest_source(self) -> list[str]:
        return [f"repository = {toml_str(REPO_URL)}",
                f"commit = {toml_str(self.commit)}",
                f"data_path = {toml_str(REPO_DATA_PREFIX)}"]

    def licence_intro(self, copyright: list[str]) -> list[str]:
        return (["The files under crates/core/data/kernels/ are derived from NVIDIA AIConfigurator's performance",
                 f"database in the git repository {REPO_URL} at commit",
                 f"{self.commit} (directory {REPO_DATA_PREFIX}),",
                 "licensed under the Apache License, Version 2.0: the repository's LICENSE file, reproduced",
                 "below. Its files carry these copyright lines (SPDX-FileCopyrightText):",
                 ""] + [f"    {c}" for c in copyright])

    def licence_text(self) -> str:
        text = self.read("LICENSE").decode()
        if "Apache License" not in text or "Version 2.0" not in text:
            raise SystemExit("the repository's LICENSE is not the Apache License 2.0: stop and review")
        return text


# --------------------------------------------------------------------------------------------
# Inventory
# --------------------------------------------------------------------------------------------

def inventory(wheel: Wheel) -> str:
    out = [f"# path (under {wheel.data_prefix})\trows\tcolumns (name:type)"]
    for n in wheel.parquets():
        md = pq.read_metadata(io.BytesIO(wheel.read(n)))
        schema = md.schema.to_arrow_schema()
        cols = ",".join(f"{f.name}:{f.type}" for f in schema)
        out.append(f"{n[len(wheel.data_prefix):]}\t{md.num_rows}\t{cols}")
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

    def outliers(self, factor: float = OUTLIER_FACTOR):
        """Measured points off their neighbours: along every axis where the point has a measured
        neighbour on each side, its ln(latency) differs from the log-space interpolation of the two
        by more than ln(factor) (and there is at least one such axis). Computed on the full source
        grid (before thinning). Yields (point text, value, estimate along the best-fitting axis,
        signed ratio value/estimate of that axis, axes checked)."""
        logv = np.log(self.values)
        measured = np.isfinite(logv)
        nd = len(self.axes)
        best = np.full(logv.shape, np.inf)   # smallest |deviation| over checked axes
        best_est = np.full(logv.shape, np.nan)
        checked = np.zeros(logv.shape, dtype=int)
        for d, (_, vals) in enumerate(self.axes):
            if len(vals) < 3:
                continue
            x = np.log(np.asarray(vals, dtype=float))
            sl = lambda a, b: tuple(slice(a, b) if e == d else slice(None) for e in range(nd))
            lo, mid, hi = logv[sl(0, -2)], logv[sl(1, -1)], logv[sl(2, None)]
            shape = [1] * nd
            shape[d] = -1
            w = ((x[1:-1] - x[:-2]) / (x[2:] - x[:-2])).reshape(shape)
            est = lo + w * (hi - lo)
            ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(mid)
            dev = np.where(ok, np.abs(mid - est), np.inf)
            better = ok & (dev < best[sl(1, -1)])
            best_est[sl(1, -1)] = np.where(better, est, best_est[sl(1, -1)])
            best[sl(1, -1)] = np.where(better, dev, best[sl(1, -1)])
            checked[sl(1, -1)] += ok
        flag = measured & (checked > 0) & (best > math.log(factor))
        for idx in zip(*np.nonzero(flag)):
            point = " ".join(f"{n}={vals[i]}" for (n, vals), i in zip(self.axes, idx))
            v, e = float(np.exp(logv[idx])), float(np.exp(best_est[idx]))
            yield point, v, e, v / e, int(checked[idx])

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
    empty = 0
    for r in rows:
        key = tuple(r[c] for c in key_cols)
        pt = tuple(int(r[c]) for c in axis_cols)
        if min(pt) <= 0:
            # A kernel of no work (a GEMM of m = 0: gb300 vllm 0.14.0 has such rows): not a grid point.
            empty += 1
            continue
        raw[key][pt].append(float(r[value_col]) * 1000.0)
    if empty:
        print(f"dropped {empty} rows with an axis value <= 0 (key columns {key_cols})", file=sys.stderr)
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

def parse_version(v: str) -> tuple:
    """AIConfigurator's own ordering of version directories (get_latest_database_version in
    aic-core/src/aiconfigurator_core/sdk/perf_database.py): (major, minor, patch, stable, rc,
    suffix number); a release sorts above its release candidates."""
    v = v.lower()

    def suffix_number(start: int) -> int:
        m = re.search(r"(\d+)(?!.*\d)", v[start:])
        return int(m.group(1)) if m else 0

    def pre() -> list[int]:
        m = re.search(r"rc(\d+)", v)
        if m:
            return [0, int(m.group(1))]
        return [0, 0] if "rc" in v else [1, 0]

    m = re.search(r"(\d+)\.(\d+)\.(\d+)", v)
    if m:
        return (*map(int, m.groups()), *pre(), suffix_number(m.end()))
    m = re.search(r"v?(\d+)\.(\d+)", v)
    if m:
        return (*map(int, m.groups()), 0, *pre(), suffix_number(m.end()))
    nums = [int(x) for x in re.findall(r"\d+", v)[:3]]
    return (*(nums + [0] * (3 - len(nums))), 0, 0, 0) if nums else (0, 0, 0, -1, 0, 0)


def table_versions(wheel: Wheel, gpu: str, eng: str) -> dict:
    """{version: [tables]} of the tables we read (FAMILY_TABLES) for one GPU and engine."""
    out = defaultdict(list)
    for fam, tables in FAMILY_TABLES.items():
        prefix = f"{wheel.data_prefix}{gpu}/{fam}/{eng}/"
        for n in wheel.names:
            if n.startswith(prefix) and n.endswith(".parquet"):
                ver, fname = n[len(prefix):].split("/", 1)
                if fname[:-len(".parquet")] in tables:
                    out[ver].append(fname[:-len(".parquet")])
    return out


def engine_versions(wheel: Wheel, gpus: list[str]) -> tuple[dict, str]:
    """The 'current' engine version per (GPU, engine), and how it was chosen (for the manifest).

    systems/query_versions.yaml where the source has one (the wheel). The git repository has none:
    there the version is the collector's default runtime (collector/framework_manifest.yaml:
    frameworks.<engine>.default.version) where the GPU has tables at that version, else the newest
    version (AIConfigurator's ordering) that holds any of the tables we read; engines with no such
    table on a GPU are absent (b60 has vllm only)."""
    qpath = wheel.systems_prefix + "query_versions.yaml"
    out = {}
    if wheel.exists(qpath):
        q = wheel.yaml(qpath)
        for gpu in gpus:
            for eng in ENGINES:
                slot = q.get("overrides", {}).get(gpu, {}).get(eng) or q["defaults"].get(eng)
                if slot and slot.get("current"):
                    out[(gpu, eng)] = slot["current"]
        return out, "the 'current' slot of systems/query_versions.yaml"
    fm = wheel.yaml(REPO_FRAMEWORK_MANIFEST)["frameworks"]
    for gpu in gpus:
        for eng in ENGINES:
            have = table_versions(wheel, gpu, eng)
            if not have:
                continue
            default = str(fm[eng]["default"]["version"])
            out[(gpu, eng)] = default if default in have else max(have, key=parse_version)
    return out, (f"no systems/query_versions.yaml at this commit: {REPO_FRAMEWORK_MANIFEST}'s default"
                 " runtime per engine where the GPU has tables at it, else the newest version"
                 " (AIConfigurator's version ordering) holding any gemm/attention/mla/mla_bmm/"
                 "custom_allreduce/moe table")


def nccl_version(wheel: Wheel, gpu: str) -> str:
    return str(wheel.yaml(f"{wheel.systems_prefix}{gpu}.yaml")["misc"]["nccl_version"])


def comm_source(wheel: Wheel, gpu: str):
    """(library label, version, table path) of the GPU's collective table: NCCL at the version
    the system YAML names, or, where that has no data and the YAML names a oneCCL version (b60),
    oneCCL's table, whose columns are NCCL's."""
    misc = wheel.yaml(f"{wheel.systems_prefix}{gpu}.yaml")["misc"]
    nv = str(misc["nccl_version"])
    src = f"{wheel.data_prefix}{gpu}/comm/nccl/{nv}/nccl_perf.parquet"
    if wheel.exists(src):
        return "nccl", nv, src
    ov = misc.get("oneccl_version")
    if ov is not None:
        src = f"{wheel.data_prefix}{gpu}/comm/oneccl/{ov}/oneccl_perf.parquet"
        if wheel.exists(src):
            return "oneccl", str(ov), src
    return "nccl", nv, None


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
        self.outliers = []  # (file, keys, point, value, estimate, ratio, axes)
        self.outlier_checked = {}  # file -> measured points checked

    def header(self, src: str, gpu: str, device: str, engine: str, engine_version: str, op: str,
               notes: list[str]) -> list[str]:
        h = [
            "# llm-ledger kernel table. Generated by scripts/kernel-data/fetch.py; do not edit by hand.",
            *self.wheel.provenance_lines(),
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
        self.outlier_checked[relpath] = measured
        for g in grids:
            for point, value, est, ratio, axes in g.outliers():
                self.outliers.append((relpath, " ".join(f"{k}={v}" for k, v in g.attrs.items()),
                                      point, value, est, ratio, axes))
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
    if str(path).endswith(".zst"):
        raw = unpack(raw)
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

def thin_joint(grids: list["Grid"], axis: str, tol: float = THIN_TOL):
    """Drop values of `axis` from every grid at once (one shared axis, so every table line after
    the first writes '='), only where each grid still reproduces every one of its measured
    points within tol. Grids whose axis differs from the first's are thinned alone."""
    if not grids:
        return
    d = [n for n, _ in grids[0].axes].index(axis)
    ref = grids[0].axes[d][1]
    same = [g for g in grids if g.axes[d][1] == ref]
    for g in grids:
        if g.axes[d][1] != ref:
            g.thin([axis], tol)
    keep = np.ones(len(ref), dtype=bool)
    for i in range(1, len(ref) - 1):
        keep[i] = False
        for g in same:
            k = [kk.copy() for kk in g.keep]
            k[d] = keep
            if g.interp_errors(k).max() > tol:
                keep[i] = True
                break
    for g in same:
        g.keep[d] = keep.copy()
        errs = g.interp_errors(g.keep)
        g.max_err = float(errs.max()) if errs.size else 0.0
        g.n_dropped = g.n_measured - g.n_kept()
        g.dropped_errs = errs[errs > 1e-12] if g.n_dropped else np.array([])


# Our op (file name) per source table, for the tables every engine version may hold or reuse.
VERSION_TABLES = {
    "gemm_perf": ("gemm", "gemm"),
    "context_attention_perf": ("attention", "context_attention"),
    "generation_attention_perf": ("attention", "generation_attention"),
    "context_mla_perf": ("mla", "context_mla"),
    "generation_mla_perf": ("mla", "generation_mla"),
    "mla_bmm_perf": ("mla_bmm", "mla_bmm"),
    "custom_allreduce_perf": ("comm", "custom_allreduce"),
    "moe_perf": ("moe", "moe"),
    "gdn_perf": ("linear_attention", "linear_attention"),
    "mamba2_perf": ("linear_attention", "mamba2"),
    "kda_perf": ("kda", "kda"),
    "mhc_module_perf": ("mhc", "mhc"),
}


def held_versions(wheel: Wheel, gpu: str, eng: str) -> list[str]:
    """Every version of one GPU and engine that holds (own parquet) or reuses (reuse.yaml) one of
    the tables we read, in AIConfigurator's version order. A build from a source checkout
    (`0.1.dev19262`, setuptools-scm's number for a commit past no release tag: vLLM's Kimi-K3
    preview image) has no place in the release order and is not read."""
    out = set()
    for fam in sorted({f for f, _ in VERSION_TABLES.values()}):
        prefix = f"{wheel.data_prefix}{gpu}/{fam}/{eng}/"
        for n in wheel.names:
            if not n.startswith(prefix):
                continue
            ver, fname = n[len(prefix):].split("/", 1)
            table = fname.rsplit(".", 1)[0]
            if (fname.endswith(".parquet") and table in VERSION_TABLES
                    and VERSION_TABLES[table][0] == fam) or fname == "reuse.yaml":
                out.add(ver)
    dev = sorted(v for v in out if ".dev" in v)
    if dev:
        print(f"skip {gpu}/{eng} {', '.join(dev)}: a source build outside the release order", file=sys.stderr)
    return sorted((v for v in out if ".dev" not in v), key=parse_version)


def reuse_entries(wheel: Wheel, gpu: str, eng: str, ver: str) -> list[tuple]:
    """(gpu, engine, version, op, from_version) of every table a version's reuse.yaml shares with
    another version (schema_version 1: `reuse: [{table, from_version}]`), for the tables we read."""
    out = []
    for fam in sorted({f for f, _ in VERSION_TABLES.values()}):
        path = f"{wheel.data_prefix}{gpu}/{fam}/{eng}/{ver}/reuse.yaml"
        if not wheel.exists(path):
            continue
        doc = wheel.yaml(path)
        assert doc.get("schema_version") == 1, (path, doc.get("schema_version"))
        for e in doc.get("reuse") or []:
            table = str(e["table"])
            if table in VERSION_TABLES and VERSION_TABLES[table][0] == fam:
                out.append((gpu, eng, ver, VERSION_TABLES[table][1], str(e["from_version"])))
    return out


def write_engine_version(w: "Writer", wheel: Wheel, present: set, gpu: str, eng: str, ver: str,
                         dest: str, moe: bool, moe_thin: str, moe_distributions: dict):
    """Every table we read of one GPU, engine and version, written under `dest`
    (`<gpu>/<engine>` for the default version, `<gpu>/<engine>@<version>` for the others)."""
    base = f"{wheel.data_prefix}{gpu}"

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
        w.write(f"{dest}/gemm.bin",
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
        w.write(f"{dest}/{op}.bin",
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
        w.write(f"{dest}/{op}.bin",
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
        w.write(f"{dest}/mla_bmm.bin",
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
        w.write(f"{dest}/custom_allreduce.bin",
                w.header(src, gpu, device_name(rows), eng, ver, "custom_allreduce", notes + repeats_note(dups)),
                grids, "latency_us",
                {"gpu": gpu, "engine": eng, "engine_version": ver,
                 "op": "custom_allreduce", "repeats_averaged": dups, "source_path": src,
                 "keys": ["op_name", "kernel", "dtype", "num_gpus"],
                 "axes": ["message_size"]})

    if moe:
        write_moe(w, wheel, present, base, gpu, eng, ver, dest, moe_thin, moe_distributions)

    for table in RECURRENT_TABLES:
        write_recurrent(w, wheel, present, base, gpu, eng, ver, dest, table)
    write_mhc(w, wheel, present, base, gpu, eng, ver, dest)


class RecurrentTable(NamedTuple):
    """One measured table of a recurrent (linear-attention or state-space) layer's own kernels."""
    family: str  # the folder of AIConfigurator's data it sits in
    parquet: str  # its file there
    op: str  # the file we write (`<op>.bin`)
    rename: dict  # source column -> our key name (RecurrentShape's: the key/value heads and sizes)
    phases: tuple  # phases kept
    description: str  # what one latency is, with the collector it comes from


RECURRENT_KEYS = ["kernel", "head_k_dim", "head_v_dim", "num_k_heads", "num_v_heads"]

RECURRENT_TABLES = [
    RecurrentTable(
        "linear_attention", "gdn_perf", "linear_attention", {"kernel_source": "kernel"},
        ("context", "generation"),
        "one latency = one Gated DeltaNet layer's kernel (causal_conv1d_* the short convolution;"
        " chunk_* the chunked delta rule of a prompt; fused_recurrent_* one decode step);"
        " the collector keeps the recurrent and convolution states in bf16"
        " (collector/<engine>/collect_gdn.py)"),
    RecurrentTable(
        "kda", "kda_perf", "kda", {"kernel_source": "kernel"}, ("context", "generation"),
        "one latency = one Kimi Delta Attention layer's kernel (causal_conv1d_* the short"
        " convolutions of q, k and v; chunk_kda the chunked delta rule of a prompt;"
        " kda_fused_decode / fused_recurrent_kda_packed_decode one decode step); the collector keeps"
        " the recurrent state in float32 and the convolution state in bf16"
        " (collector/sglang/collect_kda.py); the speculative 'verify' phase is not kept"),
    RecurrentTable(
        "linear_attention", "mamba2_perf", "mamba2",
        {"kernel_source": "kernel", "d_state": "head_k_dim", "head_dim": "head_v_dim",
         "n_groups": "num_k_heads", "nheads": "num_v_heads"}, ("context", "generation"),
        "one latency = one Mamba-2 layer's short convolution over x, B and C (causal_conv1d_fn over"
        " a prompt, causal_conv1d_update for one decode token; the table holds no scan kernel);"
        " columns renamed as llm-ledger's RecurrentShape maps Mamba-2: d_state -> head_k_dim,"
        " head_dim -> head_v_dim, n_groups -> num_k_heads, nheads -> num_v_heads; rows of one shape"
        " measured for several models (d_model, chunk_size: not read by the convolution) averaged"
        " (collector/trtllm/collect_mamba2.py)"),
]


def write_recurrent(w: "Writer", wheel: Wheel, present: set, base: str, gpu: str, eng: str, ver: str,
                    dest: str, table: RecurrentTable):
    """A recurrent layer's measured kernels, per kernel and head shape, over batch x sequence
    length: `<dest>/<table.op>.bin`."""
    src = f"{base}/{table.family}/{eng}/{ver}/{table.parquet}.parquet"
    if src not in present:
        return
    rows = [r for r in rows_of(wheel.table(src)) if str(r["phase"]) in table.phases]
    if not rows:
        return
    source_keys = [next(k for k, v in table.rename.items() if v == key) if key in table.rename.values() else key
                   for key in RECURRENT_KEYS]
    axes = ["batch_size", "seq_len"]
    grids, dups = build_grids(rows, source_keys, axes, rename=table.rename)
    for g in grids:
        g.thin(axes)
    kernels = sorted({(str(r["phase"]), str(r["kernel_source"])) for r in rows})
    notes = [
        "keys: kernel, head_k_dim, head_v_dim, num_k_heads, num_v_heads (per GPU: the source"
        " measures tensor-parallel shards as head counts); axes: batch_size (sequences),"
        " seq_len (tokens per sequence: the prompt in the context phase, 1 in generation)",
        "kernels (phase: kernel): " + "; ".join(f"{ph}: {k}" for ph, k in kernels),
        table.description,
        f"thinning: whole batch/length lines dropped only where log-space interpolation"
        f" reproduces every dropped measurement within {THIN_TOL:.0%}",
    ]
    w.write(f"{dest}/{table.op}.bin",
            w.header(src, gpu, device_name(rows), eng, ver, table.op, notes + repeats_note(dups)),
            grids, "latency_us",
            {"gpu": gpu, "engine": eng, "engine_version": ver, "op": table.op,
             "repeats_averaged": dups, "source_path": src, "keys": RECURRENT_KEYS, "axes": axes})


def write_mhc(w: "Writer", wheel: Wheel, present: set, base: str, gpu: str, eng: str, ver: str, dest: str):
    """DeepSeek-V4's manifold-constrained hyper-connections: the `pre` (streams mixed into a
    block's input) and `post` (its output mixed back) kernels per kernel, hidden size and stream
    count, over tokens: `<dest>/mhc.bin`, one site's time (the source times every site of a layer
    in one row, `num_sites` of them)."""
    src = f"{base}/mhc/{eng}/{ver}/mhc_module_perf.parquet"
    if src not in present:
        return
    rows = rows_of(wheel.table(src))
    if not rows or "num_sites" not in rows[0]:
        # SGLang 0.5.10's earlier schema: what one row times (one site or a layer's) is not recorded.
        print(f"skip {src}: no num_sites column", file=sys.stderr)
        return
    sinkhorn = sorted({int(r["sinkhorn_iters"]) for r in rows})
    sites = sorted({int(r["num_sites"]) for r in rows})
    rows = [{**r, "latency": float(r["latency"]) / int(r["num_sites"])} for r in rows]
    keys = ["op_name", "kernel_source", "hidden_size", "hc_mult"]
    ren = {"kernel_source": "kernel"}
    grids, dups = build_grids(rows, keys, ["num_tokens"], rename=ren)
    for g in grids:
        g.thin(["num_tokens"])
    kernels = sorted({(str(r["op_name"]), str(r["kernel_source"])) for r in rows})
    notes = [
        "keys: op_name (pre: the streams mixed into a block's input, with their RMSNorm, the"
        " mixing projection and the Sinkhorn normalisation; post: the block's output mixed back"
        " into the streams), kernel, hidden_size, hc_mult (streams); axis: num_tokens",
        "kernels (op: kernel): " + "; ".join(f"{op}: {k}" for op, k in kernels),
        f"one latency = one site's kernel: the source row times the {', '.join(map(str, sites))}"
        " sites of a decoder layer (attention and MLP) in one CUDA graph and is divided by"
        " num_sites (collector/<engine>/collect_mhc_module.py); sinkhorn_iters"
        f" {', '.join(map(str, sinkhorn))} in every row (not a key)",
        f"thinning: token points dropped only where log-space interpolation reproduces every"
        f" dropped measurement within {THIN_TOL:.0%}",
    ]
    w.write(f"{dest}/mhc.bin",
            w.header(src, gpu, device_name(rows), eng, ver, "mhc", notes + repeats_note(dups)),
            grids, "latency_us",
            {"gpu": gpu, "engine": eng, "engine_version": ver, "op": "mhc",
             "repeats_averaged": dups, "source_path": src,
             "keys": [ren.get(k, k) for k in keys], "axes": ["num_tokens"]})


def write_moe(w: "Writer", wheel: Wheel, present: set, base: str, gpu: str, eng: str, ver: str,
              dest: str, moe_thin: str, moe_distributions: dict):
    # MoE (fused routed-expert kernel): one series per model shape and parallel layout over
    # num_tokens, the uniform ('balanced') routing only.
    src = f"{base}/moe/{eng}/{ver}/moe_perf.parquet"
    if src in present:
        rows = rows_of(wheel.table(src))
        dists = sorted({str(r["distribution"]) for r in rows})
        moe_distributions[dest] = dists
        rows = [r for r in rows if r["distribution"] == MOE_DISTRIBUTION]
        if not rows:
            print(f"skip {src}: no '{MOE_DISTRIBUTION}' rows (distributions: {dists})",
                  file=sys.stderr)
            return
        assert len({r["op_name"] for r in rows}) <= 1
        keys = ["kernel_source", "moe_dtype", "hidden_size", "inter_size", "topk",
                "num_experts", "moe_tp_size", "moe_ep_size"]
        ren = {"kernel_source": "kernel"}
        grids, dups = build_grids(rows, keys, ["num_tokens"], rename=ren)
        if moe_thin == "joint":
            thin_joint(grids, "num_tokens")
        elif moe_thin == "each":
            for g in grids:
                g.thin(["num_tokens"])
        notes = [
            "keys: kernel, moe_dtype, hidden_size, inter_size (the model's, before tensor"
            " parallelism), topk, num_experts (the model's), moe_tp_size, moe_ep_size;"
            " axis: num_tokens (tokens entering the MoE layer, before expert-parallel"
            " dispatch; AIConfigurator queries it with tokens x attention-DP size)",
            "one latency = the fused routed-expert computation of ONE MoE layer on one GPU"
            " (AIConfigurator op `moe`: gate/up GEMM, activation, down GEMM over the local"
            " experts), without the all-to-all or the router GEMM",
            f"routing: distribution '{MOE_DISTRIBUTION}' only (uniform expert load, what"
            " AIConfigurator falls back to as 'uniform');"
            f" the source also has {', '.join(d for d in dists if d != MOE_DISTRIBUTION)}",
            (f"thinning: num_tokens values dropped from every table at once (one shared axis)"
             f" only where log-space interpolation reproduces every measured point of every"
             f" table within {THIN_TOL:.0%}") if moe_thin == "joint" else
            (f"thinning: num_tokens values dropped per table where log-space interpolation"
             f" reproduces every measured point within {THIN_TOL:.0%}") if moe_thin == "each"
            else "not thinned",
        ]
        w.write(f"{dest}/moe.bin",
                w.header(src, gpu, device_name(rows), eng, ver, "moe",
                         notes + repeats_note(dups)),
                grids, "latency_us",
                {"gpu": gpu, "engine": eng, "engine_version": ver, "op": "moe",
                 "repeats_averaged": dups, "source_path": src,
                 "keys": [ren.get(k, k) for k in keys], "axes": ["num_tokens"]})


# Packing: a file is stored as `<name>.bin.zst`, zstd (level PACK_LEVEL) of its header through the
# `data N` line followed by its codes transformed so that smooth curves compress: each code minus
# the one before it (mod 2^16; the first minus 0), then all low bytes followed by all high bytes.
PACK_LEVEL = 19
PACKING = ("zstd level 19 of: the header through the 'data N' line, then the N codes as differences"
           " from the previous code (mod 2^16, the first from 0), all low bytes then all high bytes")


def data_start(blob: bytes) -> int:
    """Offset of the first code byte: just past the `data N` line."""
    at = 0 if blob.startswith(b"data ") else blob.index(b"\ndata ") + 1
    return blob.index(b"\n", at) + 1


def pack(blob: bytes) -> bytes:
    start = data_start(blob)
    codes = np.frombuffer(blob[start:], dtype="<u2")
    diff = np.diff(codes, prepend=np.uint16(0)).astype("<u2")
    b = np.frombuffer(diff.tobytes(), np.uint8)
    return zstandard.ZstdCompressor(level=PACK_LEVEL).compress(blob[:start] + b[0::2].tobytes() + b[1::2].tobytes())


def unpack(stored: bytes) -> bytes:
    raw = zstandard.ZstdDecompressor().decompress(stored)
    start = data_start(raw)
    b = np.frombuffer(raw[start:], np.uint8)
    half = b.size // 2
    diff = (b[:half].astype(np.uint16) | (b[half:].astype(np.uint16) << 8))
    codes = np.cumsum(diff, dtype=np.uint16)
    return raw[:start] + codes.astype("<u2").tobytes()


def pack_file(out: Path, entry: dict):
    """Replace `<file>` by its packed `<file>.zst` (checked to unpack to the same bytes)."""
    path = out / entry["file"]
    blob = path.read_bytes()
    stored = pack(blob)
    assert unpack(stored) == blob, entry["file"]
    (out / (entry["file"] + ".zst")).write_bytes(stored)
    path.unlink()
    entry["stored"] = entry["file"] + ".zst"
    entry["stored_bytes"] = len(stored)


def resolve_reuse(manifest: list[dict], reuse: list[tuple]) -> list[tuple]:
    """(gpu, engine, version, op, donor version) for every table a version reuses, the donor
    followed through reuse links to a version whose file we wrote; a version's own file wins, and
    a link to a table we did not write (no balanced MoE rows) is dropped."""
    own = {(e["gpu"], e["engine"], e["engine_version"], e["op"]) for e in manifest}
    link = {(g, e, v, op): d for g, e, v, op, d in reuse}
    out = []
    for key in sorted(link):
        if key in own:
            continue
        seen, donor = {key}, link[key]
        while (key[0], key[1], donor, key[3]) not in own:
            nxt = (key[0], key[1], donor, key[3])
            if nxt in seen or nxt not in link:
                donor = None
                break
            seen.add(nxt)
            donor = link[nxt]
        if donor is not None:
            out.append((*key, donor))
    return out


RUST_GPU = {"a100_sxm": "A100Sxm", "h100_sxm": "H100Sxm", "h200_sxm": "H200Sxm", "b200_sxm": "B200Sxm",
            "l40s": "L40s", "b300_sxm": "B300Sxm", "gb200": "Gb200", "gb300": "Gb300",
            "rtx_pro_6000_server": "RtxPro6000Server", "b60": "B60"}
RUST_ENGINE = {"trtllm": "Trtllm", "vllm": "Vllm", "sglang": "Sglang", "nccl": "_"}


def rust_ident(op: str) -> str:
    return "".join(p.capitalize() for p in op.split("_"))


def rust_index(manifest: list[dict], links: list[tuple]) -> str:
    """The Rust list of the embedded files (`crates/core/src/kernels/embedded.rs` includes it)."""
    lines = ["// Generated by scripts/kernel-data/fetch.py; do not edit by hand. Read by",
             "// crates/core/src/kernels/embedded.rs: GPU, engine (`_`: the collectives library), op,",
             "// engine version, whether it is the version read by default, file (stored as <file>.zst).",
             "files! {"]
    for e in sorted(manifest, key=lambda e: e["file"]):
        default = "@" not in e["file"]
        lines.append(f"    {RUST_GPU[e['gpu']]} {RUST_ENGINE[e['engine']]} {rust_ident(e['op'])}"
                     f" {toml_str(e['engine_version'])} {'default' if default else 'other'} {toml_str(e['file'])};")
    lines.append("}")
    lines.append("// A version's tables shared with another version: GPU, engine, op, version, the version")
    lines.append("// whose file holds them (from the version's reuse.yaml).")
    lines.append("reuse! {")
    for gpu, eng, ver, op, donor in links:
        lines.append(f"    {RUST_GPU[gpu]} {RUST_ENGINE[eng]} {rust_ident(op)} {toml_str(ver)} {toml_str(donor)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def process(wheel: Wheel, sha: str, out: Path, gpus: list[str], moe: bool = False,
            moe_thin: str = "joint", outliers_path: Path | None = None, all_versions: bool = False):
    if out.exists():
        for p in sorted(out.rglob("*"), reverse=True):
            if p.is_file():
                p.unlink()
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    out.mkdir(parents=True, exist_ok=True)
    w = Writer(out, wheel, sha)
    versions, version_rule = engine_versions(wheel, gpus)
    present = set(wheel.names)
    comm = {gpu: comm_source(wheel, gpu) for gpu in gpus}
    moe_distributions = {}
    reuse = []  # (gpu, engine, version, op, donor version) as the version's reuse.yaml says

    for gpu in gpus:
        for eng in ENGINES:
            ver = versions.get((gpu, eng))
            if ver is None:
                continue
            write_engine_version(w, wheel, present, gpu, eng, ver, f"{gpu}/{eng}", moe, moe_thin,
                                 moe_distributions)
            if all_versions:
                for other in held_versions(wheel, gpu, eng):
                    if other != ver:
                        write_engine_version(w, wheel, present, gpu, eng, other, f"{gpu}/{eng}@{other}", moe,
                                             moe_thin, moe_distributions)
                for other in held_versions(wheel, gpu, eng):
                    reuse.extend(reuse_entries(wheel, gpu, eng, other))

        # NCCL collectives: the system's own NCCL version (misc.nccl_version in <gpu>.yaml); b60
        # (Intel) has oneCCL's table instead, with the same columns.
        lib, nv, src = comm[gpu]
        if src is not None:
            rows = rows_of(wheel.table(src))
            cols = set(rows[0]) if rows else set()
            need = {"op_name", "nccl_dtype", "num_gpus", "message_size", "latency"}
            if not need <= cols:
                print(f"skip {src}: columns {sorted(cols)} lack {sorted(need - cols)}", file=sys.stderr)
                src = None
        if src is not None:
            grids, dups = build_grids(rows, ["op_name", "nccl_dtype", "num_gpus"], ["message_size"],
                                      rename={"nccl_dtype": "dtype"})
            inner = sorted({str(r.get("version")) for r in rows if r.get("version")})
            ops = ", ".join(sorted({str(r["op_name"]) for r in rows}))
            if lib == "nccl":
                vnote = (f"nccl version: directory {nv} (misc.nccl_version of systems/{gpu}.yaml);"
                         f" the table's own version column says {', '.join(inner) or '(none)'}")
                label = nv
            else:
                vnote = (f"Intel oneCCL, not NCCL: directory comm/oneccl/{nv} (misc.oneccl_version of"
                         f" systems/{gpu}.yaml; its nccl_version names no data); same columns as the"
                         f" NCCL tables; the table's own version column says {', '.join(inner) or '(none)'}")
                label = f"oneccl {nv}"
            notes = [f"keys: op ({ops}), dtype, num_gpus;"
                     " axis: message_size (elements of dtype, as in the source)",
                     vnote,
                     "not thinned"]
            w.write(f"{gpu}/nccl.bin",
                    w.header(src, gpu, device_name(rows), lib, nv, "nccl", notes + repeats_note(dups)),
                    grids, "latency_us",
                    {"gpu": gpu, "engine": "nccl", "engine_version": label, "op": "nccl", "repeats_averaged": dups,
                     "source_path": src, "keys": ["op_name", "dtype", "num_gpus"],
                     "axes": ["message_size"]})

    (out / ".gitattributes").write_text("*.bin binary\n*.zst binary\n")

    # Licence.
    apache = wheel.licence_text()
    lic = wheel.licence_intro(w.copyright) + [
           "",
           "Modifications by llm-ledger (scripts/kernel-data/fetch.py): selected tables were",
           "converted from parquet to grids with a text header and 16-bit log-encoded latencies",
           "(microseconds instead of milliseconds, relative rounding error <= 0.024 %), repeated",
           "measurements of one point averaged, and some grid planes of the attention and MLA",
           "tables dropped where log-space interpolation reproduces them within 2 %."
           + (" MoE tables: the" if moe else ""),
           *(["'balanced' routing distribution only, num_tokens values dropped under the same rule."]
             if moe else []),
           "", "=" * 78, ""]
    (out / "LICENSE-aiconfigurator.txt").write_text("\n".join(lic) + apache)

    # Every file stored packed (zstd); the reuse links of versions that share another's tables.
    for e in w.manifest:
        pack_file(out, e)
    links = resolve_reuse(w.manifest, reuse)
    (out / "index.rs").write_text(rust_index(w.manifest, links))

    # Manifest.
    m = ["# Kernel tables derived from NVIDIA AIConfigurator (Apache-2.0). Generated by",
         "# scripts/kernel-data/fetch.py; do not edit by hand. rows = measured values kept,",
         "# source_rows = measured values in the source table, thinned_max_rel_err = worst",
         "# log-space interpolation error at a dropped point.",
         "",
         "[source]",
         *wheel.manifest_source(),
         f"license = {toml_str('Apache-2.0')}",
         f"copyright = {toml_val(w.copyright)}",
         f"license_file = {toml_str('LICENSE-aiconfigurator.txt')}",
         f"unit = {toml_str('latency_us: microseconds per call')}",
         f"thinning_tolerance = {THIN_TOL!r}",
         f"value_encoding = {toml_str(f'u16 LE; latency_us = {CODE_BASE_US} * exp(code / {CODE_SCALE}); {CODE_MISSING} = not measured')}",
         f"stored_encoding = {toml_str(PACKING)}",
         "",
         *textwrap.wrap(f"Engine versions used per GPU: {version_rule};", 96,
                        initial_indent="# ", subsequent_indent="# "),
         "# nccl = misc.nccl_version of systems/<gpu>.yaml"
         + ("." if all(c[0] == "nccl" for c in comm.values())
            else "; oneccl + misc.oneccl_version where the GPU has oneCCL's table instead (b60)."),
         "[engine_versions]"]
    for gpu in gpus:
        lib, nv, _ = comm[gpu]
        m.append(f"{gpu} = {{ " + ", ".join(
            [f"{eng} = {toml_str(versions[(gpu, eng)])}" for eng in ENGINES if (gpu, eng) in versions]
            + [f"nccl = {toml_str(nv if lib == 'nccl' else f'{lib} {nv}')}"]) + " }")
    m.append("")
    if moe_distributions:
        m.append(f"# MoE routing distributions in each source table (moe.bin keeps '{MOE_DISTRIBUTION}').")
        m.append("[moe_distributions]")
        for k in sorted(moe_distributions):
            m.append(f"{toml_str(k)} = {toml_val(moe_distributions[k])}")
        m.append("")
    for e in sorted(w.manifest, key=lambda e: e["file"]):
        m.append("[[file]]")
        e["columns"] = e["keys"] + e["axes"] + [e["value_column"]]
        for k in ["file", "stored", "gpu", "engine", "engine_version", "op", "source_path", "columns", "keys",
                  "axes", "value_column", "tables", "rows", "source_rows", "repeats_averaged", "bytes",
                  "stored_bytes", "thinned_max_rel_err"]:
            m.append(f"{k} = {toml_val(e[k])}")
        m.append("")
    if links:
        m.append("# Tables a version shares with another (its reuse.yaml: `table`, `from_version`), followed")
        m.append("# to the version whose file holds them.")
    for gpu, eng, ver, op, donor in links:
        m += ["[[reuse]]", f"gpu = {toml_str(gpu)}", f"engine = {toml_str(eng)}", f"engine_version = {toml_str(ver)}",
              f"op = {toml_str(op)}", f"from_version = {toml_str(donor)}", ""]
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

    # Outlier report (nothing is dropped for it).
    if outliers_path is not None:
        write_outliers(w, outliers_path)


def write_outliers(w: "Writer", path: Path):
    rows = sorted(w.outliers, key=lambda o: (-abs(math.log(o[5])), o[0], o[1], o[2]))
    counts = defaultdict(int)
    for o in rows:
        counts[o[0]] += 1
    lines = [f"# Outliers: measured points more than {OUTLIER_FACTOR:g}x off the log-space interpolation of"
             " their two measured neighbours along EVERY grid axis where they have two (computed on the"
             " full source grid, before thinning; reported only, nothing dropped). ratio = value /"
             " estimate along the best-fitting axis. Worst first.",
             "# count per file (file, outliers, measured points checked):"]
    for f in sorted(w.outlier_checked):
        if counts[f]:
            lines.append(f"#   {f}\t{counts[f]}\t{w.outlier_checked[f]}")
    lines.append(f"# total: {len(rows)} outliers in {sum(1 for f in counts if counts[f])} of"
                 f" {len(w.outlier_checked)} files, {sum(w.outlier_checked.values())} points checked")
    lines.append("file\tkeys\tpoint\tlatency_us\tneighbour_estimate_us\tratio\taxes_checked")
    for f, keys, point, v, e, r, ax in rows:
        lines.append(f"{f}\t{keys}\t{point}\t{fmt(v)}\t{fmt(e)}\t{r:.3g}\t{ax}")
    Path(path).write_text("\n".join(lines) + "\n")
    print(f"\n## Outliers (> {OUTLIER_FACTOR:g}x off their neighbours along every axis; {path})")
    print("| file | outliers | points checked |")
    print("|---|---|---|")
    for f in sorted(w.outlier_checked):
        if counts[f]:
            print(f"| {f} | {counts[f]} | {w.outlier_checked[f]} |")
    print(f"\ntotal {len(rows)} outliers; worst 20:")
    for f, keys, point, v, e, r, ax in rows[:20]:
        print(f"  {f}  {keys}  {point}: {fmt(v)} us vs {fmt(e)} us from neighbours (x{r:.3g})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "crates" / "core" / "data" / "kernels"))
    ap.add_argument("--wheel", help="use this wheel file instead of downloading (sha256 checked)")
    ap.add_argument("--repo", help="read a commit of a git directory of the AIConfigurator repository"
                    " instead of the wheel (no network; needs --commit)")
    ap.add_argument("--commit", help="the commit (SHA or ref) to read with --repo")
    ap.add_argument("--inventory", help="also write the inventory of every parquet table here")
    ap.add_argument("--gpus", help="comma-separated GPUs (default: the 5 of the wheel build; with"
                    f" --repo all {len(ALL_GPUS)} with data)")
    ap.add_argument("--moe", action=argparse.BooleanOptionalAction, default=None,
                    help="also write <gpu>/<engine>/moe.bin (default: on with --repo, off for the wheel)")
    ap.add_argument("--moe-thin", choices=["joint", "each", "none"], default="joint",
                    help="MoE thinning: one num_tokens axis per file (joint), per table, or none")
    ap.add_argument("--outliers", help="write the outlier report here (default: OUT/outliers.tsv"
                    " with --repo; none for the wheel)")
    ap.add_argument("--all-versions", action=argparse.BooleanOptionalAction, default=None,
                    help="also write every other engine version as <gpu>/<engine>@<version>/ (default:"
                    " on with --repo, off for the wheel)")
    ap.add_argument("--dump", help="print a crates/core/data/kernels/*.bin file as text and exit")
    args = ap.parse_args()
    if args.dump:
        sys.stdout.write(dump(Path(args.dump)))
        return
    if args.repo:
        if not args.commit:
            ap.error("--repo needs --commit")
        src = GitRepo(Path(args.repo), args.commit)
        print(f"repo {args.repo} commit {src.commit}", file=sys.stderr)
        gpus = args.gpus.split(",") if args.gpus else ALL_GPUS
        moe = True if args.moe is None else args.moe
        outliers = Path(args.outliers) if args.outliers else Path(args.out) / "outliers.tsv"
        if args.inventory:
            Path(args.inventory).write_text(inventory(src))
        process(src, src.commit, Path(args.out), gpus, moe=moe, moe_thin=args.moe_thin,
                outliers_path=outliers, all_versions=args.all_versions is not False)
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
        wheel = Wheel(wheel_path, sha)
        if args.inventory:
            Path(args.inventory).write_text(inventory(wheel))
        process(wheel, sha, Path(args.out), args.gpus.split(",") if args.gpus else GPUS,
                moe=bool(args.moe), moe_thin=args.moe_thin,
                outliers_path=Path(args.outliers) if args.outliers else None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
