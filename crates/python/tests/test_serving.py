"""Serving from Python against the CLI (issue 16): `simulate` (one rate, a sweep of rates, every
arrival process and scheduler keyword), `plan` under load (`plan --rate`), a calibration profile
(`profile=`, as `llm-ledger calibrate` writes it) and Hub ids at a revision (`revision=`, from a
Hugging Face cache tree made here, offline). The same inputs give the CLI's JSON, and errors its
one-line message with keywords for flags."""

import json
import os
import subprocess
import sys

import pytest

import llm_ledger as ll
from conftest import ROOT, cli_binary, optional_module
from test_llm_ledger import flags, keyword_text

# Small runs: the CLI under test is a debug build.
SIMULATE_CASES = [
    {"rate": 4, "requests": 200, "prompt": 1024, "output": 256},
    {"rate": [4, 16], "requests": 200, "prompt": 1024, "output": 256},
    {"rate": "1..3", "requests": 100, "arrivals": "gamma", "cv": 1.5, "seed": 7, "prompt": "uniform:128..1024"},
    {"rate": [0.5, 1.5], "requests": 50, "output": "lognormal:64:0.5"},
    {"arrivals": "closed", "concurrency": 8, "requests": 100, "prompt": 512, "output": 64},
    {
        "model": "llama-3.1-70b",
        "tp": 2,
        "kv": "fp8",
        "rate": 8,
        "requests": 150,
        "prompt": 2048,
        "output": 128,
        "max_seqs": 64,
        "max_batched_tokens": 4096,
        "chunk": 512,
        "schedule": "prefill-first",
        "block": 32,
        "prefix_hit": 0.5,
        "ttft_ms": 200,
        "tpot_ms": 20,
        "reserve": "4GB",
    },
    {"rate": 20, "requests": 100, "gpu": "a100-80gb", "weights": "int4-g128", "time_model": "roofline"},
    {"rate": [8, 16], "requests": 100, "prompt": 2048, "output": 64, "disagg": "1:3"},
    {"rate": 4, "requests": 50, "prompt": 1024, "output": 32, "disagg": "1:1", "kv_link": "network"},
]


@pytest.mark.parametrize("kwargs", SIMULATE_CASES, ids=[f"simulate-{i}" for i in range(len(SIMULATE_CASES))])
def test_simulate_json_equals_the_cli_json(cli_json, kwargs):
    got = ll.simulate(**kwargs)
    want = cli_json("simulate", *flags(kwargs))
    assert got.json == want
    if "summary" in want:
        assert got.summary == want["summary"] and got.points == [want["summary"]]
    else:
        assert got.summary is None and got.points == want["points"]
    assert got.settings == want["settings"]


def test_simulate_summary_rows_and_html(cli):
    one = ll.simulate(rate=4, requests=200, prompt=1024, output=256)
    s = one.summary
    assert s["requests"] == 200 and s["completed"] == 200
    assert {"ttft_s", "tpot_s", "itl_s", "e2e_s", "goodput_per_s", "output_tokens_per_s"} <= set(s)
    assert s["ttft_s"]["p50"] <= s["ttft_s"]["p99"]
    # One flat row per rate: the CLI's CSV.
    csv_text = cli("simulate", "--rate", "4", "--requests", "200", "--prompt", "1024", "--output", "256", "-f", "csv")
    header = csv_text.splitlines()[0].split(",")
    assert len(one.rows) == 1 and list(one.rows[0]) == header
    # The summary table and the latency CDFs the CLI's --plot draws.
    h = one._repr_html_()
    assert "<table" in h and "<svg" in h and "TTFT" in h
    assert str(one) == cli("simulate", "--rate", "4", "--requests", "200", "--prompt", "1024", "--output", "256", "--wide")
    sweep = ll.simulate(rate=range(2, 9, 2), requests=100)
    assert [p["offered_rate_per_s"] for p in sweep.points] == [2.0, 4.0, 6.0, 8.0]
    assert len(sweep.rows) == 4 and "<svg" in sweep.svg
    assert sweep.svg != one.svg


def test_simulate_to_pandas(pd):
    df = ll.simulate(rate=[2, 4], requests=50).to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df["offered_rate_per_s"]) == [2.0, 4.0]


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"rate": 0}, "rate"),
        ({"rate": "8..1"}, "rate"),
        ({"arrivals": "burst"}, "arrivals"),
        ({"arrivals": "closed", "rate": 4}, "rate"),
        ({"cv": 2}, "cv"),
        ({"schedule": "fifo"}, "schedule"),
        ({"prefix_hit": 1}, "prefix_hit"),
        ({"requests": 0}, "requests"),
        ({"prompt": "uniform:9..1"}, "prompt"),
        ({"arrivals": "trace"}, "arrivals"),
        ({"trace": "/nonexistent/trace.csv"}, "trace"),
        ({"model": "llama-3.1-405b"}, "model"),
        ({"disagg": "0:1"}, "disagg"),
        ({"kv_link": "nvlink"}, "kv_link"),
    ],
)
def test_simulate_errors_are_the_cli_messages(cli, kwargs, field):
    with pytest.raises(ValueError) as e:
        ll.simulate(**kwargs)
    assert isinstance(e.value, ll.InputError)
    assert e.value.field == field
    assert f"error: {e.value}" == keyword_text(cli("simulate", *flags(kwargs), ok=False))


def test_a_trace_file_is_read_as_the_cli_reads_it(cli_json, tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,512,32\n0.1,1024,16\n0.5,256,64\n")
    got = ll.simulate(trace=trace)
    assert got.json == cli_json("simulate", "--trace", trace)
    assert got.summary["completed"] == 3 and got.settings["arrivals"] == "trace"


# plan under load: the CLI test's small search (crates/cli/tests/it/plan_load.rs).
PLAN_LOAD = {"max_gpus": 2, "requests": 100, "prompt": 256, "output": 16}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0.5, "ttft_ms": 1000, "tpot_ms": 50},
        {"rate": 4, "ttft_ms": 500, "tpot_ms": 50, "seed": 3},
    ],
)
def test_plan_under_load_equals_the_cli(cli_json, kwargs):
    kwargs = {**PLAN_LOAD, **kwargs}
    got = ll.plan(**kwargs)
    want = cli_json("plan", *flags(kwargs))
    assert got.json == want
    best = got.json["ranked"][0]
    assert best["meets_sla"] is True and best["ttft_p99_s"] <= kwargs["ttft_ms"] / 1e3
    assert got.json["pareto"] and got.rows[0]["gpus"] == best["gpus"]


def test_the_static_plan_takes_lengths_as_the_cli_does(cli_json):
    # The decode step at the requests' mean context, prompt + output / 2: 2,000 + 300 -> 2,150.
    got = ll.plan(tpot_ms=50, max_gpus=2, prompt=2000, output=300)
    assert got.json == ll.plan(tpot_ms=50, max_gpus=2, ctx=2150).json
    assert got.json == cli_json("plan", *flags({"tpot_ms": 50, "max_gpus": 2, "prompt": 2000, "output": 300}))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 1, "ttft_ms": 0.001, "tpot_ms": 50},  # simulated, missed: the closest p99s
        {"rate": 1, "ttft_ms": 500, "tpot_ms": 0.001},  # no layout reaches the TPOT even alone
        {"rate": 1, "tpot_ms": 50},  # no TTFT bound
        {"rate": 1, "ttft_ms": 500, "tpot_ms": 50, "batch": 8},  # batch is simulated
        {"ttft_ms": 500, "tpot_ms": 50},  # a load input without a rate
        {"rate": -1, "ttft_ms": 500, "tpot_ms": 50},
    ],
)
def test_plan_under_load_errors_are_the_cli_messages(cli, kwargs):
    kwargs = {**PLAN_LOAD, **kwargs}
    with pytest.raises(ValueError) as e:
        ll.plan(**kwargs)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"error: {msg}" == keyword_text(cli("plan", *flags(kwargs), ok=False))


PLAN_ON_EXECUTOR = {**PLAN_LOAD, "rate": 4, "ttft_ms": 500, "tpot_ms": 50, "seed": 3}


def test_plan_under_load_on_threads_and_processes_is_the_plan_made_here():
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    want = ll.plan(**PLAN_ON_EXECUTOR)
    with ThreadPoolExecutor(max_workers=2) as pool:
        threads = ll.plan(**PLAN_ON_EXECUTOR, executor=pool)
    # Processes receive each candidate's keywords and index by pickling and send its
    # assessment back as JSON.
    with ProcessPoolExecutor(max_workers=2) as pool:
        processes = ll.plan(**PLAN_ON_EXECUTOR, executor=pool)
    for got in (threads, processes):
        assert got.json == want.json
        assert str(got) == str(want)
    assert want.json["candidates"] > 1


class _Recording:
    """An executor that runs tasks here and records them."""

    def __init__(self):
        self.tasks = []

    def map(self, fn, tasks):
        tasks = list(tasks)
        self.tasks.extend(tasks)
        return [fn(t) for t in tasks]


def test_plan_on_an_executor_sends_one_task_per_candidate_and_refuses_what_the_plan_refuses(cli):
    rec = _Recording()
    got = ll.plan(**PLAN_ON_EXECUTOR, executor=rec)
    assert len(rec.tasks) == got.json["candidates"]
    assert [j for _, j in rec.tasks] == list(range(len(rec.tasks)))
    # Bad input is refused before any task is sent, with the CLI's message.
    rec = _Recording()
    bad = {**PLAN_ON_EXECUTOR, "rate": -1}
    with pytest.raises(ll.InputError) as e:
        ll.plan(**bad, executor=rec)
    assert rec.tasks == []
    assert f"error: {e.value}" == keyword_text(cli("plan", *flags(bad), ok=False))
    # A search past its step budget is refused here, before any task, as without an executor.
    rec = _Recording()
    tight = {**PLAN_ON_EXECUTOR, "max_steps": 10}
    with pytest.raises(ll.InputError) as alone:
        ll.plan(**tight)
    with pytest.raises(ll.InputError) as spread:
        ll.plan(**tight, executor=rec)
    assert rec.tasks == [] and str(spread.value) == str(alone.value) and "max_steps" in str(alone.value)
    # No deployment holds the bounds: the same refusal as without an executor.
    impossible = {**PLAN_ON_EXECUTOR, "ttft_ms": 0.001}
    with pytest.raises(ll.InputError) as alone:
        ll.plan(**impossible)
    with pytest.raises(ll.InputError) as spread:
        ll.plan(**impossible, executor=_Recording())
    assert str(spread.value) == str(alone.value)
    # A static plan has no candidates to spread.
    with pytest.raises(ll.InputError, match="executor"):
        ll.plan(tpot_ms=50, executor=_Recording())
    # An assessment that is not one of this search's: refused, naming it.
    with pytest.raises(ll.InputError, match="assessment of candidate 0"):
        ll.plan(**PLAN_ON_EXECUTOR, executor=type("Broken", (), {"map": lambda self, f, t: ["{}" for _ in t]})())


def test_plan_under_load_fans_out_on_a_dask_cluster():
    """The plan's candidates as tasks on a two-worker Dask `LocalCluster` (loopback only)."""
    distributed = optional_module("distributed", "Dask executor")
    want = ll.plan(**PLAN_ON_EXECUTOR).json
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            got = ll.plan(**PLAN_ON_EXECUTOR, executor=client.get_executor())
        ran = [t for t in stream.data if "_plan_part" in t["key"]]
        assert len(ran) == want["candidates"]
    assert got.json == want


def test_an_impossible_sla_names_the_keywords():
    with pytest.raises(ll.InputError) as e:
        ll.plan(**PLAN_LOAD, rate=1, ttft_ms=0.001, tpot_ms=50)
    assert str(e.value).startswith("invalid `ttft_ms`/`tpot_ms`: no deployment"), e.value
    assert "the closest" in str(e.value)


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    """A profile written by `llm-ledger calibrate`: decode steps measured 20 % slower than the
    clock predicts (memory-bound), so its memory scale is 1.2."""
    d = tmp_path_factory.mktemp("profile")
    rows = ["model,gpu,batch,ctx,tpot_ms"]
    for b, c in [(1, 2048), (8, 1024), (4, 8192), (16, 512), (2, 4096)]:
        t = ll.ledger(batch=b, ctx=c).json["step_time_s"] * 1.2
        rows.append(f"llama-3-8b,h100-sxm,{b},{c},{t * 1e3}")
    (d / "steps.csv").write_text("\n".join(rows) + "\n")
    out = d / "profile.toml"
    subprocess.run(
        [str(cli_binary()), "calibrate", str(d / "steps.csv"), "--out", str(out)], check=True, capture_output=True
    )
    assert "memory_scale = 1." in out.read_text()
    return out


@pytest.mark.parametrize(
    "command,kwargs",
    [
        ("ledger", {"batch": 8}),
        ("kv", {"batch": 8}),
        ("latency", {"batch": 8, "prompt": 1024, "output": 64}),
        ("cost", {"batch": 16, "tpot_ms": 20}),
        ("zoom", {"at": "layer.0"}),
        ("moe", {"model": "mixtral-8x7b", "batch": [1, 4]}),
        ("levers", {"batch": 8}),
        ("plan", {"tpot_ms": 30, "max_gpus": 2}),
        ("simulate", {"rate": 2, "requests": 50}),
    ],
)
def test_a_profile_gives_the_cli_numbers(cli_json, profile, command, kwargs):
    got = getattr(ll, command)(profile=profile, **kwargs).json
    assert got == cli_json(command, *flags(kwargs), "--profile", profile)


def test_a_profile_changes_the_clock_and_a_bad_one_is_the_cli_message(cli, profile, tmp_path):
    plain = ll.ledger(batch=8).json["step_time_s"]
    profiled = ll.ledger(batch=8, profile=str(profile)).json["step_time_s"]
    assert profiled / plain == pytest.approx(1.2, rel=0.01)
    s = ll.sweep(batch=[8], profile=profile)
    assert s.columns["step_time_s"][0] == pytest.approx(profiled, rel=1e-12)
    bad = tmp_path / "bad.toml"
    bad.write_text("memory_scale = 50\ncompute_scale = 1\nkernel_s = 0\n")
    for path in [bad, tmp_path / "missing.toml"]:
        with pytest.raises(ll.InputError) as e:
            ll.ledger(profile=path)
        assert f"error: {e.value}" == keyword_text(cli("ledger", "--profile", path, ok=False))
    with pytest.raises(ll.InputError, match="memory_scale"):
        ll.ledger(profile=bad)


COMMIT_A = "0123456789abcdef0123456789abcdef01234567"
COMMIT_B = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture()
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache holding `org/model` at two revisions (as crates/cli/tests/it/hub.rs
    builds it): `main` → commit A, the Llama 3.1 8B config; `small` → commit B, the same with 16
    layers. Offline, no token; the environment the Python process and the CLI share."""
    cache = tmp_path / "hub"
    config = json.loads((ROOT / "crates/core/tests/data/configs/Llama-3.1-8B/config.json").read_text())
    small = {**config, "num_hidden_layers": 16}
    repo = cache / "models--org--model"
    for commit, cfg, branch in [(COMMIT_A, config, "main"), (COMMIT_B, small, "small")]:
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True)
        (snap / "config.json").write_text(json.dumps(cfg))
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / branch).write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return cache


def test_a_hub_id_at_a_revision_is_the_cli_snapshot(cli_json, hub_cache):
    main = ll.ledger(model="org/model", batch=4).json
    assert main == cli_json("ledger", "--model", "org/model", "--batch", "4")
    assert main["inputs"]["model"] == "org/model"
    # The same config by path gives the same numbers.
    by_path = ll.ledger(model=ROOT / "crates/core/tests/data/configs/Llama-3.1-8B", batch=4).json
    assert by_path["step_time_s"] == main["step_time_s"]
    small = ll.ledger(model="org/model", revision="small", batch=4).json
    assert small == cli_json("ledger", "--model", "org/model", "--revision", "small", "--batch", "4")
    assert small["step_time_s"] < main["step_time_s"]
    assert ll.ledger(model="org/model", revision=COMMIT_B, batch=4).json == small
    assert ll.ledger(model="org/model", revision=COMMIT_A, batch=4).json == main
    # Every scenario function takes it, simulate and the sweep too.
    got = ll.simulate(model="org/model", revision="small", rate=2, requests=30)
    assert got.json == cli_json("simulate", "--model", "org/model", "--revision", "small", "--rate", 2, "--requests", 30)
    sw = ll.sweep(model="org/model", revision="small", batch=[4])
    assert sw.columns["step_time_s"][0] == pytest.approx(small["step_time_s"], rel=1e-12)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"model": "org/model", "revision": "nope"}, "model"),  # not in the cache, offline
        ({"model": "llama-3.1-8b", "revision": "main"}, "revision"),  # a preset has no revision
        ({"revision": "main"}, "revision"),  # no model
        ({"model": "org/model", "revision": "../../etc/passwd"}, "revision"),
        ({"model": "org/..", "revision": "main"}, "model"),
        ({"model": "other/model"}, "model"),  # not cached, offline
    ],
)
def test_hub_errors_are_the_cli_messages(cli, hub_cache, kwargs, field):
    with pytest.raises(ValueError) as e:
        ll.kv(**kwargs)
    assert e.value.field == field
    msg = str(e.value)
    assert "\n" not in msg and "`--model`" not in msg and "`--revision`" not in msg
    assert f"error: {msg}" == keyword_text(cli("kv", *flags(kwargs), ok=False))
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_a_hostile_hub_writes_nothing(tmp_path, monkeypatch):
    """A Hub (a loopback server started here) answering an ETag that is an absolute path: the
    call raises the CLI's one-line error naming the header, and neither the path nor the cache
    holds a file."""
    import http.server
    import threading

    outside = tmp_path / "outside"
    outside.mkdir()

    class Hostile(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"model_type": "llama"}'
            self.send_response(200)
            self.send_header("X-Repo-Commit", COMMIT_A)
            self.send_header("ETag", f'"{outside / "x"}"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    try:
        with pytest.raises(ll.InputError) as e:
            ll.kv(model="org/model")
    finally:
        server.shutdown()
    assert "`ETag: \"/" in str(e.value) and "nothing was written" in str(e.value)
    assert not any(outside.iterdir()) and not cache.exists()


# Hostile inputs to the long runs: the step budget, Ctrl-C, exact latencies at extreme time
# scales, escaped echoes.


def test_runs_past_the_step_budget_are_the_cli_message(cli):
    kwargs = {"rate": "1..100", "requests": 10000, "prompt": 1, "output": 460000, "max_seqs": 1}
    with pytest.raises(ll.InputError) as e:
        ll.simulate(**kwargs)
    assert e.value.field == "max_steps"
    assert f"error: {e.value}" == keyword_text(cli("simulate", *flags(kwargs), ok=False))
    assert "need about 4.6e11 engine steps" in str(e.value)


def test_ctrl_c_raises_keyboard_interrupt_during_a_long_simulation():
    # 8 rates of a million requests decoding 100,000 tokens each: minutes of work, long past the
    # bound below. SIGINT arrives a second in; the call must raise KeyboardInterrupt, not return.
    script = (
        "import os, signal, threading\n"
        "import llm_ledger as ll\n"
        "threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    ll.simulate(rate='1..8', requests=1000000, prompt=1, output=100000, max_steps=10**10)\n"
        "    print('returned')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "interrupted", p.stderr


def test_latencies_stay_exact_one_request_every_1e15_s():
    lat = ll.latency(prompt=512, output=32).json
    s = ll.simulate(rate=1e-15, requests=100, prompt=512, output=32).summary
    for name, want in [("ttft_s", lat["ttft_s"]), ("tpot_s", lat["tpot_s"])]:
        for k in ["mean", "p50", "p99"]:
            assert abs(s[name][k] / want - 1) <= 0.005, (name, k, s[name][k], want)


def test_echoed_control_characters_are_escaped():
    with pytest.raises(ll.InputError) as e:
        ll.ledger(gpu="h100\x1b[31mred")
    assert "h100\\u{1b}[31mred" in str(e.value) and "\x1b" not in str(e.value)


# A small search: three rates of one deployment, each a run of its own.
MANY_COMMON = {"requests": 120, "prompt": 1024, "output": 64, "seed": 3}
MANY_RUNS = [{"rate": 2}, {"rate": 8, "max_seqs": 16}, {"rate": 4, "arrivals": "gamma", "cv": 2}]


def many_alone():
    """Each of MANY_RUNS as its own `simulate` call: what every executor must give back."""
    return [ll.simulate(**MANY_COMMON, **run).json for run in MANY_RUNS]


def test_simulate_many_is_each_run_in_order_over_the_common_keywords(cli_json):
    got = ll.simulate_many(MANY_RUNS, **MANY_COMMON)
    assert [s.json for s in got] == many_alone()
    # A run's own keyword wins over the common one.
    assert got[1].settings["max_seqs"] == 16
    assert got[0].json == cli_json("simulate", *flags({**MANY_COMMON, **MANY_RUNS[0]}))
    assert ll.simulate_many([], **MANY_COMMON) == []


def test_simulate_many_on_threads_and_processes_gives_the_same_reports():
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    want = many_alone()
    with ThreadPoolExecutor(max_workers=2) as pool:
        threads = ll.simulate_many(MANY_RUNS, executor=pool, **MANY_COMMON)
    # Processes receive each run by pickling and send the outputs back as text.
    with ProcessPoolExecutor(max_workers=2) as pool:
        processes = ll.simulate_many(MANY_RUNS, executor=pool, **MANY_COMMON)
    for got in (threads, processes):
        assert [s.json for s in got] == want
        assert [s.summary for s in got] == [w["summary"] for w in want]
        assert str(got[0]) == str(ll.simulate(**MANY_COMMON, **MANY_RUNS[0]))
        assert got[0].rows == ll.simulate(**MANY_COMMON, **MANY_RUNS[0]).rows


def test_simulate_many_bad_input_is_the_runs_input_error():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(ll.InputError, match="rate"):
            ll.simulate_many([{"rate": 2}, {"rate": -1}], executor=pool, **MANY_COMMON)


def test_simulate_many_fans_out_on_a_dask_cluster():
    """A Dask `LocalCluster` on this machine (two worker processes, loopback only, no dashboard):
    the search runs on its workers through `Client.get_executor()` and gives the same reports."""
    distributed = optional_module("distributed", "Dask executor")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            got = ll.simulate_many(MANY_RUNS, executor=client.get_executor(), **MANY_COMMON)
        # One task per run, each run on one of the cluster's workers.
        ran = [t for t in stream.data if "_simulate_shipped" in t["key"]]
        assert len(ran) == len(MANY_RUNS)
        assert {t["worker"] for t in ran} <= set(client.scheduler_info()["workers"])
    assert [s.json for s in got] == many_alone()
