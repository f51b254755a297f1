//! A parallel deployment as reports show it: its layout (echoed with the inputs) and its totals
//! for a step (GPUs, tokens per second per GPU, per replica and in all), and the footer lines
//! that say how the GPU shown was costed.

use crate::human;
use llm_ledger_core::model::{Attention, Mlp};
use llm_ledger_core::parallel::{expert_share, LinkChoice, PipelineTiming, COLLECTIVE_BASE_LATENCY_S};
use llm_ledger_core::{Scenario, StepSummary};
use serde::Serialize;

/// The layout of a deployment (absent from reports of one GPU).
#[derive(Debug, Clone, Serialize)]
pub struct Layout {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// Data-parallel replicas.
    pub dp: u64,
    /// `tp × pp × ep`.
    pub gpus_per_replica: u64,
    /// `tp × pp × ep × dp`.
    pub gpus: u64,
    /// Link choice.
    pub interconnect: LinkChoice,
    /// Achieved fraction of link bandwidth.
    pub link_efficiency: f64,
    /// Link of a TP group.
    pub tp_link: Option<String>,
    /// Link of the EP all-to-all.
    pub ep_link: Option<String>,
    /// Layers of each pipeline stage.
    pub stage_layers: Vec<u64>,
    /// Links from each stage to the next.
    pub stage_links: Vec<String>,
}

impl Layout {
    /// The layout of a parallel scenario; `None` on one GPU.
    pub fn of(sc: &Scenario) -> Option<Layout> {
        let p = &sc.parallel;
        if p.is_single() && p.dp == 1 {
            return None;
        }
        let name = |l: &llm_ledger_core::parallel::GroupLink| l.link.name.clone();
        Some(Layout {
            tp: p.tp,
            pp: p.pp,
            ep: p.ep,
            dp: p.dp,
            gpus_per_replica: p.gpus_per_replica(),
            gpus: p.gpus(),
            interconnect: p.interconnect,
            link_efficiency: p.link_efficiency,
            tp_link: p.tp_link.as_ref().map(name),
            ep_link: p.ep_link.as_ref().map(name),
            stage_layers: p.stages.iter().map(|s| s.layers).collect(),
            stage_links: p.stages.iter().filter_map(|s| s.send.as_ref()).map(name).collect(),
        })
    }
}

/// Totals of a deployment for one step.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// GPUs of the deployment.
    pub gpus: u64,
    /// Tokens per second of one replica.
    pub tokens_per_s_per_replica: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Tokens per second of all replicas.
    pub tokens_per_s: f64,
    /// How the pipeline spent the step (with stages).
    pub pipeline: Option<PipelineTiming>,
    /// Copies of each KV head across a TP group (1 unless TP exceeds the KV heads).
    pub kv_head_replicas: u64,
    /// The busiest EP group's expected expert load ÷ the mean (first MoE layer).
    pub expert_imbalance: Option<f64>,
}

impl Totals {
    /// Totals of a parallel scenario's step; `None` on one GPU.
    pub fn of(sc: &Scenario, s: &StepSummary) -> Option<Totals> {
        let p = &sc.parallel;
        if p.is_single() && p.dp == 1 {
            return None;
        }
        let replica = s.tokens_per_s();
        let kv_head_replicas = sc
            .model
            .layer_groups()
            .filter_map(|(l, _)| match &l.attention {
                Attention::Standard(a) => Some(p.kv_head_replicas(a.kv_heads)),
                Attention::Latent(_)
                | Attention::Compressed(_)
                | Attention::Recurrent(_)
                | Attention::Linear { .. }
                | Attention::None => None,
            })
            .max()
            .unwrap_or(1);
        let expert_imbalance = (p.ep > 1)
            .then(|| {
                sc.model.layer_groups().find_map(|(l, _)| match &l.mlp {
                    Mlp::Moe(m) => Some(expert_share(m, sc.workload.step_tokens(), &sc.routing, p.ep).imbalance),
                    Mlp::Dense(_) | Mlp::Linear { .. } | Mlp::None => None,
                })
            })
            .flatten();
        Some(Totals {
            gpus: p.gpus(),
            tokens_per_s_per_replica: replica,
            tokens_per_s_per_gpu: replica / p.gpus_per_replica() as f64,
            tokens_per_s: replica * p.dp as f64,
            pipeline: s.pipeline,
            kv_head_replicas,
            expert_imbalance,
        })
    }
}

/// `NVLink 4 (450 GB/s each way, 0.6 µs per hop)`.
fn link_words(l: &llm_ledger_core::hardware::Link) -> String {
    format!(
        "{}: {} each way, {} per hop",
        l.name,
        human::rate(l.bandwidth_bytes_per_s, "B"),
        human::seconds(l.latency_s)
    )
}

/// Footer lines for a parallel scenario's ledger: what the GPU shown is, how communication was
/// costed, and the deployment's totals.
pub fn footer(sc: &Scenario, t: &Totals) -> Vec<String> {
    let p = &sc.parallel;
    let mut lines = Vec::new();
    let mut shown = format!("per GPU of {}", p.describe());
    if let Some(pl) = &t.pipeline {
        let st = &p.stages[pl.stage];
        let mut held = format!("layers {}–{}", st.first_layer, st.first_layer + st.layers - 1);
        if pl.stage == 0 {
            held.push_str(", embedding");
        }
        if pl.stage + 1 == p.stages.len() {
            held.push_str(", LM head");
        }
        shown.push_str(&format!(
            "; shown: a GPU of stage {} of {} ({held}), {} micro-batches; n counts layer × micro-batch instances",
            pl.stage + 1,
            p.pp,
            pl.micro_batches
        ));
        lines.push(shown);
        lines.push(format!(
            "pipeline: step {} = this stage busy {} + waiting {}; GPUs idle {} of the time across stages",
            human::seconds(pl.step_s),
            human::seconds(pl.busy_s),
            human::seconds(pl.step_s - pl.busy_s),
            human::percent(pl.idle_fraction)
        ));
    } else {
        lines.push(shown);
    }
    let mut links: Vec<String> = [("TP", p.tp, &p.tp_link), ("EP", p.ep, &p.ep_link)]
        .iter()
        .filter_map(|(name, n, l)| l.as_ref().map(|l| format!("{name} {n} over {}", link_words(&l.link))))
        .collect();
    let sends: Vec<String> = p.stages.iter().filter_map(|s| s.send.as_ref()).map(|l| link_words(&l.link)).collect();
    if !sends.is_empty() {
        let mut uniq = sends.clone();
        uniq.dedup();
        links.push(format!("stage sends over {}", uniq.join(", ")));
    }
    if !links.is_empty() {
        let mut how = vec![format!(
            "time = link bytes ÷ ({:.0} % of the link) + {} + hops × per-hop latency",
            p.link_efficiency * 100.0,
            human::seconds(COLLECTIVE_BASE_LATENCY_S)
        )];
        if p.tp > 1 {
            how.push("a ring all-reduce sends 2·(N−1)/N of the message in 2·(N−1) hops".into());
        }
        if p.ep > 1 {
            how.push("an all-to-all receives the tokens bound for this group's experts from the N−1 others".into());
        }
        lines.push(format!("communication: {}; {}", links.join("; "), how.join("; ")));
    }
    if t.kv_head_replicas > 1 {
        lines.push(format!(
            "KV heads replicated: TP {} exceeds the KV heads, so each GPU holds one KV head and each is held by {} GPUs (K/V weights and cache per GPU are not divided further)",
            p.tp, t.kv_head_replicas
        ));
    }
    if p.tp > 1 && sc.model.layer_groups().any(|(l, _)| matches!(l.attention, Attention::Latent(_))) {
        lines.push("MLA: every TP GPU holds and reads the whole latent KV cache (it is shared by all heads)".into());
    }
    if let Some(i) = t.expert_imbalance {
        lines.push(format!(
            "EP {}: {} routed experts per group; the busiest group gets {} the mean expected load ({} routing)",
            p.ep,
            sc.model
                .layer_groups()
                .find_map(|(l, _)| match &l.mlp {
                    Mlp::Moe(m) => Some(m.experts / p.ep),
                    Mlp::Dense(_) | Mlp::Linear { .. } | Mlp::None => None,
                })
                .unwrap_or(0),
            human::ratio(i),
            sc.routing.describe()
        ));
    }
    let per_gpu = human::sig3(t.tokens_per_s_per_gpu);
    lines.push(if p.dp == 1 {
        format!(
            "deployment: {} GPUs, one replica; {} tok/s, {per_gpu} tok/s per GPU",
            t.gpus,
            human::sig3(t.tokens_per_s_per_replica)
        )
    } else {
        format!(
            "deployment: {} GPUs = {} replicas of {}; {} tok/s per replica, {per_gpu} tok/s per GPU, {} tok/s in all",
            t.gpus,
            p.dp,
            p.gpus_per_replica(),
            human::sig3(t.tokens_per_s_per_replica),
            human::sig3(t.tokens_per_s)
        )
    });
    lines
}
