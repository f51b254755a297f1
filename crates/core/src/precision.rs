//! Number formats: how many bytes an element occupies in HBM, and which tensor-core peak a GEMM
//! runs at.
//!
//! Storage sizes (bytes per element, scales included where the format has them):
//!
//! | name | bytes | note |
//! |---|---|---|
//! | `fp32` | 4 | |
//! | `bf16`, `fp16` | 2 | |
//! | `fp8` (e4m3), `int8` | 1 | per-tensor/per-channel scales ignored |
//! | `int4`, `fp4` | 0.5 | scales ignored, as in the reference calculator's W4A16 ledger |
//! | `int4-gN` | 0.5 + 4/N | one fp16 scale and one fp16 zero point per group of N (GPTQ/AWQ; 4.25 bits at N = 128) |
//! | `fp8-bN` | 1 + 4/N² | one fp32 scale per N×N block (DeepSeek-V3 style; 1.00024 B at N = 128) |
//! | `mxfp4` | 17/32 | 32 fp4 values share one E8M0 scale byte (OCP MX; 4.25 bits) |
//! | `nvfp4` | 9/16 | 16 fp4 values share one fp8 scale byte (4.5 bits; per-tensor fp32 scale ignored) |
//! | `<b>bit` | b/8 | a checkpoint's measured storage, scales included (a GGUF quant type's block layout, e.g. `4.5bit` for Q4_K; or a class's mix of types); b in (0, 32], kept to 1/65536 bit |
//!
//! Source: `shared/research/architectures.md` §14 (quantization_config table).

use crate::error::{Error, Result};
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Storage format of a tensor in HBM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE single precision, 4 bytes.
    Fp32,
    /// bfloat16, 2 bytes.
    Bf16,
    /// IEEE half precision, 2 bytes.
    Fp16,
    /// 8-bit float (e4m3), 1 byte; scales ignored.
    Fp8,
    /// 8-bit float with one fp32 scale per `block`×`block` tile.
    Fp8Block {
        /// Edge of the square scaling block (128 for DeepSeek-V3).
        block: u32,
    },
    /// 8-bit integer, 1 byte; scales ignored.
    Int8,
    /// 4-bit integer, 0.5 byte; scales ignored (the reference calculator's W4A16 convention).
    Int4,
    /// 4-bit integer with an fp16 scale and an fp16 zero point per `group` values.
    Int4Group {
        /// Group size along the input dimension (typically 128).
        group: u32,
    },
    /// 4-bit float (e2m1), 0.5 byte; scales ignored.
    Fp4,
    /// OCP microscaling fp4: 32 values + one E8M0 scale byte.
    MxFp4,
    /// NVIDIA fp4: 16 values + one fp8 scale byte.
    NvFp4,
    /// A measured storage width, scales included (GGUF block layouts, a class's mix of quant
    /// types): `bits_x65536 / 65536` bits per element, in (0, 32] bits. Quantised: kernels
    /// dequantise it, as for int4.
    Bits {
        /// Bits per element × 65536.
        bits_x65536: u32,
    },
}

/// Largest [`Precision::Bits`] width, bits.
pub const MAX_PACKED_BITS: f64 = 32.0;

/// The arithmetic a kernel runs in, which selects the GPU peak it is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MathFormat {
    /// Non-tensor (CUDA-core / vector) fp32: elementwise and reduction operators.
    Vector,
    /// Tensor-core fp32 inputs (TF32 is not assumed; full fp32 uses the vector rate).
    Fp32,
    /// Tensor-core bf16.
    Bf16,
    /// Tensor-core fp16.
    Fp16,
    /// Tensor-core fp8.
    Fp8,
    /// Tensor-core int8.
    Int8,
    /// Tensor-core fp4.
    Fp4,
}

impl MathFormat {
    /// Lower-case name used in tables, JSON and the GPU file (`bf16`, `fp8`, …).
    pub fn name(self) -> &'static str {
        match self {
            MathFormat::Vector => "vector",
            MathFormat::Fp32 => "fp32",
            MathFormat::Bf16 => "bf16",
            MathFormat::Fp16 => "fp16",
            MathFormat::Fp8 => "fp8",
            MathFormat::Int8 => "int8",
            MathFormat::Fp4 => "fp4",
        }
    }

    /// Width of the operands in bits.
    pub fn bits(self) -> u32 {
        match self {
            MathFormat::Vector | MathFormat::Fp32 => 32,
            MathFormat::Bf16 | MathFormat::Fp16 => 16,
            MathFormat::Fp8 | MathFormat::Int8 => 8,
            MathFormat::Fp4 => 4,
        }
    }

    /// The format a kernel falls back to when the GPU has no peak for `self`: fp4 → fp8 → bf16,
    /// int8 → bf16 (weights are dequantised inside the kernel, as Marlin-style kernels do).
    pub fn fallback(self) -> Option<MathFormat> {
        match self {
            MathFormat::Fp4 => Some(MathFormat::Fp8),
            MathFormat::Fp8 | MathFormat::Int8 => Some(MathFormat::Bf16),
            MathFormat::Fp16 => Some(MathFormat::Bf16),
            MathFormat::Bf16 => Some(MathFormat::Fp16),
            MathFormat::Fp32 => Some(MathFormat::Vector),
            MathFormat::Vector => None,
        }
    }
}

impl fmt::Display for MathFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Names accepted by [`Precision::from_str`], for error messages and help text.
pub const PRECISION_NAMES: &[&str] =
    &["fp32", "bf16", "fp16", "fp8", "fp8-b128", "int8", "int4", "int4-g128", "fp4", "mxfp4", "nvfp4"];

impl Precision {
    /// Bytes one element occupies in HBM, scales included (see the module table).
    pub fn bytes(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Fp8Block { block } => 1.0 + 4.0 / (f64::from(block) * f64::from(block)),
            Precision::Int4 | Precision::Fp4 => 0.5,
            Precision::Int4Group { group } => 0.5 + 4.0 / f64::from(group),
            Precision::MxFp4 => 17.0 / 32.0,
            Precision::NvFp4 => 9.0 / 16.0,
            Precision::Bits { bits_x65536 } => f64::from(bits_x65536) / 65536.0 / 8.0,
        }
    }

    /// The math format of a tensor-core operation whose operands are both in this format.
    pub fn native_math(self) -> MathFormat {
        match self {
            Precision::Fp32 => MathFormat::Fp32,
            Precision::Bf16 => MathFormat::Bf16,
            Precision::Fp16 => MathFormat::Fp16,
            Precision::Fp8 | Precision::Fp8Block { .. } => MathFormat::Fp8,
            Precision::Int8 => MathFormat::Int8,
            // Integer 4-bit has no tensor-core path on current GPUs; kernels dequantise.
            Precision::Int4 | Precision::Int4Group { .. } | Precision::Bits { .. } => MathFormat::Int8,
            Precision::Fp4 | Precision::MxFp4 | Precision::NvFp4 => MathFormat::Fp4,
        }
    }

    /// Whether this is a plain (unquantised) floating-point format of 16 bits or more.
    pub fn is_wide_float(self) -> bool {
        matches!(self, Precision::Fp32 | Precision::Bf16 | Precision::Fp16)
    }

    /// Storage of small parameters (norm scales, biases, routers) that checkpoints keep
    /// unquantised: the same format when it is a wide float, otherwise bf16.
    pub fn unquantised(self) -> Precision {
        if self.is_wide_float() {
            self
        } else {
            Precision::Bf16
        }
    }

    /// Canonical lower-case name (`bf16`, `int4-g128`, …); parses back with `from_str`.
    pub fn name(self) -> String {
        match self {
            Precision::Fp32 => "fp32".into(),
            Precision::Bf16 => "bf16".into(),
            Precision::Fp16 => "fp16".into(),
            Precision::Fp8 => "fp8".into(),
            Precision::Fp8Block { block } => format!("fp8-b{block}"),
            Precision::Int8 => "int8".into(),
            Precision::Int4 => "int4".into(),
            Precision::Int4Group { group } => format!("int4-g{group}"),
            Precision::Fp4 => "fp4".into(),
            Precision::MxFp4 => "mxfp4".into(),
            Precision::NvFp4 => "nvfp4".into(),
            Precision::Bits { bits_x65536 } => format!("{}bit", f64::from(bits_x65536) / 65536.0),
        }
    }

    /// A measured width of `bits` per element, to 1/65536 bit; `None` outside (0, 32].
    pub fn from_bits(bits: f64) -> Option<Precision> {
        let x = (bits * 65536.0).round();
        (bits.is_finite() && x >= 1.0 && bits <= MAX_PACKED_BITS).then_some(Precision::Bits { bits_x65536: x as u32 })
    }

    /// Parse a precision for the named input field (used in messages).
    pub fn parse_field(field: &str, s: &str) -> Result<Precision> {
        s.parse::<Precision>().map_err(|_| Error::unknown_for(field, "precision", s, PRECISION_NAMES))
    }
}

/// Group sizes accepted by `int4-gN` and block sizes by `fp8-bN`: 16 ..= 4096, a power of two.
fn parse_group(s: &str) -> Option<u32> {
    let g: u32 = s.parse().ok()?;
    (g.is_power_of_two() && (16..=4096).contains(&g)).then_some(g)
}

impl FromStr for Precision {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let p = match lower.as_str() {
            "fp32" | "float32" | "f32" => Precision::Fp32,
            "bf16" | "bfloat16" => Precision::Bf16,
            "fp16" | "float16" | "f16" | "half" => Precision::Fp16,
            "fp8" | "e4m3" | "fp8-e4m3" | "float8_e4m3fn" => Precision::Fp8,
            "int8" | "i8" => Precision::Int8,
            "int4" | "i4" => Precision::Int4,
            "fp4" | "e2m1" => Precision::Fp4,
            "mxfp4" => Precision::MxFp4,
            "nvfp4" => Precision::NvFp4,
            other => {
                if let Some(g) = other.strip_prefix("int4-g").and_then(parse_group) {
                    Precision::Int4Group { group: g }
                } else if let Some(b) = other.strip_prefix("fp8-b").and_then(parse_group) {
                    Precision::Fp8Block { block: b }
                } else if let Some(p) =
                    other.strip_suffix("bit").and_then(|b| b.parse::<f64>().ok()).and_then(Precision::from_bits)
                {
                    p
                } else {
                    return Err(Error::unknown("precision", s, PRECISION_NAMES));
                }
            }
        };
        Ok(p)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Precision {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// The math format a GEMM runs in, before checking what the GPU supports.
///
/// Rule (what common kernels do): weight-only quantisation (weights narrower than activations)
/// dequantises the weights to the activation format inside the kernel, so W4A16 and W8A16 run at
/// the 16-bit peak; when weights and activations are both 8-bit (W8A8 fp8 or int8) the kernel
/// runs at that 8-bit peak; when both are fp4 (W4A4 nvfp4/mxfp4) at the fp4 peak. If the weights
/// are wider than the activations the wider format wins.
pub fn gemm_math(weights: Precision, activations: Precision) -> MathFormat {
    let w = weights.native_math();
    let a = activations.native_math();
    // Int4 weights report Int8 as native math; they never pair with int8 activations at 4 bits.
    if matches!(weights, Precision::Int4 | Precision::Int4Group { .. }) {
        return a;
    }
    if w.bits() > a.bits() {
        w
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_bytes_match_the_published_bit_widths() {
        assert_eq!(Precision::Bf16.bytes(), 2.0);
        assert_eq!(Precision::Int4.bytes(), 0.5);
        // int4-g128: 4 bits + (16 + 16) bits per 128 values = 4.25 bits = 0.53125 bytes.
        assert_eq!(Precision::Int4Group { group: 128 }.bytes(), 4.25 / 8.0);
        // mxfp4: (32 * 4 + 8) bits / 32 values = 4.25 bits.
        assert_eq!(Precision::MxFp4.bytes(), 4.25 / 8.0);
        // nvfp4: (16 * 4 + 8) / 16 = 4.5 bits.
        assert_eq!(Precision::NvFp4.bytes(), 4.5 / 8.0);
        // fp8 with 128x128 fp32 block scales: 1 + 4 / 16384 bytes (+0.024 %).
        assert_eq!(Precision::Fp8Block { block: 128 }.bytes(), 1.000244140625);
    }

    #[test]
    fn names_round_trip() {
        for name in PRECISION_NAMES {
            let p: Precision = name.parse().unwrap();
            assert_eq!(&p.name(), name);
        }
        assert_eq!("BFloat16".parse::<Precision>().unwrap(), Precision::Bf16);
        for bits in [4.5, 6.5625, 0.5, 32.0] {
            let p = Precision::from_bits(bits).unwrap();
            assert_eq!(p.name().parse::<Precision>().unwrap(), p);
            assert_eq!(p.bytes(), bits / 8.0);
        }
        for bad in ["0bit", "33bit", "nanbit", "-4bit"] {
            assert!(bad.parse::<Precision>().is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_precision_lists_the_accepted_names() {
        let e = "int3".parse::<Precision>().unwrap_err().to_string();
        assert!(e.contains("unknown precision `int3`"), "{e}");
        assert!(e.contains("bf16") && e.contains("int4-g128"), "{e}");
        assert!("int4-g100".parse::<Precision>().is_err());
        assert!("int4-g0".parse::<Precision>().is_err());
    }

    #[test]
    fn weight_only_quantisation_runs_at_the_activation_peak() {
        use Precision::*;
        assert_eq!(gemm_math(Int4, Bf16), MathFormat::Bf16);
        assert_eq!(gemm_math(Int4Group { group: 128 }, Fp16), MathFormat::Fp16);
        assert_eq!(gemm_math(Int8, Bf16), MathFormat::Bf16);
        assert_eq!(gemm_math(Fp8, Bf16), MathFormat::Bf16);
        assert_eq!(gemm_math(Fp8, Fp8), MathFormat::Fp8);
        assert_eq!(gemm_math(Int8, Int8), MathFormat::Int8);
        assert_eq!(gemm_math(NvFp4, NvFp4), MathFormat::Fp4);
        assert_eq!(gemm_math(Bf16, Bf16), MathFormat::Bf16);
        assert_eq!(gemm_math(Fp32, Bf16), MathFormat::Fp32);
    }
}
