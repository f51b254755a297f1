//! Operator kinds and the block each sits in: a leaf that every layer above can name without
//! importing the operator builder ([`crate::ops`]).

use serde::{Deserialize, Serialize};

/// Operator kinds, in the order they run.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Embedding,
    AttnHcPre,
    AttnNorm,
    AttnLinear,
    InProj,
    GateBProj,
    ShortConv,
    DeltaRule,
    SsmScan,
    GatedNorm,
    OutProj,
    QProj,
    KProj,
    VProj,
    QkvProj,
    QAProj,
    QANorm,
    QBProj,
    KvAProj,
    KvANorm,
    IndexerQProj,
    IndexerKProj,
    Compressor,
    QkNorm,
    Rope,
    KvWrite,
    Indexer,
    TopK,
    KvBProj,
    QAbsorb,
    Attention,
    AttnScores,
    Softmax,
    AttnValues,
    VUp,
    AttnGate,
    OProj,
    OAProj,
    OBProj,
    AttnResidual,
    AttnHcPost,
    MlpHcPre,
    MlpNorm,
    MlpLinear,
    Mlp,
    GateProj,
    UpProj,
    GateUpProj,
    Act,
    DownProj,
    Router,
    LatentDown,
    ExpertGate,
    ExpertUp,
    ExpertAct,
    ExpertDown,
    LatentUp,
    ExpertCombine,
    SharedGate,
    SharedUp,
    SharedAct,
    SharedDown,
    MlpResidual,
    Residual,
    MlpHcPost,
    HcHead,
    FinalNorm,
    LmHead,
    // Communication between GPUs of a parallel deployment (crate::parallel): link bytes, no
    // FLOPs or HBM bytes.
    AllReduceEmbedding,
    AllReduceAttn,
    AllReduceMlp,
    AllToAllDispatch,
    AllToAllCombine,
    AllGatherLogits,
    PpSend,
    PipelineWait,
    /// The engine's host work between GPU steps that the GPU waits for (scheduling, input
    /// preparation, sampling): time under no roof.
    #[serde(rename = "host")]
    HostStep,
}

impl OpKind {
    /// Every kind, in the enum's order (`ALL[k as usize] == k`).
    pub const ALL: [OpKind; 77] = [
        OpKind::Embedding,
        OpKind::AttnHcPre,
        OpKind::AttnNorm,
        OpKind::AttnLinear,
        OpKind::InProj,
        OpKind::GateBProj,
        OpKind::ShortConv,
        OpKind::DeltaRule,
        OpKind::SsmScan,
        OpKind::GatedNorm,
        OpKind::OutProj,
        OpKind::QProj,
        OpKind::KProj,
        OpKind::VProj,
        OpKind::QkvProj,
        OpKind::QAProj,
        OpKind::QANorm,
        OpKind::QBProj,
        OpKind::KvAProj,
        OpKind::KvANorm,
        OpKind::IndexerQProj,
        OpKind::IndexerKProj,
        OpKind::Compressor,
        OpKind::QkNorm,
        OpKind::Rope,
        OpKind::KvWrite,
        OpKind::Indexer,
        OpKind::TopK,
        OpKind::KvBProj,
        OpKind::QAbsorb,
        OpKind::Attention,
        OpKind::AttnScores,
        OpKind::Softmax,
        OpKind::AttnValues,
        OpKind::VUp,
        OpKind::AttnGate,
        OpKind::OProj,
        OpKind::OAProj,
        OpKind::OBProj,
        OpKind::AttnResidual,
        OpKind::AttnHcPost,
        OpKind::MlpHcPre,
        OpKind::MlpNorm,
        OpKind::MlpLinear,
        OpKind::Mlp,
        OpKind::GateProj,
        OpKind::UpProj,
        OpKind::GateUpProj,
        OpKind::Act,
        OpKind::DownProj,
        OpKind::Router,
        OpKind::LatentDown,
        OpKind::ExpertGate,
        OpKind::ExpertUp,
        OpKind::ExpertAct,
        OpKind::ExpertDown,
        OpKind::LatentUp,
        OpKind::ExpertCombine,
        OpKind::SharedGate,
        OpKind::SharedUp,
        OpKind::SharedAct,
        OpKind::SharedDown,
        OpKind::MlpResidual,
        OpKind::Residual,
        OpKind::MlpHcPost,
        OpKind::HcHead,
        OpKind::FinalNorm,
        OpKind::LmHead,
        OpKind::AllReduceEmbedding,
        OpKind::AllReduceAttn,
        OpKind::AllReduceMlp,
        OpKind::AllToAllDispatch,
        OpKind::AllToAllCombine,
        OpKind::AllGatherLogits,
        OpKind::PpSend,
        OpKind::PipelineWait,
        OpKind::HostStep,
    ];
}

/// Where an operator sits in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// Before the layer stack.
    Embedding,
    /// Attention half of a layer.
    Attention,
    /// Feed-forward half of a layer.
    Mlp,
    /// After the layer stack.
    Head,
}

impl std::str::FromStr for OpKind {
    type Err = crate::error::Error;
    /// The kind of a [`OpKind::name`] (`q_proj`), through serde's snake_case names (the same
    /// strings: a test checks both ways).
    fn from_str(s: &str) -> crate::error::Result<OpKind> {
        use serde::de::{value::StrDeserializer, IntoDeserializer};
        let d: StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
        OpKind::deserialize(d).map_err(|_| {
            crate::error::Error::invalid(
                "op",
                s,
                "an operator as the ledger's `op` column names it (q_proj, attention, gate_proj, …)",
            )
        })
    }
}

/// What an operator kind is, in one row per kind ([`OpKind::facts`]): every layer that treats
/// kinds alike (the cost builder's sharding, the clock's fusion rules, the zoom's children, the
/// dataflow drawing) reads these fields and matches on them exhaustively, so a new kind is one
/// row here and the compiler lists every other place it needs a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindFacts {
    /// snake_case name used in tables and JSON (`q_proj`).
    pub name: &'static str,
    /// Name inside its block, used in zoom paths (`layer.0.mlp.up`): the name without the block
    /// prefix and without `_proj`.
    pub short: &'static str,
    /// Where it sits in the model.
    pub block: Block,
    /// What kind of work it is.
    pub class: OpClass,
    /// How tensor, expert and sequence parallelism split it (`ops/shard.rs`).
    pub shard: Shard,
    /// The GEMM group an engine may merge it into (Q/K/V, gate/up), and whether it is the
    /// group's first member (the one the merged kernel's time is charged from).
    pub merged: Option<(MergeGroup, bool)>,
    /// What it is when an engine runs it inside the kernel before it ([`crate::clock`]).
    pub epilogue: Epilogue,
    /// What it reads, for the dataflow drawing.
    pub reads: Reads,
    /// The name of what it writes, where the dataflow drawing labels it (`score matrix`).
    pub writes: Option<&'static str>,
    /// One of the minor (elementwise or gather) operators that the reference calculator leaves out.
    pub minor: bool,
}

/// What kind of work an operator is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// Rows gathered from a table (the embedding).
    Gather,
    /// A matrix multiplication (dense, batched per head, or per expert).
    Gemm,
    /// Attention as one fused kernel (FlashAttention).
    FusedAttention,
    /// A GEMM-shaped half of unfused attention (QKᵀ or PV), materialising the score matrix.
    UnfusedAttention,
    /// Elementwise work (norms, activations, RoPE, residual adds, softmax, the KV append).
    Elementwise,
    /// A recurrent mixer's scan over its state: the chunked algorithm's small matmuls in
    /// prefill, the state's read, update and write-back in decode.
    Recurrence,
    /// A sparse-attention indexer scoring every cached position (or compressed entry) against
    /// each query.
    Scoring,
    /// A collective over the GPUs of a tensor- or expert-parallel group.
    Collective(Comm, CommGroup),
    /// A pipeline stage's send of its activations to the next stage.
    PipelineSend,
    /// A pipeline stage's wait for the others (its bubble).
    PipelineWait,
    /// The engine's host work between steps.
    Host,
}

/// A collective's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comm {
    /// Every GPU ends with the sum: ring volume `2(N−1)/N` of the message.
    AllReduce,
    /// Every GPU ends with every GPU's part: `(N−1)/N` of the gathered message.
    AllGather,
    /// Every GPU sends each other GPU its part: `(N−1)/N` of its send buffer.
    AllToAll,
}

/// The GPUs a collective runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommGroup {
    /// The tensor-parallel group.
    Tensor,
    /// The expert-parallel group.
    Expert,
}

/// How an operator is split across tensor-parallel GPUs (the table in `ops/shard.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shard {
    /// Output columns split: each GPU computes its share of them.
    Columns(Share),
    /// Input rows split (its output is a partial sum, all-reduced after).
    Rows,
    /// The MLA up-projection of the cached latent: the latent is read whole on every GPU, the
    /// output columns split.
    LatentColumns,
    /// Per-head batched GEMMs (MLA's absorbed Q and V): the heads split.
    HeadInstances,
    /// Elementwise over a tensor split by this share.
    Elements(Share),
    /// Attention: query heads split, KV heads by their share.
    AttentionHeads,
    /// An expert GEMM: experts over the expert-parallel group, each split by columns or rows.
    Experts(ExpertSplit),
    /// The experts' activation: the GPU's share of the token–expert assignments.
    ExpertAssignments,
    /// The embedding: its table rows split, each token's row gathered on one GPU.
    EmbeddingRows,
    /// Run whole on every GPU (norms, residual adds, the router, MLA's down-projections).
    Replicated,
}

/// The share of a dimension one tensor-parallel GPU holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// `1 / tp`.
    Tensor,
    /// Its KV heads' share (replicated when there are fewer KV heads than GPUs).
    KvHeads,
    /// Its share of the merged Q, K and V columns.
    Qkv,
    /// Its share of the vocabulary.
    Vocab,
    /// Its share of the Q and K elements (RoPE and the QK-norm).
    QkElements,
}

/// How an expert GEMM splits inside an expert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertSplit {
    /// Gate and up: output columns.
    Columns,
    /// Down: input rows.
    Rows,
}

/// A GEMM group an engine runs as one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeGroup {
    /// Q, K and V as one QKV GEMM.
    Qkv,
    /// Gate and up as one GEMM (dense, expert or shared expert).
    GateUp,
}

/// What an operator is when an engine fuses it into the kernel before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Epilogue {
    /// Not fused by any engine.
    None,
    /// An RMSNorm after a residual add.
    Norm,
    /// A residual add of this many tensors (two; three for a parallel layer's `x + attn + mlp`).
    Residual(u8),
    /// The gated activation (SiLU × gate) after the gate/up GEMM.
    Act,
    /// RoPE on Q and K after the projection.
    Rope,
    /// The KV-cache append after the projection.
    KvWrite,
}

/// What an operator reads, for the dataflow drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The residual stream (the norm at a block's start).
    Stream,
    /// The block's normalised input (the projections and the router).
    BlockInput,
    /// The tokens routed to the experts.
    Experts,
    /// The residual stream and the block's output (the residual add).
    Residual,
    /// The operator before it.
    Previous,
}

/// A kind's row with no merge group, epilogue or label.
#[allow(clippy::too_many_arguments)]
const fn row(
    name: &'static str,
    short: &'static str,
    block: Block,
    class: OpClass,
    shard: Shard,
    reads: Reads,
    minor: bool,
) -> KindFacts {
    KindFacts { name, short, block, class, shard, merged: None, epilogue: Epilogue::None, reads, writes: None, minor }
}

/// The row with the name of what it writes.
const fn writing(f: KindFacts, what: &'static str) -> KindFacts {
    KindFacts { writes: Some(what), ..f }
}

/// A GEMM's row.
const fn gemm(name: &'static str, short: &'static str, block: Block, shard: Shard, reads: Reads) -> KindFacts {
    row(name, short, block, OpClass::Gemm, shard, reads, false)
}

/// The row as a member of a merged GEMM group.
const fn merged(f: KindFacts, group: MergeGroup, first: bool) -> KindFacts {
    KindFacts { merged: Some((group, first)), ..f }
}

/// An elementwise operator's row (minor).
const fn elementwise(
    name: &'static str,
    short: &'static str,
    block: Block,
    shard: Shard,
    epilogue: Epilogue,
    reads: Reads,
) -> KindFacts {
    KindFacts { epilogue, ..row(name, short, block, OpClass::Elementwise, shard, reads, true) }
}

/// A communication (or host) row: replicated, reading the operator before it.
const fn comm(name: &'static str, short: &'static str, block: Block, class: OpClass) -> KindFacts {
    row(name, short, block, class, Shard::Replicated, Reads::Previous, false)
}

/// A collective over the tensor-parallel group.
const fn tp(c: Comm) -> OpClass {
    OpClass::Collective(c, CommGroup::Tensor)
}

/// A collective over the expert-parallel group.
const fn ep(c: Comm) -> OpClass {
    OpClass::Collective(c, CommGroup::Expert)
}

/// Every kind's row, indexed by the kind's discriminant: built at compile time, so
/// [`OpKind::facts`] is a load.
static FACTS: [KindFacts; OpKind::ALL.len()] = {
    let mut table = [OpKind::Embedding.row(); OpKind::ALL.len()];
    let mut i = 0;
    while i < table.len() {
        table[i] = OpKind::ALL[i].row();
        i += 1;
    }
    table
};

impl OpKind {
    /// The kind's row: every fact about it that other layers read (a load from a table built at
    /// compile time from one exhaustive match).
    pub fn facts(self) -> KindFacts {
        FACTS[self as usize]
    }

    /// The kind's row, as one exhaustive match (evaluated at compile time into [`FACTS`]).
    const fn row(self) -> KindFacts {
        use Block as B;
        use OpClass as C;
        use OpKind::*;
        use Reads as R;
        use Shard as S;
        match self {
            Embedding => row("embedding", "embedding", B::Embedding, C::Gather, S::EmbeddingRows, R::Previous, true),
            AttnHcPre => elementwise("attn_hc_pre", "hc_pre", B::Attention, S::Replicated, Epilogue::None, R::Stream),
            AttnNorm => elementwise("attn_norm", "norm", B::Attention, S::Replicated, Epilogue::Norm, R::Stream),
            AttnLinear => gemm("attn_linear", "linear", B::Attention, S::Rows, R::BlockInput),
            InProj => gemm("in_proj", "in", B::Attention, S::Columns(Share::Tensor), R::BlockInput),
            GateBProj => gemm("gate_b_proj", "gate_b", B::Attention, S::Columns(Share::Tensor), R::Previous),
            ShortConv => {
                elementwise("short_conv", "conv", B::Attention, S::Elements(Share::Tensor), Epilogue::None, R::Previous)
            }
            DeltaRule => writing(
                row(
                    "delta_rule",
                    "delta_rule",
                    B::Attention,
                    C::Recurrence,
                    S::Elements(Share::Tensor),
                    R::Previous,
                    false,
                ),
                "recurrent state",
            ),
            SsmScan => writing(
                row(
                    "ssm_scan",
                    "ssm_scan",
                    B::Attention,
                    C::Recurrence,
                    S::Elements(Share::Tensor),
                    R::Previous,
                    false,
                ),
                "recurrent state",
            ),
            GatedNorm => elementwise(
                "gated_norm",
                "gated_norm",
                B::Attention,
                S::Elements(Share::Tensor),
                Epilogue::None,
                R::Previous,
            ),
            OutProj => gemm("out_proj", "out", B::Attention, S::Rows, R::Previous),
            QProj => merged(
                gemm("q_proj", "q", B::Attention, S::Columns(Share::Tensor), R::BlockInput),
                MergeGroup::Qkv,
                true,
            ),
            KProj => merged(
                gemm("k_proj", "k", B::Attention, S::Columns(Share::KvHeads), R::BlockInput),
                MergeGroup::Qkv,
                false,
            ),
            VProj => merged(
                gemm("v_proj", "v", B::Attention, S::Columns(Share::KvHeads), R::BlockInput),
                MergeGroup::Qkv,
                false,
            ),
            QkvProj => gemm("qkv_proj", "qkv", B::Attention, S::Columns(Share::Qkv), R::BlockInput),
            QAProj => gemm("q_a_proj", "q_a", B::Attention, S::Replicated, R::BlockInput),
            QANorm => elementwise("q_a_norm", "q_a_norm", B::Attention, S::Replicated, Epilogue::None, R::Previous),
            QBProj => gemm("q_b_proj", "q_b", B::Attention, S::Columns(Share::Tensor), R::Previous),
            KvAProj => gemm("kv_a_proj", "kv_a", B::Attention, S::Replicated, R::BlockInput),
            KvANorm => elementwise("kv_a_norm", "kv_a_norm", B::Attention, S::Replicated, Epilogue::None, R::Previous),
            IndexerQProj => gemm("indexer_q_proj", "indexer_q", B::Attention, S::Replicated, R::Previous),
            IndexerKProj => gemm("indexer_k_proj", "indexer_k", B::Attention, S::Replicated, R::BlockInput),
            Compressor => gemm("compressor", "compressor", B::Attention, S::Replicated, R::BlockInput),
            QkNorm => elementwise(
                "qk_norm",
                "qk_norm",
                B::Attention,
                S::Elements(Share::QkElements),
                Epilogue::None,
                R::Previous,
            ),
            Rope => {
                elementwise("rope", "rope", B::Attention, S::Elements(Share::QkElements), Epilogue::Rope, R::Previous)
            }
            KvWrite => elementwise(
                "kv_write",
                "kv_write",
                B::Attention,
                S::Elements(Share::KvHeads),
                Epilogue::KvWrite,
                R::Previous,
            ),
            Indexer => writing(
                row("indexer", "indexer", B::Attention, C::Scoring, S::Replicated, R::Previous, false),
                "index scores",
            ),
            TopK => elementwise("top_k", "top_k", B::Attention, S::Replicated, Epilogue::None, R::Previous),
            KvBProj => gemm("kv_b_proj", "kv_b", B::Attention, S::LatentColumns, R::Previous),
            QAbsorb => gemm("q_absorb", "q_absorb", B::Attention, S::HeadInstances, R::Previous),
            Attention => {
                row("attention", "attention", B::Attention, C::FusedAttention, S::AttentionHeads, R::Previous, false)
            }
            AttnScores => writing(
                row("attn_scores", "scores", B::Attention, C::UnfusedAttention, S::AttentionHeads, R::Previous, false),
                "score matrix",
            ),
            Softmax => writing(
                elementwise("softmax", "softmax", B::Attention, S::AttentionHeads, Epilogue::None, R::Previous),
                "probabilities",
            ),
            AttnValues => {
                row("attn_values", "values", B::Attention, C::UnfusedAttention, S::AttentionHeads, R::Previous, false)
            }
            VUp => gemm("v_up", "v_up", B::Attention, S::HeadInstances, R::Previous),
            AttnGate => {
                elementwise("attn_gate", "gate", B::Attention, S::Elements(Share::Tensor), Epilogue::None, R::Previous)
            }
            OProj => gemm("o_proj", "o", B::Attention, S::Rows, R::Previous),
            OAProj => gemm("o_a_proj", "o_a", B::Attention, S::HeadInstances, R::Previous),
            OBProj => gemm("o_b_proj", "o_b", B::Attention, S::Rows, R::Previous),
            AttnResidual => writing(
                elementwise(
                    "attn_residual",
                    "residual",
                    B::Attention,
                    S::Replicated,
                    Epilogue::Residual(2),
                    R::Residual,
                ),
                "residual stream",
            ),
            AttnHcPost => writing(
                elementwise("attn_hc_post", "hc_post", B::Attention, S::Replicated, Epilogue::None, R::Residual),
                "residual streams",
            ),
            MlpHcPre => elementwise("mlp_hc_pre", "hc_pre", B::Mlp, S::Replicated, Epilogue::None, R::Stream),
            MlpNorm => elementwise("mlp_norm", "norm", B::Mlp, S::Replicated, Epilogue::Norm, R::Stream),
            MlpLinear => gemm("mlp_linear", "linear", B::Mlp, S::Rows, R::BlockInput),
            Mlp => gemm("mlp", "mlp", B::Mlp, S::Columns(Share::Tensor), R::BlockInput),
            GateProj => merged(
                gemm("gate_proj", "gate", B::Mlp, S::Columns(Share::Tensor), R::BlockInput),
                MergeGroup::GateUp,
                true,
            ),
            UpProj => merged(
                gemm("up_proj", "up", B::Mlp, S::Columns(Share::Tensor), R::BlockInput),
                MergeGroup::GateUp,
                false,
            ),
            GateUpProj => gemm("gate_up_proj", "gate_up", B::Mlp, S::Columns(Share::Tensor), R::BlockInput),
            Act => elementwise("act", "act", B::Mlp, S::Elements(Share::Tensor), Epilogue::Act, R::Previous),
            DownProj => gemm("down_proj", "down", B::Mlp, S::Rows, R::Previous),
            Router => gemm("router", "router", B::Mlp, S::Replicated, R::BlockInput),
            LatentDown => gemm("latent_down", "latent_down", B::Mlp, S::Replicated, R::BlockInput),
            ExpertGate => merged(
                gemm("expert_gate", "expert_gate", B::Mlp, S::Experts(ExpertSplit::Columns), R::Experts),
                MergeGroup::GateUp,
                true,
            ),
            ExpertUp => merged(
                gemm("expert_up", "expert_up", B::Mlp, S::Experts(ExpertSplit::Columns), R::Experts),
                MergeGroup::GateUp,
                false,
            ),
            ExpertAct => {
                elementwise("expert_act", "expert_act", B::Mlp, S::ExpertAssignments, Epilogue::Act, R::Previous)
            }
            ExpertDown => gemm("expert_down", "expert_down", B::Mlp, S::Experts(ExpertSplit::Rows), R::Previous),
            LatentUp => gemm("latent_up", "latent_up", B::Mlp, S::Replicated, R::Previous),
            ExpertCombine => {
                elementwise("expert_combine", "expert_combine", B::Mlp, S::Replicated, Epilogue::None, R::Previous)
            }
            SharedGate => merged(
                gemm("shared_gate", "shared_gate", B::Mlp, S::Columns(Share::Tensor), R::BlockInput),
                MergeGroup::GateUp,
                true,
            ),
            SharedUp => merged(
                gemm("shared_up", "shared_up", B::Mlp, S::Columns(Share::Tensor), R::BlockInput),
                MergeGroup::GateUp,
                false,
            ),
            SharedAct => {
                elementwise("shared_act", "shared_act", B::Mlp, S::Elements(Share::Tensor), Epilogue::Act, R::Previous)
            }
            SharedDown => gemm("shared_down", "shared_down", B::Mlp, S::Rows, R::Previous),
            MlpResidual => writing(
                elementwise("mlp_residual", "residual", B::Mlp, S::Replicated, Epilogue::Residual(2), R::Residual),
                "residual stream",
            ),
            Residual => writing(
                elementwise("residual", "residual", B::Mlp, S::Replicated, Epilogue::Residual(3), R::Residual),
                "residual stream",
            ),
            MlpHcPost => writing(
                elementwise("mlp_hc_post", "hc_post", B::Mlp, S::Replicated, Epilogue::None, R::Residual),
                "residual streams",
            ),
            HcHead => elementwise("hc_head", "hc_head", B::Head, S::Replicated, Epilogue::None, R::Previous),
            FinalNorm => elementwise("final_norm", "final_norm", B::Head, S::Replicated, Epilogue::Norm, R::Previous),
            LmHead => gemm("lm_head", "lm_head", B::Head, S::Columns(Share::Vocab), R::Previous),
            AllReduceEmbedding => comm("all_reduce_embedding", "all_reduce", B::Embedding, tp(Comm::AllReduce)),
            AllReduceAttn => comm("all_reduce_attn", "all_reduce", B::Attention, tp(Comm::AllReduce)),
            AllReduceMlp => comm("all_reduce_mlp", "all_reduce", B::Mlp, tp(Comm::AllReduce)),
            AllToAllDispatch => comm("all_to_all_dispatch", "dispatch", B::Mlp, ep(Comm::AllToAll)),
            AllToAllCombine => comm("all_to_all_combine", "combine", B::Mlp, ep(Comm::AllToAll)),
            AllGatherLogits => comm("all_gather_logits", "all_gather", B::Head, tp(Comm::AllGather)),
            // The pipeline's send and wait come after a stage's layers.
            PpSend => comm("pp_send", "send", B::Head, C::PipelineSend),
            PipelineWait => comm("pipeline_wait", "wait", B::Head, C::PipelineWait),
            HostStep => comm("host", "host", B::Head, C::Host),
        }
    }

    /// snake_case name used in tables and JSON (`q_proj`).
    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// Whether this is communication between GPUs (or the pipeline's wait), costed on a link
    /// rather than on the roofline ([`crate::parallel`]).
    pub fn is_comm(self) -> bool {
        match self.facts().class {
            OpClass::Collective(..) | OpClass::PipelineSend | OpClass::PipelineWait => true,
            OpClass::Gather
            | OpClass::Gemm
            | OpClass::FusedAttention
            | OpClass::UnfusedAttention
            | OpClass::Elementwise
            | OpClass::Recurrence
            | OpClass::Scoring
            | OpClass::Host => false,
        }
    }

    /// Short name inside its block, used in zoom paths (`layer.0.mlp.up`) ([`KindFacts::short`]).
    pub fn short(self) -> &'static str {
        self.facts().short
    }

    /// The block the operator belongs to.
    pub fn block(self) -> Block {
        self.facts().block
    }

    /// Whether this is one of the minor (elementwise or gather) operators that the reference calculator leaves out.
    pub fn is_minor(self) -> bool {
        self.facts().minor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::scenario;

    /// Every kind's name, in the enum's order.
    const ALL_NAMES: &[&str] = &[
        "embedding",
        "attn_hc_pre",
        "attn_norm",
        "attn_linear",
        "in_proj",
        "gate_b_proj",
        "short_conv",
        "delta_rule",
        "ssm_scan",
        "gated_norm",
        "out_proj",
        "q_proj",
        "k_proj",
        "v_proj",
        "qkv_proj",
        "q_a_proj",
        "q_a_norm",
        "q_b_proj",
        "kv_a_proj",
        "kv_a_norm",
        "indexer_q_proj",
        "indexer_k_proj",
        "compressor",
        "qk_norm",
        "rope",
        "kv_write",
        "indexer",
        "top_k",
        "kv_b_proj",
        "q_absorb",
        "attention",
        "attn_scores",
        "softmax",
        "attn_values",
        "v_up",
        "attn_gate",
        "o_proj",
        "o_a_proj",
        "o_b_proj",
        "attn_residual",
        "attn_hc_post",
        "mlp_hc_pre",
        "mlp_norm",
        "mlp_linear",
        "mlp",
        "gate_proj",
        "up_proj",
        "gate_up_proj",
        "act",
        "down_proj",
        "router",
        "latent_down",
        "expert_gate",
        "expert_up",
        "expert_act",
        "expert_down",
        "latent_up",
        "expert_combine",
        "shared_gate",
        "shared_up",
        "shared_act",
        "shared_down",
        "mlp_residual",
        "residual",
        "mlp_hc_post",
        "hc_head",
        "final_norm",
        "lm_head",
        "all_reduce_embedding",
        "all_reduce_attn",
        "all_reduce_mlp",
        "all_to_all_dispatch",
        "all_to_all_combine",
        "all_gather_logits",
        "pp_send",
        "pipeline_wait",
        "host",
    ];

    #[test]
    fn every_kinds_row_agrees_with_itself() {
        let kinds: Vec<OpKind> = ALL_NAMES.iter().map(|n| n.parse().unwrap()).collect();
        // The list is every kind: one per discriminant, in order.
        assert_eq!(kinds.len(), OpKind::HostStep as usize + 1);
        assert_eq!(kinds, OpKind::ALL, "OpKind::ALL is every kind in the enum's order");
        for (i, &k) in kinds.iter().enumerate() {
            assert_eq!(k as usize, i, "{}", k.name());
            assert_eq!(k.facts(), k.row(), "the compile-time table is the match");
            let f = k.facts();
            assert_eq!(f.name, ALL_NAMES[i]);
            let gemm = f.class == OpClass::Gemm;
            let elementwise = f.class == OpClass::Elementwise;
            // Only GEMMs merge, are split by columns, rows, heads or experts, or read the block's input.
            if f.merged.is_some()
                || matches!(
                    f.shard,
                    Shard::Columns(_) | Shard::Rows | Shard::LatentColumns | Shard::HeadInstances | Shard::Experts(_)
                )
                || matches!(f.reads, Reads::BlockInput | Reads::Experts)
            {
                assert!(gemm, "{}: {f:?}", f.name);
            }
            // Only elementwise work runs as another kernel's epilogue; it, and the gather, are minor.
            assert!(f.epilogue == Epilogue::None || elementwise, "{}", f.name);
            assert_eq!(f.minor, elementwise || f.class == OpClass::Gather, "{}", f.name);
            // Communication and the host run whole, read the operator before them and come after
            // a block's work.
            if k.is_comm() || f.class == OpClass::Host {
                assert_eq!((f.shard, f.reads, f.merged, f.minor), (Shard::Replicated, Reads::Previous, None, false));
            }
            // A merged group has exactly one first member per block.
            if let Some((group, true)) = f.merged {
                let firsts = kinds.iter().filter(|o| o.facts().merged == Some((group, true)) && o.block() == f.block);
                assert!(firsts.count() >= 1);
            }
        }
        // Names are unique; short names are unique inside a block, but for the collectives and
        // the norms and residual adds, which a block has one of.
        for (i, a) in kinds.iter().enumerate() {
            for b in &kinds[i + 1..] {
                assert_ne!(a.name(), b.name());
                if a.block() == b.block() && a.short() == b.short() {
                    assert!(
                        a.is_comm() || a.facts().epilogue != Epilogue::None || a.short() == "residual",
                        "{}",
                        a.name()
                    );
                }
            }
        }
    }

    #[test]
    fn every_ledger_row_name_parses_back_to_its_kind() {
        // Dense GQA, MLA + MoE and a TP layout (collectives): every kind their ledgers show.
        for pairs in [
            vec![("model", "llama-3-8b")],
            vec![("model", "deepseek-v3"), ("gpu", "h200"), ("tp", "8")],
            vec![("model", "mixtral-8x7b"), ("tp", "2"), ("flash", "off"), ("phase", "prefill")],
            // An engine that schedules between steps: the host's row.
            vec![("model", "llama-3-8b"), ("engine", "vllm@0.6")],
        ] {
            for row in crate::ledger::Ledger::build(&scenario(&pairs)).rows {
                assert_eq!(row.op.name().parse::<OpKind>().unwrap(), row.op);
            }
        }
        let e = "qproj".parse::<OpKind>().unwrap_err();
        assert_eq!(e.field(), Some("op"));
    }
}
