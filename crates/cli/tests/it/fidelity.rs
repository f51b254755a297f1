//! The clock against published measurements: runs every row of the vendored
//! `tests/data/calibration/fit-rows.csv` (kernel- and step-level rows, the clock's constants were
//! fitted on them) and `e2e-rows.csv` (end-to-end runs of NIM, vLLM and TensorRT-LLM) through the
//! CLI, compares predicted with measured, and guards the result: on the fit rows the median
//! |error| stays ≤ 10 % and every regime's bias (median signed error) within ±10 %; on the
//! end-to-end rows ≤ [`E2E_MEDIAN_LIMIT`] and within ±[`E2E_BIAS_LIMIT`]. `docs/fidelity.md` is
//! this test's output: with `UPDATE_FIDELITY=1` the test rewrites it, otherwise it fails when the
//! document differs from what it computes.

use crate::harness::json;
use serde_json::Value;
use std::collections::BTreeMap;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/calibration");
const DATA_IN_REPO: &str = "crates/cli/tests/data/calibration";

/// The end-to-end rows' guard: median |error| at most this (the target is 10 %).
const E2E_MEDIAN_LIMIT: f64 = 0.10;
/// The end-to-end rows' guard: every regime's bias within ± this (the target is ±7 %).
const E2E_BIAS_LIMIT: f64 = 0.10;

/// Which file a row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Set {
    /// `fit-rows.csv`: kernel- and step-level rows (the fitted constants were fitted on them).
    Fit,
    /// `e2e-rows.csv`: end-to-end runs of real engines.
    EndToEnd,
}

/// One row of `fit-rows.csv` or `e2e-rows.csv`.
struct Row {
    set: Set,
    id: String,
    regime: String,
    source: String,
    what: String,
    unit: String,
    measured: f64,
    command: String,
    compare: String,
}

/// Split one CSV line (quoted fields may hold commas).
pub(super) fn split_csv(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The rows of `file` in the vendored data.
fn rows(file: &str) -> Vec<Row> {
    let text = std::fs::read_to_string(format!("{DATA}/{file}")).unwrap();
    let mut lines = text.lines();
    let header = split_csv(lines.next().unwrap());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let set = if file.starts_with("e2e") { Set::EndToEnd } else { Set::Fit };
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f = split_csv(l);
            Row {
                set,
                id: f[col("id")].clone(),
                regime: f[col("regime")].clone(),
                source: f[col("source")].clone(),
                what: f[col("what")].clone(),
                unit: f[col("unit")].clone(),
                measured: f[col("measured")].parse().unwrap(),
                command: f[col("scenario_command")].clone(),
                compare: f[col("how_to_compare")].clone(),
            }
        })
        .collect()
}

/// The engine each source ran. Fit rows: gpt-fast's own rows, LLMCompass's PyTorch eager layer,
/// the vLLM database rows of AIConfigurator, and TensorRT-LLM (the default) for the rest.
/// End-to-end rows (`e2e-rows.md`): vLLM's CI of 2024 (build 9515, the V0 engine) as `vllm@0.6`;
/// TensorRT-LLM v0.5's and v0.6.1's performance tables as those versions; NIM 1.8.0 and the
/// Azure benchmarks of Llama 3 (2024) as today's TensorRT-LLM.
fn engine(row: &Row) -> &'static str {
    if row.set == Set::EndToEnd {
        let n: u32 = row.id.split('.').nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
        return match row.id.split('.').next() {
            Some("4") if (23..=25).contains(&n) => "vllm@0.6",
            Some("4") if (26..=37).contains(&n) => "trtllm@0.5",
            Some("5a") => "trtllm@0.6.1",
            _ => "trtllm",
        };
    }
    if row.id.starts_with("4.") {
        "gpt-fast"
    } else if row.id.starts_with("6.") {
        "eager"
    } else if row.id.contains(".vllm.") {
        "vllm"
    } else {
        "trtllm"
    }
}

/// The row's command as run (engine added; config files from the vendored data), without the
/// binary name.
fn args(row: &Row, data: &str) -> Vec<String> {
    let mut a: Vec<String> = row
        .command
        .split_whitespace()
        .skip(1)
        .map(|w| match w.strip_suffix(".json") {
            // A config file of the vendored data, by its file name.
            Some(_) => format!("{data}/{}", w.rsplit('/').next().unwrap_or(w)),
            None => w.to_string(),
        })
        .collect();
    a.extend(["--engine".into(), engine(row).into()]);
    if row.set == Set::EndToEnd && row.source.starts_with("NVIDIA NIM") && !a.iter().any(|w| w == "-k") {
        // NIM's FP8 profiles build their TensorRT-LLM engines with an FP8 KV cache (the row's note);
        // the source does not state it, so the row's command leaves the cache at its default.
        a.extend(["-k".into(), "fp8".into()]);
    }
    a
}

/// The end-to-end rows that run `simulate` (NIM's closed loops), as `docs/fidelity.md` runs them:
/// `(id, source, what, unit, measured, arguments without the binary's name)`. The serving
/// fidelity report (`serving_fidelity.rs`) lists them beside its own rows.
pub(super) fn e2e_simulate_rows() -> Vec<(String, String, String, String, f64, Vec<String>)> {
    rows("e2e-rows.csv")
        .into_iter()
        .filter(|r| r.command.split_whitespace().nth(1) == Some("simulate"))
        .map(|r| {
            let a = args(&r, DATA);
            (r.id, r.source, r.what, r.unit, r.measured, a)
        })
        .collect()
}

/// `key=value` settings after `marker` in a how_to_compare text.
fn settings(compare: &str, marker: &str) -> BTreeMap<String, String> {
    let tail = compare.split(marker).nth(1).unwrap_or("");
    tail.split_whitespace().filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect()
}

/// Time per layer of the ledger row `op`, seconds.
fn per_layer_s(d: &Value, op: &str, field: &str) -> f64 {
    let r = d["rows"].as_array().unwrap().iter().find(|r| r["op"] == op).unwrap_or_else(|| panic!("no row {op}"));
    r[field].as_f64().unwrap() / r["layers"].as_f64().unwrap()
}

/// The predicted value of a row, in its unit, from the command's JSON; `field` is `time_s` (the
/// clock asked for) or `roofline_time_s`.
fn predicted(row: &Row, d: &Value, field: &str) -> f64 {
    let c = &row.compare;
    if row.set == Set::EndToEnd {
        return e2e_predicted(c, d);
    }
    if c.starts_with("latency") {
        // tokens ÷ (prefill + decode) time; the roofline clock's from its own e2e.
        return d["output_tokens_per_s"].as_f64().unwrap();
    }
    if c.contains("one operator") {
        let s = settings(c, "per layer ");
        return per_layer_s(d, &s["op"], field) * s["scale"].parse::<f64>().unwrap();
    }
    if c.contains("one layer") {
        let s = settings(c, "operators) ");
        let t: f64 = s["ops"].split('+').map(|op| per_layer_s(d, op, field)).sum();
        return t * s["scale"].parse::<f64>().unwrap();
    }
    assert!(c.contains("step time"), "{}: unknown comparison {c}", row.id);
    let step = if field == "time_s" { d["step_time_s"].as_f64().unwrap() } else { d["total"][field].as_f64().unwrap() };
    step * 1e3
}

/// The predicted value of an end-to-end row from its command's JSON, as its `how_to_compare` says:
/// `simulate → summary ITL (mean)`, `latency → tpot_s | ttft_s | e2e_s` (ms),
/// `latency → output_tokens_per_s ÷ N` (per GPU), `ledger → step_time_s` (ms).
fn e2e_predicted(c: &str, d: &Value) -> f64 {
    let head = c.split('(').next().unwrap_or(c);
    if c.starts_with("simulate") {
        return d["summary"]["itl_s"]["mean"].as_f64().unwrap() * 1e3;
    }
    for field in ["tpot_s", "ttft_s", "e2e_s", "step_time_s"] {
        if head.contains(field) {
            return d[field].as_f64().unwrap() * 1e3;
        }
    }
    assert!(head.contains("output_tokens_per_s"), "unknown comparison {c}");
    let per: f64 = head.split('÷').nth(1).and_then(|x| x.trim().parse().ok()).unwrap_or(1.0);
    d["output_tokens_per_s"].as_f64().unwrap() / per
}

/// Error of a time: predicted ÷ measured − 1 (a rate's is measured ÷ predicted − 1, so that a
/// positive error always means the prediction is too slow).
fn error(row: &Row, predicted: f64) -> f64 {
    if row.unit.starts_with("tok/s") {
        row.measured / predicted - 1.0
    } else {
        predicted / row.measured - 1.0
    }
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Result {
    expected: f64,
    roofline: f64,
}

const METHOD: &str = r#"# Fidelity: the clock against measurements

Generated by `crates/cli/tests/it/fidelity.rs` (`UPDATE_FIDELITY=1 cargo test -p llm-ledger fidelity`
rewrites it; otherwise the test fails when this file differs from what it computes, when the fit
rows' median |error| exceeds 10 % or a regime's bias leaves ±10 %, or when the end-to-end rows'
median |error| exceeds 10 % or a regime's bias leaves ±10 %).

Two sets of published measurements, nothing excluded: the **fit rows** (kernel-, layer- and
step-level; the clock's three fitted constants were fitted on them) and the **end-to-end rows**
(whole runs of NIM, vLLM and TensorRT-LLM, which hold everything a real step costs: the engine's
own kernels, its attention, its collectives and its host time; one constant, vLLM V0's host time
per step, was fitted on three of them).

## Method

Each row of `crates/cli/tests/data/calibration/fit-rows.csv` (vendored from the project's calibration
notes; `PROVENANCE.md` beside it) is a published measurement with the `llm-ledger` command that models
its scenario. The test runs the command with `--format json` and the engine of the source added
(`--engine gpt-fast` for gpt-fast, `eager` for LLMCompass's PyTorch layer, `vllm` for AIConfigurator's
vLLM database rows, `trtllm` otherwise), reads the compared quantity (an operator's time per layer, a
layer's, a step's, or the output tokens per second of `latency`), and reports

* **error** = predicted time ÷ measured time − 1 (for a rate, measured ÷ predicted − 1): positive means
  the prediction is too slow;
* per regime, the **bias** = the median signed error and the median |error|.

The expected time is the measured clock (`--time-model measured`, the default; `crates/core/src/clock`).
On a catalogue GPU with measured kernel tables (A100-SXM, H100-SXM, H200, B200, B300, GB200, GB300,
L40S, RTX PRO 6000 Server, Arc Pro B60) and an engine
whose kernels were measured (trtllm, vllm, sglang), every GEMM in a kernel of its own takes the
measured time of NVIDIA AIConfigurator's per-kernel database (`crates/core/data/kernels`, interpolated
in log space, the fastest measured kernel for at least its m rows, and never less than its HBM bytes
at the achievable bandwidth: the database's benchmark reads L2-resident operands from L2, a step
reads every layer's weights from HBM). Q, K and V (and gate and up) that the engine merges are one
GEMM of their combined columns, each part charged its columns' share; MLA's absorption is one
batched matmul from its own table; FlashAttention (prefill and decode) takes the engine's measured
attention kernel at the step's sequences and length, inside the head groups its tables measured; a
layer's routed experts take the engine's measured fused-MoE kernel where the tables hold the model's
exact shape and (TP, EP) split under uniform routing, else one grouped GEMM on the fitted model. The
tables are AIConfigurator's git repository at commit 095f58a5, every engine version it measured: by
default the collector's default runtime (TensorRT-LLM 1.3.0rc20, vLLM 0.24.0, SGLang 0.5.14 on most
GPUs), and with `--engine vllm@0.19` (or `trtllm@1.2`, `sglang@0.5.9`) the nearest version measured on
the GPU at or below the one named. Each table family (GEMM, attention, MLA, MLA's batched matmuls, the
all-reduce, MoE, Gated DeltaNet, Kimi Delta Attention, Mamba-2's convolution, DeepSeek-V4's
hyper-connections) is read from that
version's own file or the one its `reuse.yaml` shares, or from a later version up to the one named
that measured it; a family no version at or below it measured comes from the first version that did
(SGLang's Kimi Delta Attention: its kimi-k3 build, 0.5.16); a family only older versions hold stays
on the fitted model (an older version's table may be another kernel); every row's `time_source`
names the version read (`table:h100_sxm/vllm/0.19.0/gemm`), the
footer the version chosen, and a version below every one measured on the GPU is refused naming them.
`trtllm@0.6` and `vllm@0.6` are engines of their own (pre-XQA decode attention, V0's serial host loop)
on the default version's tables. So the AIConfigurator rows'
GEMMs are read from the tables AIConfigurator itself composes: those rows check everything else
(norms, fusions, fixed costs), not the GEMM and attention times; the gpt-fast and LLMCompass rows are
independent of the tables (gpt-fast and eager have none; everything there is the fitted model).
Everything the tables do not cover is the fitted model:
achievable bandwidth and matmul peak per GPU and format (STREAM copies and best-shape matmul searches,
`measured-kernels.md` §1–2), GEMM shape efficiency (tile padding, split-K and wave quantisation),
attention outside the tables at FlashAttention-2's measured fraction in prefill, a fixed cost per kernel, the engine's
fusions, dequantisation of weight-only quantised weights, and the α–β collective model of NCCL across
servers (inside one, the measured all-reduce and NCCL tables beside the GEMMs). Every
operator's time is at least its HBM bytes ÷ the peak bandwidth and its FLOPs ÷ its math's peak (a
test, `crates/core/tests/it/physical_bounds.rs`, checks every preset × GPU × engine × phase × batch),
and one above 3× its roofline plus its launch names its cause. No row here covers MLA (DeepSeek),
Qwen MoE or gpt-oss: no published measurement of those in `fit-rows.csv`. The
roofline column is the same command under `--time-model roofline` (60 % of peak, 80 % of bandwidth,
no fixed costs): the plain roofline, without measured kernels, for contrast.

**Fitted constants: 3 on these 62 rows** — `GRAPH_KERNEL_S` (fixed cost per kernel under CUDA
graphs, 4.5 µs), `HOST_LAUNCH_S` (host dispatch floor of an eager kernel, 30 µs) and
`DEQUANT_OPS_PER_WEIGHT` (4 vector operations per weight per 64-row tile). Every other constant is
a published measurement quoted beside it in `crates/core/src/clock/mod.rs`. No constant is per row.

## Sources

* gpt-fast (pytorch-labs/gpt-fast README "Benchmarks", git 32971d3; `mixtral-moe/README.md`):
  single-stream decode on A100-80GB capped at 330 W, 5-token prompt, 200 new tokens. Tag A.
* LLMCompass (PrincetonUniversity/LLMCompass, ISCA'24 artifact, `ae/figure5/ijkl/real_hardware/`):
  one GPT-3 175B layer on 4× A100-80GB, TP 4, fp16, batch 8; decode at KV 3072, prefill 8 × 2048;
  PyTorch eager, per operator. Tag A.
* NVIDIA AIConfigurator (`aiconfigurator-core` 0.12.0, Apache-2.0): SILICON whole-step times for
  Llama-3.1-8B on A100 and H100, composed from its measured TensorRT-LLM (and vLLM 0.24.0) kernels.
* Achievable bandwidth and matmul throughput behind the fallback's constants: Azure
  AI-benchmarking-guide (STREAM, cuBLASLt, FA2, NCCL), stas00/ml-engineering MAMF table,
  LLMCompass's A100 GEMM sweep (see `crates/core/src/clock/mod.rs`).

Known differences a row's note records (kept, not excluded): the gpt-fast A100s were capped at 330 W;
its 8-GPU box is a hybrid cube-mesh, the tool assumes NVSwitch; its int4 rows use groups of 32, the
tool's `int4-g128` groups of 128; Llama-3.1-8B is run as the `llama-3-8b` preset (same shapes).
"#;

/// The end-to-end section's method, before its tables.
const E2E_METHOD: &str = r#"
## End-to-end rows: method

Each row of `crates/cli/tests/data/calibration/e2e-rows.csv` is a published whole run with the
`llm-ledger` command that models it and how to read the output against it: `latency → tpot_s` for an
inter-token latency at concurrency 1, `simulate … --arrivals closed --concurrency N → summary ITL
(mean)` for genai-perf's closed loop (other requests' prefills run inside the measured ITL, as under
continuous batching), `latency → ttft_s` or `ledger → step_time_s` for a first-token latency,
`latency → e2e_s` for a fixed batch's mean latency, and `latency → output_tokens_per_s ÷ GPUs` for a
static batch's throughput (one prefill of the whole batch, then every decode step). The engine each
source ran is the command's `--engine`:

* NVIDIA NIM 1.8.0 (TensorRT-LLM inside), Llama-3.3-70B FP8 on 2× H100 TP 2: `trtllm`;
* vLLM's performance-benchmark CI, build 9515 (2024, the V0 engine), H200: `vllm@0.6` — the host
  schedules, prepares inputs and samples between GPU steps, `VLLM_V0_HOST_STEP_S` = 2.2 ms per step
  (**fitted** on these three rows: the median of their per-step gaps, 1.5–2.9 ms; the step's `host`
  row);
* TensorRT-LLM v0.5 ("Low Latency" first-token table) and v0.6.1 (static-batch throughput,
  gptSessionBenchmark): `trtllm@0.5`, `trtllm@0.6.1` — before v0.7 its decode attention reads a
  GQA group's K and V once per query head (8× for Llama 2 70B; the XQA kernel came with v0.7/v0.8);
* Azure's AI-benchmarking-guide (TensorRT-LLM `benchmarks/python/benchmark.py`, Llama 3, 2024):
  `trtllm`.

TensorRT-LLM's layer as the clock runs it (AIConfigurator's composition of a TensorRT-LLM layer):
the residual add and the next RMSNorm one kernel (2h in, 2h out per token), SwiGLU a kernel of its
own after the gate/up GEMM, each with the fixed cost of a kernel; FlashAttention from the engine's
measured attention kernels (a step's decodes on the generation kernel, its prompt chunks on the
context kernel, two lookups in a step of continuous batching); collectives from the measured
all-reduce tables (the faster of the engine's custom all-reduce and NCCL at the message each GPU
contributes, on a monotone envelope over the message size; α + n/β where the tables do not reach:
across servers, or over a link they were not measured on). The NIM rows' KV-cache precision is not
stated by the source; they are run with an FP8 cache (`-k fp8`), which NIM's FP8 profiles build
(with a bf16 cache the decode-batched rows come out 6–13 points more pessimistic, 4.19 −23 %: the
bf16 cache holds 46 of its 100 sequences). Not modelled yet, and visible in the errors below: the
host time of engines other than vLLM V0 is taken as hidden under the GPU; TensorRT-LLM v0.5's
kernels are today's tables (its short-prompt first-token latencies come out 15–33 % fast). The
targets are a median |error| ≤ 10 % and every regime's bias within ±7 %: the tables say how far
from them the clock is.

## End-to-end rows: summary and rows

"#;

/// The summary by regime and the row table of one set, as Markdown.
fn tables(rows: &[Row], results: &[Result]) -> String {
    let mut out = String::new();
    let pct = |x: f64| format!("{:+.1} %", x * 100.0);
    let num = |x: f64| {
        if x >= 100.0 {
            format!("{x:.1}")
        } else if x >= 1.0 {
            format!("{x:.3}")
        } else {
            format!("{x:.4}")
        }
    };
    let mut regimes: Vec<&str> = rows.iter().map(|r| r.regime.as_str()).collect();
    regimes.sort();
    regimes.dedup();
    out.push_str("| regime | rows | bias (expected) | median \\|error\\| (expected) | bias (roofline) | median \\|error\\| (roofline) |\n|---|---|---|---|---|---|\n");
    let summary = |sel: &dyn Fn(&Row) -> bool| {
        let e: Vec<(f64, f64)> = rows
            .iter()
            .zip(results)
            .filter(|(r, _)| sel(r))
            .map(|(r, x)| (error(r, x.expected), error(r, x.roofline)))
            .collect();
        (
            e.len(),
            median(e.iter().map(|x| x.0).collect()),
            median(e.iter().map(|x| x.0.abs()).collect()),
            median(e.iter().map(|x| x.1).collect()),
            median(e.iter().map(|x| x.1.abs()).collect()),
        )
    };
    for reg in &regimes {
        let (n, b, m, rb, rm) = summary(&|r: &Row| r.regime == *reg);
        out.push_str(&format!(
            "| {reg} | {n} | {} | {:.1} % | {} | {:.1} % |\n",
            pct(b),
            m * 100.0,
            pct(rb),
            rm * 100.0
        ));
    }
    let (n, b, m, rb, rm) = summary(&|_: &Row| true);
    out.push_str(&format!(
        "| **all** | {n} | {} | **{:.1} %** | {} | {:.1} % |\n",
        pct(b),
        m * 100.0,
        pct(rb),
        rm * 100.0
    ));
    out.push_str("\n| id | regime | what | unit | measured | expected | error | roofline | error | command |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (r, x) in rows.iter().zip(results) {
        let cmd = format!("llm-ledger {}", args(r, DATA_IN_REPO).join(" "));
        out.push_str(&format!(
            "| {} | {} | {} ({}) | {} | {} | {} | {} | {} | {} | `{}` |\n",
            r.id,
            r.regime,
            r.what,
            r.source,
            r.unit,
            num(r.measured),
            num(x.expected),
            pct(error(r, x.expected)),
            num(x.roofline),
            pct(error(r, x.roofline)),
            cmd
        ));
    }
    out
}

/// The whole document: the method, then each set's tables.
fn document(fit: (&[Row], &[Result]), e2e: (&[Row], &[Result])) -> String {
    let mut out = String::from(METHOD);
    out.push_str("\n## Fit rows: summary and rows\n\n");
    out.push_str(&tables(fit.0, fit.1));
    out.push_str(E2E_METHOD);
    out.push_str(&tables(e2e.0, e2e.1));
    out
}

/// Every row of `file` run through the CLI (each distinct command once), the expected clock and
/// the roofline side by side.
fn run_rows(file: &str) -> (Vec<Row>, Vec<Result>) {
    let rows = rows(file);
    let mut cache: BTreeMap<Vec<String>, (Value, Value)> = BTreeMap::new();
    let mut results = Vec::new();
    for row in &rows {
        let a = args(row, DATA);
        let (measured, roofline) = cache.entry(a.clone()).or_insert_with(|| {
            let run = |extra: &[&str]| {
                let mut v: Vec<&str> = a.iter().map(String::as_str).collect();
                v.extend(["--format", "json"]);
                v.extend(extra);
                json(&v)
            };
            (run(&[]), run(&["--time-model", "roofline"]))
        });
        results.push(Result {
            expected: predicted(row, measured, "time_s"),
            roofline: predicted(row, roofline, "time_s"),
        });
    }
    (rows, results)
}

/// The median |error| of `rows` and each regime's bias.
fn guard(rows: &[Row], results: &[Result]) -> (f64, BTreeMap<String, f64>) {
    let errors: Vec<f64> = rows.iter().zip(results).map(|(r, x)| error(r, x.expected)).collect();
    let all = median(errors.iter().map(|e| e.abs()).collect());
    let mut by_regime: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (r, e) in rows.iter().zip(&errors) {
        by_regime.entry(r.regime.clone()).or_default().push(*e);
    }
    (all, by_regime.into_iter().map(|(k, e)| (k, median(e))).collect())
}

#[test]
fn the_clock_matches_published_measurements() {
    let (fit_rows, fit_results) = run_rows("fit-rows.csv");
    assert_eq!(fit_rows.len(), 62, "the vendored calibration rows");
    let (e2e_rows, e2e_results) = run_rows("e2e-rows.csv");
    assert_eq!(e2e_rows.len(), 43, "the vendored end-to-end rows");
    let doc = document((&fit_rows, &fit_results), (&e2e_rows, &e2e_results));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fidelity.md");
    if std::env::var_os("UPDATE_FIDELITY").is_some() {
        std::fs::write(path, &doc).unwrap();
    }
    for (name, rows, results, median_limit, bias_limit) in [
        ("fit rows", &fit_rows, &fit_results, 0.10, 0.10),
        ("end-to-end rows", &e2e_rows, &e2e_results, E2E_MEDIAN_LIMIT, E2E_BIAS_LIMIT),
    ] {
        let (all, bias) = guard(rows, results);
        assert!(all <= median_limit, "{name}: median |error| {:.1} % > {:.1} %", all * 100.0, median_limit * 100.0);
        for (regime, b) in bias {
            assert!(
                b.abs() <= bias_limit,
                "{name}, regime {regime}: bias {:+.1} % outside ±{:.0} %",
                b * 100.0,
                bias_limit * 100.0
            );
        }
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(on_disk == doc, "docs/fidelity.md differs from what the test computes; run with UPDATE_FIDELITY=1");
}

#[test]
fn the_roofline_clock_is_what_the_fidelity_table_contrasts() {
    // The roofline column must be today's roofline: the same command under --time-model roofline
    // gives the roofline_time_s the measured clock reports beside its expected time.
    let base = ["ledger", "-m", "llama-3-8b", "-g", "h100-sxm", "-b", "8", "-c", "2048", "--format", "json"];
    let measured = json(&base);
    let mut r = base.to_vec();
    r.extend(["--time-model", "roofline"]);
    let roofline = json(&r);
    assert_eq!(measured["total"]["roofline_time_s"], roofline["step_time_s"]);
    assert_ne!(measured["step_time_s"], roofline["step_time_s"]);
}

#[test]
fn seed_counting_keeps_the_reference_calculators_roofline_whatever_the_clock() {
    // `--counting seed` prints the reference calculator's table digit for digit, so the
    // measured clock (the default) and any engine leave it unchanged.
    let seed = ["ledger", "--batch", "64", "--counting", "seed"];
    let roofline = crate::harness::ok(&[&seed[..], &["--time-model", "roofline"]].concat());
    for extra in [&[][..], &["--time-model", "measured", "--engine", "eager"][..]] {
        assert_eq!(crate::harness::ok(&[&seed[..], extra].concat()), roofline, "{extra:?}");
    }
    assert!(roofline.contains(" mlp         32    722 GFLOP   11.3 GB       0 B           0 B   11.3 GB     64.0   bf16   4.21 ms    35.0 %   memory"));
}
