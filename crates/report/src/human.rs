//! Human-readable numbers for tables: SI prefixes, decimal bytes (GB = 10⁹ B, as vendors and the
//! seed print them). JSON and CSV never use these; they carry plain SI numbers.

/// `value` with an SI prefix and `unit`, 3 significant figures (`1.61 GFLOP`, `812 kB`).
pub fn si(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return format!("{value} {unit}");
    }
    if value == 0.0 {
        return format!("0 {unit}");
    }
    const PREFIXES: [(f64, &str); 7] =
        [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    let a = value.abs();
    let (scale, p) = PREFIXES.iter().copied().find(|(s, _)| a >= *s * 0.9995).unwrap_or((1.0, ""));
    format!("{} {p}{unit}", sig3(value / scale))
}

/// Three significant figures without exponent (`1.61`, `16.1`, `161`, `0.0123`); from 10¹² up
/// and below 10⁻⁶ in scientific form (`1.00e300`, `4.20e-9`), never hundreds of digits.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !v.is_finite() {
        v.to_string()
    } else if !(1e-6..1e12).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 99.95 {
        format!("{v:.0}")
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else if a >= 0.9995 {
        format!("{v:.2}")
    } else {
        let digits = (-a.log10().floor()) as usize + 2;
        format!("{v:.digits$}")
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
        format!("{v} s")
    } else if a == 0.0 {
        "0 s".into()
    } else if a < 0.9995e-6 {
        format!("{} ns", sig3(v * 1e9))
    } else if a < 0.9995e-3 {
        format!("{} µs", sig3(v * 1e6))
    } else if a < 0.9995 {
        format!("{} ms", sig3(v * 1e3))
    } else {
        format!("{} s", sig3(v))
    }
}

/// Arithmetic intensity (`4.0`), or `—` when nothing moves through HBM (a fused operator whose
/// inputs stay on chip, a collective, a wait: FLOPs per byte is not a number there, 0 ÷ 0 or an
/// operator's FLOPs charged to the kernel it joins).
pub fn intensity(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// A fraction as a percentage (`37.2 %`).
pub fn percent(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// Dollars for tables: whole dollars from $100, three decimals from a cent, else two significant
/// figures in scientific notation (`$1.23e-3`). The one dollar format of every report.
pub fn usd(v: f64) -> String {
    if v >= 100.0 {
        format!("${v:.0}")
    } else if v >= 0.01 {
        format!("${v:.3}")
    } else {
        format!("${v:.2e}")
    }
}

/// A count with thousands separators (`8,030,261,248`).
pub fn count(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Parameters in billions (`8.03 B`) or millions (`124 M`).
pub fn params(v: u64) -> String {
    let f = v as f64;
    if f >= 1e9 {
        format!("{} B", sig3(f / 1e9))
    } else {
        format!("{} M", sig3(f / 1e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 12, item 9: one dollar format for every report (the plan's used to print sub-cent
    /// amounts with three decimals, the cost report's in scientific notation).
    #[test]
    fn issue_12_one_dollar_format() {
        assert_eq!(usd(1234.4), "$1234");
        assert_eq!(usd(0.5), "$0.500");
        assert_eq!(usd(0.005), "$5.00e-3");
        assert_eq!(crate::cost::usd(0.005), usd(0.005));
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
        assert_eq!(intensity(None), "—");
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
        assert_eq!(sig3(999_999_999_999.0), "999999999999");
        assert_eq!(sig3(1e-6), "0.00000100");
        for v in [1e-300, 5e-324, 1e300, f64::MAX] {
            assert!(sig3(v).len() <= 10 && seconds(v).len() <= 14, "{}", sig3(v));
        }
    }
}
