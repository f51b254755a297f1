//! Human-readable numbers for tables: SI prefixes, decimal bytes (GB = 10⁹ B, as vendors and the
//! seed print them), whole numbers with thousands separators, dollars, ratios and bit widths. The
//! one number formatter of every table, title and footer of the CLI, and of the explorer's pages.
//! JSON and CSV never use these; they carry plain SI numbers.

use std::fmt::Write;

use llm_ledger_core::error::grouped;

/// `value` with an SI prefix and `unit`, 3 significant figures (`1.61 GFLOP`, `812 kB`).
pub fn si(value: f64, unit: &str) -> String {
    let mut out = String::with_capacity(12 + unit.len());
    if !value.is_finite() {
        let _ = write!(out, "{value} {unit}");
        return out;
    }
    if value == 0.0 {
        out.push_str("0 ");
        out.push_str(unit);
        return out;
    }
    const PREFIXES: [(f64, &str); 7] =
        [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    let a = value.abs();
    let (scale, p) = PREFIXES.iter().copied().find(|(s, _)| a >= *s * 0.9995).unwrap_or((1.0, ""));
    push_sig3(&mut out, value / scale);
    out.push(' ');
    out.push_str(p);
    out.push_str(unit);
    out
}

/// Three significant figures without exponent (`1.61`, `16.1`, `161`, `0.0123`); from 1,000 the
/// whole number with thousands separators (`5,328`), as [`count`] writes counts; from 10¹² up and
/// below 10⁻⁶ in scientific form (`1.00e300`, `4.20e-9`), never hundreds of digits.
pub fn sig3(v: f64) -> String {
    let mut out = String::with_capacity(12);
    push_sig3(&mut out, v);
    out
}

/// [`sig3`] appended to `out`.
fn push_sig3(out: &mut String, v: f64) {
    let a = v.abs();
    if a == 0.0 {
        out.push('0');
    } else if !v.is_finite() {
        let _ = write!(out, "{v}");
    } else if !(1e-6..1e12).contains(&a) {
        let _ = write!(out, "{v:.2e}");
    } else if a >= 999.5 {
        // Rounded as `{:.0}` rounds (half to even), then grouped.
        if v < 0.0 {
            out.push('-');
        }
        out.push_str(&count(a.round_ties_even() as u64));
    } else if a >= 99.95 {
        push_fixed(out, v, 0);
    } else if a >= 9.995 {
        push_fixed(out, v, 1);
    } else if a >= 0.9995 {
        push_fixed(out, v, 2);
    } else {
        let digits = (-a.log10().floor()) as usize + 2;
        push_fixed(out, v, digits);
    }
}

/// `v` with `decimals` digits after the point, exactly as `format!("{v:.decimals$}")` writes it
/// (the exact binary value rounded half to even), appended to `out`.
///
/// The digits are those of the whole number `round(|v| × 10^decimals)` when that product is
/// below 10⁹ and more than 10⁻⁶ from a tie: its rounding error (at most 10⁹ × 2⁻⁵³ ≈ 1.1 × 10⁻⁷)
/// cannot then change which whole number is nearest. Anything else goes to `std`'s formatter.
fn push_fixed(out: &mut String, v: f64, decimals: usize) {
    const POW10: [f64; 12] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11];
    let x = v.abs() * POW10.get(decimals).copied().unwrap_or(f64::INFINITY);
    let whole = if decimals == 0 {
        // No product, no rounding error: ties are the value's own, rounded half to even.
        (x < 9.0e15).then(|| x.round_ties_even())
    } else {
        (x < 1e9 && (x - x.floor() - 0.5).abs() > 1e-6).then(|| x.round())
    };
    let Some(whole) = whole else {
        let _ = write!(out, "{v:.decimals$}");
        return;
    };
    // The whole number's digits, at least `decimals + 1` of them (`0.05`, not `.05`).
    let mut digits = [b'0'; 32];
    let mut n = whole as u64;
    let mut len = 0;
    while n > 0 || len <= decimals {
        digits[digits.len() - 1 - len] = b'0' + (n % 10) as u8;
        n /= 10;
        len += 1;
    }
    let digits = &digits[digits.len() - len..];
    if v.is_sign_negative() {
        out.push('-');
    }
    let (int, frac) = digits.split_at(len - decimals);
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(int).unwrap_or_default());
    if decimals > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(frac).unwrap_or_default());
    }
}

/// A quantity that is often whole (a batch where the memory runs out, a mean batch): a whole
/// number as a count (`235`, `1,024`), anything else to three significant figures (`55.9`).
pub fn quantity(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", count(v.abs() as u64))
    } else {
        sig3(v)
    }
}

/// FLOPs (`16.1 GFLOP`).
pub fn flops(v: f64) -> String {
    si(v, "FLOP")
}

/// Bytes, decimal (`15.3 GB`).
pub fn bytes(v: f64) -> String {
    si(v, "B")
}

/// Rates (`3.35 TB/s`, `989 TFLOP/s`).
pub fn rate(v: f64, unit: &str) -> String {
    si(v, &format!("{unit}/s"))
}

/// Seconds as ns/µs/ms/s (`5.78 ms`).
pub fn seconds(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        return format!("{v} s");
    } else if a == 0.0 {
        return "0 s".into();
    }
    let (scaled, unit) = if a < 0.9995e-6 {
        (v * 1e9, " ns")
    } else if a < 0.9995e-3 {
        (v * 1e6, " µs")
    } else if a < 0.9995 {
        (v * 1e3, " ms")
    } else {
        (v, " s")
    };
    let mut out = String::with_capacity(12);
    push_sig3(&mut out, scaled);
    out.push_str(unit);
    out
}

/// Arithmetic intensity (`4.0`, `295`, `6,931`), or `—` when nothing moves through HBM (a fused operator whose
/// inputs stay on chip, a collective, a wait: FLOPs per byte is not a number there, 0 ÷ 0 or an
/// operator's FLOPs charged to the kernel it joins).
pub fn intensity(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if v >= 100.0 => sig3(v),
        Some(v) => format!("{v:.1}"),
    }
}

/// A fraction as a percentage (`37.2 %`).
pub fn percent(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// Dollars for tables: whole dollars with thousands separators from $100 (`$1,234`), cents from
/// a dollar (`$5.46`), and three significant figures below (`$0.406`, `$0.0170`, `$0.000138`):
/// never scientific notation. The one dollar format of every report.
pub fn usd(v: f64) -> String {
    if !v.is_finite() {
        format!("${v}")
    } else if v >= 99.5 {
        format!("${}", sig3(v))
    } else if v >= 0.995 {
        format!("${v:.2}")
    } else if v <= 0.0 {
        "$0".into()
    } else {
        format!("${}", sig3(v))
    }
}

/// A count and its noun, plural unless it is one: `1 tile`, `32 tile rows`.
pub fn plural(n: u64, what: &str) -> String {
    format!("{} {what}{}", count(n), if n == 1 { "" } else { "s" })
}

/// A ratio of two like quantities, with its `×` after it: two decimals below 10 (`1.15×`,
/// `0.66×`), three significant figures from 10 (`16.0×`, `123×`).
pub fn ratio(v: f64) -> String {
    if v.abs() < 9.995 {
        format!("{v:.2}×")
    } else {
        format!("{}×", sig3(v))
    }
}

/// A width in bits per value as a precision names it (`4.84bit` for a GGUF class of 4.84375
/// bits): at most two decimals, trailing zeros dropped (`4.5bit`, `16bit`).
pub fn bits(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}bit")
}

/// A storage precision's name for a title: its canonical name, a measured width rounded ([`bits`]).
pub fn precision(p: llm_ledger_core::Precision) -> String {
    match p {
        llm_ledger_core::Precision::Bits { bits_x65536 } => bits(f64::from(bits_x65536) / 65536.0),
        other => other.name(),
    }
}

/// The weight storage of a title: the one format, or the most common with the exceptions, each
/// named by [`precision`].
pub fn weights(w: &llm_ledger_core::model::WeightPrecisions) -> String {
    w.describe_with(precision)
}

/// A count with thousands separators (`8,030,261,248`; the core's [`grouped`], which its
/// messages use).
pub fn count(v: u64) -> String {
    grouped(v)
}

/// Parameters in trillions (`1.03 T`), billions (`8.03 B`) or millions (`124 M`).
pub fn params(v: u64) -> String {
    let f = v as f64;
    if f >= 1e12 {
        format!("{} T", sig3(f / 1e12))
    } else if f >= 1e9 {
        format!("{} B", sig3(f / 1e9))
    } else {
        format!("{} M", sig3(f / 1e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One dollar format for every report (the plan's used to print sub-cent
    /// amounts with three decimals, the cost report's in scientific notation).
    #[test]
    fn one_dollar_format() {
        assert_eq!(usd(1234.4), "$1,234");
        assert_eq!(usd(571.2), "$571");
        assert_eq!(usd(72.347), "$72.35");
        assert_eq!(usd(5.461), "$5.46");
        assert_eq!(usd(0.5), "$0.500");
        assert_eq!(usd(0.017), "$0.0170");
        assert_eq!(usd(1.38e-4), "$0.000138");
        assert_eq!(usd(0.0), "$0");
        assert_eq!(crate::cost::usd(0.005), usd(0.005));
    }

    /// The integer path of `push_fixed` writes what `std` writes, ties and near-ties included.
    #[test]
    fn fixed_decimals_match_std() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ties: [f64; 13] =
            [0.125, 2.5, 3.5, 0.5, 1.005, 0.0125, 99.95, 9.995, 0.9995, 1.0e-6, 123.45, 0.375, 1e8 + 0.5];
        let random = (0..200_000).map(|_| {
            let mantissa = (next() >> 11) as f64 / (1u64 << 53) as f64;
            let exponent = (next() % 24) as i32 - 12;
            let sign = if next() % 5 == 0 { -1.0 } else { 1.0 };
            sign * mantissa * 10f64.powi(exponent)
        });
        for v in ties
            .into_iter()
            .flat_map(|t| [t, -t, f64::from_bits(t.to_bits() + 1), f64::from_bits(t.to_bits() - 1)])
            .chain(random)
        {
            for d in 0..12 {
                let mut out = String::new();
                push_fixed(&mut out, v, d);
                assert_eq!(out, format!("{v:.d$}"), "{v:e} to {d} decimals");
            }
        }
    }

    #[test]
    fn whole_numbers_ratios_and_bit_widths() {
        assert_eq!(sig3(5328.4), "5,328");
        assert_eq!(sig3(999.4), "999");
        assert_eq!(sig3(1_234_567.0), "1,234,567");
        assert_eq!(sig3(-2048.0), "-2,048");
        // Rounded as `{:.0}` rounds: 1670.5 is 1,670, as it printed before it was grouped.
        assert_eq!(sig3(1670.5), "1,670");
        assert_eq!(ratio(1.149), "1.15×");
        assert_eq!(ratio(0.66), "0.66×");
        assert_eq!(ratio(16.0), "16.0×");
        assert_eq!(ratio(123.4), "123×");
        assert_eq!(bits(4.84375), "4.84bit");
        assert_eq!(bits(4.5), "4.5bit");
        assert_eq!(bits(16.0), "16bit");
        let w = llm_ledger_core::Precision::from_bits(5.1875).unwrap();
        assert_eq!(precision(w), "5.19bit");
        assert_eq!(w.name(), "5.1875bit", "the canonical name stays exact");
    }

    #[test]
    fn si_prefixes() {
        assert_eq!(flops(16.1e9), "16.1 GFLOP");
        assert_eq!(bytes(15_281_192_960.0), "15.3 GB");
        assert_eq!(bytes(131_072.0), "131 kB");
        assert_eq!(bytes(999.6e9), "1.00 TB");
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(rate(3.35e12, "B"), "3.35 TB/s");
    }

    #[test]
    fn times() {
        assert_eq!(seconds(5.783e-3), "5.78 ms");
        assert_eq!(seconds(2.1e-5), "21.0 µs");
        assert_eq!(seconds(3.0), "3.00 s");
        assert_eq!(seconds(4.2e-10), "0.420 ns");
    }

    #[test]
    fn counts_and_params() {
        assert_eq!(count(8_030_261_248), "8,030,261,248");
        assert_eq!(count(12), "12");
        assert_eq!(params(8_030_261_248), "8.03 B");
        assert_eq!(params(124_439_808), "124 M");
        assert_eq!(params(1_026_408_232_448), "1.03 T");
        assert_eq!(intensity(None), "—");
        assert_eq!(
            (quantity(1.0), quantity(4096.0), quantity(55.9), quantity(-2.0)),
            ("1".into(), "4,096".into(), "55.9".into(), "-2".into())
        );
        assert_eq!(intensity(Some(4.0)), "4.0");
        assert_eq!(sig3(0.0123), "0.0123");
    }

    #[test]
    fn extreme_numbers_print_in_scientific_form() {
        assert_eq!(sig3(1e-300), "1.00e-300");
        assert_eq!(sig3(1e300), "1.00e300");
        assert_eq!(sig3(-2.5e15), "-2.50e15");
        assert_eq!(seconds(1e300), "1.00e300 s");
        assert_eq!(seconds(3e-20), "3.00e-11 ns");
        assert_eq!(sig3(999_999_999_999.0), "999,999,999,999");
        assert_eq!(sig3(1e-6), "0.00000100");
        for v in [1e-300, 5e-324, 1e300, f64::MAX] {
            assert!(sig3(v).len() <= 10 && seconds(v).len() <= 14, "{}", sig3(v));
        }
    }
}
