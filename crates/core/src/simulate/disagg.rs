//! Disaggregated serving: a pool of prefill instances and a pool of decode instances, with each
//! request's KV cache moved from one to the other over a link after its prefill.
//!
//! ## Units
//!
//! A split `X:Y` is `X` prefill **instances** and `Y` decode **instances**, each an instance of
//! the scenario's layout (`tp × pp × ep` GPUs, [`crate::layout::Parallelism::gpus_per_replica`]),
//! so the deployment holds `(X + Y) × tp × pp × ep` GPUs. It is compared with `X + Y`
//! aggregated instances of the same layout (the same GPUs), arrivals dealt round robin.
//!
//! ## The link model
//!
//! After the step that produces a request's first token, its KV cache — the prompt's positions,
//! at the KV precision, as the memory model counts them on one GPU of the instance
//! ([`crate::memory::parallel::stage_kv_bytes`]: TP shares, windows, MLA latents) — is sent from
//! each GPU of the prefill instance to its counterpart in a decode instance, all GPUs in
//! parallel, in
//!
//! `transfer_s = α + bytes_per_gpu ÷ (β · link_efficiency)`
//!
//! with `α` the link's latency and `β` its per-GPU, per-direction bandwidth from the GPU
//! catalogue's `[gpu.interconnect]` ([`crate::hardware::Link`]: NVLink per-direction figures
//! from the datasheets, latencies from NCCL's `hwLat`), and `link_efficiency` the scenario's
//! achieved fraction of a link ([`crate::layout::DEFAULT_LINK_EFFICIENCY`], 0.8, from measured
//! NCCL bus bandwidths). Transfers out of one prefill instance share its links: they go one at
//! a time, first come first served. A zero-cost link ([`KvLinkChoice::Ideal`]) isolates the
//! effect of separating the pools from the cost of moving the cache.

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::hardware::{Gpu, Link};
use crate::layout::Parallelism;
use serde::Serialize;

/// Most instances in a deployment (prefill + decode, or aggregated replicas): 64 (512 GPUs at
/// TP 8). The engine looks at every instance at every event, so a run costs `O(instances)` per
/// step; this bound keeps the largest run within seconds.
pub const MAX_INSTANCES: u64 = 64;

/// Which of the GPU's links carries the KV cache from prefill to decode instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KvLinkChoice {
    /// The scale-up link when one of its domains holds every GPU of both pools, else the
    /// network, else PCIe when one server holds them all.
    Auto,
    /// The scale-up link (NVLink, Infinity Fabric); every GPU of both pools in one domain.
    Nvlink,
    /// PCIe inside one server; every GPU of both pools in it.
    Pcie,
    /// The scale-out network (InfiniBand, Ethernet) between nodes.
    Network,
    /// No cost: the cache appears at the decode instance when the first token does.
    Ideal,
}

impl KvLinkChoice {
    /// Accepted names.
    pub const NAMES: [&'static str; 5] = ["auto", "nvlink", "pcie", "network", "ideal"];
}

impl std::str::FromStr for KvLinkChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(KvLinkChoice::Auto),
            "nvlink" | "scale-up" | "scale_up" => Ok(KvLinkChoice::Nvlink),
            "pcie" => Ok(KvLinkChoice::Pcie),
            "network" | "ib" | "infiniband" => Ok(KvLinkChoice::Network),
            "ideal" | "free" | "zero" => Ok(KvLinkChoice::Ideal),
            _ => Err(Error::unknown_for("kv_link", "KV link", s, KvLinkChoice::NAMES)),
        }
    }
}

/// The link a KV cache crosses, as the simulator uses it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KvLink {
    /// Which link (never `auto` once resolved).
    pub choice: KvLinkChoice,
    /// Its name in the GPU catalogue (`NVLink 4 (NVSwitch)`), or `ideal`.
    pub name: String,
    /// `α`: fixed time of one transfer, seconds (the link's catalogue latency).
    pub latency_s: f64,
    /// `β · link_efficiency`: achieved bandwidth per GPU, per direction, bytes per second
    /// (none for the ideal link: no limit).
    pub bandwidth_bytes_per_s: Option<f64>,
}

impl KvLink {
    /// A link that costs nothing.
    pub fn ideal() -> KvLink {
        KvLink { choice: KvLinkChoice::Ideal, name: "ideal".into(), latency_s: 0.0, bandwidth_bytes_per_s: None }
    }

    /// The link `choice` names on `gpu`, for `instances` instances of the layout `parallel`
    /// (errors name the field `kv_link`).
    pub fn resolve(choice: KvLinkChoice, gpu: &Gpu, parallel: &Parallelism, instances: u64) -> Result<KvLink> {
        let ic = &gpu.interconnect;
        let gpus = instances.saturating_mul(parallel.gpus_per_replica());
        let holds = |l: &Link| l.gpus.is_some_and(|n| gpus <= n);
        let make = |choice: KvLinkChoice, l: &Link| KvLink {
            choice,
            name: l.name.clone(),
            latency_s: l.latency_s,
            bandwidth_bytes_per_s: Some(l.bandwidth_bytes_per_s * parallel.link_efficiency),
        };
        let scoped = |choice: KvLinkChoice, link: &Option<Link>, what: &str| -> Result<KvLink> {
            match link {
                None => Err(Error::invalid(
                    "kv_link",
                    format!("{choice:?}").to_lowercase(),
                    format!("a link the {} lists (its GPU file has no {what})", gpu.name),
                )),
                Some(l) if choice != KvLinkChoice::Network && !holds(l) => Err(Error::invalid(
                    "kv_link",
                    format!("{choice:?}").to_lowercase(),
                    format!(
                        "a link whose domain holds both pools: {} reaches {} GPUs, the deployment has {gpus} (use network)",
                        l.name,
                        l.gpus.unwrap_or(1)
                    ),
                )),
                Some(l) => Ok(make(choice, l)),
            }
        };
        match choice {
            KvLinkChoice::Ideal => Ok(KvLink::ideal()),
            KvLinkChoice::Nvlink => scoped(choice, &ic.scale_up, "scale-up link"),
            KvLinkChoice::Pcie => scoped(choice, &ic.pcie, "PCIe link"),
            KvLinkChoice::Network => scoped(choice, &ic.network, "network"),
            KvLinkChoice::Auto => {
                if let Some(l) = ic.scale_up.as_ref().filter(|l| holds(l)) {
                    return Ok(make(KvLinkChoice::Nvlink, l));
                }
                if let Some(l) = &ic.network {
                    return Ok(make(KvLinkChoice::Network, l));
                }
                if let Some(l) = ic.pcie.as_ref().filter(|l| holds(l)) {
                    return Ok(make(KvLinkChoice::Pcie, l));
                }
                Err(Error::invalid(
                    "kv_link",
                    "auto",
                    format!("a GPU with a link between {gpus} GPUs ({} lists none: add [gpu.interconnect] to its GPU file, or use ideal)", gpu.name),
                ))
            }
        }
    }

    /// Seconds to move `bytes_per_gpu` from every GPU of a prefill instance to its counterpart:
    /// `α + bytes ÷ β` (0 for the ideal link).
    pub fn transfer_s(&self, bytes_per_gpu: f64) -> f64 {
        match self.bandwidth_bytes_per_s {
            None => 0.0,
            Some(b) => self.latency_s + bytes_per_gpu / b,
        }
    }
}

/// A disaggregated deployment: `prefill` and `decode` instances joined by `link`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagg {
    /// Prefill instances (≥ 1).
    pub prefill: u64,
    /// Decode instances (≥ 1).
    pub decode: u64,
    /// The link the KV cache crosses.
    pub link: KvLink,
}

impl Disagg {
    /// Parse a split `X:Y` (prefill instances : decode instances), each at least 1 and together at
    /// most [`MAX_INSTANCES`] (errors name the field `disagg`).
    pub fn parse_split(text: &str) -> Result<(u64, u64)> {
        let expected =
            || format!("PREFILL:DECODE instances, e.g. 1:3, each at least 1, together at most {MAX_INSTANCES}");
        let bad = || Error::invalid("disagg", text.trim(), expected());
        let (x, y) = text.split_once(':').ok_or_else(bad)?;
        let n = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
        let (x, y) = (n(x)?, n(y)?);
        if x == 0 || y == 0 || x.saturating_add(y) > MAX_INSTANCES {
            return Err(bad());
        }
        Ok((x, y))
    }

    /// Instances in all.
    pub fn instances(&self) -> u64 {
        self.prefill + self.decode
    }

    /// The deployment a front end's inputs describe: the split `X:Y` ([`Disagg::parse_split`])
    /// and the link's name (`auto` when absent), resolved on the scenario's GPU and layout.
    pub fn of_inputs(split: &str, kv_link: Option<&str>, sc: &crate::scenario::Scenario) -> Result<Disagg> {
        let (prefill, decode) = Disagg::parse_split(split)?;
        let choice: KvLinkChoice = kv_link.map(str::parse).transpose()?.unwrap_or(KvLinkChoice::Auto);
        let link = KvLink::resolve(choice, &sc.gpu, &sc.parallel, prefill + decode)?;
        Ok(Disagg { prefill, decode, link })
    }
}

/// How a simulated deployment splits its work.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Deployment {
    /// `replicas` identical instances, each running prompts and decodes in mixed steps; arrivals
    /// are dealt to them round robin. One replica is a single serving instance.
    Aggregated {
        /// Instances (1..=[`MAX_INSTANCES`]).
        replicas: u64,
    },
    /// Prefill and decode pools.
    Disaggregated(Disagg),
}

impl Deployment {
    /// One aggregated instance.
    pub const SINGLE: Deployment = Deployment::Aggregated { replicas: 1 };

    /// Instances in all.
    pub fn instances(&self) -> u64 {
        match self {
            Deployment::Aggregated { replicas } => *replicas,
            Deployment::Disaggregated(d) => d.instances(),
        }
    }

    /// Aggregated serving on the same GPUs: as many instances of the same layout.
    pub fn aggregated_equivalent(&self) -> Deployment {
        Deployment::Aggregated { replicas: self.instances() }
    }

    /// Check the sizes (errors name `replicas` or `disagg`).
    pub fn validate(&self) -> Result<()> {
        match self {
            Deployment::Aggregated { replicas } if !(1..=MAX_INSTANCES).contains(replicas) => {
                Err(Error::invalid("replicas", replicas, integer_in(1, MAX_INSTANCES)))
            }
            Deployment::Disaggregated(d)
                if d.prefill == 0 || d.decode == 0 || d.prefill.saturating_add(d.decode) > MAX_INSTANCES =>
            {
                Err(Error::invalid(
                    "disagg",
                    format!("{}:{}", d.prefill, d.decode),
                    format!("PREFILL:DECODE instances, each at least 1, together at most {MAX_INSTANCES}"),
                ))
            }
            _ => Ok(()),
        }
    }
}
