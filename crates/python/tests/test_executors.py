"""The executor-based functions (`simulate_many` and `plan` under load with `executor=`) against
executors that misbehave: results dropped or added, results of the wrong type, results that never
come (and Ctrl-C). Each is refused with one `InputError` naming the executor and the function, or
stopped by KeyboardInterrupt within moments."""

import _thread
import concurrent.futures as cf
import itertools
import re
import signal
import threading
import time

import pytest

import llm_ledger as ll
from test_serving import MANY_COMMON, MANY_RUNS, PLAN_ON_EXECUTOR

# The two functions that send tasks to an executor: (name, call with an executor).
CALLS = {
    "simulate_many": lambda executor: ll.simulate_many(MANY_RUNS, executor=executor, **MANY_COMMON),
    "plan": lambda executor: ll.plan(**PLAN_ON_EXECUTOR, executor=executor),
}


class Mapping:
    """An executor with only `map` (as Ray's or multiprocessing's `Pool`): it gives back
    `results(tasks, fn)`, without running any task."""

    def __init__(self, results):
        self.results, self.tasks = results, None

    def map(self, fn, tasks):
        self.tasks = list(tasks)
        return self.results(self.tasks, fn)


class Submitting(cf.Executor):
    """A `concurrent.futures.Executor` whose `submit` gives back `future(fn, task)`."""

    def __init__(self, future):
        self.future, self.futures = future, []

    def submit(self, fn, *args, **kwargs):
        f = self.future(fn, *args)
        self.futures.append(f)
        return f


def done(value):
    f = cf.Future()
    f.set_result(value)
    return f


def endless():
    """A map's results that go on (failing the test, not filling memory, when read too far)."""
    for i in itertools.count():
        assert i < 10_000, "an endless map read to its 10,000th result"
        yield None


@pytest.mark.parametrize("function", CALLS)
@pytest.mark.parametrize(
    "results, told, missing",
    [
        (lambda tasks, fn: [], "0", lambda n: f" ({n} missing)"),
        (lambda tasks, fn: iter([None]), "1", lambda n: f" ({n - 1} missing)"),
        # One result too many, or a map that goes on: read up to one past the tasks, then refused.
        (lambda tasks, fn: [None] * (len(tasks) + 1), "more than {n}", lambda n: ""),
        (lambda tasks, fn: endless(), "more than {n}", lambda n: ""),
    ],
    ids=["none", "one", "one-too-many", "endless"],
)
def test_an_executor_must_give_back_one_result_per_task(function, results, told, missing):
    executor = Mapping(results)
    with pytest.raises(ll.InputError) as e:
        CALLS[function](executor)
    n = len(executor.tasks)
    assert n > 1
    told = told.format(n=n)
    assert str(e.value) == (
        f"invalid `executor`: Mapping.map gave back {told} results for {n} tasks{missing(n)}:"
        f" `{function}` needs exactly one result per task"
    )
    assert e.value.field == "executor"


@pytest.mark.parametrize("function", CALLS)
def test_a_map_that_gives_back_no_iterable_or_a_submit_no_future_is_refused(function):
    with pytest.raises(ll.InputError) as e:
        CALLS[function](Mapping(lambda tasks, fn: None))
    assert str(e.value) == (
        f"invalid `executor`: Mapping.map gave back None, not an iterable of results:"
        f" `{function}` needs exactly one result per task"
    )
    with pytest.raises(ll.InputError) as e:
        CALLS[function](Submitting(lambda fn, task: "a result"))
    assert str(e.value) == (
        f"invalid `executor`: Submitting.submit gave back a str for task 0 of `{function}`,"
        " not a future (a concurrent.futures.Future)"
    )


EXPECTED = {
    "simulate_many": "the report that `llm_ledger._simulate_shipped` returns",
    "plan": "the JSON text (a str) that `llm_ledger._plan_part` returns",
}


def malformed_report():
    """A simulate task's report whose outputs are of other types (a worker's other package)."""
    shipped = ll._Shipped.__new__(ll._Shipped)
    shipped.__dict__.update(_json="{}", _human="a table", _table="", _svg=None, _csv_rows=[])
    return shipped


ANY = ["simulate_many", "plan"]


@pytest.mark.parametrize(
    "functions, result, came",
    [
        (ANY, None, "None"),
        (ANY, {"summary": None}, "a dict"),
        (ANY, b"{}", "a bytes"),
        (ANY, 7, "an int"),
        # Text is what a plan's task returns (the core reads it: `invalid assessment of candidate 0`).
        (["simulate_many"], "a report", "a str"),
        (["plan"], "\ud800", "a str that is not valid Unicode"),
        (["simulate_many"], malformed_report(), "a report of another shape (another llm_ledger on the worker?)"),
        (["plan"], malformed_report(), "a _Shipped"),
    ],
    ids=["None", "dict", "bytes", "int", "surrogate", "str", "report", "report-for-plan"],
)
def test_a_result_of_the_wrong_type_is_refused_naming_the_function(functions, result, came):
    for function in functions:
        for executor, source in [
            (Mapping(lambda tasks, fn: [result] * len(tasks)), "Mapping.map"),
            (Submitting(lambda fn, task: done(result)), "Submitting.submit"),
        ]:
            with pytest.raises(ll.InputError) as e:
                CALLS[function](executor)
            assert str(e.value) == (
                f"invalid `executor`: task 0 of `{function}` came back from {source} as {came},"
                f" not {EXPECTED[function]}"
            )
            assert e.value.field == "executor"


def test_a_workers_error_comes_through_a_map_only_executor():
    rec = Mapping(lambda tasks, fn: [fn(t) for t in tasks])
    with pytest.raises(ll.InputError, match="rate"):
        ll.simulate_many([{"rate": 2}, {"rate": -1}], executor=rec, **MANY_COMMON)
    got = ll.simulate_many(MANY_RUNS[:1], executor=rec, **MANY_COMMON)
    assert [s.json for s in got] == [ll.simulate(**MANY_COMMON, **MANY_RUNS[0]).json]


def interrupted(call, entered, release):
    """`call()` interrupted as Ctrl-C does (`_thread.interrupt_main()`, no signal that wakes a
    blocked wait) once `entered` is set: the seconds from the interrupt to its KeyboardInterrupt.
    `release` is set 5 s after the interrupt, so a call that does not stop ends anyway and the test
    fails rather than hangs."""
    fired = []

    def interrupt():
        if entered.wait(30):
            time.sleep(0.2)  # into the wait
            fired.append(time.monotonic())
            _thread.interrupt_main()
            release.wait(5)
        release.set()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Thread(target=interrupt, daemon=True)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        stopped = time.monotonic()
    finally:
        release.set()
        timer.join()
        signal.signal(signal.SIGINT, previous)
    assert fired, "the executor was never called"
    return stopped - fired[0]


def never(entered, release):
    """Executors whose results never come (until `release`): a `concurrent.futures.Executor`
    whose futures are never set, a `map` that blocks before it returns, and a `map` whose iterator
    blocks on its first result."""

    def submit(fn, task):
        entered.set()
        return cf.Future()

    def settle():
        # After `release`, the futures not cancelled end (a call that did not stop returns).
        release.wait()
        for f in executor.futures:
            if f.set_running_or_notify_cancel():
                f.set_result(None)

    executor = Submitting(submit)
    threading.Thread(target=settle, daemon=True).start()

    def blocking(tasks, fn):
        entered.set()
        release.wait()
        return []

    def lazy(tasks, fn):
        entered.set()
        release.wait()
        yield from ()

    return {"submit": executor, "map": Mapping(blocking), "lazy-map": Mapping(lazy)}


@pytest.mark.parametrize("function", CALLS)
@pytest.mark.parametrize("kind", ["submit", "map", "lazy-map"])
def test_ctrl_c_stops_a_wait_for_results_that_never_come(function, kind):
    entered, release = threading.Event(), threading.Event()
    executor = never(entered, release)[kind]
    seconds = interrupted(lambda: CALLS[function](executor), entered, release)
    assert seconds < 1.5, f"KeyboardInterrupt {seconds:.1f} s after Ctrl-C"
    if kind == "submit":
        # Every task's future is cancelled: those not yet running never run.
        assert executor.futures and all(f.cancelled() for f in executor.futures)


def test_ctrl_c_cancels_a_thread_pools_tasks_not_yet_started():
    """On a real pool whose one worker is held busy, the runs queued behind it never run."""
    entered, release, queued = threading.Event(), threading.Event(), []
    with cf.ThreadPoolExecutor(max_workers=1) as pool:
        busy = pool.submit(release.wait)
        real_submit = pool.submit

        def submit(fn, *args):
            entered.set()
            queued.append(real_submit(fn, *args))
            return queued[-1]

        pool.submit = submit
        seconds = interrupted(lambda: ll.simulate_many(MANY_RUNS, executor=pool, **MANY_COMMON), entered, release)
        assert seconds < 1.5, f"KeyboardInterrupt {seconds:.1f} s after Ctrl-C"
    assert busy.done() and len(queued) == len(MANY_RUNS) and all(f.cancelled() for f in queued)


def test_messages_name_the_executor_in_one_line():
    with pytest.raises(ll.InputError) as e:
        ll.simulate_many(MANY_RUNS, executor=Mapping(lambda tasks, fn: []), **MANY_COMMON)
    assert "\n" not in str(e.value) and re.search(r"\bMapping\.map\b", str(e.value))
