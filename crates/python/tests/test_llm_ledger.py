"""The Python package against the CLI: the same inputs give the same JSON, errors map to Python
exceptions naming the keyword, sweeps come back as columns, notebooks get HTML with the plot.
Issue 16, item 1."""

import ast
import csv
import io
import json
import math
import pathlib
import re
import subprocess

import pytest

import llm_ledger as ll
from conftest import ROOT, cli_binary, refuse_import

COMMANDS = ["ledger", "kv", "levers", "latency", "cost", "zoom", "tile", "moe", "plan", "sweep", "simulate"]


def keyword_text(cli_message):
    """A CLI message as Python words it: each flag (`--tpot-ms`, at the start or after a space, a
    backtick or a bracket) becomes its keyword (`tpot_ms`)."""
    return re.sub(r"(^|(?<=[ `(\[]))--([a-z][a-z0-9-]*)", lambda m: m.group(2).replace("-", "_"), cli_message)


def flags(kwargs):
    """The CLI flags of Python keyword arguments (`max_gpus=8` → `--max-gpus 8`)."""
    out = []
    for k, v in kwargs.items():
        out += [f"--{k.replace('_', '-')}", ll._text(k, v)]
    return out


# Each case: a command and keyword arguments; the CLI gets the same as flags.
CASES = [
    ("ledger", {}),
    ("ledger", {"batch": 64, "counting": "seed"}),
    ("ledger", {"model": "llama-3.1-70b", "gpu": "a100-80gb", "weights": "fp8", "kv": "fp8", "batch": 8, "ctx": 4096}),
    ("ledger", {"phase": "prefill", "ctx": 1024, "flash": False}),
    ("ledger", {"model": "mixtral-8x7b", "batch": 16, "tp": 2, "zipf": 1.2}),
    ("ledger", {"contexts": {2048: 8, 32768: 2}, "kv": "fp8"}),
    ("kv", {"batch": 64}),
    ("levers", {"counting": "seed", "batch": 8, "ctx": 32768}),
    ("latency", {"batch": 8, "prompt": 2048, "output": 256}),
    ("cost", {"batch": 16, "tpot_ms": 20}),
    ("zoom", {"at": "layer.0"}),
    ("tile", {"m": 64, "n": 4096, "k": 4096}),
    ("moe", {"model": "mixtral-8x7b", "batch": "1..16*2"}),
    ("moe", {"experts": 64, "top_k": 8, "batch": [1, 4, 16]}),
    ("plan", {"model": "llama-3.1-70b", "tpot_ms": 30, "max_gpus": 8}),
    ("sweep", {"counting": "seed", "batch": [1, 8, 32, 64, 128, 256]}),
    ("sweep", {"batch": range(1, 9), "ctx": range(1024, 4097, 1024), "weights": "int4"}),
]


def python(command, kwargs):
    return getattr(ll, command)(**kwargs)


@pytest.mark.parametrize("command,kwargs", CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)])
def test_python_json_equals_the_cli_json(cli_json, command, kwargs):
    got = python(command, kwargs).json
    want = cli_json(command, *flags(kwargs))
    assert got == want


@pytest.mark.parametrize("command,kwargs", [c for c in CASES if c[0] != "sweep"])
def test_rows_are_the_cli_csv_rows(cli, command, kwargs):
    r = python(command, kwargs)
    want = list(csv.DictReader(io.StringIO(cli(command, *flags(kwargs), "--format", "csv"))))
    if r.total is not None:
        # The CSV's last row is the total.
        assert want[-1]["op"] == r.total["op"] == "total"
        want = want[:-1]
    if "rows" in r.json:
        assert r.rows == r.json["rows"]
    assert len(r.rows) == len(want) > 0
    for got_row, want_row in zip(r.rows, want):
        assert list(got_row) == list(want_row)
        for k, v in got_row.items():
            text = want_row[k]
            if isinstance(v, bool):
                assert str(v).lower() == text.lower(), k
            elif isinstance(v, (int, float)):
                assert float(text) == pytest.approx(v, rel=1e-12), k
            elif v is None:
                assert text == "", k
            else:
                assert str(v) == text, k


def test_ledger_total_and_seed_numbers():
    # The reference calculator's table under seed counting (README): step 12.0 ms at batch 64.
    r = ll.ledger(batch=64, counting="seed")
    assert r.total["op"] == "total"
    assert r.json["step_time_s"] == pytest.approx(0.0120, abs=5e-5)
    assert [row["op"] for row in r.rows][:2] == ["qkv_proj", "o_proj"]
    assert sum(row["time_s"] for row in r.json["rows"]) == pytest.approx(r.json["step_time_s"], rel=1e-9)


def test_a_config_json_by_path_gives_the_cli_numbers(cli, cli_json):
    folder = ROOT / "crates/core/tests/data/configs/Llama-3.1-8B"
    path = folder / "config.json"
    got = ll.ledger(model=str(path), batch=4).json
    assert got == cli_json("ledger", "--model", str(path), "--batch", "4")
    assert got["inputs"]["model"] == str(path)
    # A pathlib.Path is the same; so is the folder holding the config.json.
    assert ll.ledger(model=path, batch=4).json == got
    assert ll.ledger(model=folder, batch=4).json == got
    with pytest.raises(ll.InputError, match="cannot read config.json") as e:
        ll.ledger(model=str(folder / "missing.json"))
    # The CLI's file reader, so the CLI's message.
    missing = folder / "missing.json"
    assert f"error: {e.value}" == keyword_text(cli("ledger", "--model", missing, ok=False))


def test_a_bad_gpu_is_a_value_error_naming_gpu_and_the_accepted_values(cli):
    with pytest.raises(ValueError) as e:
        ll.ledger(gpu="h900")
    err = e.value
    assert isinstance(err, ll.InputError)
    assert err.field == "gpu"
    assert "h100-sxm" in err.accepted and "a100-80gb-sxm" in err.accepted
    assert "h900" in str(err) and "`h200`" in str(err) and "(23 accepted)" in str(err)
    # The CLI's one-line message, word for word, and the CLI's pointer to its list.
    assert cli("ledger", "--gpu", "h900", ok=False) == f"error: {err}; `llm-ledger gpus` lists them"


@pytest.mark.parametrize(
    "command,kwargs,field",
    [
        ("ledger", {"batch": "abc"}, "batch"),
        ("ledger", {"batch": 0}, "batch"),
        ("ledger", {"kv": "fp7"}, "kv"),
        ("ledger", {"phase": "train"}, "phase"),
        ("cost", {"tpot_ms": -1}, "tpot_ms"),
        ("plan", {"tpot_ms": 30, "max_gpus": 0}, "max_gpus"),
        ("sweep", {"batch": "8..1"}, "batch"),
        ("zoom", {"at": "layer.999"}, "at"),
    ],
)
def test_errors_are_the_cli_messages_naming_the_keyword(cli, command, kwargs, field):
    with pytest.raises(ll.InputError) as e:
        python(command, kwargs)
    msg = str(e.value)
    assert "\n" not in msg
    if e.value.field is not None:
        assert e.value.field == field
    # The CLI names the flag (`--tpot-ms`) where Python names the keyword (`tpot_ms`). Its JSON
    # (what programs read, as Python returns it): a zoom table shows the deepest level instead.
    cli_msg = cli(command, *flags(kwargs), "--format", "json", ok=False)
    assert cli_msg.startswith("error: ")
    assert keyword_text(cli_msg[len("error: ") :]) == msg


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'bacth'"):
        ll.ledger(bacth=1)
    # A keyword another command takes, but not this one (kv has no parallel layout).
    with pytest.raises(TypeError, match="'tp'"):
        ll.kv(tp=2)


def test_an_empty_range_is_refused():
    with pytest.raises(ll.InputError, match="batch"):
        ll.sweep(batch=range(5, 5))


def test_sweep_returns_columns_computed_in_one_call(cli_json):
    s = ll.sweep(batch=range(1, 101), ctx=[1024, 2048, 4096])
    assert len(s) == 300
    assert list(s.columns) == list(cli_json("sweep", "--batch", "1", "--ctx", "1")["points"][0])
    for name, column in s.columns.items():
        assert len(column) == 300, name
    # The point at batch 64, ctx 2048 is the ledger's step.
    i = next(j for j in range(300) if s.columns["batch"][j] == 64 and s.columns["ctx"][j] == 2048)
    assert s.columns["step_time_s"][i] == pytest.approx(ll.ledger(batch=64).json["step_time_s"], rel=1e-12)
    assert s.columns["fits"][i] is True
    assert s.head["point_count"] == 300
    assert s.rows[i]["batch"] == 64


def test_repr_html_has_the_table_and_the_roofline_svg():
    r = ll.ledger(batch=8)
    h = r._repr_html_()
    assert "<table" in h and "<svg" in h and "q_proj" in h
    assert "<svg" in r.svg
    # Other reports: the table; the text form is the CLI's table.
    assert "<table" in ll.kv()._repr_html_()
    curve = ll.sweep(batch=[1, 2, 4, 8])
    assert "<table" in curve._repr_html_() and "<svg" in curve._repr_html_()
    # Several contexts have no single batch curve: the table alone.
    assert ll.sweep(batch=[1, 2], ctx=[1024, 2048]).svg is None
    assert "llama-3-8b on h100-sxm" in str(r)


def test_text_table_is_the_cli_table(cli):
    assert str(ll.ledger(batch=64, counting="seed")) == cli("ledger", "--batch", "64", "--counting", "seed", "--wide")


def test_to_pandas(pd):
    df = ll.ledger().to_pandas()
    assert isinstance(df, pd.DataFrame) and "time_s" in df.columns
    sw = ll.sweep(batch=[1, 2, 4]).to_pandas()
    assert list(sw["batch"]) == [1, 2, 4]


def test_to_pandas_without_pandas_is_a_clear_import_error(monkeypatch):
    refuse_import(monkeypatch, "pandas")
    with pytest.raises(ImportError, match="pip install pandas"):
        ll.ledger().to_pandas()


def cli_flags_of(command):
    """The long flags of a CLI command, from its --help, snake case."""
    text = subprocess.run([str(cli_binary()), command, "--help"], capture_output=True, text=True, check=True).stdout
    found = re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)", text, re.M)
    return {f.replace("-", "_") for f in found}


# Flags that are about output or files the Python side handles otherwise (a path in `model` or
# `gpu`; a context mix as a dict), not keywords.
NOT_KEYWORDS = {"format", "plot", "wide", "width", "help", "gpu_file", "preset_file", "histogram"}
# Flags of one command that write files (the step trace, the timeline plot): a report's data
# stays in Python.
NOT_KEYWORDS_OF = {"simulate": {"trace_out", "plot_timeline"}}
# Keywords of a Python function that are not the command's: where its work runs.
NOT_COMMAND_KEYWORDS = {"plan": {"executor"}}


@pytest.mark.parametrize("command", COMMANDS)
def test_keywords_are_the_cli_flags(command):
    assert set(ll.keywords(command)) == cli_flags_of(command) - NOT_KEYWORDS - NOT_KEYWORDS_OF.get(command, set())


def test_the_stub_lists_every_keyword():
    stub = ast.parse((pathlib.Path(ll.__file__).parent / "__init__.pyi").read_text())
    funcs = {f.name: f for f in stub.body if isinstance(f, ast.FunctionDef)}
    for command in COMMANDS:
        f = funcs[command]
        assert {a.arg for a in f.args.kwonlyargs} - NOT_COMMAND_KEYWORDS.get(command, set()) == set(
            ll.keywords(command)
        ), command
        assert getattr(ll, command).__doc__, command


def test_models_and_gpus_are_the_cli_lists(cli_json):
    assert ll.models() == cli_json("models")
    assert ll.gpus() == cli_json("gpus")


def test_every_number_is_finite():
    for command, kwargs in CASES:
        r = python(command, kwargs)
        for row in r.rows:
            for v in row.values():
                if isinstance(v, float):
                    assert math.isfinite(v)


def test_readme_python_example_runs():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S)
    assert block, "README has a ```python example"
    code = block.group(1)
    assert "import llm_ledger" in code
    exec(compile(code, "README.md", "exec"), {})


def test_docs_python_md_is_real_output(monkeypatch, np):
    # The page shows a sweep's NumPy arrays (`np`: NumPy is there, or the test says why not).
    import doctest

    monkeypatch.chdir(ROOT)
    result = doctest.testfile(
        str(ROOT / "docs/python.md"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS,
        verbose=False,
    )
    assert result.attempted >= 20, result
    assert result.failed == 0, result


def test_python_values_are_the_cli_text():
    assert ll._text("flash", False) == "off" and ll._text("flash", True) == "on"
    assert ll._text("batch", range(1, 9)) == "1..8"
    assert ll._text("ctx", range(0, 8193, 1024)) == "0..8192:1024"
    assert ll._text("batch", (1, 8, 32)) == "1,8,32"
    assert ll._text("contexts", {2048: 8, 100: 1}) == "2048x8,100x1"
    assert ll._text("compute_efficiency", 0.5) == "0.5"
    # The same sweep from a range and from the CLI's axis text.
    a, b = ll.sweep(batch=range(1, 9, 2)), ll.sweep(batch="1..7:2")
    assert a.json == b.json and list(a.columns["batch"]) == [1, 3, 5, 7]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": "llama-3-8b", "gpu": "h100-sxm", "batch": 64, "kv": "fp8", "flash": False, "ctx": None},
        {"batch": 2**63 - 1},
        {"batch": 2**64, "ctx": -1},
        {"batch": True, "counting": "seed"},
        {"batch": "8", "model": "llama\ud800"},
    ],
)
def test_plain_values_read_in_rust_are_the_python_text(kwargs):
    # `str`, `bool`, `int` and None are read in Rust; the same call with the Python side's text
    # pairs gives the same report or the same error.
    def outcome(run):
        try:
            return run().json()
        except Exception as e:  # noqa: BLE001 - the error is the outcome compared
            return type(e), str(e), getattr(e, "field", None)

    in_rust = outcome(lambda: ll._native.run("ledger", kwargs, ll._call))
    assert in_rust == outcome(lambda: ll._native.run("ledger", ll._call(kwargs)))


def test_a_sweep_reads_plain_values_in_rust_as_the_python_text():
    def sweep(*args):
        return ll.Sweep(ll._native.sweep(*args)).json

    assert sweep({"batch": 8, "flash": True, "ctx": None}, ll._call) == sweep([("batch", "8"), ("flash", "on")])


def test_an_endless_iterable_is_refused_naming_the_keyword():
    import itertools

    with pytest.raises(ll.InputError) as e:
        ll.ledger(batch=itertools.count(1))
    assert e.value.field == "batch"
    assert str(e.value) == f"invalid `batch`: more than {ll.MAX_VALUES} values (at most {ll.MAX_VALUES})"
    # A finite generator is read as the list it yields.
    assert ll.sweep(batch=(b for b in (1, 8))).json == ll.sweep(batch=[1, 8]).json


@pytest.mark.parametrize("kwargs,field", [({"model": "llama\ud800"}, "model"), ({"gpu": ["h100", "\udfff"]}, "gpu")])
def test_a_lone_surrogate_is_an_input_error_naming_the_keyword(kwargs, field):
    with pytest.raises(ll.InputError) as e:
        ll.ledger(**kwargs)
    assert e.value.field == field
    assert "lone surrogate" in str(e.value) and str(e.value).startswith(f"invalid `{field}`")


def test_a_model_name_that_is_a_file_here_is_that_file(monkeypatch, cli_json):
    monkeypatch.chdir(ROOT / "examples")
    here = ll.ledger(model="tiny-q4_k_m.gguf").json
    assert here["inputs"]["model"] == "tiny-q4_k_m.gguf"
    assert here["step_time_s"] == cli_json("ledger", "--model", "examples/tiny-q4_k_m.gguf")["step_time_s"]


def test_reports_say_whether_the_model_fits():
    fits = ll.ledger()
    assert fits.fits is True and fits.plan_command is None
    big = ll.ledger(model="llama-3.1-405b")
    assert big.fits is False and big.json["memory_bytes"] > big.json["gpu_memory_bytes"]
    assert big.plan_command == "llm-ledger plan --model llama-3.1-405b --gpu h100-sxm --tpot-ms 50"
    assert ll.latency(model="llama-3.1-405b").fits is False
    assert ll.sweep(batch=[1, 2], model="llama-3.1-405b").fits is False
    assert ll.tile(m=1, n=4096, k=4096).fits is None


@pytest.mark.parametrize("command,kwargs", [c for c in CASES if c[0] != "sweep"])
def test_fields_read_from_the_report_equal_its_json(command, kwargs):
    r = python(command, kwargs)
    j = r.json
    assert r.rows == (j["rows"] if isinstance(j.get("rows"), list) else r._native.csv_rows())
    assert r.total == j.get("total")
    assert r.fits == j.get("fits")
    assert r.plan_command == j.get("plan_command")


def test_a_report_is_rendered_only_when_asked():
    r = ll.ledger(batch=64, counting="seed")
    built = set(vars(r))
    assert built == {"command", "_native"}, built
    # Numbers are read from the report's fields: no JSON, table or plot is built for them.
    assert r.total["op"] == "total" and r.rows[0]["op"] == "qkv_proj" and r.fits is True
    assert not {"json", "_json_text", "_table", "svg", "_human"} & set(vars(r))
    # Each rendering is built on first use and kept.
    assert r.svg is r.svg and str(r) is str(r) and r.json is r.json


def test_a_ledger_makes_its_report_on_the_first_read():
    # The call holds the core's ledger; the report (rows, total, notes) is made by the first read
    # of any of it, whichever it is, and is then the same report the CLI prints.
    for read in (lambda r: r.total, lambda r: r.to_json(), lambda r: str(r), lambda r: r.svg):
        r = ll.ledger(batch=8)
        assert not r._native.made()
        read(r)
        assert r._native.made()
        assert r.total == r.json["total"] and r.total["op"] == "total"
    # A report made at the call says so.
    assert ll.kv(batch=8)._native.made()


def test_to_json_is_the_cli_json_text(cli):
    assert ll.ledger(batch=64, kv="fp8").to_json() == cli("ledger", "--batch", "64", "--kv", "fp8", "--format", "json")
    assert ll.kv(batch=8).to_json() == cli("kv", "--batch", "8", "--format", "json")


def test_sweep_arrays_are_numpy_columns_read_in_place(np):
    s = ll.sweep(batch=range(1, 101), ctx=[1024, 2048, 4096])
    a = s.arrays
    assert list(a) == list(s.columns)
    dtypes = {name: str(column.dtype) for name, column in a.items()}
    assert dtypes == {
        **{name: "float64" for name in a},
        "batch": "int64",
        "ctx": "int64",
        "largest_op": "object",
        "fits": "bool",
    }
    for name, column in a.items():
        assert len(column) == 300 and column.tolist() == list(s.columns[name]), name
    # Numbers are read in place from a copy each array owns (no Python object per point), and
    # writable: a write changes neither the sweep nor a second set of arrays.
    assert type(a["step_time_s"].base).__name__ == "ColumnArray" and a["step_time_s"].flags.writeable
    first = float(a["step_time_s"][0])
    a["step_time_s"][0] = -1.0
    assert s.columns["step_time_s"][0] == first and s._new_arrays()["step_time_s"][0] == first
    # The point at batch 64, ctx 2048 is the ledger's step.
    i = int(np.flatnonzero((a["batch"] == 64) & (a["ctx"] == 2048))[0])
    assert a["step_time_s"][i] == pytest.approx(ll.ledger(batch=64).json["step_time_s"], rel=1e-12)


def test_sweep_to_pandas_has_the_arrays_dtypes(pd, np):
    s = ll.sweep(batch=[1, 2, 4], ctx=[1024, 8192])
    df = s.to_pandas()
    assert list(df.columns) == list(s.columns)
    assert df["batch"].tolist() == [1, 2, 4, 1, 2, 4] and str(df["batch"].dtype) == "int64"
    assert str(df["fits"].dtype) == "bool" and df["largest_op"].tolist() == s.columns["largest_op"]
    # `largest_op` is a Categorical of the sweep's one-byte codes: one str per operator kind.
    ops = df["largest_op"]
    assert str(ops.dtype) == "category" and list(ops.cat.categories) == sorted(set(ops), key=ops.tolist().index)
    assert ops.cat.codes.tolist() == [list(ops.cat.categories).index(v) for v in s.columns["largest_op"]]
    assert df["step_time_s"].tolist() == list(s.columns["step_time_s"])
    # The frame's columns are its own: writing to it leaves the sweep's arrays as they were.
    assert not np.shares_memory(df["step_time_s"].to_numpy(), s.arrays["step_time_s"])
    df.loc[0, "step_time_s"] = -1.0
    assert s.arrays["step_time_s"][0] > 0 and s.columns["step_time_s"][0] > 0


def test_sweep_arrays_without_numpy_is_a_clear_import_error(monkeypatch):
    s = ll.sweep(batch=[1, 2])
    refuse_import(monkeypatch, "numpy")
    with pytest.raises(ImportError, match="pip install numpy"):
        s.arrays
    # The columns need no NumPy.
    assert list(s.columns["batch"]) == [1, 2] and s.columns["fits"] == [True, True]


def test_sweep_html_shows_its_first_points():
    s = ll.sweep(batch=range(1, 41))
    h = s._repr_html_(limit=3)
    assert h.count("<tr>") == 4 and "first 3 of 40 points" in h
    first = [s.columns[k][0] for k in s.columns]
    assert tuple(first) == s._native.point(0)


def test_a_one_point_sweep_is_the_ledger_step():
    s = ll.sweep(batch=8)
    assert len(s) == 1 and s.columns["batch"][0] == 8
    assert s.columns["step_time_s"][0] == pytest.approx(ll.ledger(batch=8).json["step_time_s"], rel=1e-12)
