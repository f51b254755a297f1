"""llm_ledger: where the FLOPs, the bytes and the time of an LLM forward pass go, per operator, on a
given GPU — the llm-ledger core (Rust) from Python.

Every function takes keyword arguments named like the CLI's flags (``--max-gpus`` is
``max_gpus``) and returns the same report the CLI prints with ``--format json``:

>>> import llm_ledger as ll
>>> r = ll.ledger(model="llama-3-8b", gpu="h100-sxm", batch=64, ctx=8192, kv="fp8")
>>> r.total["time_s"]            # seconds, SI units everywhere
>>> r.to_pandas()                # one row per operator (needs pandas)

Values are given as Python values: numbers, strings, ``True``/``False`` for on/off inputs
(``flash=False``), lists (or any iterable of at most ``MAX_VALUES`` values) for lists
(``batch=[1, 8, 32]``), ``range`` objects for sweeps
(``batch=range(1, 1025)``), a dict for a context mix (``contexts={2048: 8, 32768: 2}``), and a path
to a ``config.json`` (or its folder, a GGUF file), a Hub repo id (``"org/name"``, with
``revision``) or a GPU file for ``model`` and ``gpu``, and a calibration profile for ``profile``
(read exactly as the CLI reads them). Bad input raises
:class:`InputError` (a ``ValueError``) with the CLI's one-line message naming the keyword; a keyword
the function does not take raises ``TypeError``.
"""

from __future__ import annotations

import array as _array
import html as _html
import itertools as _itertools
import json as _json
import numbers as _numbers
import os as _os
import threading as _threading
from functools import cached_property as _cached_property

from . import _native
from ._native import InputError

__all__ = [
    "InputError",
    "Report",
    "Sweep",
    "ledger",
    "kv",
    "levers",
    "latency",
    "cost",
    "zoom",
    "tile",
    "moe",
    "plan",
    "simulate",
    "simulate_many",
    "Simulation",
    "sweep",
    "models",
    "gpus",
    "keywords",
]
__version__ = _native.__version__

#: The most values one keyword takes (a context mix's buckets, 2**20): an iterable argument is read
#: up to one value more and refused past it, so an endless iterator (``itertools.count()``) is an
#: error, not a hang.
MAX_VALUES = _native.MAX_VALUES


def _input_error(message, field):
    err = InputError(message)
    err.field, err.accepted = field, None
    return err


def _text(key, value):
    """A keyword's value as the text the core's resolver reads (the CLI flag's text)."""
    # The common exact types first: the ABC checks below cost a microsecond a value.
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if kind is float:
        return repr(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    if isinstance(value, _numbers.Integral):  # int, numpy integers
        return str(int(value))
    if isinstance(value, _numbers.Real):  # float, numpy floats
        return repr(float(value))
    if isinstance(value, range):
        if len(value) == 0:
            raise _input_error(f"invalid `{key}`: empty {value!r} (a range with at least one value)", key)
        if value.step < 0:
            raise _input_error(f"invalid `{key}`: {value!r} (a rising range)", key)
        if len(value) == 1:
            return str(value[0])
        step = f":{value.step}" if value.step != 1 else ""
        return f"{value[0]}..{value[-1]}{step}"
    if isinstance(value, dict):
        return ",".join(f"{_text(key, t)}x{_text(key, n)}" for t, n in value.items())
    if isinstance(value, _os.PathLike):
        return _os.fspath(value)
    if isinstance(value, (list, tuple)) or hasattr(value, "__iter__") and not isinstance(value, (bytes, dict)):
        # lists, tuples, numpy arrays, generators: at most MAX_VALUES values
        values = list(_itertools.islice(value, MAX_VALUES + 1))
        if len(values) > MAX_VALUES:
            raise _input_error(f"invalid `{key}`: more than {MAX_VALUES} values (at most {MAX_VALUES})", key)
        return ",".join(_text(key, v) for v in values)
    raise TypeError(f"keyword `{key}`: cannot use a {type(value).__name__} ({value!r})")


def _unicode(key, text):
    """`text` when it is valid Unicode (encodable as UTF-8); a lone surrogate is an InputError
    naming the keyword, where Rust would raise UnicodeEncodeError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _input_error(
            f"invalid `{key}`: {text!r} holds a lone surrogate at character {e.start} (text must be valid Unicode)", key
        ) from None
    return text


def _call(kwargs):
    """Keyword arguments as text pairs (`None` leaves a keyword out). A path in `model`, `gpu`,
    `profile` or `trace` (str or `os.PathLike`) is read in Rust by the CLI's own file readers."""
    pairs = []
    for key, value in kwargs.items():
        if value is None:
            continue
        # ASCII text (`str.isascii()` reads a flag) is valid Unicode: only other text is checked.
        if not key.isascii():
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                raise TypeError(f"got an unexpected keyword argument {key!r}") from None
        kind = type(value)
        text = value if kind is str else str(value) if kind is int else _text(key, value)
        if not text.isascii():
            text = _unicode(key, text)
        pairs.append((key, text))
    return pairs


def _html_table(human, limit=None):
    """A report's human layout as an HTML table, with its title and footer lines."""
    esc = _html.escape
    parts = [f"<div><b>{esc(line)}</b></div>" for line in human["title"]]
    right = set(human["right_aligned"])
    parts.append('<table class="llm-ledger"><thead><tr>')
    parts += [
        f'<th style="text-align:{"right" if i in right else "left"}">{esc(h)}</th>'
        for i, h in enumerate(human["header"])
    ]
    parts.append("</tr></thead><tbody>")
    for row in human["rows"][:limit]:
        parts.append("<tr>")
        parts += [
            f'<td style="text-align:{"right" if i in right else "left"}">{esc(c)}</td>' for i, c in enumerate(row)
        ]
        parts.append("</tr>")
    parts.append("</tbody></table>")
    parts += [f"<div><small>{esc(line)}</small></div>" for line in human["footer"]]
    return "".join(parts)


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas (or llm-ledger[pandas])") from None
    return pandas


def _numpy():
    try:
        import numpy
    except ImportError:
        raise ImportError("arrays needs NumPy: pip install numpy (or llm-ledger[numpy])") from None
    return numpy


class Report:
    """One command's report, held as the core built it: the CLI's JSON (``json``, ``to_json()``),
    its rows (``rows``: the CLI's JSON row objects, one dict per row), the ``total`` row where the
    report has one, the CLI's text table (``str(report)``) and, in Jupyter, an HTML table with
    the roofline plot (``ledger``). Each is built the first time it is read, then kept."""

    def __init__(self, command, native):
        self.command = command
        self._native = native

    def _field(self, key):
        # One of the report's own fields as Python values, read in Rust (no JSON text).
        return self._native.field(key)

    def to_json(self):
        """The CLI's ``--format json`` text, byte for byte."""
        return self._json_text

    @_cached_property
    def _json_text(self):
        return self._native.json()

    @_cached_property
    def json(self):
        """The whole report as the CLI's ``--format json`` gives it."""
        return _json.loads(self._json_text)

    @_cached_property
    def rows(self):
        """The rows: a list of dicts with the CLI's JSON row fields — the JSON's ``rows`` where it
        has them (``ledger``: without the total row, which is ``total``), else the rows of the
        CLI's ``--format csv`` (the same fields as its JSON row objects)."""
        rows = self._field("rows")
        return rows if isinstance(rows, list) else self._native.csv_rows()

    @_cached_property
    def total(self):
        """The total row (``ledger``), else None."""
        return self._field("total")

    @_cached_property
    def fits(self):
        """Whether the scenario fits in GPU memory: the JSON's ``fits`` (weights + KV cache +
        workspace against the GPU's memory less the reserve, on the fullest GPU of a layout);
        None where the report has no scenario (``tile``, ``moe`` without a model)."""
        return self._field("fits")

    @_cached_property
    def plan_command(self):
        """When it does not fit: the CLI's ``plan`` command that searches for a layout that does
        (in Python, ``plan(model=..., gpu=..., tpot_ms=...)``), else None."""
        return self._field("plan_command")

    @_cached_property
    def svg(self):
        """The plot as inline SVG (``ledger``: the roofline), else None."""
        return self._native.svg()

    @_cached_property
    def _human(self):
        return self._native.human()

    @_cached_property
    def _table(self):
        return self._native.table()

    def to_pandas(self):
        """The rows as a pandas DataFrame (raises ImportError when pandas is not installed)."""
        return _pandas().DataFrame(self.rows)

    def __getitem__(self, key):
        return self.json[key]

    def __str__(self):
        return self._table

    def __repr__(self):
        title = self._human["title"][0] if self._human["title"] else self.command
        return f"<llm_ledger.Report {self.command}: {title}>"

    def _repr_html_(self):
        svg = f"<div>{self.svg}</div>" if self.svg else ""
        return _html_table(self._human) + svg


class Simulation(Report):
    """A ``simulate`` report: the CLI's JSON (``json``); ``summary``, the one rate's summary (the
    JSON's ``summary``: throughput, ``ttft_s``/``tpot_s``/``itl_s``/``e2e_s`` quantiles, goodput,
    batch, queue, preemptions, KV use) or None for a sweep of rates; ``points``, one summary per
    rate (a sweep: the JSON's ``points``; one rate: ``[summary]``); ``rows``, one flat row per
    rate (the CLI's CSV: ``ttft_p99_s`` …), which ``to_pandas()`` turns into a DataFrame; ``svg``,
    the latency CDFs (one rate) or throughput against p99 latency (a sweep)."""

    @_cached_property
    def summary(self):
        """The one rate's summary (the CLI JSON's ``summary``), or None for a sweep of rates."""
        return self._field("summary")

    @_cached_property
    def points(self):
        """One summary per rate: the JSON's ``points`` (a sweep) or ``[summary]`` (one rate)."""
        points = self._field("points")
        return points if points is not None else [self.summary]

    @_cached_property
    def settings(self):
        """The simulator's settings as run (the JSON's ``settings``)."""
        return self._field("settings")


class Sweep:
    """A whole sweep, computed in one call and held in Rust as columns, one per CLI point key
    (``batch``, ``ctx``, ``step_time_s``, …, ``fits``): ``arrays`` gives them as NumPy arrays
    (no Python object per point), ``columns`` as ``array.array`` for numbers and lists for
    ``largest_op`` and ``fits``, ``to_pandas()`` as a DataFrame. ``head`` is the CLI's JSON
    without its points; ``json`` the CLI's whole JSON; ``rows`` one dict per point. Each is built
    the first time it is read, then kept."""

    #: A sweep has no total row.
    total = None

    def __init__(self, native):
        self._native = native

    @_cached_property
    def head(self):
        """The CLI's sweep JSON without ``points``."""
        return self._native.head()

    @_cached_property
    def fits(self):
        """Whether every point fits in GPU memory (the head's ``fits``: the largest point's)."""
        return self.head["fits"]

    @_cached_property
    def svg(self):
        """The batch curve as inline SVG (one context, at most 4,096 points; the CLI's
        ``--plot``), else None."""
        return self._native.svg()

    @_cached_property
    def columns(self):
        """The points as columns, in the CLI's point-key order: ``array.array`` for numbers
        (``numpy.asarray`` reads it without a copy), lists for ``largest_op`` and ``fits``."""
        n = self._native
        return {
            name: n.list(name) if name in ("largest_op", "fits") else _array.array(*n.buffer(name))
            for name in n.names()
        }

    @_cached_property
    def arrays(self):
        """The points as NumPy arrays, in the CLI's point-key order, each read in place from a
        copy of the sweep's column (no Python object per point): ``int64`` for ``batch`` and
        ``ctx``, ``float64`` for the numbers, ``bool`` for ``fits``, and ``largest_op`` an object
        array of str (raises ImportError when NumPy is not installed)."""
        return self._new_arrays()

    def _new_arrays(self, op=None):
        """Fresh NumPy arrays of the columns, each the owner of a copy made in Rust (read in
        place, no second copy); `largest_op` an object array of str, or `op(codes, names)` of its
        codes and the operator names."""
        np = _numpy()
        n = self._native
        out = {}
        for name, column in n.arrays():
            values = np.asarray(column)
            if name == "largest_op":
                names = n.op_names()
                values = op(values, names) if op else np.array(names, dtype=object)[values]
            out[name] = values
        return out

    def __len__(self):
        return len(self._native)

    @property
    def rows(self):
        """One dict per point (the CLI's JSON point objects; builds Python objects per point)."""
        names = list(self.columns)
        return [dict(zip(names, values)) for values in zip(*(self.columns[n] for n in names))]

    @property
    def json(self):
        """The CLI's whole sweep JSON: ``head`` with its ``points``."""
        return {**self.head, "points": self.rows}

    def to_pandas(self):
        """The columns as a pandas DataFrame of arrays of its own, each column one copy of the
        sweep's: the ``arrays`` dtypes, but ``largest_op`` a ``Categorical`` read from the sweep's
        one-byte codes (no str object per point) (raises ImportError when pandas is not
        installed)."""
        pandas = _pandas()
        categorical = pandas.Categorical.from_codes
        columns = self._new_arrays(lambda codes, names: categorical(codes, categories=names))
        # Fresh arrays, so the frame shares no memory with `arrays`: no copy is needed to build it.
        return pandas.DataFrame(columns, copy=False)

    def __repr__(self):
        i = self.head["inputs"]
        return (
            f"<llm_ledger.Sweep {i['model']} on {i['gpu']} · batch {self.head['batch_axis']}"
            f" × ctx {self.head['ctx_axis']}: {len(self)} points>"
        )

    def _repr_html_(self, limit=20):
        names = self._native.names()
        n = len(self)
        shown = range(min(n, limit))
        human = {
            "title": [repr(self)[1:-1]],
            "header": names,
            "right_aligned": [i for i, k in enumerate(names) if k not in ("largest_op", "fits")],
            "rows": [[_cell(v) for v in self._native.point(j)] for j in shown],
            "footer": [f"first {len(shown)} of {n} points"] if n > limit else [],
        }
        return _html_table(human) + (f"<div>{self.svg}</div>" if self.svg else "")


def _cell(v):
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _run(command, kwargs, cls=None):
    return (cls or Report)(command, _native.run(command, kwargs, _call))


def ledger(**kwargs):
    """Per-operator FLOPs, bytes, intensity and roofline time of one forward step
    (``llm-ledger ledger``). Keywords: ``keywords("ledger")``."""
    return _run("ledger", kwargs)


def kv(**kwargs):
    """KV bytes per token, the KV/weight crossover, memory and capacity (``llm-ledger kv``)."""
    return _run("kv", kwargs)


def levers(**kwargs):
    """The workload re-run with each lever: W4A16, W8A16, fp8, batch, fp8/int8 KV, fewer KV heads
    (``llm-ledger levers``)."""
    return _run("levers", kwargs)


def latency(**kwargs):
    """TTFT, TPOT and end-to-end latency of a batch of requests (``llm-ledger latency``)."""
    return _run("latency", kwargs)


def cost(**kwargs):
    """Dollars per million tokens, and the cheapest batch under ``tpot_ms`` (``llm-ledger cost``)."""
    return _run("cost", kwargs)


def zoom(**kwargs):
    """One node of the zoom tree (``at``, default ``"model"``), its children and whether they add
    up (``llm-ledger zoom``)."""
    return _run("zoom", kwargs)


def tile(**kwargs):
    """One GEMM (``m``, ``n``, ``k``) cut into tiles on a GPU (``llm-ledger tile``)."""
    return _run("tile", kwargs)


def moe(**kwargs):
    """The MoE union problem over a batch range (``llm-ledger moe``)."""
    return _run("moe", kwargs)


def plan(*, executor=None, **kwargs):
    """TP × PP (× EP) layouts and batches under ``tpot_ms``, ranked by $/M tokens
    (``llm-ledger plan``). With ``pareto=True``: every layout × batch that fits, with its tokens/s
    per user (1 ÷ TPOT) and per GPU, and the Pareto front between them (``plan --pareto``; no
    ``tpot_ms`` needed). With ``rate`` (requests/s) and ``ttft_ms``: the plan under load
    (``plan --rate``), the cheapest deployment whose simulated p99 TTFT and TPOT hold the bounds,
    with the Pareto front of cost against latency (``json["pareto"]``).

    A plan under load assesses its candidates (layout × max sequences × chunk) on every core of
    this machine. With ``executor`` — any ``concurrent.futures.Executor``, such as Dask's
    ``distributed.Client(...).get_executor()`` — each candidate is one task
    (``executor.submit``; ``executor.map`` of them all on an executor with only ``map``): the
    worker lays out the same search from the same keywords, assesses its candidate under the
    call's own ``max_steps``, and sends the assessment back as JSON; the plan gathered here equals
    the one made without it. An executor that sends back other than one assessment per candidate
    is refused (:class:`InputError`, ``field`` ``"executor"``); Ctrl-C stops the wait for them
    with ``KeyboardInterrupt`` within moments."""
    if executor is None:
        return _run("plan", kwargs)
    return Report(
        "plan",
        _native.plan_mapped(_call(kwargs), lambda tasks: _on_executor("plan", executor, _plan_part, tasks)),
    )


def _plan_part(task):
    """One candidate of a plan under load, assessed (the task :func:`plan` sends to an executor:
    a module-level function, so it pickles by name)."""
    pairs, j = task
    return _native.plan_part(pairs, j)


def simulate(**kwargs):
    """Serving under load (``llm-ledger simulate``): arrivals (``rate``: requests/s, a list or a
    range such as ``"1..40"`` for a sweep; ``arrivals``, ``cv``, ``concurrency``, ``trace``),
    requests (``requests``, ``seed``, ``prompt``, ``output``), the scheduler (``max_seqs``,
    ``max_batched_tokens``, ``chunk``, ``schedule``, ``block``, ``prefix_hit``) and goodput
    bounds (``ttft_ms``, ``tpot_ms``), on the scenario the other keywords describe; ``max_steps``
    bounds the engine steps of all its runs (the CLI's ``--max-steps``). Ctrl-C stops a running
    call with ``KeyboardInterrupt`` within moments. Returns a
    :class:`Simulation`: ``summary`` (one rate), ``points`` (every rate), the plot the CLI's
    ``--plot`` draws. Keywords: ``keywords("simulate")``."""
    return _run("simulate", kwargs, Simulation)


class _Shipped:
    """A report's outputs as plain values — the JSON text, the human layout, the text table, the
    SVG plot and the CSV rows — built where the report was computed: unlike the native result it
    pickles, so an executor's worker process or remote machine can send it back. It answers the
    native result's methods, so a :class:`Report` reads it unchanged."""

    def __init__(self, native):
        self._json = native.json()
        self._human = native.human()
        self._table = native.table()
        self._svg = native.svg()
        self._csv_rows = native.csv_rows()

    def json(self):
        return self._json

    def field(self, key):
        return self._fields.get(key)

    @_cached_property
    def _fields(self):
        return _json.loads(self._json)

    def human(self):
        return self._human

    def table(self):
        return self._table

    def svg(self):
        return self._svg

    def csv_rows(self):
        return self._csv_rows


def _simulate_shipped(kwargs):
    """One ``simulate`` run as a :class:`_Shipped` (the task :func:`simulate_many` sends to an
    executor: a module-level function, so it pickles by name)."""
    return _Shipped(_native.run("simulate", _call(kwargs)))


def simulate_many(runs, *, executor=None, **common):
    """Several ``simulate`` runs, one per dict in ``runs`` (its keywords over ``common``'s, the
    keywords every run shares), returned as :class:`Simulation` objects in the order of ``runs``.

    Without ``executor`` the runs go one after the other in this process. With one — any
    ``concurrent.futures.Executor``: a ``ThreadPoolExecutor`` (the simulator releases the GIL),
    a ``ProcessPoolExecutor``, or a cluster's, such as Dask's ``distributed.Client(...)
    .get_executor()`` — each run is one task (``executor.submit``; ``executor.map`` of them all on
    an executor with only ``map``, such as Ray's ``Pool``), so a search fans out over every worker
    it has, unchanged. A task sends back its report's outputs as text (JSON, table, plot), so the
    results equal the runs made here. Bad input raises :class:`InputError` from the run that has
    it; so does an executor that sends back other than one report per run (``field``
    ``"executor"``, naming it). Ctrl-C stops the wait for the results with ``KeyboardInterrupt``
    within moments, and cancels the runs not yet started."""
    tasks = [{**common, **dict(run)} for run in runs]
    if executor is None:
        shipped = [_native.run("simulate", _call(kwargs)) for kwargs in tasks]
    else:
        shipped = _on_executor("simulate_many", executor, _simulate_shipped, tasks)
    return [Simulation("simulate", s) for s in shipped]


#: The longest one wait on an executor's results lasts (seconds) before it waits again: between
#: two waits Python runs its signal handlers, so Ctrl-C (KeyboardInterrupt) stops the call.
_POLL_S = 0.05

#: The keys of a report's human layout (what its text and HTML tables read).
_HUMAN_KEYS = ("title", "header", "right_aligned", "rows", "footer")


def _assessment(result):
    """A result of :func:`_plan_part` as an executor sent it back: the JSON text of one
    assessment (valid Unicode, which Rust reads), else None."""
    if not isinstance(result, str):
        return None
    if not result.isascii():
        try:
            result.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return result


def _shipped(result):
    """A result of :func:`_simulate_shipped` as an executor sent it back: a :class:`_Shipped`
    whose outputs have their types (a worker's other package makes other objects), its JSON
    parsed and kept for ``field``; else None."""
    if not isinstance(result, _Shipped):
        return None
    values = vars(result)
    human, svg = values.get("_human"), values.get("_svg")
    if not (
        isinstance(values.get("_json"), str)
        and isinstance(values.get("_table"), str)
        and isinstance(human, dict)
        and all(k in human for k in _HUMAN_KEYS)
        and (svg is None or isinstance(svg, str))
        and isinstance(values.get("_csv_rows"), list)
    ):
        return None
    if "_fields" not in values:
        try:
            fields = _json.loads(values["_json"])
        except ValueError:
            return None
        if not isinstance(fields, dict):
            return None
        result._fields = fields
    return result


#: Each task function an executor runs: how its results are read, and what they must be.
_TASKS = {
    _plan_part: (_assessment, "the JSON text (a str) that `llm_ledger._plan_part` returns"),
    _simulate_shipped: (_shipped, "the report that `llm_ledger._simulate_shipped` returns"),
}


def _a(value):
    """A value's type as a message names it: `None`, `a str`, `an int`."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}"


def _executor_error(message):
    return _input_error(f"invalid `executor`: {message}", "executor")


def _on_executor(function, executor, fn, tasks):
    """`fn(task)` of each of `tasks` run on `executor`, in the order of `tasks`, each result read
    as :data:`_TASKS` says (for `function`, the public function that sent them).

    A ``concurrent.futures.Executor`` gets one ``submit`` per task; any other executor (one that
    implements only ``map``, such as Ray's or ``multiprocessing``'s ``Pool``) one ``map`` of all
    the tasks, called and read in a thread of its own. Either way this thread waits at most
    `_POLL_S` at a time, so Ctrl-C (KeyboardInterrupt) stops the call within moments, and the
    tasks not yet started are then cancelled. The executor must send back exactly one result per
    task, each what `fn` returns: else :class:`InputError` naming the executor and `function`."""
    import concurrent.futures as futures  # here: 16 ms of imports (logging) only executors need

    kind = type(executor)
    if isinstance(executor, futures.Executor) and kind.submit is not futures.Executor.submit:
        return _submitted(function, executor, f"{kind.__name__}.submit", fn, tasks)
    source = f"{kind.__name__}.map"
    results = _mapped(function, executor, source, fn, tasks)
    n, got = len(tasks), len(results)
    if got != n:
        told, missing = (f"more than {n}", "") if got > n else (f"{got}", f" ({n - got} missing)")
        raise _executor_error(
            f"{source} gave back {told} results for {n} tasks{missing}:"
            f" `{function}` needs exactly one result per task"
        )
    return [_checked(function, source, fn, j, result) for j, result in enumerate(results)]


def _checked(function, source, fn, j, result):
    """Task `j`'s `result` read as :data:`_TASKS` says, or :class:`InputError` saying what came."""
    read, expected = _TASKS[fn]
    value = read(result)
    if value is None:
        if fn is _simulate_shipped and isinstance(result, _Shipped):
            came = "a report of another shape (another llm_ledger on the worker?)"
        elif fn is _plan_part and isinstance(result, str):
            came = "a str that is not valid Unicode"
        else:
            came = _a(result)
        raise _executor_error(f"task {j} of `{function}` came back from {source} as {came}, not {expected}")
    return value


def _submitted(function, executor, source, fn, tasks):
    """One ``executor.submit(fn, task)`` per task, each result waited for in turn (at most
    `_POLL_S` at a time) and read; on an error or a KeyboardInterrupt every future is cancelled
    (those not yet running never run), as ``concurrent.futures``' own ``map`` does."""
    futures = []
    try:
        for j, task in enumerate(tasks):
            future = executor.submit(fn, task)
            if not (callable(getattr(future, "result", None)) and callable(getattr(future, "done", None))):
                raise _executor_error(
                    f"{source} gave back {_a(future)} for task {j} of `{function}`,"
                    " not a future (a concurrent.futures.Future)"
                )
            futures.append(future)
        return [_checked(function, source, fn, j, _result(future)) for j, future in enumerate(futures)]
    except BaseException:
        for future in futures:
            try:
                future.cancel()
            except Exception:
                pass
        raise


def _result(future):
    """A future's result, waited for at most `_POLL_S` at a time (a task's own TimeoutError is
    raised as it is)."""
    from concurrent.futures import TimeoutError as FuturesTimeout  # TimeoutError from Python 3.11

    while not future.done():
        try:
            return future.result(timeout=_POLL_S)
        except (TimeoutError, FuturesTimeout):
            pass
    return future.result()


def _mapped(function, executor, source, fn, tasks):
    """What ``executor.map(fn, tasks)`` gives back, as a list of at most one result more than
    `tasks` (an endless map is cut there), called and read in a thread of its own while this one
    waits at most `_POLL_S` at a time. After a KeyboardInterrupt here that thread stops reading at
    the next result and closes the map's iterator (``concurrent.futures``' and Dask's cancel the
    tasks not yet started); a result that never comes keeps it waiting (a daemon thread)."""
    limit = len(tasks) + 1
    stop, done = _threading.Event(), _threading.Event()
    out = {}

    def read():
        try:
            results = executor.map(fn, tasks)
            try:
                iterator = iter(results)
            except TypeError:
                raise _executor_error(
                    f"{source} gave back {_a(results)}, not an iterable of results:"
                    f" `{function}` needs exactly one result per task"
                ) from None
            got = []
            try:
                for result in iterator:
                    if stop.is_set():
                        break
                    got.append(result)
                    if len(got) == limit:
                        break
            finally:
                close = getattr(iterator, "close", None)
                if callable(close):
                    close()
            out["results"] = got
        except BaseException as e:
            out["error"] = e
        finally:
            done.set()

    _threading.Thread(target=read, name=f"llm_ledger.{function}: {source}", daemon=True).start()
    try:
        while not done.wait(_POLL_S):
            pass
    except BaseException:
        stop.set()
        raise
    error = out.pop("error", None)
    if error is not None:
        try:
            raise error
        finally:
            del error
    return out["results"]


def sweep(**kwargs):
    """A batch × context grid in one call (``batch`` and ``ctx``: numbers, lists, ``range``s or
    the CLI's axis text ``"1..256*2"``), computed in Rust in parallel and returned as columns
    (``llm-ledger sweep``)."""
    return Sweep(_native.sweep(kwargs, _call))


def models():
    """The built-in model presets (the CLI's ``models --format json``)."""
    return _json.loads(_native.catalog()[0])


def gpus():
    """The GPU catalogue (the CLI's ``gpus --format json``)."""
    return _json.loads(_native.catalog()[1])


def keywords(command):
    """The keyword arguments ``command`` takes: the CLI flags of the same command, snake case."""
    return list(_native.keywords(command))
