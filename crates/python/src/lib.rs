//! `llm_ledger._native`: the Rust layer of the Python package, kept thin. Each command turns its
//! keyword arguments (as text pairs, the Python side's `str()` of each value) into the request
//! types the CLI and the explorer use — [`ScenarioRequest`] through the core's
//! [`llm_ledger_core::pairs::from_pairs`], [`ServingRequest`] and the command's own
//! inputs — builds the same report of `llm_ledger_report` the CLI builds, and hands back its JSON
//! (the CLI's `--format json`, byte for byte), its CSV rows as JSON objects, its human table and,
//! for `ledger` and `simulate`, the plot the CLI's `--plot` draws. A `sweep` comes back as columns
//! computed here, not in a Python loop. Files and Hub ids (`model`, `gpu`, `profile`,
//! `revision`, `simulate`'s `trace` and `hist:` lengths) are read by `llm_ledger_files`, the
//! CLI's own readers, and `simulate` and `plan --rate` take their inputs through the same
//! resolvers as the CLI (`llm_ledger_app`), whose input tables list their keywords.
//!
//! Errors: a core error is `llm_ledger.InputError` (a `ValueError`) with the core's one-line
//! message, which names the input field — the Python keyword, since keywords are the core's field
//! names — and the attributes `field` and `accepted`; an error about a file or a Hub id is the
//! CLI's one-line message, the inputs it names written as keywords (the messages name inputs
//! structurally, [`llm_ledger_core::error::Text`], so nothing rewrites the CLI's text); a keyword
//! the command does not take is a `TypeError`.

use llm_ledger_app::moe::{self, MoeRequest, MAX_POINTS};
use llm_ledger_app::plan::{self, PlanLoadRequest, PlanRequest};
use llm_ledger_app::simulate::{self, SimRequest};
use llm_ledger_app::sweep::SweepRequest;
use llm_ledger_app::zoom::{self, ZoomRequest};
use llm_ledger_app::{CommandError, Files, Input};
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::scenario_inputs;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::sweep::grid_points;
use llm_ledger_core::tiling::GemmRequest;
use llm_ledger_core::{Catalog, Error, Ledger, Scenario, ScenarioRequest};
use llm_ledger_files::FileInputs;
use llm_ledger_report::cost::CostReport;
use llm_ledger_report::kv::KvReport;
use llm_ledger_report::latency::LatencyReport;
use llm_ledger_report::levers::LeverReport;
use llm_ledger_report::plot::{PlotSize, Roofline};
use llm_ledger_report::{Format, HumanTable, LedgerReport, Report, TileReport};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

create_exception!(
    _native,
    InputError,
    PyValueError,
    "Bad input: the core's one-line message. `field` is the keyword it is about (or None), `accepted` the accepted values of a closed set (or None)."
);

/// The model and hardware inputs every scenario command takes (the CLI's setup flags);
/// `revision` and `profile` are read by `llm_ledger_files` with the files they name.
const SETUP: &[&str] = &[
    "model",
    "revision",
    "gpu",
    "weights",
    "kv",
    "activations",
    "gemm_activations",
    "flash",
    "causal",
    "logits",
    "counting",
    "mla",
    "compute_efficiency",
    "bandwidth_efficiency",
    "time_model",
    "engine",
    "profile",
    "zipf",
    "expert_loads",
];
/// The shape of one step.
const SHAPE: &[&str] = &["phase", "batch", "ctx", "contexts"];
/// A parallel deployment.
const PARALLEL: &[&str] = &["tp", "pp", "ep", "dp", "micro_batches", "interconnect", "link_efficiency"];
/// The names of a command's input table (`llm_ledger_app`), in its order.
fn names(inputs: &'static [Input]) -> Vec<&'static str> {
    inputs.iter().map(|i| i.name).collect()
}

/// The names of a command's input table less its axes (`batch`, `ctx`: scenario keywords too).
fn axes_apart(inputs: &'static [Input]) -> Vec<&'static str> {
    names(inputs).into_iter().filter(|k| !["batch", "ctx"].contains(k)).collect()
}

/// The keyword arguments of `command`, the CLI's flags of the same command in snake case (less
/// the output and file flags; `model` and `gpu` also take a path): scenario inputs, then the
/// command's own.
fn keywords_of(command: &str) -> Option<Vec<&'static str>> {
    let groups: &[&[&str]] = match command {
        "ledger" | "zoom" => &[SETUP, SHAPE, PARALLEL],
        "kv" | "levers" => &[SETUP, SHAPE],
        "sweep" | "moe" => &[SETUP, &["phase", "batch", "ctx"], PARALLEL],
        "latency" | "cost" => &[SETUP, &["batch"], PARALLEL],
        "simulate" => &[SETUP, PARALLEL],
        "plan" => &[SETUP, &["batch", "ctx", "interconnect", "link_efficiency"]],
        "tile" => &[&["gpu", "weights", "activations", "compute_efficiency", "bandwidth_efficiency"]],
        _ => return None,
    };
    let own: Vec<&'static str> = match command {
        "ledger" => vec![],
        "zoom" => names(zoom::inputs()),
        "kv" | "levers" => vec!["reserve"],
        // The axes (`batch`, `ctx`) of these commands are among the scenario's keywords.
        "sweep" => axes_apart(llm_ledger_app::sweep::inputs()),
        "moe" => axes_apart(moe::inputs()),
        "latency" => vec!["prompt", "output", "reserve"],
        "cost" => vec!["prompt", "output", "usd_per_hour", "tpot_ms", "reserve"],
        "simulate" => names(simulate::inputs()),
        "plan" => axes_apart(plan::inputs()),
        "tile" => vec!["m", "n", "k", "tile", "output"],
        _ => vec![],
    };
    let load = if command == "plan" { names(plan::load_inputs()) } else { vec![] };
    Some(groups.iter().flat_map(|g| g.iter()).copied().chain(own).chain(load).collect())
}

/// The keys the axes of `sweep`, `moe` and `plan` take as lists or ranges, and `tile`'s GEMM
/// inputs: read by the command, not by the scenario resolver.
fn command_keys(command: &str) -> Vec<&'static str> {
    match command {
        "sweep" | "moe" => vec!["batch"],
        "plan" => names(plan::inputs()).into_iter().chain(names(plan::load_inputs())).collect(),
        "simulate" => names(simulate::inputs()),
        "tile" => vec![
            "m",
            "n",
            "k",
            "gpu",
            "tile",
            "weights",
            "activations",
            "output",
            "compute_efficiency",
            "bandwidth_efficiency",
        ],
        _ => vec![],
    }
}

/// The keys of [`ServingRequest`].
const SERVING: &[&str] = &["usd_per_hour", "reserve", "prompt", "output", "tpot_ms", "step_ms", "tokens_per_s"];

/// [`InputError`] with `message` (one line, naming keywords), `field` and `accepted`.
fn input_error_with(message: &str, field: Option<&str>, accepted: Option<&[String]>) -> PyErr {
    // Control characters escaped, as the CLI prints its line (nothing typed reaches a terminal raw).
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let err = InputError::new_err(llm_ledger_core::error::escape_controls(&one_line).into_owned());
    Python::with_gil(|py| {
        let v = err.value(py);
        let _ = v.setattr("field", field.map(str::to_string));
        let _ = v.setattr("accepted", accepted.map(<[String]>::to_vec));
    });
    err
}

/// A core error as the Python exception: [`InputError`] with the core's message (a plan refusal
/// worded in full, as the CLI words it, naming the keywords), `field` and `accepted`.
fn input_error(e: &Error) -> PyErr {
    let same = |f: &str| f.to_string();
    let message = match e {
        Error::NoPlan(refused) => llm_ledger_report::plan::refusal_message(refused, &same),
        Error::NoServingPlan(refused) => llm_ledger_report::plan_serving::refusal_message(refused, &same),
        _ => e.to_string(),
    };
    input_error_with(&message, e.field(), e.accepted())
}

/// An error of the shared file readers (`llm_ledger_files`) as [`InputError`]: a core error alone
/// keeps its field; one with context (a file's name, a Hub id) is the CLI's one-line message
/// (`{:#}`), about `field`, else about the first input a message in the chain names. Inputs are
/// named by their keywords, the inputs' own names ([`llm_ledger_core::error::Text`]).
fn files_error(e: anyhow::Error, field: Option<&str>) -> PyErr {
    match e.downcast_ref::<Error>().filter(|_| e.chain().count() == 1) {
        Some(core) => input_error(core),
        None => {
            let named = e.chain().find_map(|c| match c.downcast_ref::<Error>() {
                Some(input @ Error::Input { .. }) => input.field(),
                _ => None,
            });
            input_error_with(&format!("{e:#}"), field.or(named), None)
        }
    }
}

/// A serde refusal of a pair (an unknown or repeated key) as [`InputError`] about `field`.
fn pair_error(e: impl std::fmt::Display, field: Option<&str>) -> PyErr {
    input_error_with(&e.to_string(), field, None)
}

/// The inputs of one call: the pairs split by who reads them.
struct Call {
    /// Scenario pairs, for [`ScenarioRequest`] (`model` and `gpu` may name files or a Hub id).
    scenario: Vec<(String, String)>,
    /// Serving pairs, for [`ServingRequest`].
    serving: Vec<(String, String)>,
    /// The command's own pairs, and the file inputs (`revision`, `profile`).
    own: HashMap<String, String>,
}

impl Call {
    /// Split `pairs`, refusing a keyword `command` does not take (a `TypeError`, as Python refuses
    /// an unexpected keyword argument).
    fn new(command: &str, pairs: Vec<(String, String)>) -> PyResult<Call> {
        let accepted = keywords_of(command).ok_or_else(|| PyValueError::new_err(format!("no command `{command}`")))?;
        let command_keys = command_keys(command);
        let scenario_fields: Vec<&str> = scenario_inputs().iter().map(|i| i.name).collect();
        let mut call = Call { scenario: vec![], serving: vec![], own: HashMap::new() };
        for (k, v) in pairs {
            if !accepted.contains(&k.as_str()) {
                return Err(PyTypeError::new_err(format!(
                    "{command}() got an unexpected keyword argument '{k}'; it takes: {}",
                    accepted.join(", ")
                )));
            }
            if command_keys.contains(&k.as_str()) {
                call.own.insert(k, v);
            } else if SERVING.contains(&k.as_str()) {
                call.serving.push((k, v));
            } else if scenario_fields.contains(&k.as_str()) {
                call.scenario.push((k, v));
            } else {
                call.own.insert(k, v);
            }
        }
        Ok(call)
    }

    fn own(&self, key: &str) -> Option<&str> {
        self.own.get(key).map(String::as_str)
    }

    fn own_text(&self, key: &str) -> Option<String> {
        self.own.get(key).cloned()
    }

    /// The scenario, resolved as the CLI resolves its flags: the core's resolver, with the files
    /// `model`, `gpu` and `profile` name (and a Hub id at `revision`) read by `llm_ledger_files`.
    fn scenario(&self) -> PyResult<Scenario> {
        let pairs = self.scenario.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let req: ScenarioRequest = from_pairs(pairs).map_err(|e| pair_error(e, None))?;
        let files =
            FileInputs { revision: self.own_text("revision"), profile: self.own_text("profile"), ..Default::default() };
        llm_ledger_files::scenario(req, &files).map_err(|e| files_error(e, None))
    }

    /// The serving inputs, resolved for `sc`.
    fn serving(&self, sc: &Scenario) -> PyResult<llm_ledger_core::serving::Serving> {
        let pairs = self.serving.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let req: ServingRequest = from_pairs(pairs).map_err(|e| pair_error(e, None))?;
        req.resolve(sc).map_err(|e| input_error(&e))
    }

    /// The command's own pairs that are inputs of `table`, read into its request (the app's).
    fn request<T: serde::de::DeserializeOwned>(&self, table: &'static [Input]) -> PyResult<T> {
        let pairs = self.own.iter().filter(|(k, _)| table.iter().any(|i| i.name == k.as_str()));
        from_pairs(pairs.map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| pair_error(e, None))
    }
}

/// The files `simulate`'s and `plan`'s inputs name, read as the CLI reads them.
const FILES: Files<'static> = Files::Read(&llm_ledger_files::read_text);

/// A command's error as the Python exception: an input's error is [`InputError`] about its
/// keyword; a file's is the reader's one-line message about the input that named the file.
fn command_error(e: CommandError) -> PyErr {
    match e {
        CommandError::Input(e) => input_error(&e),
        CommandError::File { field, error } => files_error(error, Some(field)),
        CommandError::Other(error) => files_error(error, None),
    }
}

/// What a report hands back: its JSON (the CLI's `--format json`), its CSV rows as a JSON array of
/// objects (the CLI's JSON row fields), its human table as JSON, its text table (the CLI's table
/// with every column), and a plot.
type Output = (String, String, String, String, Option<String>);

/// The human layout as JSON: `title`, `header`, `rows` (formatted cells), `right_aligned`, `footer`.
fn human_json(h: &HumanTable) -> String {
    serde_json::json!({
        "title": h.title,
        "header": h.header,
        "rows": h.rows,
        "right_aligned": h.right_aligned,
        "footer": h.footer,
    })
    .to_string()
}

/// A report's [`Output`], after the same finiteness check the CLI's rendering does.
fn output<R: Report>(r: &R, svg: Option<String>) -> PyResult<Output> {
    let json = r.render(Format::Json).map_err(|e| input_error(&e))?;
    let rows = r.csv_rows();
    llm_ledger_report::finite::check("rows", &rows).map_err(|e| input_error(&e))?;
    let rows = serde_json::to_string(&rows).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((json, rows, human_json(&r.human()), r.layout(Format::Table), svg))
}

/// How often a running command checks Python's signal handlers.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Run `work` on a thread of its own with the GIL released, while this (the calling) thread
/// runs Python's signal handlers every [`SIGNAL_POLL`]: when one raises (`KeyboardInterrupt`
/// after Ctrl-C), `work`'s cancellation flag is set, `work` stops at its next check (a
/// simulation: within 1,024 steps) and the exception is raised here.
fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce(&AtomicBool) -> PyResult<T> + Send) -> PyResult<T> {
    py.allow_threads(|| {
        let cancel = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let flag = &cancel;
            s.spawn(move || {
                let _ = tx.send(work(flag));
            });
            loop {
                match rx.recv_timeout(SIGNAL_POLL) {
                    Ok(result) => return result,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(e) = Python::with_gil(|py| py.check_signals()) {
                            cancel.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    // The work panicked: the scope passes the panic on once it is joined.
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(PyValueError::new_err("the computation ended without a result"))
                    }
                }
            }
        })
    })
}

/// Run `command` (not `sweep`) on text keyword arguments; see the module doc. Ctrl-C stops it
/// ([`interruptible`]).
#[pyfunction]
fn run(py: Python<'_>, command: &str, pairs: Vec<(String, String)>) -> PyResult<Output> {
    let call = Call::new(command, pairs)?;
    interruptible(py, |cancel| build(command, &call, cancel))
}

fn build(command: &str, call: &Call, cancel: &AtomicBool) -> PyResult<Output> {
    let core = |e: Error| input_error(&e);
    match command {
        "ledger" => {
            let sc = call.scenario()?;
            let report = LedgerReport::new(&sc, &Ledger::build(&sc));
            let mut chart = Roofline::from_report(&report, &sc.gpu);
            chart.title = Some(llm_ledger_report::plot::title(&report.inputs));
            let svg = chart.svg(PlotSize::default()).map_err(|e| PyValueError::new_err(e.to_string()))?;
            output(&report, Some(svg))
        }
        "kv" => {
            let sc = call.scenario()?;
            output(&KvReport::new(&sc, call.serving(&sc)?.reserve_bytes), None)
        }
        "levers" => {
            let sc = call.scenario()?;
            output(&LeverReport::new(&sc, call.serving(&sc)?.reserve_bytes), None)
        }
        "latency" => {
            let sc = call.scenario()?;
            output(&LatencyReport::build(&sc, &call.serving(&sc)?).map_err(core)?, None)
        }
        "cost" => {
            let sc = call.scenario()?;
            output(&CostReport::build(&sc, &call.serving(&sc)?).map_err(core)?, None)
        }
        "zoom" => {
            let sc = call.scenario()?;
            let req: ZoomRequest = call.request(zoom::inputs())?;
            // As the CLI's JSON: a path this scenario lacks is an error about `at`.
            output(&req.run(&sc, false).map_err(command_error)?.0, None)
        }
        "moe" => {
            let base = call.scenario()?;
            let req: MoeRequest = call.request(moe::inputs())?;
            let model_given = call.scenario.iter().any(|(k, _)| k == "model");
            output(&req.run(&base, model_given, MAX_POINTS).map_err(command_error)?, None)
        }
        "plan" => {
            let req: PlanRequest = call.request(plan::inputs())?;
            let load: PlanLoadRequest = call.request(plan::load_inputs())?;
            if let Some(rate) = &load.rate {
                // The plan under load (`plan --rate`), checked in the CLI's order.
                let max_gpus = plan::max_gpus(req.max_gpus.as_deref()).map_err(core)?;
                let given = |k: &str| call.own.contains_key(k) || call.scenario.iter().any(|(key, _)| key == k);
                let checked = load.check(rate, given("batch"), given("ctx")).map_err(command_error)?;
                let sc = call.scenario()?;
                let s = req.serving(&sc).map_err(command_error)?;
                let report = load.report(&sc, &s, checked, max_gpus, FILES, Some(cancel)).map_err(command_error)?;
                return output(&report, None);
            }
            load.check_static().map_err(command_error)?;
            let sc = call.scenario()?;
            output(&req.run(&sc).map_err(command_error)?, None)
        }
        "simulate" => {
            let sc = call.scenario()?;
            let req: SimRequest = call.request(simulate::inputs())?;
            let sim = simulate::run(&sc, &req, FILES, None, Some(cancel)).map_err(command_error)?;
            // The plot the CLI's `--plot` draws: latency CDFs (one rate) or throughput against
            // p99 latency (a sweep).
            let svg = sim.chart().svg(PlotSize::default()).map_err(|e| PyValueError::new_err(e.to_string()))?;
            output(&sim.report, Some(svg))
        }
        "tile" => {
            let text = |k: &str| call.own(k).map(str::to_string);
            let req = GemmRequest {
                m: text("m"),
                n: text("n"),
                k: text("k"),
                gpu: None,
                tile: text("tile"),
                weights: text("weights"),
                activations: text("activations"),
                output: text("output"),
                compute_efficiency: text("compute_efficiency"),
                bandwidth_efficiency: text("bandwidth_efficiency"),
            };
            let g = req.resolve().map_err(core)?;
            let gpu = llm_ledger_files::gpu(call.own("gpu"), None).map_err(|e| files_error(e, Some("gpu")))?;
            output(&TileReport::build(&g, &gpu).map_err(core)?, None)
        }
        other => Err(PyValueError::new_err(format!("no command `{other}`"))),
    }
}

/// Most points one Python `sweep` call returns (every point is held in memory, 14 columns of 8
/// bytes: 2²⁵ points are about 3.8 GB); the CLI streams up to the core's cap.
pub const MAX_PYTHON_SWEEP_POINTS: u64 = 1 << 25;

/// Most points a sweep's batch curve draws (the CLI's `--plot` limit).
const MAX_PLOT_POINTS: u64 = 4096;

/// The numeric columns of a sweep, in the CLI's JSON point order (`largest_op` and `fits` apart).
const FLOAT_COLUMNS: [&str; 10] = [
    "step_time_s",
    "tokens_per_s",
    "flops",
    "bytes",
    "weight_bytes",
    "kv_bytes",
    "intensity",
    "largest_op_time_s",
    "memory_bytes",
    "kv_cache_bytes",
];

/// A whole sweep in one call: the head as JSON (the CLI's JSON without `points`) and the points as
/// columns — `batch`, `ctx` as `array('Q')`, the float fields as `array('d')`, `largest_op` as a
/// list of str, `fits` as a list of bool — in the CLI's point-key order; and the batch curve as SVG
/// for a sweep over one context of at most [`MAX_PLOT_POINTS`] points.
#[pyfunction]
fn sweep<'py>(py: Python<'py>, pairs: Vec<(String, String)>) -> PyResult<(String, Bound<'py, PyDict>, Option<String>)> {
    let call = Call::new("sweep", pairs)?;
    let ctx_axis = call.scenario.iter().find(|(k, _)| k == "ctx").map(|(_, v)| v.clone());
    // The base scenario is resolved without the axes, as the CLI's is.
    let base = Call { scenario: call.scenario.iter().filter(|(k, _)| k != "ctx").cloned().collect(), ..call };
    let computed = py.allow_threads(|| -> PyResult<_> {
        let sc = base.scenario()?;
        let reserve = base.serving.iter().find(|(k, _)| k == "reserve").map(|(_, v)| v.clone());
        let req = SweepRequest { batch: base.own_text("batch"), ctx: ctx_axis, reserve };
        let plan = req.plan(sc).map_err(command_error)?;
        let n = grid_points(&plan.sweep.axes()).map_err(|e| input_error(&e))?;
        if n > MAX_PYTHON_SWEEP_POINTS {
            return Err(input_error(&Error::invalid(
                "batch",
                format!("{n} points"),
                format!("at most {MAX_PYTHON_SWEEP_POINTS} points in one call (`llm-ledger sweep` streams any number)"),
            )));
        }
        let n = n as usize;
        let mut ints: [Vec<u64>; 2] = [Vec::with_capacity(n), Vec::with_capacity(n)];
        let mut floats: Vec<Vec<f64>> = (0..FLOAT_COLUMNS.len()).map(|_| Vec::with_capacity(n)).collect();
        let mut ops = Vec::with_capacity(n);
        let mut fits = Vec::with_capacity(n);
        let mut kept = Vec::new();
        let mut bad = None;
        plan.sweep.run(|p| {
            let values = [
                p.step_time_s,
                p.tokens_per_s,
                p.flops,
                p.bytes,
                p.weight_bytes,
                p.kv_bytes,
                p.intensity,
                p.largest_op_time_s,
                p.memory_bytes,
                p.kv_cache_bytes,
            ];
            if values.iter().any(|v| !v.is_finite()) {
                // The report crate's check names the field and the point, as the CLI's would.
                let i = ints[0].len();
                bad = llm_ledger_report::finite::check(&format!("points[{i}]"), p).err();
                return ControlFlow::Break(());
            }
            ints[0].push(p.batch);
            ints[1].push(p.ctx);
            for (c, v) in floats.iter_mut().zip(values) {
                c.push(v);
            }
            ops.push(p.largest_op);
            if n as u64 <= MAX_PLOT_POINTS {
                kept.push(*p);
            }
            fits.push(p.fits);
            ControlFlow::Continue(())
        });
        if let Some(e) = bad {
            return Err(input_error(&e));
        }
        let head = serde_json::to_string(&plan.head).map_err(|e| PyValueError::new_err(e.to_string()))?;
        // The batch curve (the CLI's `--plot`) where there is one: one context, at most
        // MAX_PLOT_POINTS batch sizes.
        let svg = match plan.batch_curve(&kept) {
            Ok(curve) if !kept.is_empty() => curve.svg(PlotSize::default()).ok(),
            _ => None,
        };
        Ok((head, ints, floats, ops, fits, svg))
    })?;
    let (head, ints, floats, ops, fits, svg) = computed;
    let array = py.import("array")?.getattr("array")?;
    let typed = |code: &str, bytes: Vec<u8>| array.call1((code, PyBytes::new(py, &bytes)));
    let columns = PyDict::new(py);
    for (name, col) in ["batch", "ctx"].iter().zip(ints) {
        columns.set_item(name, typed("Q", col.iter().flat_map(|v| v.to_ne_bytes()).collect())?)?;
    }
    let floats: HashMap<&str, Vec<f64>> = FLOAT_COLUMNS.iter().copied().zip(floats).collect();
    let put_float = |name: &str| -> PyResult<()> {
        columns.set_item(name, typed("d", floats[name].iter().flat_map(|v| v.to_ne_bytes()).collect())?)
    };
    for name in ["step_time_s", "tokens_per_s", "flops", "bytes", "weight_bytes", "kv_bytes", "intensity"] {
        put_float(name)?;
    }
    // One str object per operator kind, shared by every point.
    let mut names: HashMap<llm_ledger_core::kinds::OpKind, Bound<'_, PyString>> = HashMap::new();
    let op_list = PyList::empty(py);
    for op in ops {
        let s = names.entry(op).or_insert_with(|| PyString::new(py, op.name()));
        op_list.append(s.clone())?;
    }
    columns.set_item("largest_op", op_list)?;
    for name in ["largest_op_time_s", "memory_bytes", "kv_cache_bytes"] {
        put_float(name)?;
    }
    columns.set_item("fits", PyList::new(py, fits)?)?;
    Ok((head, columns, svg))
}

/// The keyword arguments `command` takes, in the CLI's flag order.
#[pyfunction]
fn keywords(command: &str) -> PyResult<Vec<&'static str>> {
    keywords_of(command).ok_or_else(|| PyValueError::new_err(format!("no command `{command}`")))
}

/// The built-in catalogue as JSON: `{"models": [...], "gpus": [...]}` (the CLI's `models` and
/// `gpus` JSON).
#[pyfunction]
fn catalog() -> PyResult<(String, String)> {
    use llm_ledger_report::catalog::{GpuList, ModelList};
    let c = Catalog::builtin();
    let models = ModelList::new(&c).render(Format::Json).map_err(|e| input_error(&e))?;
    let gpus = GpuList::new(&c).render(Format::Json).map_err(|e| input_error(&e))?;
    Ok((models, gpus))
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let input_error = m.py().get_type::<InputError>();
    // Shown as `llm_ledger.InputError`, where the package exports it.
    input_error.setattr("__module__", "llm_ledger")?;
    m.add("InputError", input_error)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(keywords, m)?)?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The most values one keyword takes: a context mix's buckets, the longest list any input reads.
    m.add("MAX_VALUES", llm_ledger_core::limits::MAX_CONTEXT_BUCKETS)?;
    Ok(())
}
