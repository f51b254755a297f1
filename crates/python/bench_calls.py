"""Time the Python package per call: `ledger()` without its table (the result object alone, and
with `.total` read), `ledger()` shown in Jupyter (`_repr_html_`: the HTML table and the roofline
SVG), a one-point `sweep()`, and a 1,048,576-point sweep into a pandas DataFrame.

A timing script, not a test: `python crates/python/bench_calls.py [--rounds N]` with the package
installed (release build; pandas for the DataFrame case). The cases run interleaved, one after
the other in each round, so a load that comes and goes touches them alike; each figure is the
median over the rounds of the round's mean per call. The load average is printed before and
after: on a shared machine the figures are only comparable within one run.

Targets: ledger() ≤ 10 µs without the table, ≤ 2 ms with `_repr_html_`; a one-point sweep() ≤ 5 µs;
the 1M-point sweep into a DataFrame ≤ 0.5 s.
"""

import argparse
import os
import resource
import statistics
import time

import llm_ledger as ll

MILLION_GRID = {"batch": range(1, 1025), "ctx": range(1024, 1024 * 1024 + 1, 1024)}


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def ledger():
    return ll.ledger()


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


def per_call_s(f, calls):
    """Mean seconds per call of `calls` calls of `f`."""
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


# (name, function, calls per round, target seconds)
CASES = [
    ("ledger() (no table)", ledger, 2000, 10e-6),
    ("ledger().total", ledger_total, 2000, None),
    ("ledger()._repr_html_()", ledger_html, 100, 2e-3),
    ("sweep(batch=8) (one point)", one_point_sweep, 2000, 5e-6),
]
DATAFRAME = ("1,048,576-point sweep → DataFrame", million_points_dataframe, 1, 0.5)


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
    for _, f, _, _ in cases:
        f()  # warm up: the thread pool, the catalogue, NumPy and pandas imports
    print(f"llm_ledger {ll.__version__}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} before")
    times = {name: [] for name, _, _, _ in cases}
    cpu = []
    for _ in range(args.rounds):
        for name, f, calls, _ in cases:
            c0 = cpu_s()
            times[name].append(per_call_s(f, calls))
            if f is million_points_dataframe:
                cpu.append(cpu_s() - c0)
    print(f"load average {os.getloadavg()[0]:.2f} after; medians of {args.rounds} rounds:")
    for name, _, calls, target in cases:
        med = statistics.median(times[name])
        spread = f"{unit(min(times[name]))} – {unit(max(times[name]))}"
        verdict = "" if target is None else f"target ≤ {unit(target)}: {'met' if med <= target else 'MISSED'}"
        print(f"  {name:38} {unit(med):>11} per call  (rounds {spread}; {calls} calls a round)  {verdict}")
        if name == DATAFRAME[0]:
            print(f"  {'':38} {statistics.median(cpu):.3f} CPU-s per call, all threads")
            for part, values in PARTS.items():
                print(f"  {'  of which ' + part:38} {unit(statistics.median(values)):>11}")


if __name__ == "__main__":
    main()
