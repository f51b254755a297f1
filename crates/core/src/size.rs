//! Byte sizes as people write them: a number and a unit, decimal (`kB`, `MB`, `GB`, `TB`: powers
//! of 1000) or binary (`KiB`, `MiB`, `GiB`, `TiB`: powers of 1024), or `B` for plain bytes. Units
//! are case-insensitive and may follow a space (`1.5 GiB`). One parser for every front end: the
//! CLI's `--reserve` and the explorer's `reserve` parameter both resolve through
//! [`crate::serving::ServingRequest`], which calls [`parse_bytes`].
//!
//! A bare number is refused (except 0): `--reserve 4` once meant 4 bytes, which nobody means.
//!
//! ```
//! use llm_ledger_core::size::parse_bytes;
//! assert_eq!(parse_bytes("reserve", "4GB").unwrap(), 4e9);
//! assert_eq!(parse_bytes("reserve", "1 GiB").unwrap(), 1073741824.0);
//! assert!(parse_bytes("reserve", "4").unwrap_err().to_string().contains("needs a unit"));
//! ```

use crate::error::{Error, Result};
use crate::scenario::parse_f64;

/// The units [`parse_bytes`] accepts, with their size in bytes.
pub const BYTE_UNITS: [(&str, f64); 9] = [
    ("B", 1.0),
    ("kB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
    ("KiB", 1024.0),
    ("MiB", 1024.0 * 1024.0),
    ("GiB", 1024.0 * 1024.0 * 1024.0),
    ("TiB", 1024.0 * 1024.0 * 1024.0 * 1024.0),
];

/// Parse a byte size `<number><unit>` (see the module doc) into bytes: finite and ≥ 0. A bare
/// number other than 0 is an error that asks for a unit; errors name `field`.
pub fn parse_bytes(field: &str, s: &str) -> Result<f64> {
    let t = s.trim();
    let accepted = || BYTE_UNITS.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", ");
    // The unit is the trailing run of letters (so the exponent of `2e9B` stays in the number).
    let split = t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let scale = if unit.is_empty() {
        None
    } else {
        match BYTE_UNITS.iter().find(|(u, _)| u.eq_ignore_ascii_case(unit)) {
            Some((_, scale)) => Some(*scale),
            None => return Err(Error::invalid(field, format!("{t:?}"), format!("a size with a unit: {}", accepted()))),
        }
    };
    let v = parse_f64(field, num)?;
    let Some(scale) = scale else {
        if v == 0.0 {
            return Ok(0.0);
        }
        return Err(Error::invalid(
            field,
            format!("{t:?}"),
            format!("a size needs a unit, e.g. {t}GB or {t}GiB; accepted: {}", accepted()),
        ));
    };
    let bytes = v * scale;
    if bytes >= 0.0 && bytes.is_finite() {
        Ok(bytes)
    } else {
        Err(Error::invalid(field, format!("{t:?}"), "a non-negative, finite size"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_decimal_and_binary_units() {
        assert_eq!(parse_bytes("reserve", "1.5GB").unwrap(), 1.5e9);
        assert_eq!(parse_bytes("reserve", "512MB").unwrap(), 512e6);
        assert_eq!(parse_bytes("reserve", "1 GiB").unwrap(), 1073741824.0);
        assert_eq!(parse_bytes("reserve", "4gib").unwrap(), 4.0 * 1073741824.0);
        assert_eq!(parse_bytes("reserve", "2e9B").unwrap(), 2e9);
        assert_eq!(parse_bytes("reserve", "4096 b").unwrap(), 4096.0);
        assert_eq!(parse_bytes("reserve", "0").unwrap(), 0.0);
    }

    #[test]
    fn a_bare_number_asks_for_a_unit() {
        for bare in ["4", "2e9", "4096"] {
            let e = parse_bytes("reserve", bare).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid `reserve`: \"{bare}\" (a size needs a unit, e.g. {bare}GB")),
                "{e}"
            );
        }
    }

    #[test]
    fn bad_sizes_name_the_field_and_the_units() {
        let e = parse_bytes("reserve", "3 parsecs").unwrap_err().to_string();
        assert_eq!(e, "invalid `reserve`: \"3 parsecs\" (a size with a unit: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)");
        assert!(parse_bytes("reserve", "-1GB").is_err());
        assert!(parse_bytes("reserve", "1e308TB").is_err());
        assert!(parse_bytes("reserve", "GB").is_err());
    }
}
