#!/usr/bin/env python3
"""Achievable fractions of the datasheet peaks, derived from the embedded GEMM kernel tables.

For every GPU folder under crates/core/data/kernels/ (and every engine in it) this reads
gemm.bin (stored packed as gemm.bin.zst: fetch.py's `unpack`) and prints

  * the best GEMM throughput per dtype (bfloat16 -> bf16, fp8 (per-tensor) -> fp8,
    nvfp4 -> fp4): FLOPs = 2*m*n*k, TFLOP/s = FLOPs / latency, with the shape and engine;
  * the best memory bandwidth of the memory-bound GEMMs: m <= 16 and weight bytes
    n*k*bytes_per_weight >= 4 x the GPU's l2_bytes (operands that fit in L2 would be served from
    it on the benchmark's repeated runs); bytes = weights + activations in +
    output, bytes/s = bytes / latency; dtypes bfloat16, fp8 and nvfp4;
  * the fractions of the catalogue's datasheet peaks (crates/core/data/gpus.toml, entries
    matched to folders by their `kernel_tables` field).

Selection rule (robust maximum): a point counts only if (a) its fraction of the datasheet
figure is <= 1.0 (a larger one is impossible and is reported, never used) and (b) it is
*confirmed*: at least one grid neighbour (the adjacent kept value of m, n or k, the other two
held) of the same table reaches >= 95 % of its value. The chosen figure is the best confirmed
point over all shapes and engines. The raw maximum is printed as well, and flagged when it is
not confirmed (a lone spike) or impossible.

Tables used: those measured with random weights (vLLM's bfloat16 and fp8 tables are not: see
NONRANDOM; they are printed as "all tables" for comparison and used only by a GPU with nothing
else, marked FALLBACK), and only those measured on the folder's own device (the header's
"device:"; b300_sxm's SGLang table is the gb300 file). fp8_block (vLLM's was timed without CUDA
graphs), int4_wo, int8_wo and sq are not used. The collectors time several copies of the weights
against one activation, so L2 reuse is limited, but the bandwidth filter still asks for 4 x L2.
Python 3.11+ with `zstandard` (scripts/kernel-data/requirements.txt: the files are zstd-packed);
deterministic output.

Usage:  python3 scripts/kernel-data/achievable.py [--gpus a100_sxm,b200_sxm] [--tsv FILE]
"""
from __future__ import annotations

import argparse
import math
import sys
import tomllib
from array import array
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "crates" / "core" / "data" / "kernels"
CATALOGUE = REPO / "crates" / "core" / "data" / "gpus.toml"

MAGIC = "llm-ledger-kernel-table v1"
CODE_BASE_US = 0.001
CODE_SCALE = 2048
CODE_MISSING = 0xFFFF

ENGINES = ("trtllm", "vllm", "sglang")
# table dtype -> (fraction name, catalogue peak key)
COMPUTE = {"bfloat16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "nvfp4": ("fp4", "fp4")}
# bytes per element: (weight, activation in, output); fp8 and nvfp4 read quantised activations;
# nvfp4 carries one fp8 scale per 16 elements (0.5 + 1/16).
BYTES = {"bfloat16": (2.0, 2.0, 2.0), "fp8": (1.0, 1.0, 2.0), "nvfp4": (0.5625, 0.5625, 2.0)}
BW_MAX_M = 16
BW_L2_FACTOR = 4
CONFIRM = 0.95
# Tables whose weights are not random: AIConfigurator's vLLM collector (collector/vllm/
# collect_gemm.py, the 0.24.0 tables; collect_gemm_xpu.py for b60) runs RowParallelLinear with
# its weights as allocated (torch.empty: whatever memory held, "TODO, to evaluate random weights
# impact") for bfloat16 and fill_(0.01) for fp8, while TensorRT-LLM's and SGLang's collectors
# (and vLLM's nvfp4 path) use torch.randn. Constant or zero operands toggle fewer bits, draw less
# power and keep the clock up: the same cuBLAS kernel (F.linear) runs up to 11 % faster on vLLM's
# H100 table than on SGLang's. These tables are used only for a GPU that has no other.
NONRANDOM = {("vllm", "bfloat16"), ("vllm", "fp8")}


def unpack(stored: bytes) -> bytes:
    """A packed file's bytes (fetch.py's `pack` undone: zstd, then the codes' low and high bytes
    interleaved again and summed from their differences, mod 2^16)."""
    import zstandard

    raw = zstandard.ZstdDecompressor().decompress(stored)
    at = 0 if raw.startswith(b"data ") else raw.index(b"\ndata ") + 1
    start = raw.index(b"\n", at) + 1
    body = raw[start:]
    half = len(body) // 2
    out = bytearray(raw[:start])
    code = 0
    for low, high in zip(body[:half], body[half:]):
        code = (code + (low | high << 8)) & 0xFFFF
        out += code.to_bytes(2, "little")
    return bytes(out)


def read_gemm(path: Path):
    """(device named in the header, [(dtype, m_values, n_values, k_values, latency_us list (row-major, None = not measured))])."""
    raw = unpack(path.read_bytes())
    pos, first = 0, True
    keys = axes = None
    device = None
    heads = []
    while True:
        end = raw.index(b"\n", pos)
        line = raw[pos:end].decode()
        pos = end + 1
        if first:
            if line != MAGIC:
                raise SystemExit(f"{path}: not a kernel table")
            first = False
        elif line.startswith("# gpu: ") and "(device: " in line:
            device = line.split("(device: ", 1)[1].rstrip(")")
        elif line.startswith("#") or line.startswith("values "):
            continue
        elif line.startswith("keys "):
            keys = line.split()[1:]
        elif line.startswith("axes "):
            axes = line.split()[1:]
        elif line.startswith("table "):
            parts = [p.split() for p in line[len("table "):].split("|")]
            attrs = dict(zip(keys, parts[0]))
            ax = [heads[-1][1][d] if p == ["="] else [int(v) for v in p]
                  for d, p in enumerate(parts[1:])]
            heads.append((attrs, ax))
        elif line.startswith("data "):
            total = int(line.split()[1])
            break
        else:
            raise SystemExit(f"{path}: unexpected line {line!r}")
    if keys != ["dtype"] or axes != ["m", "n", "k"]:
        raise SystemExit(f"{path}: expected keys dtype, axes m n k; got {keys} / {axes}")
    codes = array("H")
    codes.frombytes(raw[pos:])
    if sys.byteorder != "little":
        codes.byteswap()
    if len(codes) != total:
        raise SystemExit(f"{path}: {len(codes)} codes, header says {total}")
    out, off = [], 0
    for attrs, (ms, ns, ks) in heads:
        count = len(ms) * len(ns) * len(ks)
        vals = [None if c == CODE_MISSING else CODE_BASE_US * math.exp(c / CODE_SCALE)
                for c in codes[off:off + count]]
        off += count
        out.append((attrs["dtype"], ms, ns, ks, vals))
    if off != total:
        raise SystemExit(f"{path}: size mismatch")
    return device, out


def flops_rate(m, n, k, lat_us):
    return 2.0 * m * n * k / (lat_us * 1e-6)


def bytes_rate(dtype, m, n, k, lat_us):
    w, a, o = BYTES[dtype]
    return (n * k * w + m * k * a + m * n * o) / (lat_us * 1e-6)


def candidates(table, rate, qualifies):
    """Yield (value, (m, n, k), confirmed, best_neighbour) for every measured qualifying point."""
    _, ms, ns, ks, vals = table
    nm, nn, nk = len(ms), len(ns), len(ks)

    def val(i, j, l):
        lat = vals[(i * nn + j) * nk + l]
        return None if lat is None else rate(ms[i], ns[j], ks[l], lat)

    for i in range(nm):
        for j in range(nn):
            for l in range(nk):
                if not qualifies(ms[i], ns[j], ks[l]):
                    continue
                v = val(i, j, l)
                if v is None:
                    continue
                nb = []
                for di, dj, dl in ((-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)):
                    a, b, c = i + di, j + dj, l + dl
                    if 0 <= a < nm and 0 <= b < nn and 0 <= c < nk:
                        w = val(a, b, c)
                        if w is not None:
                            nb.append(w)
                best_nb = max(nb) if nb else None
                yield v, (ms[i], ns[j], ks[l]), best_nb is not None and best_nb >= CONFIRM * v, best_nb


class Best:
    """Raw and robust maxima of one quantity over shapes and engines, against a datasheet figure."""

    def __init__(self, peak):
        self.peak = peak
        self.raw = None      # (value, engine, dtype, shape, confirmed, best_neighbour)
        self.robust = None
        self.impossible = []  # (value, engine, dtype, shape)
        self.spikes = []      # unconfirmed points above the robust choice (set by finish)
        self._unconfirmed = []

    @staticmethod
    def _key(rec):
        # deterministic tie-break: value, then engine, dtype and shape order
        return (rec[0], -ENGINES.index(rec[1]), rec[2], tuple(-x for x in rec[3]))

    def add(self, engine, dtype, value, shape, confirmed, best_nb):
        rec = (value, engine, dtype, shape, confirmed, best_nb)
        if self.raw is None or self._key(rec) > self._key(self.raw):
            self.raw = rec
        if self.peak and value > self.peak:
            self.impossible.append((value, engine, dtype, shape))
            return
        if confirmed:
            if self.robust is None or self._key(rec) > self._key(self.robust):
                self.robust = rec
        else:
            self._unconfirmed.append(rec)

    def finish(self):
        floor = self.robust[0] if self.robust else 0.0
        self.spikes = sorted((r for r in self._unconfirmed if r[0] > floor), key=self._key, reverse=True)
        self.impossible.sort(key=lambda r: (-r[0], r[1], r[2], r[3]))


def shape_str(s):
    return " x ".join(str(x) for x in s)


def catalogue():
    with open(CATALOGUE, "rb") as f:
        cat = tomllib.load(f)
    by_dir = {}
    for g in cat["gpu"]:
        d = g.get("kernel_tables")
        if d:
            if d in by_dir:
                raise SystemExit(f"{CATALOGUE}: two entries name kernel_tables = {d!r}")
            by_dir[d] = g
    return by_dir, cat.get("achievable", {})


def engine_versions():
    with open(KERNELS / "manifest.toml", "rb") as f:
        return tomllib.load(f).get("engine_versions", {})


def analyse(gpu_dir: str, entry: dict):
    """{quantity: {"random": Best, "all": Best}} for bf16, fp8, fp4 and bandwidth."""
    peaks = entry["peak_flops_per_s"]
    bw_peak = entry["memory_bandwidth_bytes_per_s"]
    l2 = entry["l2_bytes"]

    # a format without a datasheet peak runs at the next one's (fp4 -> fp8 -> bf16), as the
    # catalogue's `supported_math` does (b60: its fp8 GEMMs against the bf16 peak)
    def peak_of(key):
        for k in {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16"), "bf16": ("bf16",)}[key]:
            if k in peaks:
                return peaks[k]

    res = {frac: {"random": Best(peak_of(key)), "all": Best(peak_of(key))} for frac, key in COMPUTE.values()}
    res["bandwidth"] = {"random": Best(bw_peak), "all": Best(bw_peak)}
    files = {}
    for eng in ENGINES:
        path = KERNELS / gpu_dir / eng / "gemm.bin.zst"
        if path.exists():
            files[eng] = read_gemm(path)
    # a table measured on another device than the folder's other tables is left out
    # (b300_sxm's SGLang gemm table is AIConfigurator's gb300 file, device "NVIDIA GB300")
    devices = [dev for dev, _ in files.values()]
    majority = max(sorted(set(devices)), key=devices.count)
    engines, foreign = [], []
    for eng, (dev, tables) in files.items():
        if dev != majority and devices.count(majority) > devices.count(dev):
            foreign.append((eng, dev))
            continue
        engines.append(eng)
        for table in tables:
            dtype = table[0]
            if dtype not in COMPUTE:
                continue  # fp8_block (vLLM's without CUDA graphs), int4_wo, int8_wo, sq
            sets = ["all"] if (eng, dtype) in NONRANDOM else ["all", "random"]
            frac, _ = COMPUTE[dtype]
            for v, shape, ok, nb in candidates(table, flops_rate, lambda m, n, k: True):
                for s in sets:
                    res[frac][s].add(eng, dtype, v, shape, ok, nb)
            wbytes = BYTES[dtype][0]
            q = lambda m, n, k, wb=wbytes: m <= BW_MAX_M and n * k * wb >= BW_L2_FACTOR * l2
            for v, shape, ok, nb in candidates(table, lambda m, n, k, lat, d=dtype: bytes_rate(d, m, n, k, lat), q):
                for s in sets:
                    res["bandwidth"][s].add(eng, dtype, v, shape, ok, nb)
    for pair in res.values():
        for b in pair.values():
            b.finish()
    return engines, majority, foreign, res


def chosen(pair):
    """The random-weight tables' robust choice; the other tables' only where none qualifies."""
    if pair["random"].robust is not None:
        return pair["random"], False
    return pair["all"], pair["all"].robust is not None


QUANTITIES = (("bf16", 1e12, "TF/s"), ("fp8", 1e12, "TF/s"), ("fp4", 1e12, "TF/s"), ("bandwidth", 1e9, "GB/s"))


def fmt_pick(rec, scale, unit, peak):
    if rec is None:
        return "-"
    v, eng, dtype, shape, _, _ = rec
    s = f"{v / scale:.1f} {unit} ({eng} {dtype} {shape_str(shape)})"
    if peak:
        s += f" = {v / peak:.4f}"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gpus", help="comma-separated kernel-table folders (default: all with a catalogue entry)")
    ap.add_argument("--tsv", help="also write the summary as a TSV file")
    args = ap.parse_args()
    by_dir, profiles = catalogue()
    versions = engine_versions()
    dirs = sorted(p.name for p in KERNELS.iterdir() if (p.is_dir() and any((p / e / "gemm.bin.zst").exists() for e in ENGINES)))
    if args.gpus:
        want = args.gpus.split(",")
        missing = [d for d in want if d not in dirs]
        if missing:
            raise SystemExit(f"no gemm tables for {missing}")
        dirs = [d for d in dirs if d in want]
    rows = []
    for d in dirs:
        entry = by_dir.get(d)
        if entry is None:
            print(f"== {d}: no catalogue entry names kernel_tables = {d!r}; skipped\n")
            continue
        engines, device, foreign, res = analyse(d, entry)
        prof_name = entry.get("achievable", "default")
        prof = profiles.get(prof_name, {}) if isinstance(prof_name, str) else prof_name
        vers = versions.get(d, {})
        print(f"== {d}  (catalogue {entry['name']}; achievable = {prof_name!r}; engines "
              + ", ".join(f"{e} {vers.get(e, '?')}" for e in engines) + f"; device {device!r})")
        for eng, dev in foreign:
            print(f"   !! {eng} {vers.get(eng, '?')}: measured on {dev!r}, not {device!r}: left out")
        pk = entry["peak_flops_per_s"]
        tf = lambda key: f"{pk[key] / 1e12:g} TF" if key in pk else "-"
        print(f"   datasheet: bf16 {tf('bf16')}, fp8 {tf('fp8')}, fp4 {tf('fp4')}, "
              f"bandwidth {entry['memory_bandwidth_bytes_per_s'] / 1e12:g} TB/s, L2 {entry['l2_bytes'] / 1e6:g} MB "
              f"(bandwidth shapes: m <= {BW_MAX_M}, weights >= {BW_L2_FACTOR * entry['l2_bytes'] / 1e6:g} MB)")
        row = {"gpu": d, "catalogue": entry["name"], "profile": prof_name}
        for name, scale, unit in QUANTITIES:
            pair = res[name]
            b, fallback = chosen(pair)
            if b.raw is None:
                print(f"   {name:9} no table")
                continue
            peak = b.peak
            note = "  [FALLBACK: only non-random-weight tables]" if fallback else ""
            print(f"   {name:9} chosen {fmt_pick(b.robust, scale, unit, peak)}{note}")
            raw = b.raw
            if raw is not b.robust:
                tag = []
                if peak and raw[0] > peak:
                    tag.append("IMPOSSIBLE (> datasheet)")
                if not raw[4]:
                    nb = raw[5]
                    tag.append("unconfirmed: best neighbour " + (f"{nb / scale:.1f} {unit}, {raw[0] / nb:.2f}x below" if nb else "none"))
                print(f"   {'':9} raw    {fmt_pick(raw, scale, unit, peak)}  [{'; '.join(tag)}]")
            for v, eng, dtype, shape in b.impossible[:5]:
                print(f"   {'':9} !! impossible point {v / scale:.1f} {unit} = {v / peak:.4f} of datasheet ({eng} {dtype} {shape_str(shape)})")
            if len(b.impossible) > 5:
                print(f"   {'':9} !! ... {len(b.impossible) - 5} more impossible points")
            spikes = [r for r in b.spikes if r is not raw]
            for v, eng, dtype, shape, _, nb in spikes[:3]:
                print(f"   {'':9} spike  {v / scale:.1f} {unit} ({eng} {dtype} {shape_str(shape)}), best neighbour "
                      + (f"{nb / scale:.1f}" if nb else "none"))
            if len(spikes) > 3:
                print(f"   {'':9} ... {len(spikes) - 3} more unconfirmed points above the chosen one")
            a = pair["all"]
            if not fallback and a.robust is not None and a.robust[:4] != b.robust[:4]:
                print(f"   {'':9} all tables (incl. vLLM bfloat16/fp8): {fmt_pick(a.robust, scale, unit, peak)}")
            cur = prof.get(name) if name != "fp4" else prof.get("fp4", prof.get("fp8"))
            if cur is not None and b.robust is not None and peak:
                print(f"   {'':9} profile {prof_name!r}: {cur:.4f}; tables/profile = {b.robust[0] / peak / cur:.3f}")
            row[name] = (b.robust, peak, fallback, a.robust)
        print()
        rows.append(row)
    print("summary: chosen fraction of the datasheet (random-weight tables; * = fallback to vLLM's);")
    print("in brackets the same rule over all tables; '-' = no table")
    print(f"{'gpu':22}" + "".join(f"{n:>18}" for n, _, _ in QUANTITIES))
    for r in rows:
        cells = []
        for n, _, _ in QUANTITIES:
            if n not in r or r[n][0] is None or not r[n][1]:
                cells.append("-")
                continue
            rec, peak, fb, allrec = r[n]
            c = f"{rec[0] / peak:.4f}" + ("*" if fb else "")
            if allrec is not None and allrec[:4] != rec[:4]:
                c += f" ({allrec[0] / peak:.4f})"
            cells.append(c)
        print(f"{r['gpu']:22}" + "".join(f"{c:>18}" for c in cells))
    if args.tsv:
        with open(args.tsv, "w") as f:
            f.write("gpu\tcatalogue\tquantity\tvalue\tunit\tdatasheet\tfraction\tengine\tdtype\tm\tn\tk\tfallback\n")
            for r in rows:
                for n, scale, unit in QUANTITIES:
                    if n not in r or r[n][0] is None:
                        continue
                    (v, eng, dtype, (m, nn, k), _, _), peak, fb, _ = r[n]
                    frac = f"{v / peak:.6f}" if peak else "-"
                    dp = f"{peak / scale:g}" if peak else "-"
                    f.write(f"{r['gpu']}\t{r['catalogue']}\t{n}\t{v / scale:.2f}\t{unit}\t{dp}\t{frac}\t{eng}\t{dtype}\t{m}\t{nn}\t{k}\t{'yes' if fb else 'no'}\n")

if __name__ == "__main__":
    main()
