//! The v1 kernel-table format (`scripts/kernel-data/README.md`): a UTF-8 header (magic line,
//! `#` comments, `keys`, `axes`, `values`, one `table` line per table, `data N`) followed by N
//! little-endian u16 codes. Parsing reads the header only; codes are read in place on lookup.
//! An axis's numbers are counted when the header is read and parsed on the first lookup of a
//! table that has it (a file of 340 tables is read for one: its numbers are most of the header's
//! work). [`KernelFile::open`] leaves each axis's check to its first lookup (the embedded files,
//! which the tests check in full with [`KernelFile::check_axes`]).
//! Every structural fault is an [`Error::Malformed`], never a panic.

use super::grid::{interp_ln, positive, Probe, Step};
use crate::error::{Error, Result};
use std::cmp::Ordering;
use std::sync::OnceLock;

/// The first line of every file.
pub(crate) const MAGIC: &str = "llm-ledger-kernel-table v1";

/// Code of an unmeasured cell.
pub(crate) const UNMEASURED: u16 = 0xFFFF;

/// Decode one stored code: `latency_us = 0.001 · exp(code / 2048)`; `None` for `0xFFFF`
/// (not measured). Code 0 is 0.001 µs; each step is a factor e^(1/2048) ≈ 1.000488.
pub fn decode_us(code: u16) -> Option<f64> {
    (code != UNMEASURED).then(|| 0.001 * (f64::from(code) / 2048.0).exp())
}

/// What an op's files must look like and how their keys are used.
#[derive(Debug)]
pub(crate) struct OpSpec {
    /// The op's name (`gemm`, `context_attention` …).
    pub name: &'static str,
    /// The `keys` line.
    pub keys: &'static [&'static str],
    /// The first `exact` keys are matched exactly.
    pub exact: usize,
    /// The key interpolated innermost (heads, GPU count), if any.
    pub inner: Option<usize>,
    /// The key interpolated outermost (KV heads), if any; needs `inner`.
    pub outer: Option<usize>,
    /// The `axes` line.
    pub axes: &'static [&'static str],
    /// Where two tables share every used key, the key that decides (the larger value wins);
    /// without one, such a file is malformed.
    pub tie: Option<usize>,
    /// The axes of the monotone envelope ([`KernelFile::envelope`]): GEMM m; attention batch and
    /// length; collectives the message size.
    pub envelope: &'static [usize],
}

/// A key value: a number where it reads as one, else a name (borrowed from the embedded file).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Key {
    Num(f64),
    Str(&'static str),
}

/// A key in a query: borrowed, compared with [`Key`] without allocating.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Q<'a> {
    N(f64),
    S(&'a str),
}

fn cmp_key(k: &Key, q: &Q<'_>) -> Ordering {
    match (k, q) {
        (Key::Num(a), Q::N(b)) => a.total_cmp(b),
        (Key::Str(a), Q::S(b)) => (*a).cmp(*b),
        (Key::Num(_), Q::S(_)) => Ordering::Less,
        (Key::Str(_), Q::N(_)) => Ordering::Greater,
    }
}

fn as_q(k: &Key) -> Q<'_> {
    match k {
        Key::Num(v) => Q::N(*v),
        Key::Str(s) => Q::S(s),
    }
}

/// One sorted grid axis with its logarithms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub values: Vec<f64>,
    pub ln: Vec<f64>,
}

impl Axis {
    fn new(values: Vec<f64>) -> Self {
        let ln = values.iter().map(|v| v.ln()).collect();
        Axis { values, ln }
    }
}

/// An axis as its `table` line writes it: the text, its line, and how many values it holds;
/// parsed ([`parse_axis`]) on first use.
#[derive(Debug)]
pub(crate) struct LazyAxis {
    text: &'static str,
    line: usize,
    len: usize,
    parsed: OnceLock<Result<Axis>>,
}

impl LazyAxis {
    /// The axis, parsed and checked the first time it is asked for.
    fn get(&self, path: &str) -> Result<&Axis> {
        self.parsed.get_or_init(|| parse_axis(path, self.line, self.text)).as_ref().map_err(Clone::clone)
    }
}

/// One table: its key values, its axes (indices into [`KernelFile::axes`]) and where its codes
/// start.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub keys: Inline<Key, MAX_KEYS>,
    pub axes: Inline<usize, MAX_AXES>,
    /// Index of the table's first code.
    pub offset: usize,
    /// Codes between consecutive values of each axis (row-major, last axis fastest).
    pub strides: Inline<usize, MAX_AXES>,
}

/// Most keys a table line may have (attention: 7).
const MAX_KEYS: usize = 8;

/// Up to `N` values held in place, read as a slice: a table's keys, axes and strides without an
/// allocation per table (a file holds hundreds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inline<T, const N: usize> {
    items: [T; N],
    len: usize,
}

impl<T: Copy, const N: usize> Inline<T, N> {
    /// Empty, every slot `fill`.
    fn new(fill: T) -> Self {
        Inline { items: [fill; N], len: 0 }
    }

    /// Append `v`; `false` (nothing changed) when full.
    fn push(&mut self, v: T) -> bool {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = v;
                self.len += 1;
                true
            }
            None => false,
        }
    }
}

impl<T, const N: usize> std::ops::Deref for Inline<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items[..self.len]
    }
}

impl<T, const N: usize> std::ops::DerefMut for Inline<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[..self.len]
    }
}

/// Tables that share the exact keys, indexed by the interpolated keys.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub exact: Vec<Key>,
    /// Outer key values (KV heads), sorted; `[1.0]` when the op has no outer key.
    pub outer: Axis,
    /// Per outer value: the inner key values (sorted) and their tables.
    pub levels: Vec<Level>,
}

impl Group {
    /// The outer levels an interpolation at `outer` reads: the level on it, the two around it,
    /// or the nearest one beyond either end.
    fn levels_around(&self, outer: f64) -> impl Iterator<Item = usize> {
        let values = &self.outer.values;
        let p = Probe::new(values, outer);
        let (first, last) = match (p.on_point, p.pos) {
            (true, pos) => (pos - 1, pos - 1),
            (false, 0) => (0, 0),
            (false, pos) if pos == values.len() => (pos - 1, pos - 1),
            (false, pos) => (pos - 1, pos),
        };
        first..=last
    }

    /// Whether the inner key `inner` at outer key `outer` lies within what was measured at the
    /// levels an interpolation reads: the ratio `inner ÷ outer` (a head group: query heads per
    /// KV head) within each level's measured ratios when `keep_ratio`, else `inner` itself within
    /// each level's measured values. A numeric key is interpolated between measured values and
    /// the outer key (KV heads) scaled beyond them, but a head group the tables never held is not
    /// reached by either: a query outside this is not read from the tables.
    pub(super) fn holds(&self, inner: f64, outer: f64, keep_ratio: bool) -> bool {
        const SLACK: f64 = 1e-9;
        !self.levels.is_empty()
            && self.levels_around(outer).all(|j| {
                let values = &self.levels[j].inner.values;
                let (lo, hi) =
                    (values.first().copied().unwrap_or(f64::NAN), values.last().copied().unwrap_or(f64::NAN));
                let (x, scale) = if keep_ratio { (inner / outer, self.outer.values[j]) } else { (inner, 1.0) };
                x >= lo / scale * (1.0 - SLACK) && x <= hi / scale * (1.0 + SLACK)
            })
    }
}

/// The tables of one outer key value.
#[derive(Debug, Clone)]
pub(crate) struct Level {
    pub inner: Axis,
    pub tables: Vec<usize>,
}

/// A parsed file: header structures plus the code bytes, read in place.
#[derive(Debug)]
pub(crate) struct KernelFile {
    /// The file's name in errors.
    path: &'static str,
    pub spec: &'static OpSpec,
    pub tables: Vec<Table>,
    /// Every axis the `table` lines write (a `=` shares the previous table's).
    axes: Vec<LazyAxis>,
    /// Sorted by exact keys.
    pub groups: Vec<Group>,
    /// Per exact key column, its distinct values (sorted).
    pub distinct: Vec<Vec<Key>>,
    /// Extrapolation power above the largest value, per axis.
    pub powers: Vec<Option<f64>>,
    /// The same for the inner and outer keys.
    pub inner_power: Option<f64>,
    pub outer_power: Option<f64>,
    /// The embedded code bytes.
    codes: &'static [u8],
    /// Number of codes (`data N`).
    pub cells: usize,
    /// Per table, its codes under [`KernelFile::suffix_min`] along the spec's envelope axes,
    /// computed on the table's first lookup through [`KernelFile::envelope`].
    enveloped: Box<[OnceLock<Box<[u8]>>]>,
}

fn malformed(path: &str, message: impl Into<String>) -> Error {
    Error::Malformed { what: format!("kernel table {path}"), message: message.into() }
}

/// Extrapolation power of a named axis or key ([`super::AXIS_POWERS`]).
fn power_of(name: &str) -> Option<f64> {
    super::AXIS_POWERS.iter().find(|(n, _)| *n == name).map(|&(_, p)| p)
}

fn parse_key(s: &'static str) -> Key {
    // Most numeric keys are small integers (heads, head sizes, GPU counts): read them digit by
    // digit (exact below 10^15, as the float parser would give them).
    if !s.is_empty() && s.len() <= 15 && s.bytes().all(|b| b.is_ascii_digit()) {
        return Key::Num(s.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')) as f64);
    }
    // Only a word that starts like a number is tried as one (kernel and format names are not).
    let numeric = s.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '+'));
    match numeric.then(|| s.parse::<f64>()) {
        Some(Ok(v)) if v.is_finite() => Key::Num(v),
        _ => Key::Str(s),
    }
}

/// The number of values an axis's text holds (its words), or a fault: an empty axis.
fn count_axis(path: &str, line: usize, s: &str) -> Result<usize> {
    match s.split_ascii_whitespace().count() {
        0 => Err(malformed(path, format!("line {line}: empty axis"))),
        n => Ok(n),
    }
}

fn parse_axis(path: &str, line: usize, s: &str) -> Result<Axis> {
    let mut values = Vec::new();
    for w in s.split_ascii_whitespace() {
        let v: f64 =
            w.parse().map_err(|_| malformed(path, format!("line {line}: axis value `{w}` is not a number")))?;
        if !(v.is_finite() && v > 0.0) || values.last().is_some_and(|&p| v <= p) {
            return Err(malformed(path, format!("line {line}: axis values must be positive and increasing (`{w}`)")));
        }
        values.push(v);
    }
    if values.is_empty() {
        return Err(malformed(path, format!("line {line}: empty axis")));
    }
    Ok(Axis::new(values))
}

impl KernelFile {
    /// Parse `bytes` as a file of op `spec`, every axis checked; `path` names it in errors.
    #[cfg(test)]
    pub(super) fn parse(path: &'static str, spec: &'static OpSpec, bytes: &'static [u8]) -> Result<KernelFile> {
        let f = KernelFile::open(path, spec, bytes)?;
        f.check_axes()?;
        Ok(f)
    }

    /// Every axis parsed and checked (positive, increasing numbers).
    pub(super) fn check_axes(&self) -> Result<()> {
        self.axes.iter().try_for_each(|a| a.get(self.path).map(|_| ()))
    }

    /// Axis `d` of table `t`, parsed on first use; `None` where its text is malformed (which
    /// [`KernelFile::check_axes`] reports).
    pub(super) fn axis(&self, t: usize, d: usize) -> Option<&Axis> {
        self.axes[self.tables[t].axes[d]].get(self.path).ok()
    }

    /// Read the header of `bytes` as a file of op `spec`, its axes counted but not yet parsed
    /// (module docs); `path` names it in errors.
    pub(super) fn open(path: &'static str, spec: &'static OpSpec, bytes: &'static [u8]) -> Result<KernelFile> {
        // The header ends at the newline after the `data N` line: the first line that starts
        // with `data `.
        let data_at =
            if bytes.starts_with(b"data ") { Some(0) } else { memchr::memmem::find(bytes, b"\ndata ").map(|i| i + 1) };
        let data_at = data_at.ok_or_else(|| malformed(path, "no `data N` line"))?;
        let nl = memchr::memchr(b'\n', &bytes[data_at..])
            .map(|i| data_at + i)
            .ok_or_else(|| malformed(path, "`data N` line is not terminated"))?;
        let header: &'static str =
            std::str::from_utf8(&bytes[..nl]).map_err(|_| malformed(path, "header is not UTF-8"))?;
        let codes = &bytes[nl + 1..];

        // The header's lines, as `str::lines` gives them.
        let mut start = 0;
        let ends = memchr::memchr_iter(b'\n', header.as_bytes()).chain([header.len()]);
        let mut lines = ends
            .map(move |end| {
                let line = &header[start..end];
                start = end + 1;
                line.strip_suffix('\r').unwrap_or(line)
            })
            .enumerate();
        if lines.next().map(|(_, l)| l) != Some(MAGIC) {
            return Err(malformed(path, format!("first line is not `{MAGIC}`")));
        }
        let mut keys: Option<Vec<&str>> = None;
        let mut axes: Option<Vec<&str>> = None;
        // Room for every `table` line at once: a table is a few hundred bytes, and a file holds
        // up to a few thousand (growing the vector moved each about twice).
        let table_lines = memchr::memmem::find_iter(header.as_bytes(), b"\ntable ").count();
        let mut tables: Vec<Table> = Vec::with_capacity(table_lines);
        let mut all_axes: Vec<LazyAxis> = Vec::new();
        let mut cells = None;
        let mut offset = 0usize;
        for (i, line) in lines {
            let n = i + 1;
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            match word {
                "keys" => keys = Some(rest.split_whitespace().collect()),
                "axes" => axes = Some(rest.split_whitespace().collect()),
                "values" if rest.trim() == "latency_us" => {}
                "values" => {
                    return Err(malformed(path, format!("line {n}: value column `{rest}`, expected latency_us")))
                }
                "table" => {
                    let (Some(k), Some(a)) = (&keys, &axes) else {
                        return Err(malformed(path, format!("line {n}: `table` before `keys` and `axes`")));
                    };
                    if k.len() > MAX_KEYS || a.len() > MAX_AXES {
                        return Err(malformed(path, format!("line {n}: more than {MAX_KEYS} keys or {MAX_AXES} axes")));
                    }
                    let mut parts = rest.split('|');
                    let mut key_vals = Inline::new(Key::Num(0.0));
                    let mut given = 0;
                    for w in parts.next().unwrap_or("").split_ascii_whitespace() {
                        given += 1;
                        key_vals.push(parse_key(w));
                    }
                    if given != k.len() {
                        return Err(malformed(path, format!("line {n}: {given} keys, expected {}", k.len())));
                    }
                    let mut table_axes = Inline::new(0);
                    let mut given = 0;
                    for (j, part) in parts.enumerate() {
                        given += 1;
                        let axis = if part.trim() == "=" {
                            let prev = tables.last().and_then(|t| t.axes.get(j)).copied();
                            prev.ok_or_else(|| malformed(path, format!("line {n}: `=` with no previous axis")))?
                        } else {
                            let len = count_axis(path, n, part)?;
                            all_axes.push(LazyAxis { text: part, line: n, len, parsed: OnceLock::new() });
                            all_axes.len() - 1
                        };
                        table_axes.push(axis);
                    }
                    if given != a.len() {
                        return Err(malformed(path, format!("line {n}: {given} axes, expected {}", a.len())));
                    }
                    let mut strides = Inline::new(1usize);
                    (0..a.len()).for_each(|_| {
                        strides.push(1);
                    });
                    let mut size = 1usize;
                    for j in (0..a.len()).rev() {
                        strides[j] = size;
                        size = size
                            .checked_mul(all_axes[table_axes[j]].len)
                            .ok_or_else(|| malformed(path, format!("line {n}: table too large")))?;
                    }
                    tables.push(Table { keys: key_vals, axes: table_axes, offset, strides });
                    offset = offset.checked_add(size).ok_or_else(|| malformed(path, "too many values"))?;
                }
                "data" => {
                    cells = Some(
                        rest.trim().parse::<usize>().map_err(|_| malformed(path, format!("line {n}: bad `data N`")))?,
                    )
                }
                _ => return Err(malformed(path, format!("line {n}: unknown line `{word}`"))),
            }
        }
        let cells = cells.ok_or_else(|| malformed(path, "no `data N` line"))?;
        if keys.as_deref() != Some(spec.keys) {
            return Err(malformed(path, format!("keys {:?}, expected {:?}", keys.unwrap_or_default(), spec.keys)));
        }
        if spec.keys.len() > MAX_KEYS {
            return Err(malformed(path, format!("more than {MAX_KEYS} keys")));
        }
        if spec.axes.len() > MAX_AXES {
            return Err(malformed(path, format!("more than {MAX_AXES} axes")));
        }
        if axes.as_deref() != Some(spec.axes) {
            return Err(malformed(path, format!("axes {:?}, expected {:?}", axes.unwrap_or_default(), spec.axes)));
        }
        if offset != cells {
            return Err(malformed(path, format!("tables hold {offset} values, `data` says {cells}")));
        }
        if codes.len() != 2 * cells {
            return Err(malformed(path, format!("{} data bytes, expected 2 × {cells}", codes.len())));
        }
        let distinct: Vec<Vec<Key>> = (0..spec.exact)
            .map(|c| {
                let mut v: Vec<Key> = Vec::new();
                for t in &tables {
                    if !v.contains(&t.keys[c]) {
                        v.push(t.keys[c]);
                    }
                }
                v.sort_by(|a, b| cmp_key(a, &as_q(b)));
                v
            })
            .collect();
        let groups = group(path, spec, &tables, &distinct)?;
        let enveloped = (0..tables.len()).map(|_| OnceLock::new()).collect();
        Ok(KernelFile {
            path,
            spec,
            axes: all_axes,
            powers: spec.axes.iter().map(|a| power_of(a)).collect(),
            inner_power: spec.inner.and_then(|i| power_of(spec.keys[i])),
            outer_power: spec.outer.and_then(|i| power_of(spec.keys[i])),
            tables,
            groups,
            distinct,
            enveloped,
            codes,
            cells,
        })
    }

    /// The code at index `i` (in bounds: checked against `data N` at parse time).
    fn code(&self, i: usize) -> u16 {
        code_at(self.codes, i)
    }

    /// Table `t`'s codes with every cell replaced, along each axis of `axes` in turn, by the
    /// minimum over the cells at the same or a larger value of that axis (GEMM: m; attention:
    /// batch and length), over measured cells: `t'(…, i, …) = min_{i' ≥ i} t(…, i', …)`. An
    /// unmeasured cell takes that minimum too where some larger value was measured (it stays
    /// unmeasured only above the last measured one). Codes grow with time (`code = 2048 · ln ns`,
    /// and `0xFFFF`, unmeasured, is above every code), so the minimum of codes is the minimum of
    /// times. The result is non-decreasing along every axis of `axes` (a suffix minimum along a
    /// second axis keeps the first's order: each is a minimum over the same later cells of rows
    /// that were already ordered), and interpolation (linear in log space between non-decreasing
    /// points, clamped below, growing above) keeps it so. The table's codes as stored
    /// (little-endian u16s), from its first cell.
    pub(super) fn suffix_min(&self, t: usize, axes: &[usize]) -> Box<[u8]> {
        let t = &self.tables[t];
        let len = |d: usize| self.axes[t.axes[d]].len;
        let size: usize = (0..t.axes.len()).map(len).product();
        let mut cells: Vec<u16> = (t.offset..t.offset + size).map(|i| self.code(i)).collect();
        for &d in axes.iter().filter(|&&d| d < t.axes.len()) {
            let (count, stride) = (len(d), t.strides[d]);
            // Cells are laid out row-major: a block of `count · stride` cells holds `count`
            // slices of `stride` cells, one per value of axis d, each line along d taking one
            // cell of every slice. From the second-to-last slice down, each slice becomes its
            // cell-wise minimum with the one after it (already the minimum over everything
            // after), which is the running minimum of every line at once.
            for block in cells.chunks_exact_mut((count * stride).max(1)) {
                for i in (0..count.saturating_sub(1)).rev() {
                    let (this, after) = block[i * stride..].split_at_mut(stride);
                    this.iter_mut().zip(&after[..stride]).for_each(|(x, y)| *x = (*x).min(*y));
                }
            }
        }
        let mut bytes = vec![0u8; 2 * size].into_boxed_slice();
        bytes.chunks_exact_mut(2).zip(&cells).for_each(|(b, c)| b.copy_from_slice(&c.to_le_bytes()));
        bytes
    }

    /// The file's monotone envelope: lookups read every table under [`KernelFile::suffix_min`]
    /// along the spec's envelope axes (the fastest measured kernel for at least this much work,
    /// so a bigger GEMM, a longer message, or more or longer sequences are never faster than
    /// less), each table's computed on its first lookup and kept.
    pub(super) fn envelope(&self) -> Envelope<'_> {
        Envelope(self)
    }

    /// Number of measured cells (codes other than `0xFFFF`).
    pub(super) fn measured(&self) -> usize {
        (0..self.cells).filter(|&i| self.code(i) != UNMEASURED).count()
    }

    /// Decoded value of a table cell given by its indices, `None` when unmeasured.
    #[cfg(test)]
    pub(super) fn cell(&self, table: usize, idx: &[usize]) -> Option<f64> {
        let t = &self.tables[table];
        decode_us(self.code(t.offset + idx.iter().zip(t.strides.iter()).map(|(i, s)| i * s).sum::<usize>()))
    }

    /// The group with these exact keys.
    pub(super) fn find(&self, exact: &[Q<'_>]) -> Option<&Group> {
        self.groups
            .binary_search_by(|g| {
                for (k, q) in g.exact.iter().zip(exact) {
                    match cmp_key(k, q) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                g.exact.len().cmp(&exact.len())
            })
            .ok()
            .map(|i| &self.groups[i])
    }

    /// The names in exact key column `c` (kernels), in sorted order.
    pub(super) fn names(&self, c: usize) -> impl Iterator<Item = &str> {
        self.distinct.get(c).into_iter().flatten().filter_map(|k| match k {
            Key::Str(s) => Some(*s),
            Key::Num(_) => None,
        })
    }

    /// Interpolated time of table `t` at the axis values `q` (one per axis), µs.
    #[cfg(test)]
    pub(super) fn eval(&self, t: usize, q: &[f64]) -> Option<f64> {
        self.eval_ln(t, q).map(to_us)
    }

    /// `ln(time in ns)` of table `t` at the axis values `q` (one per axis; each positive and
    /// finite, else `None`). Codes are read in place; nothing is allocated.
    pub(super) fn eval_ln(&self, t: usize, q: &[f64]) -> Option<f64> {
        self.eval_codes_ln(t, q, self.codes, self.tables[t].offset)
    }

    /// [`KernelFile::eval_ln`] over `codes`, table `t`'s first cell at index `base`.
    fn eval_codes_ln(&self, t: usize, q: &[f64], codes: &[u8], base: usize) -> Option<f64> {
        let (probes, lns) = self.probes(t, q, 0)?;
        self.eval_axis(&self.tables[t], codes, &probes[..q.len()], &lns, 0, base)
    }

    /// Where `q` (one value per axis of table `t` from axis `from` on) falls on each of those
    /// axes, and the axes' logarithms; `None` unless each value is positive and finite and there
    /// is one per axis. The entries before `from` are left empty.
    fn probes(&self, t: usize, q: &[f64], from: usize) -> Option<([Probe; MAX_AXES], [&[f64]; MAX_AXES])> {
        let n = self.tables[t].axes.len();
        if q.len() + from != n || n > MAX_AXES {
            return None;
        }
        let mut probes = [Probe { ln_x: 0.0, pos: 0, on_point: false }; MAX_AXES];
        let mut lns: [&[f64]; MAX_AXES] = [&[]; MAX_AXES];
        for (d, &x) in (from..n).zip(q) {
            if !positive(x) {
                return None;
            }
            let axis = self.axis(t, d)?;
            probes[d] = Probe::new(&axis.values, x);
            lns[d] = &axis.ln;
        }
        Some((probes, lns))
    }

    fn eval_axis(
        &self,
        table: &Table,
        codes: &[u8],
        probes: &[Probe],
        lns: &[&[f64]; MAX_AXES],
        d: usize,
        base: usize,
    ) -> Option<f64> {
        let stride = table.strides[d];
        let last = d + 1 == probes.len();
        interp_ln(lns[d], &probes[d], self.powers[d], |i| {
            if last {
                code_ln(code_at(codes, base + i * stride))
            } else {
                self.eval_axis(table, codes, probes, lns, d + 1, base + i * stride)
            }
        })
    }

    /// The extrapolation powers of the inner and outer keys (1 where the op has no such key:
    /// its one value stands for any).
    fn key_powers(&self) -> (Option<f64>, Option<f64>) {
        let inner = if self.spec.inner.is_some() { self.inner_power } else { Some(1.0) };
        let outer = if self.spec.outer.is_some() { self.outer_power } else { Some(1.0) };
        (inner, outer)
    }

    /// Interpolate over a group's numeric keys in log space: the outer key (KV heads) first,
    /// keeping the ratio `inner / outer` when `keep_ratio` (the attention group size), then the
    /// inner key; `leaf` gives a table's `ln(ns)`.
    pub(super) fn eval_group(
        &self,
        g: &Group,
        inner: f64,
        outer: f64,
        keep_ratio: bool,
        mut leaf: impl FnMut(usize) -> Option<f64>,
    ) -> Option<f64> {
        if !(positive(inner) && positive(outer)) {
            return None;
        }
        let (inner_power, outer_power) = self.key_powers();
        interp_ln(&g.outer.ln, &Probe::new(&g.outer.values, outer), outer_power, |j| {
            let level = &g.levels[j];
            let x = if keep_ratio { inner * (g.outer.values[j] / outer) } else { inner };
            interp_ln(&level.inner.ln, &Probe::new(&level.inner.values, x), inner_power, |i| leaf(level.tables[i]))
        })
    }
}

/// [`KernelFile::eval_group`] resolved for one pair of numeric keys: the outer key's step and,
/// for each level it reads, the inner key's step and that level's tables ([`Step`]).
/// [`GroupPlan::eval`] gives what `eval_group` gives, bit for bit, wherever the tables it reads
/// have a value, and `None` where one has none (the caller then asks `eval_group`).
#[derive(Debug, Clone, Copy)]
pub(super) struct GroupPlan<'a> {
    outer: Step,
    /// The outer step's first point; `levels[0]` is its level, `levels[1]` the second point's.
    first: usize,
    levels: [(Step, &'a [usize]); 2],
}

impl<'a> GroupPlan<'a> {
    /// The plan of [`KernelFile::eval_group`]`(g, inner, outer, keep_ratio, …)` in `f`; `None`
    /// where a step has no value with every point measured.
    pub(super) fn new(f: &KernelFile, g: &'a Group, inner: f64, outer: f64, keep_ratio: bool) -> Option<Self> {
        if !(positive(inner) && positive(outer)) {
            return None;
        }
        let (inner_power, outer_power) = f.key_powers();
        let outer_step = Step::new(&g.outer.ln, &Probe::new(&g.outer.values, outer), outer_power)?;
        let level = |j: usize| -> Option<(Step, &'a [usize])> {
            let level = g.levels.get(j)?;
            let x = if keep_ratio { inner * (g.outer.values[j] / outer) } else { inner };
            Some((Step::new(&level.inner.ln, &Probe::new(&level.inner.values, x), inner_power)?, &level.tables[..]))
        };
        let (a, b) = outer_step.points();
        Some(GroupPlan { outer: outer_step, first: a, levels: [level(a)?, level(b.unwrap_or(a))?] })
    }

    /// The value from `leaf` (a table's `ln(ns)`); `None` where a table it reads has none.
    #[inline]
    pub(super) fn eval(&self, mut leaf: impl FnMut(usize) -> Option<f64>) -> Option<f64> {
        self.outer.eval(|j| {
            let (step, tables) = self.levels[usize::from(j != self.first)];
            step.eval(|i| leaf(tables[i]))
        })
    }
}

/// A file read through its monotone envelope ([`KernelFile::envelope`]); every other field is
/// the file's own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Envelope<'a>(&'a KernelFile);

impl std::ops::Deref for Envelope<'_> {
    type Target = KernelFile;
    fn deref(&self) -> &KernelFile {
        self.0
    }
}

impl<'a> Envelope<'a> {
    /// The file itself.
    pub(super) fn file(&self) -> &'a KernelFile {
        self.0
    }

    /// Table `t`'s codes under the envelope, computed on first use.
    fn codes(&self, t: usize) -> &'a [u8] {
        let f = self.0;
        f.enveloped[t].get_or_init(|| f.suffix_min(t, f.spec.envelope))
    }

    /// [`KernelFile::eval_ln`] on table `t`'s envelope.
    pub(super) fn eval_ln(&self, t: usize, q: &[f64]) -> Option<f64> {
        self.0.eval_codes_ln(t, q, self.codes(t), 0)
    }

    /// `ln(ns)` of table `t`'s envelope at every value of its first axis, its other axes at
    /// `rest` (one value per axis after the first): the values [`Envelope::eval_ln`]
    /// interpolates along the first axis, so that [`Envelope::eval_curve`] on them gives
    /// `eval_ln(t, [x, rest…])` bit for bit (a GEMM's curve in m for one (n, k)). `None` unless
    /// `rest` holds one positive, finite value per remaining axis.
    pub(super) fn curve_ln(&self, t: usize, rest: &[f64]) -> Option<Box<[Option<f64>]>> {
        let f = self.0;
        let (probes, lns) = f.probes(t, rest, 1)?;
        let table = &f.tables[t];
        let (n, codes) = (rest.len() + 1, self.codes(t));
        let count = f.axis(t, 0)?.values.len();
        Some(if n == 1 {
            (0..count).map(|i| code_ln(code_at(codes, i))).collect()
        } else {
            (0..count).map(|i| f.eval_axis(table, codes, &probes[..n], &lns, 1, i * table.strides[0])).collect()
        })
    }

    /// Interpolate `curve` (of [`Envelope::curve_ln`] on table `t`) at `x` along the table's
    /// first axis, `ln(ns)`; `None` for a non-positive or non-finite `x`.
    pub(super) fn eval_curve(&self, t: usize, curve: &[Option<f64>], x: f64) -> Option<f64> {
        if !positive(x) {
            return None;
        }
        let axis = self.0.axis(t, 0)?;
        interp_ln(&axis.ln, &Probe::new(&axis.values, x), self.0.powers[0], |i| curve.get(i).copied().flatten())
    }
}

/// Code `i` of `bytes` (little-endian u16s).
fn code_at(bytes: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])
}

/// Most axes a table may have (GEMM: m, n, k).
const MAX_AXES: usize = 3;

/// `ln(latency in ns)` of a stored code: `code / 2048` (a code decodes to `0.001 · exp(code /
/// 2048)` µs, i.e. `exp(code / 2048)` ns); `None` for `0xFFFF`.
fn code_ln(code: u16) -> Option<f64> {
    (code != UNMEASURED).then(|| f64::from(code) / 2048.0)
}

/// Microseconds from `ln(ns)`: `0.001 · exp(L)`, the decoding of [`decode_us`], so a measured
/// point comes back bit for bit.
pub(crate) fn to_us(ln_ns: f64) -> f64 {
    0.001 * ln_ns.exp()
}

fn num(path: &str, k: &Key, what: &str) -> Result<f64> {
    match k {
        Key::Num(v) if *v > 0.0 => Ok(*v),
        _ => Err(malformed(path, format!("{what} key {k:?} is not a positive number"))),
    }
}

/// Most exact keys an op may have.
const MAX_EXACT: usize = 8;

/// Group the tables by their exact keys and index them by the numeric keys. Rows are sorted
/// by each exact key's rank among its column's `distinct` values (sorted as [`cmp_key`] orders
/// them, so the groups come out in the order [`KernelFile::find`] searches), then by the outer
/// and inner keys.
fn group(path: &str, spec: &OpSpec, tables: &[Table], distinct: &[Vec<Key>]) -> Result<Vec<Group>> {
    if spec.exact > MAX_EXACT {
        return Err(malformed(path, format!("more than {MAX_EXACT} exact keys")));
    }
    // (exact keys' ranks, outer, inner, table)
    type Row = ([u32; MAX_EXACT], f64, f64, usize);
    let mut rows: Vec<Row> = Vec::with_capacity(tables.len());
    for (i, t) in tables.iter().enumerate() {
        let inner = spec.inner.map(|c| num(path, &t.keys[c], spec.keys[c])).transpose()?.unwrap_or(1.0);
        let outer = spec.outer.map(|c| num(path, &t.keys[c], spec.keys[c])).transpose()?.unwrap_or(1.0);
        let mut ranks = [0u32; MAX_EXACT];
        for (c, rank) in ranks.iter_mut().enumerate().take(spec.exact) {
            let at = distinct[c].binary_search_by(|d| cmp_key(d, &as_q(&t.keys[c])));
            *rank = at.unwrap_or_else(|i| i) as u32;
        }
        rows.push((ranks, outer, inner, i));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.total_cmp(&b.2)));
    let mut groups: Vec<Group> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let exact = rows[start].0;
        let end = start + rows[start..].iter().take_while(|r| r.0 == exact).count();
        let mut outer = Vec::new();
        let mut levels = Vec::new();
        let mut s = start;
        while s < end {
            let o = rows[s].1;
            let e = s + rows[s..end].iter().take_while(|r| r.1 == o).count();
            let mut inner: Vec<f64> = Vec::new();
            let mut tabs: Vec<usize> = Vec::new();
            for r in &rows[s..e] {
                if inner.last() == Some(&r.2) {
                    let Some(c) = spec.tie else {
                        let keys = &tables[r.3].keys[..spec.exact];
                        return Err(malformed(path, format!("two tables for one key ({keys:?}, {o}, {})", r.2)));
                    };
                    if let Some(last) = tabs.last_mut() {
                        let (new, old) = (&tables[r.3].keys[c], &tables[*last].keys[c]);
                        if num(path, new, spec.keys[c])? > num(path, old, spec.keys[c])? {
                            *last = r.3;
                        }
                    }
                    continue;
                }
                inner.push(r.2);
                tabs.push(r.3);
            }
            outer.push(o);
            levels.push(Level { inner: Axis::new(inner), tables: tabs });
            s = e;
        }
        let exact_keys = tables[rows[start].3].keys[..spec.exact].to_vec();
        groups.push(Group { exact: exact_keys, outer: Axis::new(outer), levels });
        start = end;
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    static SPEC: OpSpec = OpSpec {
        name: "test",
        keys: &["op_name", "num_gpus"],
        exact: 1,
        inner: Some(1),
        outer: None,
        axes: &["a", "b"],
        tie: None,
        envelope: &[0],
    };

    fn file(header: &str, codes: &[u16]) -> &'static [u8] {
        let mut v = header.as_bytes().to_vec();
        v.extend(codes.iter().flat_map(|c| c.to_le_bytes()));
        Box::leak(v.into_boxed_slice())
    }

    const HEADER: &str = "llm-ledger-kernel-table v1\n# comment\nkeys op_name num_gpus\naxes a b\nvalues latency_us\n\
                          table x 2 | 1 2 | 1 4 8\ntable x 4 | = | =\ndata 12\n";
    // Codes: 0 → 0.001 µs, 2048 → 0.001·e, 4096 → 0.001·e², 0xFFFF unmeasured.
    const CODES: [u16; 12] = [0, 2048, 4096, 2048, 4096, 6144, 0, 0, 0, 0, 0xFFFF, 0];

    #[test]
    fn suffix_min_is_the_minimum_over_every_later_cell_of_the_axes() {
        static SPEC3: OpSpec = OpSpec {
            name: "test",
            keys: &["op_name", "num_gpus"],
            exact: 1,
            inner: Some(1),
            outer: None,
            axes: &["a", "b", "c"],
            tie: None,
            envelope: &[0],
        };
        let header = "llm-ledger-kernel-table v1\nkeys op_name num_gpus\naxes a b c\nvalues latency_us\n\
                      table x 2 | 1 2 3 | 1 4 | 1 2 4 8\ndata 24\n";
        // Codes in no order, two unmeasured.
        let codes: Vec<u16> =
            (0..24u32).map(|i| if i % 7 == 3 { 0xFFFF } else { ((i * 4099) % 9000) as u16 }).collect();
        let f = KernelFile::parse("t", &SPEC3, file(header, &codes)).unwrap();
        for axes in [&[0usize][..], &[1], &[2], &[0, 1], &[0, 2]] {
            let env = f.suffix_min(0, axes);
            for (a, b, c) in (0..3).flat_map(|a| (0..2).flat_map(move |b| (0..4).map(move |c| (a, b, c)))) {
                // Brute force: the smallest code at index ≥ on every axis of `axes`, equal on the others.
                let mut want = 0xFFFFu16;
                for (a2, b2, c2) in (0..3).flat_map(|a| (0..2).flat_map(move |b| (0..4).map(move |c| (a, b, c)))) {
                    let idx = [(a, a2), (b, b2), (c, c2)];
                    let later =
                        idx.iter().enumerate().all(|(d, &(i, j))| if axes.contains(&d) { j >= i } else { j == i });
                    if later {
                        want = want.min(codes[a2 * 8 + b2 * 4 + c2]);
                    }
                }
                assert_eq!(code_at(&env, a * 8 + b * 4 + c), want, "axes {axes:?} at {a} {b} {c}");
            }
        }
    }

    #[test]
    fn parses_and_reads_cells() {
        let f = KernelFile::parse("t", &SPEC, file(HEADER, &CODES)).unwrap();
        assert_eq!((f.tables.len(), f.cells, f.measured()), (2, 12, 11));
        assert_eq!(f.cell(0, &[1, 2]), decode_us(6144));
        assert_eq!(f.cell(1, &[1, 1]), None);
        assert_eq!(f.tables[0].axes[1], f.tables[1].axes[1], "`=` shares the axis");
        assert_eq!(f.axis(1, 1).unwrap().values, [1.0, 4.0, 8.0]);
        // On a point: exact. Between b = 1 and 4 at a = 1, b = 2: half-way in log b, so
        // exp(mean of the logs) = 0.001 · e^0.5.
        assert_eq!(f.eval(0, &[2.0, 8.0]), decode_us(6144));
        let v = f.eval(0, &[1.0, 2.0]).unwrap();
        assert!((v - 0.001 * 0.5f64.exp()).abs() < 1e-15, "{v}");
        // The unmeasured cell (a = 2, b = 4) of table 1: its measured neighbours b = 1 and 8.
        assert_eq!(f.eval(1, &[2.0, 4.0]), decode_us(0));
        let g = f.find(&[Q::S("x")]).unwrap();
        assert_eq!(g.levels[0].inner.values, [2.0, 4.0]);
        assert!(f.find(&[Q::S("y")]).is_none());
        assert!(f.find(&[Q::N(1.0)]).is_none());
        // GPU count 3 between 2 and 4 (log space); 8 is beyond: not extrapolated.
        let at = |n: f64| f.eval_group(g, n, 1.0, false, |t| f.eval_ln(t, &[2.0, 8.0]));
        assert!(at(3.0).is_some());
        assert_eq!(at(8.0), None);
    }

    #[test]
    fn malformed_files_are_errors() {
        let bad: Vec<(String, Vec<u16>)> = vec![
            (HEADER.replace("v1", "v2"), CODES.to_vec()),
            (HEADER.replace("data 12", "data 13"), CODES.to_vec()),
            (HEADER.to_string(), CODES[..11].to_vec()),
            (HEADER.to_string(), [&CODES[..], &[0]].concat()),
            (HEADER.replace("data 12\n", ""), vec![]),
            (HEADER.replace("table x 2 | 1 2 | 1 4 8", "table x 2 | = | 1 4 8"), CODES.to_vec()),
            (HEADER.replace("| 1 4 8", "| 1 8 4"), CODES.to_vec()),
            (HEADER.replace("| 1 4 8", "| 0 4 8"), CODES.to_vec()),
            (HEADER.replace("| 1 4 8", "| 1 4 x"), CODES.to_vec()),
            (HEADER.replace("| 1 4 8", "|"), CODES.to_vec()),
            (HEADER.replace("table x 4 | = | =", "table x 4 | ="), CODES.to_vec()),
            (HEADER.replace("table x 4", "table x 2"), CODES.to_vec()),
            (HEADER.replace("table x 4", "table x four"), CODES.to_vec()),
            (HEADER.replace("table x 4", "table x"), CODES.to_vec()),
            (HEADER.replace("axes a b", "axes a c"), CODES.to_vec()),
            (HEADER.replace("keys op_name", "keys kernel"), CODES.to_vec()),
            (HEADER.replace("values latency_us", "values latency_ms"), CODES.to_vec()),
            (HEADER.replace("# comment", "bogus line"), CODES.to_vec()),
            (HEADER.replace("data 12", "data twelve"), CODES.to_vec()),
            (HEADER.replace("| 1 2 |", "| 1 1e400 |"), CODES.to_vec()),
        ];
        for (i, (h, c)) in bad.iter().enumerate() {
            let e = KernelFile::parse("t.bin", &SPEC, file(h, c)).unwrap_err();
            assert!(e.to_string().starts_with("malformed kernel table t.bin: "), "case {i}: {e}");
        }
        // Not UTF-8 in the header.
        let mut v = HEADER.as_bytes().to_vec();
        v[30] = 0xFF;
        assert!(KernelFile::parse("t", &SPEC, Box::leak(v.into_boxed_slice())).is_err());
    }

    proptest! {
        /// Any byte flipped or any cut of a valid file: an error or a file, never a panic, and
        /// lookups on whatever parses never panic either.
        #[test]
        fn corrupted_files_never_panic(at in 0usize..200, byte in any::<u8>(), cut in 0usize..300) {
            let mut v = file(HEADER, &CODES).to_vec();
            let n = v.len();
            v[at % n] = byte;
            v.truncate(cut.max(1));
            if let Ok(f) = KernelFile::parse("t", &SPEC, Box::leak(v.into_boxed_slice())) {
                for t in 0..f.tables.len() {
                    let _ = f.eval(t, &[1.5, 3.0]);
                    let _ = f.eval(t, &[100.0, 100.0]);
                }
                for g in &f.groups {
                    let _ = f.eval_group(g, 3.0, 1.0, false, |t| f.eval_ln(t, &[1.0, 1.0]));
                }
            }
        }
    }
}
