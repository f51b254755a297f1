//! Operator kinds and the block each sits in: a leaf that every layer above can name without
//! importing the operator builder ([`crate::ops`]).

use serde::{Deserialize, Serialize};

/// Operator kinds, in the order they run.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Embedding,
    AttnNorm,
    QProj,
    KProj,
    VProj,
    QkvProj,
    QAProj,
    QANorm,
    QBProj,
    KvAProj,
    KvANorm,
    QkNorm,
    Rope,
    KvWrite,
    KvBProj,
    QAbsorb,
    Attention,
    AttnScores,
    Softmax,
    AttnValues,
    VUp,
    OProj,
    AttnResidual,
    MlpNorm,
    Mlp,
    GateProj,
    UpProj,
    GateUpProj,
    Act,
    DownProj,
    Router,
    ExpertGate,
    ExpertUp,
    ExpertAct,
    ExpertDown,
    ExpertCombine,
    SharedGate,
    SharedUp,
    SharedAct,
    SharedDown,
    MlpResidual,
    Residual,
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
    HostStep,
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

impl OpKind {
    /// snake_case name used in tables and JSON (`q_proj`).
    pub fn name(self) -> &'static str {
        use OpKind::*;
        match self {
            Embedding => "embedding",
            AttnNorm => "attn_norm",
            QProj => "q_proj",
            KProj => "k_proj",
            VProj => "v_proj",
            QkvProj => "qkv_proj",
            QAProj => "q_a_proj",
            QANorm => "q_a_norm",
            QBProj => "q_b_proj",
            KvAProj => "kv_a_proj",
            KvANorm => "kv_a_norm",
            QkNorm => "qk_norm",
            Rope => "rope",
            KvWrite => "kv_write",
            KvBProj => "kv_b_proj",
            QAbsorb => "q_absorb",
            Attention => "attention",
            AttnScores => "attn_scores",
            Softmax => "softmax",
            AttnValues => "attn_values",
            VUp => "v_up",
            OProj => "o_proj",
            AttnResidual => "attn_residual",
            MlpNorm => "mlp_norm",
            Mlp => "mlp",
            GateProj => "gate_proj",
            UpProj => "up_proj",
            GateUpProj => "gate_up_proj",
            Act => "act",
            DownProj => "down_proj",
            Router => "router",
            ExpertGate => "expert_gate",
            ExpertUp => "expert_up",
            ExpertAct => "expert_act",
            ExpertDown => "expert_down",
            ExpertCombine => "expert_combine",
            SharedGate => "shared_gate",
            SharedUp => "shared_up",
            SharedAct => "shared_act",
            SharedDown => "shared_down",
            MlpResidual => "mlp_residual",
            Residual => "residual",
            FinalNorm => "final_norm",
            LmHead => "lm_head",
            AllReduceEmbedding => "all_reduce_embedding",
            AllReduceAttn => "all_reduce_attn",
            AllReduceMlp => "all_reduce_mlp",
            AllToAllDispatch => "all_to_all_dispatch",
            AllToAllCombine => "all_to_all_combine",
            AllGatherLogits => "all_gather_logits",
            PpSend => "pp_send",
            PipelineWait => "pipeline_wait",
            HostStep => "host",
        }
    }

    /// Whether this is communication between GPUs (or the pipeline's wait), costed on a link
    /// rather than on the roofline ([`crate::parallel`]).
    pub fn is_comm(self) -> bool {
        use OpKind::*;
        matches!(
            self,
            AllReduceEmbedding
                | AllReduceAttn
                | AllReduceMlp
                | AllToAllDispatch
                | AllToAllCombine
                | AllGatherLogits
                | PpSend
                | PipelineWait
        )
    }

    /// Short name inside its block, used in zoom paths (`layer.0.mlp.up`): the name without the
    /// block prefix and without `_proj`.
    pub fn short(self) -> &'static str {
        use OpKind::*;
        match self {
            AttnNorm | MlpNorm => "norm",
            AttnResidual | MlpResidual => "residual",
            QProj => "q",
            KProj => "k",
            VProj => "v",
            QkvProj => "qkv",
            QAProj => "q_a",
            QBProj => "q_b",
            KvAProj => "kv_a",
            KvBProj => "kv_b",
            OProj => "o",
            GateProj => "gate",
            UpProj => "up",
            GateUpProj => "gate_up",
            DownProj => "down",
            AttnScores => "scores",
            AttnValues => "values",
            AllReduceEmbedding | AllReduceAttn | AllReduceMlp => "all_reduce",
            AllToAllDispatch => "dispatch",
            AllToAllCombine => "combine",
            AllGatherLogits => "all_gather",
            PpSend => "send",
            PipelineWait => "wait",
            other => other.name(),
        }
    }

    /// The block the operator belongs to.
    pub fn block(self) -> Block {
        use OpKind::*;
        match self {
            Embedding | AllReduceEmbedding => Block::Embedding,
            // The pipeline's send and wait come after a stage's layers.
            FinalNorm | LmHead | AllGatherLogits | PpSend | PipelineWait | HostStep => Block::Head,
            AttnNorm | QProj | KProj | VProj | QkvProj | QAProj | QANorm | QBProj | KvAProj | KvANorm | QkNorm
            | Rope | KvWrite | KvBProj | QAbsorb | Attention | AttnScores | Softmax | AttnValues | VUp | OProj
            | AttnResidual | AllReduceAttn => Block::Attention,
            _ => Block::Mlp,
        }
    }

    /// Whether this is one of the minor (elementwise or gather) operators that the reference calculator leaves out.
    pub fn is_minor(self) -> bool {
        use OpKind::*;
        matches!(
            self,
            Embedding
                | AttnNorm
                | QANorm
                | KvANorm
                | QkNorm
                | Rope
                | KvWrite
                | Softmax
                | AttnResidual
                | MlpNorm
                | Act
                | ExpertAct
                | ExpertCombine
                | SharedAct
                | MlpResidual
                | Residual
                | FinalNorm
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::scenario;

    #[test]
    fn every_ledger_row_name_parses_back_to_its_kind() {
        // Dense GQA, MLA + MoE and a TP layout (collectives): every kind their ledgers show.
        for pairs in [
            vec![("model", "llama-3-8b")],
            vec![("model", "deepseek-v3"), ("gpu", "h200"), ("tp", "8")],
            vec![("model", "mixtral-8x7b"), ("tp", "2"), ("flash", "off"), ("phase", "prefill")],
        ] {
            for row in crate::ledger::Ledger::build(&scenario(&pairs)).rows {
                assert_eq!(row.op.name().parse::<OpKind>().unwrap(), row.op);
            }
        }
        let e = "qproj".parse::<OpKind>().unwrap_err();
        assert_eq!(e.field(), Some("op"));
    }
}
