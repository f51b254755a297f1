//! # llm-ledger core
//!
//! Where the FLOPs, the bytes and the time of one LLM forward step go, per operator, on a given
//! GPU. Pure math: no I/O, no CLI or web types. Data flows one way:
//!
//! ```text
//! config.json / preset ─┐
//! GPU catalogue ────────┼─> Scenario ─> operators (FLOPs, bytes) ─> roofline ─> Ledger
//! workload, precisions ─┘
//! ```
//!
//! ## Layers
//!
//! The modules form a DAG (checked by `tests/it/module_layers.rs`, which also checks that this
//! table lists every module); each row imports only rows above it:
//!
//! ```text
//! leaves     cost  kinds (operator kinds)  conventions (FLOPs per element)  plan_refusal
//!            bisect (the last value a monotone predicate holds at)
//!            pairs (text inputs as key-value pairs into a request)
//!            error (carries a plan refusal's quantities)  stop (the cancellation flag)
//! inputs     precision  limits  gemm (the GEMM cost)  fit (robust log-space least squares)
//!            model  workload  hardware  kernels (measured kernel tables)
//!            moe (routing math)  layout (parallel inputs)  roofline (TimeModel, KernelTimer)
//! scenario   scenario
//! operators  ops (+ ops::shard)  operator (Op)  memory (+ memory::parallel)  size
//!            parallel (pipeline, op_timing)  tiling  serving
//! clock      clock (the measured clock)  engine (the engines' fusion and host time)
//! ledger     ledger
//! views      zoom  sweep  latency  crossover  measure  expert_step  calibrate
//!            economics  levers  plan  advise  simulate  plan_serving
//!            capacity (the load a deployment holds)
//! ```
//!
//! ```
//! use llm_ledger_core::{Ledger, Scenario};
//! // The reference calculator: Llama 3 8B decode, batch 1, 2048 cached tokens, on an H100 SXM.
//! let ledger = Ledger::build(&Scenario::default_decode());
//! let gb = ledger.summary.cost.weight_bytes / 1e9;
//! assert!((gb - 15.0).abs() < 0.1, "{gb}");
//! ```
#![deny(missing_docs)]

pub mod advise;
mod bisect;
pub mod calibrate;
pub mod capacity;
pub mod clock;
pub mod conventions;
pub mod cost;
pub mod crossover;
pub mod economics;
pub mod engine;
pub mod error;
pub mod expert_step;
pub mod fit;
pub mod gemm;
pub mod hardware;
pub mod kernels;
pub mod kinds;
pub mod latency;
pub mod layout;
pub mod ledger;
pub mod levers;
pub mod limits;
pub mod measure;
pub mod memory;
pub mod model;
pub mod moe;
pub mod operator;
pub mod ops;
pub mod pairs;
pub mod parallel;
pub mod plan;
pub mod plan_refusal;
pub mod plan_serving;
pub mod precision;
pub mod roofline;
pub mod scenario;
pub mod serving;
pub mod simulate;
pub mod size;
pub mod stop;
pub mod sweep;
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;
pub mod tiling;
pub mod workload;
pub mod zoom;

pub use cost::Cost;
pub use error::{Error, Result};
pub use hardware::Gpu;
pub use ledger::{summarise, summarise_each, Ledger, Row, StepSummary};
pub use model::ModelSpec;
pub use precision::{MathFormat, Precision};
pub use roofline::{Bound, Efficiency, SlowCause, Timing};
pub use scenario::{Catalog, Scenario, ScenarioRequest};
pub use workload::{Contexts, Phase, Workload};
pub use zoom::ZoomTree;
