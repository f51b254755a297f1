"""Time a 1,048,576-point sweep from Python (batch 1..1024 × ctx 1024..1047552 step 1024): the
whole grid in one call, computed in Rust, returned as columns. Target: ≤ 2 s. A timing script,
not a test: `python crates/python/bench_sweep.py` with the package installed (release build)."""

import resource
import time

import llm_ledger as ll


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    ll.sweep(batch=range(1, 65), ctx=range(1024, 65537, 1024))  # warm up (thread pool, catalogue)
    best, cpu = float("inf"), float("inf")
    for _ in range(3):
        t0, c0 = time.perf_counter(), cpu_s()
        s = ll.sweep(batch=range(1, 1025), ctx=range(1024, 1024 * 1024 + 1, 1024))
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, cpu_s() - c0)
    n = len(s)
    assert n == 1 << 20, n
    print(f"{n:,} points in {best:.3f} s (best of 3): {n / best / 1e6:.2f} M points/s; {cpu:.3f} CPU-s, all threads")
    print(f"largest step: {max(s.columns['step_time_s']):.4g} s; points that fit: {sum(s.columns['fits']):,}")


if __name__ == "__main__":
    main()
