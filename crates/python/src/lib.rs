//! `llm_ledger._native`: the Rust layer of the Python package, kept thin. Each command turns its
//! keyword arguments (as text pairs: `str`, `bool` and `int` values read here, every other value
//! as the Python side's converter words it) into the request
//! types the CLI and the explorer use — [`ScenarioRequest`] through the core's
//! [`llm_ledger_core::pairs::from_pairs`], [`ServingRequest`] and the command's own
//! inputs — builds the same report of `llm_ledger_report` the CLI builds, and hands it back held
//! as it is (`Output`; `ledger` holds the core's ledger and makes its report on the first read):
//! each of its fields as Python values, its JSON (the CLI's `--format json`,
//! byte for byte), its CSV rows, its human table and, for `ledger` and `simulate`, the plot the
//! CLI's `--plot` draws are made only when the Python side asks for them. A `sweep` comes back as
//! columns computed here, not in a Python loop (`SweepColumns`). Files and Hub ids (`model`, `gpu`, `profile`,
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
use llm_ledger_app::{serving, CommandError, Files, Input};
use llm_ledger_core::kinds::OpKind;
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::scenario_inputs;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::sweep::{grid_points, Sweep, SweepPoint, CHUNK, PARALLEL_MIN_POINTS};
use llm_ledger_core::tiling::GemmRequest;
use llm_ledger_core::{Catalog, Error, Ledger, Scenario, ScenarioRequest};
use llm_ledger_files::FileInputs;
use llm_ledger_report::cost::CostReport;
use llm_ledger_report::kv::KvReport;
use llm_ledger_report::latency::LatencyReport;
use llm_ledger_report::levers::LeverReport;
use llm_ledger_report::plot::{PlotSize, Roofline};
use llm_ledger_report::simulate::SimulateReport;
use llm_ledger_report::sweep::{SweepAxes, SweepPlan};
use llm_ledger_report::{Format, HumanTable, LedgerReport, Report, TileReport};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyDict, PyInt, PyList, PyString, PyTuple};
use rayon::prelude::*;
use serde::Serialize;
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
    "attend",
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
        "kv" | "levers" | "latency" | "cost" => serving::inputs_of(command).iter().map(|i| i.name).collect(),
        // The axes (`batch`, `ctx`) of these commands are among the scenario's keywords.
        "sweep" => axes_apart(llm_ledger_app::sweep::inputs()),
        "moe" => axes_apart(moe::inputs()),
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

/// The keys of [`ServingRequest`] (the app's table of serving inputs).
fn serving_keys() -> Vec<&'static str> {
    names(serving::inputs())
}

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

/// A command's keyword lists, gathered once per process (the input tables are static): what
/// [`Call::new`] sorts each keyword by.
struct Keys {
    /// [`keywords_of`] the command.
    accepted: Vec<&'static str>,
    /// [`command_keys`] of the command.
    command: Vec<&'static str>,
    /// [`serving_keys`].
    serving: Vec<&'static str>,
    /// The scenario's fields ([`scenario_inputs`]).
    scenario: Vec<&'static str>,
}

impl Keys {
    /// The keyword lists of `command`, or None for no such command.
    fn of(command: &str) -> Option<&'static Keys> {
        static KEYS: std::sync::OnceLock<HashMap<&'static str, Keys>> = std::sync::OnceLock::new();
        KEYS.get_or_init(|| {
            COMMANDS
                .iter()
                .filter_map(|&c| {
                    let keys = Keys {
                        accepted: keywords_of(c)?,
                        command: command_keys(c),
                        serving: serving_keys(),
                        scenario: scenario_inputs().iter().map(|i| i.name).collect(),
                    };
                    Some((c, keys))
                })
                .collect()
        })
        .get(command)
    }
}

/// The commands [`run`] and [`sweep`] take ([`keywords_of`] knows each).
const COMMANDS: &[&str] =
    &["ledger", "zoom", "kv", "levers", "sweep", "moe", "latency", "cost", "simulate", "plan", "tile"];

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
        let keys = Keys::of(command).ok_or_else(|| PyValueError::new_err(format!("no command `{command}`")))?;
        let mut call = Call { scenario: vec![], serving: vec![], own: HashMap::new() };
        for (k, v) in pairs {
            if !keys.accepted.contains(&k.as_str()) {
                return Err(PyTypeError::new_err(format!(
                    "{command}() got an unexpected keyword argument '{k}'; it takes: {}",
                    keys.accepted.join(", ")
                )));
            }
            if keys.command.contains(&k.as_str()) {
                call.own.insert(k, v);
            } else if keys.serving.contains(&k.as_str()) {
                call.serving.push((k, v));
            } else if keys.scenario.contains(&k.as_str()) {
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
        self.scenario_from(self.scenario.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The scenario with input `key` set to `value` (another of that name left out).
    fn scenario_with(&self, key: &str, value: &str) -> PyResult<Scenario> {
        let others = self.scenario.iter().filter(|(k, _)| k != key).map(|(k, v)| (k.as_str(), v.as_str()));
        self.scenario_from(others.chain(std::iter::once((key, value))))
    }

    /// The scenario of these `(input, value)` pairs.
    fn scenario_from<'a>(&self, pairs: impl Iterator<Item = (&'a str, &'a str)>) -> PyResult<Scenario> {
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

/// The plot of a report, drawn when asked for (the CLI's `--plot`).
type Plot<R> = Box<dyn Fn(&R) -> PyResult<String> + Send + Sync>;

/// A report as the core built it, rendered only when asked for: each method is one of the Python
/// result's attributes, built once on the Python side and kept there. A report made on first use
/// ([`deferred`]) is made and checked by the first of them, which raises its error.
trait Shown: Send + Sync {
    /// The CLI's `--format json`, byte for byte.
    fn json(&self) -> PyResult<String>;
    /// One top-level field of the report's serde form (the JSON's `key`) as Python dicts, lists,
    /// numbers and strings, without JSON text; None where the report has no such field.
    fn field<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>>;
    /// The CLI's `--format csv` rows as dicts (its JSON row fields), after the finiteness check
    /// the CLI makes before it writes them.
    fn csv_rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
    /// The human layout (the table's cells, title and footer).
    fn human(&self) -> PyResult<HumanTable>;
    /// The CLI's text table with every column.
    fn table(&self) -> PyResult<String>;
    /// The plot as SVG, where the command draws one.
    fn svg(&self) -> PyResult<Option<String>>;
    /// Whether the report has been made (at the call, or by a read since).
    fn made(&self) -> bool;
}

/// Makes a report from what a call resolved (its scenario and ledger), once, when first asked.
type Make<R> = Box<dyn Fn() -> R + Send + Sync>;

/// A report (made now, or by `make` on first use) and its plot.
struct Held<R> {
    /// The report after the CLI's finiteness check, or that check's error.
    report: std::sync::OnceLock<Result<R, Error>>,
    /// What makes the report, where it was not made at the call.
    make: Option<Make<R>>,
    plot: Option<Plot<R>>,
}

impl<R: Report + Send + Sync> Held<R> {
    /// The report, made and checked on first use where it was not made at the call.
    fn report(&self) -> PyResult<&R> {
        let made = self.report.get_or_init(|| {
            let make = self.make.as_ref().expect("a report not made at the call has its maker");
            checked(make())
        });
        made.as_ref().map_err(input_error)
    }
}

/// `report` after the finiteness check the CLI's JSON rendering makes (a NaN is an error, never
/// a number handed back).
fn checked<R: Report>(report: R) -> Result<R, Error> {
    llm_ledger_report::finite::check("", &report).map(|()| report)
}

impl<R: Report + Send + Sync> Shown for Held<R> {
    fn json(&self) -> PyResult<String> {
        Ok(self.report()?.layout(Format::Json))
    }
    fn field<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.report()?.serialize(Pick { py, key })?)
    }
    fn csv_rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rows = self.report()?.csv_rows();
        llm_ledger_report::finite::check("rows", &rows).map_err(|e| input_error(&e))?;
        Ok(pythonize::pythonize(py, &rows)?)
    }
    fn human(&self) -> PyResult<HumanTable> {
        Ok(self.report()?.human())
    }
    fn table(&self) -> PyResult<String> {
        Ok(self.report()?.layout(Format::Table))
    }
    fn svg(&self) -> PyResult<Option<String>> {
        let report = self.report()?;
        self.plot.as_ref().map(|draw| draw(report)).transpose()
    }
    fn made(&self) -> bool {
        self.report.get().is_some()
    }
}

/// One command's result: the report, held typed ([`Shown`]); nothing is rendered until the
/// Python side asks for it.
#[pyclass(frozen, module = "llm_ledger._native")]
struct Output {
    shown: Box<dyn Shown>,
}

/// `report` (with its plot) as an [`Output`], after the finiteness check the CLI's JSON
/// rendering makes, so a NaN is an error at the call, never a number handed back (the CSV rows,
/// built only when asked for, are checked then: [`Shown::csv_rows`]).
fn held<R: Report + Send + Sync + 'static>(report: R, plot: Option<Plot<R>>) -> PyResult<Output> {
    let report = std::sync::OnceLock::from(Ok(checked(report).map_err(|e| input_error(&e))?));
    Ok(Output { shown: Box::new(Held { report, make: None, plot }) })
}

/// A report `make` makes from the call's typed result the first time the Python side reads any
/// of it (its fields, JSON, table or plot), then keeps; its finiteness check runs then, and its
/// error is raised by that read (and every later one). A call whose result is not read builds no
/// report.
fn deferred<R: Report + Send + Sync + 'static>(make: Make<R>, plot: Option<Plot<R>>) -> Output {
    let held = Held { report: std::sync::OnceLock::new(), make: Some(make), plot };
    Output { shown: Box::new(held) }
}

/// A serde serializer that picks one top-level field (`key`) of a struct's serde form — or of the
/// map a struct with `#[serde(flatten)]` fields serializes as — and turns only that field into
/// Python values (`pythonize`); the other fields are passed over unconverted. A value that is
/// not a struct or a map has no fields: `None`.
struct Pick<'py, 'k> {
    py: Python<'py>,
    key: &'k str,
}

/// A struct or map in progress: the field found so far, and whether the map key just given is
/// `key`.
struct Picking<'py, 'k> {
    pick: Pick<'py, 'k>,
    found: Option<Bound<'py, PyAny>>,
    at_key: bool,
}

type Picked<'py> = Option<Bound<'py, PyAny>>;
type PickResult<'py> = Result<Picked<'py>, pythonize::PythonizeError>;

macro_rules! no_fields {
    ($($name:ident: $t:ty),*) => {
        $(fn $name(self, _: $t) -> PickResult<'py> { Ok(None) })*
    };
}

impl<'py, 'k> serde::Serializer for Pick<'py, 'k> {
    type Ok = Picked<'py>;
    type Error = pythonize::PythonizeError;
    type SerializeSeq = serde::ser::Impossible<Picked<'py>, pythonize::PythonizeError>;
    type SerializeTuple = serde::ser::Impossible<Picked<'py>, pythonize::PythonizeError>;
    type SerializeTupleStruct = serde::ser::Impossible<Picked<'py>, pythonize::PythonizeError>;
    type SerializeTupleVariant = serde::ser::Impossible<Picked<'py>, pythonize::PythonizeError>;
    type SerializeMap = Picking<'py, 'k>;
    type SerializeStruct = Picking<'py, 'k>;
    type SerializeStructVariant = serde::ser::Impossible<Picked<'py>, pythonize::PythonizeError>;

    no_fields!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
        serialize_f32: f32, serialize_f64: f64, serialize_char: char, serialize_str: &str,
        serialize_bytes: &[u8], serialize_unit_struct: &'static str);

    fn serialize_none(self) -> PickResult<'py> {
        Ok(None)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> PickResult<'py> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> PickResult<'py> {
        Ok(None)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> PickResult<'py> {
        Ok(None)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> PickResult<'py> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> PickResult<'py> {
        Ok(None)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Err(serde::ser::Error::custom("a sequence has no fields"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Err(serde::ser::Error::custom("a tuple has no fields"))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(serde::ser::Error::custom("a tuple has no fields"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(serde::ser::Error::custom("a tuple has no fields"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Picking<'py, 'k>, Self::Error> {
        Ok(Picking { pick: self, found: None, at_key: false })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Picking<'py, 'k>, Self::Error> {
        Ok(Picking { pick: self, found: None, at_key: false })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(serde::ser::Error::custom("a variant's fields are not the report's"))
    }
}

impl<'py> Picking<'py, '_> {
    fn take<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), pythonize::PythonizeError> {
        if self.found.is_none() {
            self.found = Some(pythonize::pythonize(self.pick.py, v)?);
        }
        Ok(())
    }
}

impl<'py> serde::ser::SerializeStruct for Picking<'py, '_> {
    type Ok = Picked<'py>;
    type Error = pythonize::PythonizeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> Result<(), Self::Error> {
        if name == self.pick.key {
            self.take(v)?;
        }
        Ok(())
    }
    fn end(self) -> PickResult<'py> {
        Ok(self.found)
    }
}

impl<'py> serde::ser::SerializeMap for Picking<'py, '_> {
    type Ok = Picked<'py>;
    type Error = pythonize::PythonizeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Self::Error> {
        // A key is compared by its JSON text (`"total"`), as the JSON names it.
        self.at_key = serde_json::to_string(k).is_ok_and(|text| text.trim_matches('"') == self.pick.key);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        if std::mem::take(&mut self.at_key) {
            self.take(v)?;
        }
        Ok(())
    }
    fn end(self) -> PickResult<'py> {
        Ok(self.found)
    }
}

/// An SVG drawing error as a `ValueError`.
fn plot_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl Output {
    /// The CLI's `--format json` text.
    fn json(&self, py: Python<'_>) -> PyResult<String> {
        py.allow_threads(|| self.shown.json())
    }
    /// The report's top-level field `key` as Python values (the JSON's, without JSON text), or
    /// None.
    fn field<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.shown.field(py, key)
    }
    /// The CSV rows as a list of dicts.
    fn csv_rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.shown.csv_rows(py)
    }
    /// The human layout: `title`, `header`, `rows` (formatted cells), `right_aligned`, `footer`.
    fn human<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = py.allow_threads(|| self.shown.human())?;
        let d = PyDict::new(py);
        d.set_item("title", h.title)?;
        d.set_item("header", h.header)?;
        d.set_item("rows", h.rows)?;
        d.set_item("right_aligned", h.right_aligned)?;
        d.set_item("footer", h.footer)?;
        Ok(d)
    }
    /// The CLI's text table, every column.
    fn table(&self, py: Python<'_>) -> PyResult<String> {
        py.allow_threads(|| self.shown.table())
    }
    /// The plot as inline SVG, or None.
    fn svg(&self, py: Python<'_>) -> PyResult<Option<String>> {
        py.allow_threads(|| self.shown.svg())
    }
    /// Whether the report has been made: at the call, or (`ledger`) by the first read of it.
    fn made(&self) -> bool {
        self.shown.made()
    }
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

/// The keyword arguments of a call as text pairs: `pairs` as it is (a list of `(key, text)`), or,
/// for a dict of keyword arguments, each value's text — read here where every value is `None`
/// (left out), an exact `str`, `bool` (`on`/`off`) or `int` of at most 64 bits (its decimal
/// digits) and every key and text is valid Unicode, else as `convert(pairs)` gives it (the
/// Python side's converter, which takes every other type and words every refusal).
fn keyword_pairs(pairs: &Bound<'_, PyAny>, convert: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Ok(kwargs) = pairs.downcast_exact::<PyDict>() else {
        return pairs.extract();
    };
    if let Some(fast) = plain_pairs(kwargs) {
        return Ok(fast);
    }
    match convert {
        Some(convert) => convert.call1((kwargs,))?.extract(),
        None => Err(PyTypeError::new_err("keyword arguments as a dict need their converter")),
    }
}

/// [`keyword_pairs`] of a dict whose values need no conversion in Python, else None.
fn plain_pairs(kwargs: &Bound<'_, PyDict>) -> Option<Vec<(String, String)>> {
    let mut pairs = Vec::with_capacity(kwargs.len());
    for (key, value) in kwargs.iter() {
        if value.is_none() {
            continue;
        }
        let key = key.downcast_exact::<PyString>().ok()?.to_cow().ok()?.into_owned();
        let text = if let Ok(text) = value.downcast_exact::<PyString>() {
            text.to_cow().ok()?.into_owned()
        } else if let Ok(on) = value.downcast_exact::<PyBool>() {
            (if on.is_true() { "on" } else { "off" }).to_string()
        } else if value.is_exact_instance_of::<PyInt>() {
            value.extract::<i64>().ok()?.to_string()
        } else {
            return None;
        };
        pairs.push((key, text));
    }
    Some(pairs)
}

/// Run `command` (not `sweep`) on text keyword arguments; see the module doc. `plan` and
/// `simulate`, which search and simulate for up to seconds, stop at Ctrl-C ([`interruptible`]);
/// the other commands take microseconds to milliseconds and run on the calling thread, the GIL
/// released.
#[pyfunction]
#[pyo3(signature = (command, pairs, convert=None))]
fn run(
    py: Python<'_>,
    command: &str,
    pairs: &Bound<'_, PyAny>,
    convert: Option<&Bound<'_, PyAny>>,
) -> PyResult<Output> {
    let call = Call::new(command, keyword_pairs(pairs, convert)?)?;
    match command {
        "plan" | "simulate" => interruptible(py, |cancel| build(command, &call, cancel)),
        _ => py.allow_threads(|| build(command, &call, &AtomicBool::new(false))),
    }
}

fn build(command: &str, call: &Call, cancel: &AtomicBool) -> PyResult<Output> {
    let core = |e: Error| input_error(&e);
    match command {
        "ledger" => {
            let sc = call.scenario()?;
            // The core's typed result is held; its report (rows, total, notes) is made when read.
            let ledger = Ledger::build(&sc);
            let gpu = sc.gpu.clone();
            // The roofline the CLI's `--plot` draws.
            let roofline: Plot<LedgerReport> = Box::new(move |r| {
                let mut chart = Roofline::from_report(r, &gpu);
                chart.title = Some(llm_ledger_report::plot::title(&r.inputs));
                chart.svg(PlotSize::default()).map_err(plot_error)
            });
            Ok(deferred(Box::new(move || LedgerReport::new(&sc, &ledger)), Some(roofline)))
        }
        "kv" => {
            let sc = call.scenario()?;
            held(KvReport::new(&sc, call.serving(&sc)?.reserve_bytes), None)
        }
        "levers" => {
            let sc = call.scenario()?;
            held(LeverReport::new(&sc, call.serving(&sc)?.reserve_bytes), None)
        }
        "latency" => {
            let sc = call.scenario()?;
            held(LatencyReport::build(&sc, &call.serving(&sc)?).map_err(core)?, None)
        }
        "cost" => {
            let sc = call.scenario()?;
            held(CostReport::build(&sc, &call.serving(&sc)?).map_err(core)?, None)
        }
        "zoom" => {
            let sc = call.scenario()?;
            let req: ZoomRequest = call.request(zoom::inputs())?;
            // As the CLI's JSON: a path this scenario lacks is an error about `at`.
            held(req.run(&sc, false).map_err(command_error)?.0, None)
        }
        "moe" => {
            let base = call.scenario()?;
            let req: MoeRequest = call.request(moe::inputs())?;
            let model_given = call.scenario.iter().any(|(k, _)| k == "model");
            held(req.run(&base, model_given, MAX_POINTS).map_err(command_error)?, None)
        }
        "plan" => {
            let req: PlanRequest = call.request(plan::inputs())?;
            let load: PlanLoadRequest = call.request(plan::load_inputs())?;
            if let Some(rate) = &load.rate {
                // The plan under load (`plan --rate`), checked in the CLI's order.
                req.check_load().map_err(command_error)?;
                let (sc, s, checked, max_gpus) = load_inputs(call, &req, &load, rate)?;
                let report = load.report(&sc, &s, checked, max_gpus, FILES, Some(cancel)).map_err(command_error)?;
                return held(report, None);
            }
            let ctx_given = call.scenario.iter().any(|(k, _)| k == "ctx");
            let sc = match load.check_static(ctx_given).map_err(command_error)? {
                Some(ctx) => call.scenario_with("ctx", &ctx.to_string())?,
                None => call.scenario()?,
            };
            // KeyboardInterrupt stops the search at its next step evaluation.
            if req.pareto().map_err(command_error)? {
                return held(req.frontier_within(&sc, Some(cancel)).map_err(command_error)?, None);
            }
            held(req.run_within(&sc, Some(cancel)).map_err(command_error)?, None)
        }
        "simulate" => {
            let sc = call.scenario()?;
            let req: SimRequest = call.request(simulate::inputs())?;
            let sim = simulate::run(&sc, &req, FILES, None, Some(cancel)).map_err(command_error)?;
            // The plot the CLI's `--plot` draws: latency CDFs (one rate) or throughput against
            // p99 latency (a sweep); its data kept, the runs let go.
            let chart = sim.chart();
            let draw: Plot<SimulateReport> = Box::new(move |_| chart.svg(PlotSize::default()).map_err(plot_error));
            held(sim.report, Some(draw))
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
            held(TileReport::build(&g, &gpu).map_err(core)?, None)
        }
        other => Err(PyValueError::new_err(format!("no command `{other}`"))),
    }
}

/// Most points one Python `sweep` call returns (every point is held in memory, 14 columns of at
/// most 8 bytes: 2²⁵ points are about 3.4 GB); the CLI streams up to the core's cap.
pub const MAX_PYTHON_SWEEP_POINTS: u64 = 1 << 25;

/// Most points a sweep's batch curve draws (the CLI's `--plot` limit).
const MAX_PLOT_POINTS: u64 = 4096;

/// A sweep's columns: the CLI's JSON point keys, in its order.
const COLUMNS: [&str; 14] = [
    "batch",
    "ctx",
    "step_time_s",
    "tokens_per_s",
    "flops",
    "bytes",
    "weight_bytes",
    "kv_bytes",
    "intensity",
    "largest_op",
    "largest_op_time_s",
    "memory_bytes",
    "kv_cache_bytes",
    "fits",
];

/// The columns that are not `f64` numbers.
const OTHER_COLUMNS: [&str; 4] = ["batch", "ctx", "largest_op", "fits"];

/// How many columns are `f64` numbers.
const FLOAT_COLUMNS: usize = COLUMNS.len() - OTHER_COLUMNS.len();

/// The `f64` columns, in point-key order ([`floats_of`]'s).
fn float_columns() -> impl Iterator<Item = &'static str> {
    COLUMNS.iter().copied().filter(|c| !OTHER_COLUMNS.contains(c))
}

/// A point's numbers in [`float_columns`] order.
fn floats_of(p: &SweepPoint) -> [f64; FLOAT_COLUMNS] {
    [
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
    ]
}

/// A whole sweep, computed in one call and held as columns (no Python object per point): handed
/// to Python as `array.array`s and lists ([`SweepColumns::list`]) or as the bytes NumPy reads in
/// place ([`SweepColumns::buffer`]), each only when asked for. The columns of one type share one
/// `Vec` (column `i` of `n` points is `[i·n, (i+1)·n)`), so a sweep of any size makes a handful
/// of allocations; the head and the batch curve's plan are made the first time they are read.
#[pyclass(frozen, module = "llm_ledger._native")]
struct SweepColumns {
    /// The head and the batch curve's plan, apart (boxed: the Python object stays small enough
    /// for Python's own allocator, under 512 bytes).
    plan: Box<LazyPlan>,
    /// Points.
    n: usize,
    /// `batch`, then `ctx`.
    ints: Vec<u64>,
    /// [`float_columns`], in its order.
    floats: Vec<f64>,
    /// `largest_op` (indices into `ops`), then `fits` (1 where the point fits, else 0).
    bytes: Vec<u8>,
    /// The operator kinds the sweep's `largest_op` takes, in order of first appearance.
    ops: Vec<OpKind>,
    /// Every point of a sweep small enough for the batch curve, else none.
    kept: Vec<SweepPoint>,
}

/// What a sweep's head and batch curve are made of — the base scenario, the axes, the reserve —
/// and the report's plan made of them when first asked for (boxed: this stays under the 1 KiB
/// past which each allocation makes glibc's allocator sweep its free lists).
struct LazyPlan {
    base: Scenario,
    axes: SweepAxes,
    reserve_bytes: f64,
    made: std::sync::OnceLock<Result<Box<SweepPlan>, Error>>,
}

/// One chunk's share of a sweep column, filled from the chunk's points ([`Column::fill`]).
enum Column<'a> {
    Batch(&'a mut [u64]),
    Ctx(&'a mut [u64]),
    /// 1 where the point fits, else 0.
    Fits(&'a mut [u8]),
    /// The [`floats_of`] value at this index.
    Float(usize, &'a mut [f64]),
}

impl Column<'_> {
    /// Each slot from the point at the same place in `points` (as many as the slots); for a
    /// number column, the first place where the value is not finite.
    fn fill(&mut self, points: &[SweepPoint]) -> Option<usize> {
        match self {
            Column::Batch(col) => col.iter_mut().zip(points).for_each(|(v, p)| *v = p.batch),
            Column::Ctx(col) => col.iter_mut().zip(points).for_each(|(v, p)| *v = p.ctx),
            Column::Fits(col) => col.iter_mut().zip(points).for_each(|(v, p)| *v = u8::from(p.fits)),
            Column::Float(k, col) => {
                col.iter_mut().zip(points).for_each(|(v, p)| *v = floats_of(p)[*k]);
                return col.iter().position(|v| !v.is_finite());
            }
        }
        None
    }
}

/// A copy of one sweep column that NumPy reads in place through its array interface
/// (`__array_interface__`, version 3; `numpy.asarray` keeps this object as the array's base).
/// Nothing else reads or writes the values once they are handed out, so the array is writable
/// and shares memory with no other array.
#[pyclass(frozen, module = "llm_ledger._native")]
struct ColumnArray {
    /// The values' bytes in 8-byte words (aligned for any column type), the last one padded.
    words: Box<[u64]>,
    /// Values.
    len: usize,
    /// NumPy's type string of a value (`<f8`, `<i8`, `|u1`, `|b1`).
    typestr: &'static str,
}

impl ColumnArray {
    /// A copy of the `len` values in `bytes`, read by NumPy as `typestr`.
    fn of(bytes: &[u8], len: usize, typestr: &'static str) -> ColumnArray {
        let mut words = vec![0u64; bytes.len().div_ceil(8)].into_boxed_slice();
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        ColumnArray { words, len, typestr }
    }
}

#[pymethods]
impl ColumnArray {
    /// NumPy's array interface: one dimension of `len` values of `typestr` at the words' address,
    /// writable.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", (self.len,))?;
        d.set_item("typestr", self.typestr)?;
        d.set_item("data", (self.words.as_ptr() as usize, false))?;
        Ok(d)
    }

    fn __len__(&self) -> usize {
        self.len
    }
}

impl SweepColumns {
    /// Run `sweep` (`n` points of `base` over `axes`) into columns, with the CLI's finiteness
    /// check on each point.
    fn compute(sweep: &Sweep, base: Scenario, axes: SweepAxes, reserve_bytes: f64, n: usize) -> PyResult<SweepColumns> {
        let mut c = SweepColumns {
            plan: Box::new(LazyPlan { base, axes, reserve_bytes, made: std::sync::OnceLock::new() }),
            n,
            ints: vec![0; 2 * n],
            floats: vec![0.0; FLOAT_COLUMNS * n],
            bytes: vec![0; 2 * n],
            ops: Vec::new(),
            kept: Vec::new(),
        };
        let keep = n as u64 <= MAX_PLOT_POINTS;
        let mut bad = None;
        sweep.run_chunks(|first, points| {
            let start = usize::try_from(first).unwrap_or(usize::MAX);
            let Some(end) = start.checked_add(points.len()).filter(|&end| end <= n) else {
                // More points than the grid holds: never (`n` is the grid's size).
                return ControlFlow::Break(());
            };
            // The operator kinds' codes in order of first appearance (serial; neighbouring
            // points mostly share their largest operator).
            let (codes, fits) = c.bytes.split_at_mut(n);
            let mut last: Option<(OpKind, u8)> = None;
            for (slot, p) in codes[start..end].iter_mut().zip(points) {
                *slot = match last {
                    Some((kind, code)) if kind == p.largest_op => code,
                    _ => {
                        let code = c.ops.iter().position(|k| *k == p.largest_op).unwrap_or_else(|| {
                            c.ops.push(p.largest_op);
                            c.ops.len() - 1
                        });
                        // Fewer operator kinds than 256 (each `OpKind` is one).
                        let code = code as u8;
                        last = Some((p.largest_op, code));
                        code
                    }
                };
            }
            // Every other column filled on the pool, one column per task (a chunk too small for
            // the pool here); each number column gives the first point where it is not finite.
            let (batch, ctx) = c.ints.split_at_mut(n);
            let mut columns: Vec<Column<'_>> = vec![
                Column::Batch(&mut batch[start..end]),
                Column::Ctx(&mut ctx[start..end]),
                Column::Fits(&mut fits[start..end]),
            ];
            columns.extend(c.floats.chunks_mut(n).enumerate().map(|(k, col)| Column::Float(k, &mut col[start..end])));
            let first_bad = if points.len() < PARALLEL_MIN_POINTS {
                columns.iter_mut().filter_map(|col| col.fill(points)).min()
            } else {
                columns.par_iter_mut().filter_map(|col| col.fill(points)).min()
            };
            if let Some(j) = first_bad {
                // The report crate's check names the field and the point, as the CLI's would.
                bad = llm_ledger_report::finite::check(&format!("points[{}]", start + j), &points[j]).err();
                return ControlFlow::Break(());
            }
            if keep {
                c.kept.extend_from_slice(points);
            }
            ControlFlow::Continue(())
        });
        match bad {
            Some(e) => Err(input_error(&e)),
            None => Ok(c),
        }
    }

    /// The report's plan of the sweep: its head and its batch curve.
    fn plan(&self) -> PyResult<&SweepPlan> {
        let lazy = &self.plan;
        lazy.made
            .get_or_init(|| SweepPlan::new(lazy.base.clone(), lazy.axes.clone(), lazy.reserve_bytes).map(Box::new))
            .as_ref()
            .map(|plan| &**plan)
            .map_err(input_error)
    }

    /// Column `i` of `values`, which holds columns of `n` values one after the other.
    fn nth<'a, T>(&self, values: &'a [T], i: usize) -> &'a [T] {
        &values[i * self.n..(i + 1) * self.n]
    }

    fn float_column(&self, name: &str) -> Option<&[f64]> {
        float_columns().position(|c| c == name).map(|i| self.nth(&self.floats, i))
    }

    fn op_codes(&self) -> &[u8] {
        self.nth(&self.bytes, 0)
    }

    fn fits(&self) -> &[u8] {
        self.nth(&self.bytes, 1)
    }

    fn unknown(name: &str) -> PyErr {
        PyKeyError::new_err(name.to_string())
    }

    /// Column `name`'s values as native-endian bytes, with its `array` type code and NumPy's type
    /// string: `batch` and `ctx` `Q` (u64), read by NumPy as `<i8` (at most 2³⁰ and the longest
    /// context: the same bytes below 2⁶³, pandas' own integer dtype); the numbers `d`/`<f8`;
    /// `fits` `?`/`|b1` (one byte, 0 or 1); `largest_op` `B`/`|u1` (a code into `op_names()`).
    /// `None` for a name that is not a column.
    fn raw(&self, name: &str) -> Option<(&[u8], &'static str, &'static str)> {
        Some(match name {
            "batch" => (bytemuck::cast_slice(self.nth(&self.ints, 0)), "Q", "<i8"),
            "ctx" => (bytemuck::cast_slice(self.nth(&self.ints, 1)), "Q", "<i8"),
            "largest_op" => (self.op_codes(), "B", "|u1"),
            "fits" => (self.fits(), "?", "|b1"),
            _ => (bytemuck::cast_slice(self.float_column(name)?), "d", "<f8"),
        })
    }
}

#[pymethods]
impl SweepColumns {
    fn __len__(&self) -> usize {
        self.n
    }

    /// The CLI's sweep JSON without `points`, as Python values.
    fn head<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let plan = py.allow_threads(|| self.plan())?;
        Ok(pythonize::pythonize(py, &plan.head)?)
    }

    /// The column names, the CLI's point keys in order.
    #[staticmethod]
    fn names() -> Vec<&'static str> {
        COLUMNS.to_vec()
    }

    /// The operator kinds `largest_op` takes, indexed by the codes of `buffer("largest_op")`.
    fn op_names(&self) -> Vec<&'static str> {
        self.ops.iter().map(|k| k.name()).collect()
    }

    /// Every column, in [`COLUMNS`] order, as a fresh [`ColumnArray`] for NumPy ([`Self::raw`]'s
    /// type strings): the copies made on the thread pool (a sweep of a chunk or more), without
    /// the GIL.
    fn arrays<'py>(&self, py: Python<'py>) -> PyResult<Vec<(&'static str, Bound<'py, ColumnArray>)>> {
        let copy = |&name: &&str| {
            let (bytes, _, typestr) = self.raw(name).ok_or_else(|| Self::unknown(name))?;
            Ok(ColumnArray::of(bytes, self.n, typestr))
        };
        // A sweep of less than a chunk is copied here: waking the pool would cost more.
        let copies: Vec<ColumnArray> = if self.n < CHUNK {
            COLUMNS.iter().map(copy).collect::<PyResult<_>>()?
        } else {
            py.allow_threads(|| COLUMNS.par_iter().map(copy).collect::<PyResult<_>>())?
        };
        COLUMNS.iter().zip(copies).map(|(&name, c)| Ok((name, Bound::new(py, c)?))).collect()
    }

    /// A column as its `array` type code ([`Self::raw`]) and a `bytearray` of its values.
    fn buffer<'py>(&self, py: Python<'py>, name: &str) -> PyResult<(&'static str, Bound<'py, PyByteArray>)> {
        let (bytes, code, _) = self.raw(name).ok_or_else(|| Self::unknown(name))?;
        Ok((code, PyByteArray::new(py, bytes)))
    }

    /// `largest_op` as a list of str (one str object per operator kind, shared), or `fits` as a
    /// list of bool.
    fn list<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
        match name {
            "largest_op" => {
                let names: Vec<Bound<'py, PyString>> = self.ops.iter().map(|k| PyString::new(py, k.name())).collect();
                PyList::new(py, self.op_codes().iter().map(|c| names[usize::from(*c)].clone()))
            }
            "fits" => PyList::new(py, self.fits().iter().map(|f| *f != 0)),
            _ => Err(Self::unknown(name)),
        }
    }

    /// Point `i` as a tuple of Python values in column order.
    fn point<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
        if i >= self.n {
            return Err(pyo3::exceptions::PyIndexError::new_err(i));
        }
        let value = |name: &str| -> PyResult<Bound<'py, PyAny>> {
            Ok(match name {
                "batch" => self.nth(&self.ints, 0)[i].into_pyobject(py)?.into_any(),
                "ctx" => self.nth(&self.ints, 1)[i].into_pyobject(py)?.into_any(),
                "largest_op" => PyString::new(py, self.ops[usize::from(self.op_codes()[i])].name()).into_any(),
                "fits" => PyBool::new(py, self.fits()[i] != 0).to_owned().into_any(),
                _ => self.float_column(name).ok_or_else(|| Self::unknown(name))?[i].into_pyobject(py)?.into_any(),
            })
        };
        PyTuple::new(py, COLUMNS.iter().map(|name| value(name)).collect::<PyResult<Vec<_>>>()?)
    }

    /// The batch curve (the CLI's `--plot`) as SVG, for a sweep over one context of at most
    /// [`MAX_PLOT_POINTS`] points; else None.
    fn svg(&self, py: Python<'_>) -> PyResult<Option<String>> {
        py.allow_threads(|| {
            Ok(match self.plan()?.batch_curve(&self.kept) {
                Ok(curve) if !self.kept.is_empty() => curve.svg(PlotSize::default()).ok(),
                _ => None,
            })
        })
    }
}

/// The scenario, the serving inputs, the checked rate and TTFT bound, and the GPU budget of a
/// plan under load, checked in the CLI's order.
fn load_inputs(
    call: &Call,
    req: &PlanRequest,
    load: &PlanLoadRequest,
    rate: &str,
) -> PyResult<(Scenario, llm_ledger_core::serving::Serving, (f64, f64), u64)> {
    let max_gpus = plan::max_gpus(req.max_gpus.as_deref()).map_err(|e| input_error(&e))?;
    let given = |k: &str| call.own.contains_key(k) || call.scenario.iter().any(|(key, _)| key == k);
    let checked = load.check(rate, given("batch"), given("ctx")).map_err(command_error)?;
    let sc = call.scenario()?;
    let s = req.serving(&sc).map_err(command_error)?;
    Ok((sc, s, checked, max_gpus))
}

/// A plan under load's search laid out from a call's keywords (`rate` required).
fn load_search(call: &Call) -> PyResult<plan::LoadSearch> {
    let req: PlanRequest = call.request(plan::inputs())?;
    let load: PlanLoadRequest = call.request(plan::load_inputs())?;
    let Some(rate) = &load.rate else {
        return Err(input_error_with("`executor` applies to a plan under load: give `rate`", Some("executor"), None));
    };
    let (sc, s, checked, max_gpus) = load_inputs(call, &req, &load, rate)?;
    load.search(&sc, &s, checked, max_gpus, FILES).map_err(command_error)
}

/// `plan` under load with its candidates assessed by `map`: a Python callable given the list
/// of tasks — one `(keywords, j)` per candidate `j` — that returns, in order, what
/// [`plan_part`] returns for each (the JSON of its assessment). The search is laid out and its
/// budget checked here; `map` may run the tasks anywhere (an executor's workers).
#[pyfunction]
fn plan_mapped(py: Python<'_>, pairs: Vec<(String, String)>, map: Bound<'_, PyAny>) -> PyResult<Output> {
    let call = Call::new("plan", pairs.clone())?;
    let search = py.allow_threads(|| load_search(&call))?;
    search.admit().map_err(command_error)?;
    let tasks: Vec<(Vec<(String, String)>, usize)> = (0..search.search.len()).map(|j| (pairs.clone(), j)).collect();
    let parts: Vec<String> = map.call1((tasks,))?.extract()?;
    let report = py.allow_threads(|| search.report_from_json(&parts)).map_err(command_error)?;
    held(report, None)
}

/// Candidate `j` of a plan under load, assessed here under the call's own step budget: the
/// JSON [`plan_mapped`] gathers (a task an executor's worker runs).
#[pyfunction]
fn plan_part(py: Python<'_>, pairs: Vec<(String, String)>, j: usize) -> PyResult<String> {
    let call = Call::new("plan", pairs)?;
    py.allow_threads(|| load_search(&call)?.assess_json(j).map_err(command_error))
}

/// A whole sweep in one call ([`SweepColumns`]): its scenario resolved without the axes, the
/// reserve and the axes checked as the CLI checks them, every point computed here (in parallel
/// past a few dozen points); the head the CLI prints above the points is made when first read.
#[pyfunction]
#[pyo3(signature = (pairs, convert=None))]
fn sweep(py: Python<'_>, pairs: &Bound<'_, PyAny>, convert: Option<&Bound<'_, PyAny>>) -> PyResult<SweepColumns> {
    let call = Call::new("sweep", keyword_pairs(pairs, convert)?)?;
    let ctx_axis = call.scenario.iter().find(|(k, _)| k == "ctx").map(|(_, v)| v.clone());
    // The base scenario is resolved without the axes, as the CLI's is.
    let base = Call { scenario: call.scenario.iter().filter(|(k, _)| k != "ctx").cloned().collect(), ..call };
    py.allow_threads(|| {
        let sc = base.scenario()?;
        let reserve = base.serving.iter().find(|(k, _)| k == "reserve").map(|(_, v)| v.clone());
        let req = SweepRequest { batch: base.own_text("batch"), ctx: ctx_axis, reserve };
        let (axes, reserve_bytes) = req.checked(&sc).map_err(command_error)?;
        // The checks `SweepPlan::new` makes, without its head (made when first read).
        let sweep =
            Sweep::new(sc.clone(), axes.batch.clone(), axes.ctx.clone(), reserve_bytes).map_err(|e| input_error(&e))?;
        let n = grid_points(&sweep.axes()).map_err(|e| input_error(&e))?;
        if n > MAX_PYTHON_SWEEP_POINTS {
            return Err(input_error(&Error::invalid(
                "batch",
                format!("{n} points"),
                format!("at most {MAX_PYTHON_SWEEP_POINTS} points in one call (`llm-ledger sweep` streams any number)"),
            )));
        }
        SweepColumns::compute(&sweep, sc, axes, reserve_bytes, n as usize)
    })
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
    // A report's text is the CLI's table with every column (`--wide`), its time sources included.
    llm_ledger_report::render::show_wide_columns(true);
    m.add("InputError", input_error)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(plan_mapped, m)?)?;
    m.add_function(wrap_pyfunction!(plan_part, m)?)?;
    m.add_function(wrap_pyfunction!(keywords, m)?)?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add_class::<Output>()?;
    m.add_class::<SweepColumns>()?;
    m.add_class::<ColumnArray>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The most values one keyword takes: a context mix's buckets, the longest list any input reads.
    m.add("MAX_VALUES", llm_ledger_core::limits::MAX_CONTEXT_BUCKETS)?;
    Ok(())
}
