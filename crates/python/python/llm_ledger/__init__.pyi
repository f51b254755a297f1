"""Type stubs of llm_ledger. Keyword arguments are named like the CLI's flags (`--max-gpus` is
`max_gpus`); every one is optional and defaults to the CLI's default (None: the default)."""

from array import array
from os import PathLike
from concurrent.futures import Executor
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

__version__: str
MAX_VALUES: int

Number = Union[int, float]
#: A number, a list of numbers, a range, or the CLI's text (`"1..256*2"`, `"2048x8,100"`).
Axis = Union[int, Sequence[int], range, str]
#: `True`/`False` for on/off inputs, or the CLI's text.
OnOff = Union[bool, str]
#: A catalogue name, a path to a file (a config.json, its folder, a GGUF file; a GPU file), or
#: for `model` a Hugging Face Hub repo id `"org/name"` (with `revision`).
NameOrPath = Union[str, PathLike]
#: A rate in requests/s, a list of rates, a range, or the CLI's text (`"1..40"`, `"0.5,1.5"`).
Rates = Union[Number, Sequence[Number], range, str]
#: Prompt or output lengths: tokens, or the CLI's text (`"uniform:128..4096"`,
#: `"lognormal:1024:0.8"`, `"hist:lengths.csv"`).
Lengths = Union[int, str]

class InputError(ValueError):
    """Bad input: the CLI's one-line message, naming the keyword."""
    #: The keyword the error is about, when known.
    field: Optional[str]
    #: The accepted values of a closed set (GPU names, precisions …), when there is one.
    accepted: Optional[List[str]]

class Report:
    """One command's report (the CLI's `--format json`), held as the core built it: each
    attribute is built the first time it is read."""
    command: str
    #: The whole report, as the CLI's JSON.
    json: Dict[str, Any]
    #: The rows: dicts with the CLI's JSON row fields (the `--format csv` columns).
    rows: List[Dict[str, Any]]
    #: The total row (`ledger`), else None.
    total: Optional[Dict[str, Any]]
    #: Whether the scenario fits in GPU memory (the JSON's `fits`; None where the report has no
    #: scenario: `tile`, `moe` without a model).
    fits: Optional[bool]
    #: When it does not fit: the CLI's `plan` command that searches for a layout that does.
    plan_command: Optional[str]
    #: The roofline plot as inline SVG (`ledger`), else None.
    svg: Optional[str]
    def to_json(self) -> str:
        """The CLI's `--format json` text, byte for byte."""
    def to_pandas(self) -> Any: ...
    def __getitem__(self, key: str) -> Any: ...
    def _repr_html_(self) -> str: ...

class Simulation(Report):
    """A `simulate` report: one rate or a sweep of rates."""
    #: The one rate's summary (the CLI JSON's `summary`), or None for a sweep.
    summary: Optional[Dict[str, Any]]
    #: One summary per rate (a sweep: the JSON's `points`; one rate: `[summary]`).
    points: List[Dict[str, Any]]
    #: The simulator's settings as run.
    settings: Dict[str, Any]

class Sweep:
    """A whole sweep as columns, in the CLI's point-key order."""
    head: Dict[str, Any]
    columns: Dict[str, Union[array, List[str], List[bool]]]
    #: The columns as NumPy arrays (`int64`, `float64`, `bool`; `largest_op` of str objects),
    #: without a Python object per point (needs NumPy).
    arrays: Dict[str, Any]
    total: None
    #: Whether every point fits in GPU memory (the head's `fits`: the largest point's).
    fits: bool
    #: The batch curve as inline SVG (one context, at most 4,096 points), else None.
    svg: Optional[str]
    @property
    def rows(self) -> List[Dict[str, Any]]: ...
    @property
    def json(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...
    #: The columns as a DataFrame: the `arrays` dtypes, `largest_op` a Categorical (needs pandas).
    def to_pandas(self) -> Any: ...
    def _repr_html_(self, limit: int = ...) -> str: ...

def ledger(
    *,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    phase: Optional[str] = None,
    batch: Optional[int] = None,
    ctx: Optional[int] = None,
    contexts: Optional[Union[Mapping[int, int], Sequence[int], str]] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
) -> Report:
    """Per-operator FLOPs, bytes, intensity and roofline time of one forward step."""

def zoom(
    *,
    at: Optional[str] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    phase: Optional[str] = None,
    batch: Optional[int] = None,
    ctx: Optional[int] = None,
    contexts: Optional[Union[Mapping[int, int], Sequence[int], str]] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
) -> Report:
    """One node of the zoom tree (`at`, default "model"), its children and the add-up report."""

def kv(
    *,
    reserve: Optional[Union[str, Number]] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    phase: Optional[str] = None,
    batch: Optional[int] = None,
    ctx: Optional[int] = None,
    contexts: Optional[Union[Mapping[int, int], Sequence[int], str]] = None,
) -> Report:
    """KV bytes per token, the KV/weight crossover, memory and capacity."""

def levers(
    *,
    reserve: Optional[Union[str, Number]] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    phase: Optional[str] = None,
    batch: Optional[int] = None,
    ctx: Optional[int] = None,
    contexts: Optional[Union[Mapping[int, int], Sequence[int], str]] = None,
) -> Report:
    """The workload re-run with each lever."""

def latency(
    *,
    prompt: Optional[int] = None,
    output: Optional[int] = None,
    reserve: Optional[Union[str, Number]] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    batch: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
) -> Report:
    """TTFT, TPOT and end-to-end latency of a batch of requests."""

def cost(
    *,
    prompt: Optional[int] = None,
    output: Optional[int] = None,
    usd_per_hour: Optional[Number] = None,
    tpot_ms: Optional[Number] = None,
    reserve: Optional[Union[str, Number]] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    batch: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
) -> Report:
    """Dollars per million tokens, and the cheapest batch under `tpot_ms`."""

def moe(
    *,
    experts: Optional[int] = None,
    top_k: Optional[int] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    phase: Optional[str] = None,
    batch: Optional[Axis] = None,
    ctx: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
) -> Report:
    """The MoE union problem over a batch range."""

def plan(
    *,
    tpot_ms: Optional[Number] = None,
    max_gpus: Optional[int] = None,
    usd_per_hour: Optional[Number] = None,
    reserve: Optional[Union[str, Number]] = None,
    pareto: Optional[OnOff] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    batch: Optional[Axis] = None,
    ctx: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
    rate: Optional[Number] = None,
    ttft_ms: Optional[Number] = None,
    gpus_total: Optional[int] = None,
    requests: Optional[int] = None,
    seed: Optional[int] = None,
    prompt: Optional[Lengths] = None,
    output: Optional[Lengths] = None,
    max_steps: Optional[int] = None,
    executor: Optional[Executor] = None,
) -> Report:
    """TP × PP (× EP) layouts and batches under `tpot_ms`, ranked by $/M tokens; with `pareto=True`,
    every layout × batch that fits and the Pareto front of tokens/s per GPU against tokens/s per
    user (`plan --pareto`, no `tpot_ms` needed); with `rate` and
    `ttft_ms`, the cheapest deployment whose simulated p99 TTFT and TPOT hold the bounds at that
    rate, with the Pareto front (`plan --rate`); with `executor`, its candidates are that
    executor's tasks."""

def simulate(
    *,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
    rate: Optional[Rates] = None,
    arrivals: Optional[str] = None,
    cv: Optional[Number] = None,
    concurrency: Optional[int] = None,
    trace: Optional[Union[str, PathLike]] = None,
    requests: Optional[int] = None,
    seed: Optional[int] = None,
    prompt: Optional[Lengths] = None,
    output: Optional[Lengths] = None,
    max_seqs: Optional[int] = None,
    max_batched_tokens: Optional[int] = None,
    chunk: Optional[int] = None,
    schedule: Optional[str] = None,
    block: Optional[int] = None,
    prefix_hit: Optional[Number] = None,
    ttft_ms: Optional[Number] = None,
    tpot_ms: Optional[Number] = None,
    reserve: Optional[Union[str, Number]] = None,
    disagg: Optional[str] = None,
    kv_link: Optional[str] = None,
    prefill_tp: Optional[int] = None,
    prefill_ep: Optional[int] = None,
    decode_tp: Optional[int] = None,
    decode_ep: Optional[int] = None,
    admission: Optional[str] = None,
    preemption: Optional[str] = None,
    host_time: Optional[str] = None,
    scheduler_steps: Optional[int] = None,
    cuda_graphs: Optional[str] = None,
    warmup: Optional[int] = None,
    max_concurrency: Optional[int] = None,
    spec_depth: Optional[int] = None,
    spec_acceptance: Optional[float] = None,
    draft_fraction: Optional[float] = None,
    draft_model: Optional[str] = None,
    prefix_cache: Optional[str] = None,
    replicas: Optional[int] = None,
    router: Optional[str] = None,
    max_steps: Optional[int] = None,
    usd_per_hour: Optional[Number] = None,
) -> Simulation:
    """Serving under load: continuous batching, chunked prefill, paged KV; TTFT/TPOT/ITL
    quantiles, goodput, and the cost under load (``cost``: $/M input, $/M output, $/request at
    ``usd_per_hour``, default the catalogue's), one rate or a sweep of rates. ``rate="max"``
    searches the largest rate within ``ttft_ms``/``tpot_ms`` (the JSON's ``capacity``: capacity,
    saturation and knee; ``summary`` and ``cost`` are the run at the capacity). ``disagg="1:3"`` runs prefill and decode
    pools (KV moved over ``kv_link``; each pool's layout ``prefill_tp``, ``prefill_ep``,
    ``decode_tp``, ``decode_ep``, default the scenario's) beside aggregated serving on the same
    GPUs: the JSON then has ``aggregated`` (and ``aggregated_points``) beside ``summary``."""

def tile(
    *,
    m: int,
    n: int,
    k: int,
    gpu: Optional[NameOrPath] = None,
    tile: Optional[str] = None,
    weights: Optional[str] = None,
    activations: Optional[str] = None,
    output: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
) -> Report:
    """One GEMM cut into thread-block tiles on a GPU."""

def simulate_many(
    runs: Iterable[Mapping[str, Any]],
    *,
    executor: Optional[Executor] = None,
    **common: Any,
) -> List[Simulation]:
    """Several `simulate` runs (each dict's keywords over `common`'s), in order; with an
    `executor` (any `concurrent.futures.Executor`: threads, processes, Dask's
    `Client.get_executor()`), one task per run."""

def sweep(
    *,
    batch: Optional[Axis] = None,
    ctx: Optional[Axis] = None,
    reserve: Optional[Union[str, Number]] = None,
    model: Optional[NameOrPath] = None,
    gpu: Optional[NameOrPath] = None,
    weights: Optional[str] = None,
    kv: Optional[str] = None,
    activations: Optional[str] = None,
    gemm_activations: Optional[str] = None,
    flash: Optional[OnOff] = None,
    causal: Optional[str] = None,
    logits: Optional[str] = None,
    counting: Optional[str] = None,
    mla: Optional[str] = None,
    attend: Optional[str] = None,
    compute_efficiency: Optional[Number] = None,
    bandwidth_efficiency: Optional[Number] = None,
    time_model: Optional[str] = None,
    engine: Optional[str] = None,
    revision: Optional[str] = None,
    profile: Optional[Union[str, PathLike]] = None,
    zipf: Optional[Number] = None,
    expert_loads: Optional[Sequence[Number]] = None,
    phase: Optional[str] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    ep: Optional[int] = None,
    dp: Optional[int] = None,
    micro_batches: Optional[int] = None,
    interconnect: Optional[str] = None,
    link_efficiency: Optional[Number] = None,
) -> Sweep:
    """A batch × context grid in one call, returned as columns."""

def models() -> Dict[str, Any]: ...
def gpus() -> Dict[str, Any]: ...
def keywords(command: str) -> List[str]: ...
