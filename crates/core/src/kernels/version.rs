//! An engine version (`0.19.0`, `1.3.0rc20`, `0.5.6.post2`), ordered as NVIDIA AIConfigurator
//! orders its version directories: `get_latest_database_version` in
//! `aic-core/src/aiconfigurator_core/sdk/perf_database.py` compares
//! `(major, minor, patch, released, rc number, last number)`, so that a release sorts above its
//! release candidates (`1.3.0rc20 < 1.3.0`) and a post-release above the release
//! (`0.5.6 < 0.5.6.post2`). `scripts/kernel-data/fetch.py` (`parse_version`) sorts the same way.

use std::cmp::Ordering;
use std::fmt;

/// A version as a user names it or a table directory holds it, with its sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EngineVersion {
    key: VersionKey,
}

/// `(major, minor, patch, released, rc number, last number)`: AIConfigurator's ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct VersionKey {
    major: u64,
    minor: u64,
    patch: u64,
    released: bool,
    release_candidate: u64,
    last_number: u64,
}

impl EngineVersion {
    /// Parse `major.minor[.patch][rcN|.postN|…]` (a leading `v` is allowed); `None` where it does
    /// not start with `major.minor` or a number is too long.
    pub fn parse(text: &str) -> Option<EngineVersion> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_prefix('v').unwrap_or(&t);
        let (numbers, rest) = leading_numbers(t)?;
        let rc = rest.find("rc").map(|at| {
            let digits: String = rest[at + 2..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap_or(0)
        });
        let last_number = last_number(rest)?;
        Some(EngineVersion {
            key: VersionKey {
                major: numbers[0],
                minor: numbers[1],
                patch: numbers[2],
                released: rc.is_none(),
                release_candidate: rc.unwrap_or(0),
                last_number,
            },
        })
    }
}

/// The `major.minor[.patch]` at the start of `t` (patch 0 where absent) and the rest; `None`
/// without `major.minor`.
fn leading_numbers(t: &str) -> Option<([u64; 3], &str)> {
    let mut numbers = [0u64; 3];
    let mut rest = t;
    for (i, slot) in numbers.iter_mut().enumerate() {
        if i > 0 {
            match rest.strip_prefix('.') {
                Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => rest = r,
                _ if i == 2 => break,
                _ => return None,
            }
        }
        let len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if len == 0 || len > 9 {
            return None;
        }
        *slot = rest[..len].parse().ok()?;
        rest = &rest[len..];
    }
    Some((numbers, rest))
}

/// The last run of digits in `rest` (0 where none); `None` where it is too long.
fn last_number(rest: &str) -> Option<u64> {
    let end = rest.rfind(|c: char| c.is_ascii_digit()).map(|i| i + 1);
    let Some(end) = end else { return Some(0) };
    let start = rest[..end].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    if end - start > 9 {
        return None;
    }
    rest[start..end].parse().ok()
}

impl PartialOrd for EngineVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EngineVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

impl serde::Serialize for EngineVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for EngineVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = &self.key;
        write!(f, "{}.{}.{}", k.major, k.minor, k.patch)?;
        if !k.released {
            write!(f, "rc{}", k.release_candidate)?;
        } else if k.last_number > 0 {
            write!(f, ".post{}", k.last_number)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> EngineVersion {
        EngineVersion::parse(s).unwrap_or_else(|| panic!("{s}"))
    }

    #[test]
    fn versions_sort_as_aiconfigurator_sorts_them() {
        // The order of scripts/kernel-data/fetch.py's parse_version on the directories held.
        let ordered =
            ["0.5.6", "0.5.6.post2", "0.5.9", "0.5.10", "1.0.0", "1.2.0rc5", "1.3.0rc10", "1.3.0rc20", "1.3.0"];
        for w in ordered.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(v("0.19"), v("0.19.0"));
        assert_eq!(v("v0.19.0"), v("0.19.0"));
        assert_eq!(v("1.3.0rc20").to_string(), "1.3.0rc20");
        assert_eq!(v("0.5.6.post2").to_string(), "0.5.6.post2");
        assert_eq!(v("0.19").to_string(), "0.19.0");
    }

    #[test]
    fn text_that_is_not_a_version_is_refused() {
        for bad in ["", "x", "1", "1.", ".1", "1.x", "12345678901.0", "0.1.dev12345678901"] {
            assert!(EngineVersion::parse(bad).is_none(), "{bad:?}");
        }
    }
}
