"""Time the Python package per call: `ledger()` without its table (the result object alone, with
the README's keywords `model`, `gpu`, `batch` and `kv`, and with `.total` read), `ledger()` shown
in Jupyter (`_repr_html_`: the HTML table and the roofline SVG), a one-point `sweep()`, and a
1,048,576-point sweep into a pandas DataFrame; and, when an LLM-Viewer checkout is given,
LLM-Viewer's `ModelAnalyzer.analyze()` on the same model, GPU and step, with how many times
faster `ledger()` is.

A timing script, not a test: `python crates/python/bench_calls.py [--rounds N]` with the package
installed (release build; pandas for the DataFrame case). The cases run interleaved, one after
the other in each round, so a load that comes and goes touches them alike; each figure is the
median over the rounds of the round's mean per call, in wall-clock time and in this process's
CPU time (all its threads: for the one-thread cases, what the wall-clock time would be on an idle
machine, less the waits for a core). The load average is printed before and after: on a shared
machine the figures are only comparable within one run.

LLM-Viewer (github.com/hahnyuan/LLM-Viewer, not on PyPI) is measured when `LLM_VIEWER_PATH`
names a checkout of it and `transformers` is installed (its config reader; no PyTorch needed):
its analyzer is built once from a local `config.json` (`LLM_VIEWER_CONFIG`, default this
repository's copy of Llama 3.1 8B's, the shapes of the default ledger's `llama-3-8b`; read with
the Hub offline), then each call is `analyze(seqlen=2048, batchsize=1, w_bit=16, a_bit=16,
kv_bit=16, use_flashattention=True)` on its `nvidia_H100` — the default ledger's step (decode,
batch 1, 2,048 cached tokens, bf16, FlashAttention, H100 SXM), though `analyze()` also counts a
prefill of 2,048 tokens each call. The ratio is the median over the rounds of each round's
LLM-Viewer time over its `ledger()` time. Without a checkout the case is left out, with a note.

Targets: ledger() ≤ 10 µs without the table and ≥ 7× faster than LLM-Viewer's analyze(), ≤ 2 ms
with `_repr_html_`; a one-point sweep() ≤ 5 µs; the 1M-point sweep into a DataFrame ≤ 0.5 s.
"""

import argparse
import contextlib
import io
import os
import pathlib
import resource
import statistics
import sys
import time

import llm_ledger as ll

MILLION_GRID = {"batch": range(1, 1025), "ctx": range(1024, 1024 * 1024 + 1, 1024)}


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def ledger():
    return ll.ledger()


def ledger_keywords():
    return ll.ledger(model="llama-3-8b", gpu="h100-sxm", batch=64, kv="fp8")


def ledger_total():
    return ll.ledger().total["time_s"]


def ledger_html():
    return ll.ledger()._repr_html_()


def one_point_sweep():
    return ll.sweep(batch=8)


#: Seconds of the last 1M-point case's parts: the sweep (Rust), the frame (columns and pandas).
PARTS = {"sweep (Rust, all threads)": [], "to_pandas()": []}


def million_points_dataframe():
    t0 = time.perf_counter()
    s = ll.sweep(**MILLION_GRID)
    t1 = time.perf_counter()
    df = s.to_pandas()
    t2 = time.perf_counter()
    PARTS["sweep (Rust, all threads)"].append(t1 - t0)
    PARTS["to_pandas()"].append(t2 - t1)
    return df


#: The repository root (this file is crates/python/bench_calls.py).
ROOT = pathlib.Path(__file__).resolve().parents[2]


def llm_viewer():
    """LLM-Viewer's `analyze()` of the default ledger's step as a function of no arguments, or a
    note saying why it cannot be measured here."""
    path = os.environ.get("LLM_VIEWER_PATH")
    if not path:
        return None, "LLM_VIEWER_PATH is not set: the LLM-Viewer case is left out (a checkout of hahnyuan/LLM-Viewer)"
    config = os.environ.get("LLM_VIEWER_CONFIG", str(ROOT / "crates/core/tests/data/configs/Llama-3.1-8B"))
    # A local config.json only: never the Hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(pathlib.Path(path).resolve()))
    try:
        from model_analyzer import ModelAnalyzer
    except ImportError as e:
        return None, f"LLM-Viewer at {path} cannot be imported ({e}): the LLM-Viewer case is left out"
    # Its constructor prints the config file it uses.
    with contextlib.redirect_stdout(io.StringIO()):
        analyzer = ModelAnalyzer(config, "nvidia_H100", config_file="configs/Llama.py")

    def analyze():
        return analyzer.analyze(seqlen=2048, batchsize=1, w_bit=16, a_bit=16, kv_bit=16, use_flashattention=True)

    return analyze, None


def per_call_s(f, calls):
    """Mean seconds per call of `calls` calls of `f`."""
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


# (name, function, calls per round, target seconds)
CASES = [
    ("ledger() (no table)", ledger, 2000, 10e-6),
    ("ledger(model=…, gpu=…, batch, kv)", ledger_keywords, 2000, None),
    ("ledger().total", ledger_total, 2000, None),
    ("ledger()._repr_html_()", ledger_html, 100, 2e-3),
    ("sweep(batch=8) (one point)", one_point_sweep, 2000, 5e-6),
]
DATAFRAME = ("1,048,576-point sweep → DataFrame", million_points_dataframe, 1, 0.5)
#: LLM-Viewer's analyze() (200 calls a round) and the least ledger() speed-up asked over it.
LLM_VIEWER = ("LLM-Viewer analyze()", 200)
LLM_VIEWER_RATIO_TARGET = 7.0


def unit(s):
    return f"{s * 1e6:,.1f} µs" if s < 1e-3 else f"{s * 1e3:,.2f} ms" if s < 1 else f"{s:.3f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds (interleaved), default 7")
    parser.add_argument("--no-dataframe", action="store_true", help="leave out the 1M-point DataFrame case")
    args = parser.parse_args()
    cases = list(CASES)
    try:
        import pandas  # noqa: F401

        if not args.no_dataframe:
            cases.append(DATAFRAME)
    except ImportError:
        print("pandas is not installed: the DataFrame case is left out (pip install pandas)")
    analyze, note = llm_viewer()
    if analyze is None:
        print(note)
    else:
        cases.insert(1, (LLM_VIEWER[0], analyze, LLM_VIEWER[1], None))
    for _, f, _, _ in cases:
        f()  # warm up: the thread pool, the catalogue, NumPy and pandas imports
    print(f"llm_ledger {ll.__version__}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} before")
    times = {name: [] for name, _, _, _ in cases}
    cpu = {name: [] for name, _, _, _ in cases}
    for _ in range(args.rounds):
        for name, f, calls, _ in cases:
            c0 = cpu_s()
            times[name].append(per_call_s(f, calls))
            cpu[name].append((cpu_s() - c0) / calls)
    print(f"load average {os.getloadavg()[0]:.2f} after; medians of {args.rounds} rounds:")
    for name, _, calls, target in cases:
        med = statistics.median(times[name])
        spread = f"{unit(min(times[name]))} – {unit(max(times[name]))}"
        verdict = "" if target is None else f"target ≤ {unit(target)}: {'met' if med <= target else 'MISSED'}"
        print(
            f"  {name:38} {unit(med):>11} per call, {unit(statistics.median(cpu[name])):>11} CPU"
            f"  (rounds {spread}; {calls} calls a round)  {verdict}"
        )
        if name == LLM_VIEWER[0]:
            ratios = [v / l for v, l in zip(times[name], times[CASES[0][0]])]
            ratio = statistics.median(ratios)
            cpu_ratio = statistics.median(v / l for v, l in zip(cpu[name], cpu[CASES[0][0]]))
            verdict = f"{'met' if ratio >= LLM_VIEWER_RATIO_TARGET else 'MISSED'}"
            print(
                f"  {'':38} ledger() is {ratio:.1f}× faster (rounds {min(ratios):.1f}× – {max(ratios):.1f}×;"
                f" {cpu_ratio:.1f}× in CPU time)  target ≥ {LLM_VIEWER_RATIO_TARGET:.0f}×: {verdict}"
            )
        if name == DATAFRAME[0]:
            print(f"  {'':38} {statistics.median(cpu[name]):.3f} CPU-s per call, all threads")
            for part, values in PARTS.items():
                print(f"  {'  of which ' + part:38} {unit(statistics.median(values)):>11}")


if __name__ == "__main__":
    main()
