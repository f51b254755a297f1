//! Disaggregated serving: a pool of prefill instances and a pool of decode instances, with each
//! request's KV cache moved from one to the other over a link after its prefill.
//!
//! ## Units
//!
//! A split `X:Y` is `X` prefill **instances** and `Y` decode **instances**. By default each is an
//! instance of the scenario's layout (`tp × pp × ep` GPUs,
//! [`crate::layout::Parallelism::gpus_per_replica`]), so the deployment holds
//! `(X + Y) × tp × pp × ep` GPUs, and it is compared with `X + Y` aggregated instances of the same
//! layout (the same GPUs), arrivals dealt round robin.
//!
//! Each pool can take a layout of its own ([`Pools`]: TP and EP, one pipeline stage), as DistServe
//! and NVIDIA Dynamo choose each pool's parallelism. Its instances then have the step clock
//! ([`crate::simulate::StepClock`]), the KV capacity ([`crate::simulate::kv_capacity_blocks`]) and
//! the per-GPU KV bytes of that layout; the deployment holds
//! `gpus = X × prefill_tp × prefill_ep + Y × decode_tp × decode_ep`, and it is compared with
//! `⌊gpus ÷ (tp × ep)⌋` aggregated instances of the scenario's layout: the most that the same
//! GPUs hold (all of them when the scenario's instance size divides `gpus`;
//! [`Deployment::aggregated_equivalent`]).
//!
//! ## The link model
//!
//! After the step that produces a request's first token, its KV cache — the prompt's positions,
//! at the KV precision, as the memory model counts them on one GPU of an instance
//! ([`crate::memory::parallel::stage_kv_bytes`]: TP shares, windows, MLA latents) — is sent from
//! the GPUs of the prefill instance to the GPUs of a decode instance, all GPUs in parallel. Each
//! prefill GPU sends its share and each decode GPU receives its share, so the slower side sets
//! the time:
//!
//! `transfer_s = α_s + max(sent_bytes_per_prefill_gpu, received_bytes_per_decode_gpu) ÷ (β_bytes_per_s · link_efficiency)`
//!
//! with `sent_bytes_per_prefill_gpu` the memory model's per-GPU KV bytes of the prompt on the
//! prefill pool's layout and `received_bytes_per_decode_gpu` the same on the decode pool's (the
//! two are equal when the pools share a layout: each GPU sends to its counterpart),
//! `α` the link's latency and `β` its per-GPU, per-direction bandwidth from the GPU
//! catalogue's `[gpu.interconnect]` ([`crate::hardware::Link`]: NVLink per-direction figures
//! from the datasheets, latencies from NCCL's `hwLat`), and `link_efficiency` the scenario's
//! achieved fraction of a link ([`crate::layout::DEFAULT_LINK_EFFICIENCY`], 0.8, from measured
//! NCCL bus bandwidths). A prefill instance of TP 1 feeding a decode instance of TP 4 sends the
//! whole cache from one GPU (sender-bound); TP 4 feeding TP 1 is receiver-bound. A KV head
//! replicated over several decode GPUs (TP above the KV heads) is counted once on the sending
//! side. Transfers out of one prefill instance share its links: they go one at
//! a time, first come first served. A zero-cost link ([`KvLinkChoice::Ideal`]) isolates the
//! effect of separating the pools from the cost of moving the cache.

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::hardware::{Gpu, Link};
use crate::layout::{ParallelSpec, Parallelism};
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

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
        let gpus = instances.saturating_mul(parallel.gpus_per_replica());
        KvLink::resolve_for_gpus(choice, gpu, parallel.link_efficiency, gpus)
    }

    /// The link `choice` names on `gpu` for a deployment of `gpus` GPUs in all (both pools),
    /// achieving `link_efficiency` of its bandwidth (errors name the field `kv_link`).
    pub fn resolve_for_gpus(choice: KvLinkChoice, gpu: &Gpu, link_efficiency: f64, gpus: u64) -> Result<KvLink> {
        let ic = &gpu.interconnect;
        let holds = |l: &Link| l.gpus.is_some_and(|n| gpus <= n);
        let make = |choice: KvLinkChoice, l: &Link| KvLink {
            choice,
            name: l.name.clone(),
            latency_s: l.latency_s,
            bandwidth_bytes_per_s: Some(l.bandwidth_bytes_per_s * link_efficiency),
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

    /// Seconds to move a cache between pools of their own layouts, every GPU of the prefill
    /// instance sending `sent_bytes_per_prefill_gpu` while every GPU of the decode instance
    /// receives `received_bytes_per_decode_gpu`, all in parallel over their own links: the slower
    /// side, `α + max(sent, received) ÷ β` (0 for the ideal link; the module docs).
    pub fn transfer_between_s(&self, sent_bytes_per_prefill_gpu: f64, received_bytes_per_decode_gpu: f64) -> f64 {
        self.transfer_s(sent_bytes_per_prefill_gpu.max(received_bytes_per_decode_gpu))
    }
}

/// The parallel layout of a pool's instances: `tp × ep` GPUs each, one pipeline stage (the
/// simulator does not model pipeline micro-batches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PoolLayout {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
}

impl PoolLayout {
    /// The layout of `parallel` (its TP and EP).
    pub fn of(parallel: &Parallelism) -> PoolLayout {
        PoolLayout { tp: parallel.tp, ep: parallel.ep }
    }

    /// GPUs of one instance, `tp × ep`.
    pub fn gpus(&self) -> u64 {
        self.tp * self.ep
    }

    /// The scenario `sc` with this layout (itself, borrowed, when it has it already); errors name
    /// the pool's inputs (`prefill_tp`, `decode_ep`) where they would name `tp` or `ep`.
    pub fn scenario<'a>(&self, sc: &'a Scenario, pool: &str) -> Result<Cow<'a, Scenario>> {
        let p = &sc.parallel;
        if p.pp == 1 && PoolLayout::of(p) == *self {
            return Ok(Cow::Borrowed(sc));
        }
        let spec = ParallelSpec {
            tp: self.tp,
            ep: self.ep,
            // The scenario's link choice, valid on its GPU whether it was given or the default.
            interconnect: Some(p.interconnect),
            link_efficiency: p.link_efficiency,
            ..ParallelSpec::default()
        };
        let field = |f: &str| match f {
            "ep" => format!("{pool}_ep"),
            "tp" | "tp × pp × ep" => format!("{pool}_tp"),
            other => other.to_string(),
        };
        sc.with_parallel(&spec).map(Cow::Owned).map_err(|e| e.map_field(field))
    }
}

/// The layouts of a disaggregated deployment whose pools do not both take the scenario's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pools {
    /// Each prefill instance's layout.
    pub prefill: PoolLayout,
    /// Each decode instance's layout.
    pub decode: PoolLayout,
    /// The scenario's layout: that of the aggregated instances the deployment is compared with.
    pub aggregated: PoolLayout,
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
    /// The pools' own layouts (none: both take the scenario's).
    pub pools: Option<Pools>,
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
    pub fn of_inputs(split: &str, kv_link: Option<&str>, sc: &Scenario) -> Result<Disagg> {
        Disagg::with_pools(split, kv_link, sc, None, None)
    }

    /// [`Disagg::of_inputs`] with each pool's layout where given (none: the scenario's), checked
    /// on the scenario's model and GPU (errors name `prefill_tp`, `prefill_ep`, `decode_tp`,
    /// `decode_ep`); the link is resolved for the GPUs of both pools.
    pub fn with_pools(
        text: &str,
        kv_link: Option<&str>,
        sc: &Scenario,
        prefill_layout: Option<PoolLayout>,
        decode_layout: Option<PoolLayout>,
    ) -> Result<Disagg> {
        let (prefill, decode) = Disagg::parse_split(text)?;
        let choice: KvLinkChoice = kv_link.map(str::parse).transpose()?.unwrap_or(KvLinkChoice::Auto);
        let own = PoolLayout::of(&sc.parallel);
        let (p, d) = (prefill_layout.unwrap_or(own), decode_layout.unwrap_or(own));
        p.scenario(sc, "prefill")?;
        d.scenario(sc, "decode")?;
        let scenarios = prefill_layout.is_none() && decode_layout.is_none();
        let pools = if scenarios || (sc.parallel.pp == 1 && (p, d) == (own, own)) {
            None
        } else {
            Some(Pools { prefill: p, decode: d, aggregated: own })
        };
        let mut split = Disagg { prefill, decode, link: KvLink::ideal(), pools };
        let gpus = split.gpus(sc);
        let compared = Deployment::Disaggregated(split.clone()).aggregated_equivalent().instances();
        if compared > MAX_INSTANCES {
            return Err(Error::invalid(
                "disagg",
                text.trim(),
                format!(
                    "pools whose GPUs ({gpus}) hold at most {MAX_INSTANCES} aggregated instances of the scenario's layout ({}), the deployment it is compared with",
                    crate::layout::layout_words(own.tp, 1, own.ep)
                ),
            ));
        }
        split.link = KvLink::resolve_for_gpus(choice, &sc.gpu, sc.parallel.link_efficiency, gpus)?;
        Ok(split)
    }

    /// The prefill pool's layout and the decode pool's, on scenario `sc`.
    pub fn layouts(&self, sc: &Scenario) -> (PoolLayout, PoolLayout) {
        match &self.pools {
            Some(p) => (p.prefill, p.decode),
            None => (PoolLayout::of(&sc.parallel), PoolLayout::of(&sc.parallel)),
        }
    }

    /// GPUs of the deployment on scenario `sc`: `X × prefill GPUs + Y × decode GPUs` (with the
    /// scenario's layout, `(X + Y) × tp × pp × ep`).
    pub fn gpus(&self, sc: &Scenario) -> u64 {
        match &self.pools {
            Some(p) => self.prefill * p.prefill.gpus() + self.decode * p.decode.gpus(),
            None => self.instances() * sc.parallel.gpus_per_replica(),
        }
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

    /// Aggregated serving on the same GPUs: as many instances of the same layout; for pools of
    /// their own layouts, the most instances of the scenario's layout the deployment's GPUs hold,
    /// `⌊(X × prefill GPUs + Y × decode GPUs) ÷ scenario GPUs⌋` (at least 1).
    pub fn aggregated_equivalent(&self) -> Deployment {
        match self {
            Deployment::Disaggregated(Disagg { prefill, decode, pools: Some(p), .. }) => {
                let gpus = prefill * p.prefill.gpus() + decode * p.decode.gpus();
                Deployment::Aggregated { replicas: (gpus / p.aggregated.gpus()).max(1) }
            }
            Deployment::Aggregated { .. } | Deployment::Disaggregated(Disagg { pools: None, .. }) => {
                Deployment::Aggregated { replicas: self.instances() }
            }
        }
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
            Deployment::Aggregated { .. } | Deployment::Disaggregated(_) => Ok(()),
        }
    }
}
