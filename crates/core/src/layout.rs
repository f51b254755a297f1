//! A parallel layout and its validation: the inputs ([`ParallelSpec`]), the checked layout
//! ([`Parallelism`]: tensor, pipeline, expert and data parallel degrees, stages, the links
//! between GPUs) and its limits. Below the scenario, which holds one; the cost model of a
//! parallel deployment is [`crate::parallel`].

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::hardware::{Gpu, Link};
use crate::kernels::Collective;
use crate::kinds::{Comm, CommGroup, OpClass, OpKind};
use crate::model::{Attention, LayerSpec, Mlp, ModelSpec};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Fixed latency of one collective, seconds: NCCL's `baseLat` for the ring algorithm with the LL
/// protocol (`src/graph/tuning.cc`, NCCL 2.18–2.21: 6.6 µs). RCCL's table is higher (12 µs), so
/// the AMD numbers are optimistic.
pub const COLLECTIVE_BASE_LATENCY_S: f64 = 6.6e-6;

/// Default achieved fraction of a link's per-direction bandwidth. Measured NCCL all-reduce bus
/// bandwidth at 8 GB messages is 232 GB/s on 8×A100 (NVLink 3: 300 GB/s each way, 0.77) and
/// 317 GB/s on 8×MI300X (448, 0.71) (`shared/research/hardware.md` §2, Azure); PCIe Gen5 x16
/// peer-to-peer measures about 55 of 63 GB/s (0.87). 8×H100 measures 479 GB/s against 450, since
/// NVLink SHARP reduces inside the switch, which this model does not.
pub const DEFAULT_LINK_EFFICIENCY: f64 = 0.8;

pub use crate::limits::MAX_GPUS_PER_REPLICA;

/// Most pipeline stages.
pub const MAX_STAGES: u64 = 256;

/// Most data-parallel replicas.
pub const MAX_REPLICAS: u64 = 1 << 20;

/// Most pipeline micro-batches.
pub const MAX_MICRO_BATCHES: u64 = 4096;

/// Most (context bucket, micro-batch) pairs when a mix of contexts is dealt to micro-batches.
pub const MAX_DEALT_BUCKETS: u64 = 1 << 20;

/// Which link collectives use where a GPU has both NVLink (or another scale-up link) and PCIe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkChoice {
    /// The scale-up link (NVLink, Infinity Fabric) inside its domain, then PCIe, then the network.
    Nvlink,
    /// PCIe inside a server, then the network (NVLink unused, e.g. H100 PCIe without bridges).
    Pcie,
}

impl FromStr for LinkChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "nvlink" | "scale-up" | "scale_up" => Ok(LinkChoice::Nvlink),
            "pcie" => Ok(LinkChoice::Pcie),
            _ => Err(Error::unknown("interconnect", s, ["nvlink", "pcie"])),
        }
    }
}

impl fmt::Display for LinkChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkChoice::Nvlink => "nvlink",
            LinkChoice::Pcie => "pcie",
        })
    }
}

/// Parallel inputs before validation (parsed from [`crate::ScenarioRequest`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelSpec {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// Data-parallel replicas.
    pub dp: u64,
    /// Pipeline micro-batches (default `min(pp, batch)`).
    pub micro_batches: Option<u64>,
    /// Link choice (default: the scale-up link where the GPU has one).
    pub interconnect: Option<LinkChoice>,
    /// Achieved fraction of link bandwidth.
    pub link_efficiency: f64,
}

impl Default for ParallelSpec {
    fn default() -> Self {
        ParallelSpec {
            tp: 1,
            pp: 1,
            ep: 1,
            dp: 1,
            micro_batches: None,
            interconnect: None,
            link_efficiency: DEFAULT_LINK_EFFICIENCY,
        }
    }
}

/// The link a group of GPUs communicates over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupLink {
    /// Which of the GPU's links.
    pub scope: LinkScope,
    /// The link.
    pub link: Link,
}

/// One collective as the measured collective tables key it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollectiveCall {
    /// Which collective.
    pub op: Collective,
    /// GPUs in the group (all in one server).
    pub gpus: u32,
    /// The link the group runs over.
    pub scope: LinkScope,
    /// The message each GPU contributes, bytes.
    pub message_bytes: f64,
    /// The link bytes at the link's full bandwidth, seconds: no measured collective is faster.
    pub floor_s: f64,
}

/// Which of a GPU's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkScope {
    /// NVLink / Infinity Fabric.
    ScaleUp,
    /// PCIe inside a server.
    Pcie,
    /// Scale-out network.
    Network,
}

/// One pipeline stage: a contiguous run of layers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stage {
    /// Index of its first layer.
    pub first_layer: u64,
    /// Layers it holds.
    pub layers: u64,
    /// Distinct layer shapes in it: (index of one such layer in the model, count).
    #[serde(skip)]
    pub groups: Vec<(usize, u64)>,
    /// The link to the next stage (none for the last).
    pub send: Option<GroupLink>,
}

/// A validated deployment layout. `tp = pp = ep = dp = 1` is one GPU, and every caller takes
/// the single-GPU path unchanged ([`Parallelism::is_single`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parallelism {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// Data-parallel replicas.
    pub dp: u64,
    /// Micro-batches asked for (default `min(pp, batch)`).
    pub micro_batches: Option<u64>,
    /// Link choice.
    pub interconnect: LinkChoice,
    /// Achieved fraction of link bandwidth.
    pub link_efficiency: f64,
    /// Link of a TP group (none when `tp = 1`).
    pub tp_link: Option<GroupLink>,
    /// Link of an EP all-to-all (none when `ep = 1`).
    pub ep_link: Option<GroupLink>,
    /// Pipeline stages (one when `pp = 1`).
    pub stages: Vec<Stage>,
}

impl Parallelism {
    /// One GPU.
    pub fn single(model: &ModelSpec) -> Parallelism {
        Parallelism {
            tp: 1,
            pp: 1,
            ep: 1,
            dp: 1,
            micro_batches: None,
            interconnect: LinkChoice::Nvlink,
            link_efficiency: DEFAULT_LINK_EFFICIENCY,
            tp_link: None,
            ep_link: None,
            stages: stages(model, 1, &|_| None),
        }
    }

    /// Validate `spec` for `model` on `gpu`; errors name the flag.
    pub fn new(model: &ModelSpec, gpu: &Gpu, spec: &ParallelSpec) -> Result<Parallelism> {
        let ParallelSpec { tp, pp, ep, dp, micro_batches, interconnect, link_efficiency } = spec.clone();
        let max = MAX_GPUS_PER_REPLICA;
        for (field, v, hi) in [("tp", tp, max), ("pp", pp, MAX_STAGES), ("ep", ep, max), ("dp", dp, MAX_REPLICAS)] {
            if !(1..=hi).contains(&v) {
                return Err(Error::invalid(field, v, integer_in(1, hi)));
            }
        }
        let gpus = tp * pp * ep;
        if gpus > max {
            return Err(Error::invalid("tp × pp × ep", gpus, format!("at most {max} GPUs per replica")));
        }
        if pp > model.num_layers() {
            return Err(Error::invalid(
                "pp",
                pp,
                format!("at most the {} layers of {} (one stage per layer)", model.num_layers(), model.name),
            ));
        }
        if let Some(m) = micro_batches {
            if pp == 1 && m != 1 {
                return Err(Error::invalid("micro_batches", m, "1 without pipeline parallelism (`pp` = 1)"));
            }
            if !(1..=MAX_MICRO_BATCHES).contains(&m) {
                return Err(Error::invalid("micro_batches", m, integer_in(1, MAX_MICRO_BATCHES)));
            }
        }
        crate::limits::LINK_EFFICIENCY.check("link_efficiency", link_efficiency)?;
        check_tp(model, tp)?;
        check_ep(model, ep)?;
        let ic = &gpu.interconnect;
        let choice = match interconnect {
            Some(LinkChoice::Nvlink) if ic.scale_up.is_none() => {
                return Err(Error::invalid(
                    "interconnect",
                    "nvlink",
                    format!("pcie: {} has no NVLink or other scale-up link", gpu.name),
                ))
            }
            Some(LinkChoice::Pcie) if ic.pcie.is_none() => {
                return Err(Error::invalid("interconnect", "pcie", format!("nvlink: {} lists no PCIe link", gpu.name)))
            }
            Some(c) => c,
            None if ic.scale_up.is_some() => LinkChoice::Nvlink,
            None => LinkChoice::Pcie,
        };
        let span_link = |field: &str, span: u64| -> Result<Option<GroupLink>> {
            if span == 1 {
                return Ok(None);
            }
            link_between(gpu, choice, 0, span - 1).map(Some).ok_or_else(|| {
                Error::invalid(
                    field,
                    span,
                    format!(
                        "a group of at most {} GPUs: {} lists no link for more (add [gpu.interconnect] to its GPU file)",
                        reach(gpu, choice),
                        gpu.name
                    ),
                )
            })
        };
        let tp_link = span_link("tp", tp)?;
        let ep_link = if ep > 1 { span_link("ep", tp * ep)? } else { None };
        let per_stage = tp * ep;
        let send = |s: u64| link_between(gpu, choice, s * per_stage, (s + 1) * per_stage);
        let stages = stages(model, pp, &send);
        if pp > 1 && stages.iter().rev().skip(1).any(|s| s.send.is_none()) {
            return Err(Error::invalid(
                "pp",
                pp,
                format!("1: {} lists no link between {} GPUs and the next stage", gpu.name, per_stage),
            ));
        }
        Ok(Parallelism {
            tp,
            pp,
            ep,
            dp,
            micro_batches,
            interconnect: choice,
            link_efficiency,
            tp_link,
            ep_link,
            stages,
        })
    }

    /// One GPU, one replica: every caller takes the single-GPU path.
    #[inline]
    pub fn is_single(&self) -> bool {
        self.tp == 1 && self.pp == 1 && self.ep == 1
    }

    /// GPUs serving one batch: `tp × pp × ep`.
    pub fn gpus_per_replica(&self) -> u64 {
        self.tp * self.pp * self.ep
    }

    /// GPUs of the whole deployment: `tp × pp × ep × dp`.
    pub fn gpus(&self) -> u64 {
        self.gpus_per_replica() * self.dp
    }

    /// Micro-batches a batch of `batch` sequences is split into: the number asked for (default
    /// `pp`), at most one per sequence.
    pub fn micro_batches_for(&self, batch: u64) -> u64 {
        self.micro_batches.unwrap_or(self.pp).min(batch).max(1)
    }

    /// Time of `link_bytes` over `link` with `hops` ring steps:
    /// `link_bytes ÷ (bandwidth × efficiency) + α₀ + hops · α`.
    pub fn link_time_s(&self, link: &Link, link_bytes: f64, hops: f64) -> f64 {
        link_bytes / (link.bandwidth_bytes_per_s * self.link_efficiency)
            + COLLECTIVE_BASE_LATENCY_S
            + hops * link.latency_s
    }

    /// The group link and ring steps of a collective operator (none for the pipeline's send
    /// and wait, which belong to a stage).
    pub fn collective(&self, kind: OpKind) -> Option<(&GroupLink, f64)> {
        let (comm, group) = collective_of(kind)?;
        let (link, n) = match group {
            CommGroup::Tensor => (self.tp_link.as_ref()?, self.tp as f64),
            CommGroup::Expert => (self.ep_link.as_ref()?, self.ep as f64),
        };
        let steps = match comm {
            Comm::AllReduce => 2.0 * (n - 1.0),
            Comm::AllGather | Comm::AllToAll => n - 1.0,
        };
        Some((link, steps))
    }

    /// A collective as the measured tables key it ([`CollectiveCall`]), for an operator of `kind`
    /// moving `link_bytes` per GPU: the message each GPU contributes is recovered from the ring
    /// volumes [`crate::ops`] charges — all-reduce `link = 2(N−1)/N · message`, all-gather
    /// `(N−1)/N · message` (the gathered output), all-to-all `(N−1)/N · message` (the GPU's send
    /// buffer, its own share included). `None` where the group leaves one server (the tables
    /// measure the GPUs of one node over NVLink or PCIe) or the operator is not a collective.
    pub fn collective_call(&self, kind: OpKind, link_bytes: f64) -> Option<CollectiveCall> {
        let (link, _) = self.collective(kind)?;
        if link.scope == LinkScope::Network {
            return None;
        }
        let (comm, group) = collective_of(kind)?;
        let op = match comm {
            Comm::AllReduce => Collective::AllReduce,
            Comm::AllGather => Collective::AllGather,
            Comm::AllToAll => Collective::AllToAll,
        };
        let gpus = match group {
            CommGroup::Tensor => self.tp,
            CommGroup::Expert => self.ep,
        };
        let n = gpus as f64;
        let ring = if op == Collective::AllReduce { 2.0 * (n - 1.0) / n } else { (n - 1.0) / n };
        Some(CollectiveCall {
            op,
            gpus: u32::try_from(gpus).ok()?,
            scope: link.scope,
            message_bytes: link_bytes / ring,
            floor_s: link_bytes / link.link.bandwidth_bytes_per_s,
        })
    }

    /// The link a communication operator of the GPU shown (of pipeline stage `stage`) uses.
    pub fn link_of(&self, kind: OpKind, stage: usize) -> Option<&GroupLink> {
        match kind.facts().class {
            OpClass::PipelineSend => self.stages.get(stage).and_then(|s| s.send.as_ref()),
            OpClass::Collective(..) => self.collective(kind).map(|(l, _)| l),
            OpClass::Gather
            | OpClass::Gemm
            | OpClass::FusedAttention
            | OpClass::UnfusedAttention
            | OpClass::Elementwise
            | OpClass::Recurrence
            | OpClass::Scoring
            | OpClass::PipelineWait
            | OpClass::Host => None,
        }
    }

    /// KV heads per GPU ÷ KV heads of a standard-attention layer: `1/tp`, or `1/kv` when `tp`
    /// exceeds the KV heads (each GPU holds one, replicated `tp/kv` times).
    pub fn kv_head_share(&self, kv_heads: u64) -> f64 {
        1.0 / self.tp.min(kv_heads) as f64
    }

    /// Copies of each KV head across the TP group of a standard-attention layer (1 unless
    /// `tp > kv_heads`).
    pub fn kv_head_replicas(&self, kv_heads: u64) -> u64 {
        (self.tp / kv_heads).max(1)
    }

    /// One-line description (`TP 8 × PP 2 (16 GPUs)`, `… × 3 replicas = 48 GPUs`).
    pub fn describe(&self) -> String {
        let mut s = layout_words(self.tp, self.pp, self.ep);
        if self.dp > 1 {
            s.push_str(&format!(" × {} replicas = {} GPUs", self.dp, self.gpus()));
        }
        s
    }
}

/// A layout in words: `TP 8 × PP 2 (16 GPUs)`, `TP 4 (4 GPUs)`, `1 GPU`.
pub fn layout_words(tp: u64, pp: u64, ep: u64) -> String {
    let parts: Vec<String> =
        [("TP", tp), ("PP", pp), ("EP", ep)].iter().filter(|(_, v)| *v > 1).map(|(n, v)| format!("{n} {v}")).collect();
    if parts.is_empty() {
        "1 GPU".into()
    } else {
        format!("{} ({} GPUs)", parts.join(" × "), tp * pp * ep)
    }
}

/// Layers per stage: contiguous runs of `⌊L/P⌋`, with the `L mod P` extra layers on the stages
/// just before the last (the last holds the LM head). This is vLLM's partition
/// (`vllm/distributed/utils.py`, `get_pp_indices`): 80 layers over 3 stages are 27, 27, 26.
pub fn stage_layer_counts(layers: u64, pp: u64) -> Vec<u64> {
    let mut counts = vec![layers / pp; pp as usize];
    let extra = (layers % pp) as usize;
    let n = counts.len();
    for i in 2..extra + 2 {
        counts[n - i] += 1;
    }
    counts
}

/// The distinct shapes among `layers[range]`: (index of the first layer of each, count), in order
/// of first appearance.
fn group_layers(layers: &[LayerSpec], range: std::ops::Range<usize>) -> Vec<(usize, u64)> {
    let mut groups: Vec<(usize, u64)> = Vec::new();
    for i in range {
        match groups.iter_mut().find(|(j, _)| layers[*j] == layers[i]) {
            Some(g) => g.1 += 1,
            None => groups.push((i, 1)),
        }
    }
    groups
}

/// The stages of `model` over `pp`, with `send(s)` the link from stage `s` to `s + 1`.
fn stages(model: &ModelSpec, pp: u64, send: &dyn Fn(u64) -> Option<GroupLink>) -> Vec<Stage> {
    let layers = model.layers();
    let mut first = 0u64;
    let counts = stage_layer_counts(model.num_layers(), pp);
    counts
        .iter()
        .enumerate()
        .map(|(s, &n)| {
            let groups = if n == model.num_layers() {
                // One stage holds every layer: its groups are the model's own, grouped the same way.
                model.layer_group_indices().collect()
            } else {
                group_layers(layers, first as usize..(first + n) as usize)
            };
            let stage = Stage {
                first_layer: first,
                layers: n,
                groups,
                send: if (s as u64) + 1 < pp { send(s as u64) } else { None },
            };
            first += n;
            stage
        })
        .collect()
}

/// GPUs a group can span over the links `choice` allows.
fn reach(gpu: &Gpu, choice: LinkChoice) -> u64 {
    let ic = &gpu.interconnect;
    if ic.network.is_some() {
        return MAX_GPUS_PER_REPLICA;
    }
    let up = if choice == LinkChoice::Nvlink { ic.scale_up.as_ref().and_then(|l| l.gpus) } else { None };
    up.into_iter().chain(ic.pcie.as_ref().and_then(|l| l.gpus)).max().unwrap_or(1)
}

/// The fastest link joining GPU ranks `a` and `b` (and everything between): the scale-up link
/// when both are in one of its domains (ranks `k·n … (k+1)·n − 1` for a domain of `n`), PCIe when
/// both are in one server, else the network.
fn link_between(gpu: &Gpu, choice: LinkChoice, a: u64, b: u64) -> Option<GroupLink> {
    let ic = &gpu.interconnect;
    let same = |l: &Link| l.gpus.is_some_and(|n| a / n == b / n);
    let up = ic.scale_up.as_ref().filter(|l| choice == LinkChoice::Nvlink && same(l));
    if let Some(l) = up {
        return Some(GroupLink { scope: LinkScope::ScaleUp, link: l.clone() });
    }
    if let Some(l) = ic.pcie.as_ref().filter(|l| same(l)) {
        return Some(GroupLink { scope: LinkScope::Pcie, link: l.clone() });
    }
    ic.network.as_ref().map(|l| GroupLink { scope: LinkScope::Network, link: l.clone() })
}

/// `tp` must divide the heads of every layer and the KV heads must divide `tp` or be divided by
/// it (vLLM's rule), and it must divide every MLP's (and expert's) intermediate size.
fn check_tp(model: &ModelSpec, tp: u64) -> Result<()> {
    if tp == 1 {
        return Ok(());
    }
    let bad = |what: String| Err(Error::invalid("tp", tp, format!("a divisor of {what} of {}", model.name)));
    for (layer, _) in model.layer_groups() {
        match &layer.attention {
            Attention::Standard(a) => {
                if a.heads % tp != 0 {
                    return bad(format!("the {} attention heads", a.heads));
                }
                if a.kv_heads % tp != 0 && tp % a.kv_heads != 0 {
                    return Err(Error::invalid(
                        "tp",
                        tp,
                        format!(
                            "a divisor or a multiple of the {} KV heads of {} (KV heads are split or replicated evenly)",
                            a.kv_heads, model.name
                        ),
                    ));
                }
            }
            Attention::Latent(a) => {
                if a.heads % tp != 0 {
                    return bad(format!("the {} attention heads", a.heads));
                }
            }
            Attention::Compressed(a) => {
                if a.heads % tp != 0 {
                    return bad(format!("the {} attention heads", a.heads));
                }
            }
            Attention::Recurrent(m) => {
                // vLLM splits the value heads (the state) and the key heads, replicating key heads
                // when there are fewer than GPUs (its Mamba-2 group replication).
                if m.value_heads % tp != 0 {
                    return bad(format!("the {} {} value heads", m.value_heads, m.rule.name()));
                }
                if m.key_heads % tp != 0 && tp % m.key_heads != 0 {
                    return Err(Error::invalid(
                        "tp",
                        tp,
                        format!(
                            "a divisor or a multiple of the {} {} key heads of {} (split or replicated evenly)",
                            m.key_heads,
                            m.rule.name(),
                            model.name
                        ),
                    ));
                }
            }
            Attention::Linear { .. } => {
                if model.hidden_size % tp != 0 {
                    return bad(format!("the hidden size {}", model.hidden_size));
                }
            }
            Attention::None => {}
        }
        for (what, width) in mlp_widths(layer) {
            if width % tp != 0 {
                return bad(format!("the {width}-wide {what}"));
            }
        }
    }
    Ok(())
}

fn mlp_widths(layer: &LayerSpec) -> Vec<(&'static str, u64)> {
    match &layer.mlp {
        Mlp::Dense(d) => vec![("MLP", d.intermediate)],
        Mlp::Moe(m) => {
            let mut v = vec![("experts", m.expert.intermediate)];
            if let Some(s) = &m.shared {
                v.push(("shared expert", s.intermediate));
            }
            v
        }
        Mlp::Linear { .. } | Mlp::None => Vec::new(),
    }
}

/// `ep` needs a mixture-of-experts model and must divide every MoE layer's experts.
fn check_ep(model: &ModelSpec, ep: u64) -> Result<()> {
    if ep == 1 {
        return Ok(());
    }
    if !model.is_moe() {
        return Err(Error::invalid("ep", ep, format!("1: {} has no experts", model.name)));
    }
    for (layer, _) in model.layer_groups() {
        if let Mlp::Moe(m) = &layer.mlp {
            if m.experts % ep != 0 {
                return Err(Error::invalid(
                    "ep",
                    ep,
                    format!("a divisor of the {} experts of {}", m.experts, model.name),
                ));
            }
        }
    }
    Ok(())
}

/// The collective an operator kind is, and its group ([`OpClass::Collective`]); `None` for
/// every other kind.
fn collective_of(kind: OpKind) -> Option<(Comm, CommGroup)> {
    match kind.facts().class {
        OpClass::Collective(comm, group) => Some((comm, group)),
        OpClass::Gather
        | OpClass::Gemm
        | OpClass::FusedAttention
        | OpClass::UnfusedAttention
        | OpClass::Elementwise
        | OpClass::Recurrence
        | OpClass::Scoring
        | OpClass::PipelineSend
        | OpClass::PipelineWait
        | OpClass::Host => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::scenario;

    /// A one-stage layout takes the model's own groups: the same as grouping its layers.
    #[test]
    fn one_stage_groups_are_the_layers_grouped() {
        for preset in crate::Catalog::builtin().presets() {
            let model = preset.spec();
            let all = group_layers(model.layers(), 0..model.layers().len());
            assert_eq!(stages(model, 1, &|_| None)[0].groups, all, "{}", model.name);
            assert_eq!(Parallelism::single(model).stages[0].groups, all, "{}", model.name);
        }
    }

    #[test]
    fn stages_follow_vllm_partition() {
        assert_eq!(stage_layer_counts(80, 3), [27, 27, 26]);
        assert_eq!(stage_layer_counts(126, 2), [63, 63]);
        assert_eq!(stage_layer_counts(10, 4), [2, 3, 3, 2]);
        assert_eq!(stage_layer_counts(7, 1), [7]);
    }

    #[test]
    fn links_are_chosen_by_domain() {
        let s = scenario(&[("model", "llama-3.1-405b"), ("tp", "8"), ("pp", "2")]);
        let p = &s.parallel;
        assert_eq!(p.tp_link.as_ref().unwrap().scope, LinkScope::ScaleUp);
        // Stage 0 is ranks 0–7, stage 1 ranks 8–15: another HGX board, over InfiniBand.
        assert_eq!(p.stages[0].send.as_ref().unwrap().scope, LinkScope::Network);
        assert_eq!(p.stages[0].layers, 63);
        // H100 PCIe: NVLink bridges join pairs; a TP group of 4 goes over PCIe.
        let s = scenario(&[("model", "llama-3.1-70b"), ("gpu", "h100-pcie"), ("tp", "4")]);
        assert_eq!(s.parallel.tp_link.as_ref().unwrap().scope, LinkScope::Pcie);
        let s = scenario(&[("model", "llama-3.1-70b"), ("gpu", "h100-pcie"), ("tp", "2")]);
        assert_eq!(s.parallel.tp_link.as_ref().unwrap().scope, LinkScope::ScaleUp);
        let s = scenario(&[("model", "llama-3.1-70b"), ("gpu", "h100-pcie"), ("tp", "2"), ("interconnect", "pcie")]);
        assert_eq!(s.parallel.tp_link.as_ref().unwrap().scope, LinkScope::Pcie);
        // TP 16 spans two HGX boards.
        let s = scenario(&[("model", "llama-3.1-405b"), ("tp", "16")]);
        assert_eq!(s.parallel.tp_link.as_ref().unwrap().scope, LinkScope::Network);
    }

    #[test]
    fn describe_reads_as_a_layout() {
        let s = scenario(&[("model", "llama-3.1-405b"), ("tp", "8"), ("pp", "2"), ("dp", "3")]);
        assert_eq!(s.parallel.describe(), "TP 8 × PP 2 (16 GPUs) × 3 replicas = 48 GPUs");
        assert_eq!(s.parallel.gpus(), 48);
        let s = scenario(&[("model", "llama-3.1-70b"), ("tp", "4")]);
        assert_eq!(s.parallel.describe(), "TP 4 (4 GPUs)");
    }

    #[test]
    fn interconnects_parse() {
        assert_eq!("NVLink".parse::<LinkChoice>().unwrap(), LinkChoice::Nvlink);
        assert_eq!("pcie".parse::<LinkChoice>().unwrap(), LinkChoice::Pcie);
        assert_eq!(
            "ib".parse::<LinkChoice>().unwrap_err().to_string(),
            "unknown interconnect `ib`; accepted: nvlink, pcie"
        );
    }
}
