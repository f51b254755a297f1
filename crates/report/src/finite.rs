//! The safety net under every report: a NaN or an infinity in a report is an internal error,
//! caught before anything is printed. [`check`] walks a value's serde form (the JSON every report
//! renders from) with a serializer that records where the first non-finite float is, as a path
//! (`rows[3].time_s`). serde_json would have written `null` for it, so the check runs before that.
//!
//! The walk keeps no path while it goes: a non-finite float stops it, and each field, element and
//! variant it returns through adds its step to the error, so a finite report (every report, but
//! for a bug) is walked without an allocation per value.

use llm_ledger_core::error::Error;
use serde::ser::{self, Serialize};
use std::fmt;

/// `Ok` when every float in `value`'s serde form is finite; otherwise [`Error::NonFinite`] naming
/// the first one's path (`root` prefixes it, e.g. `point`; `""` for none).
pub fn check<T: Serialize + ?Sized>(root: &str, value: &T) -> Result<(), Error> {
    match value.serialize(Walker) {
        Ok(()) => Ok(()),
        Err(Found::NonFinite(steps)) => Err(Error::NonFinite { path: path(root, &steps) }),
        // Serialising a report cannot fail otherwise; a custom error is reported as found at the root.
        Err(Found::Custom(m)) => Err(Error::NonFinite { path: format!("{root} ({m})") }),
    }
}

/// One step of the path from the root to a value. Field names are the serde form's own
/// `&'static str`s and indices are numbers.
#[derive(Debug)]
enum Step {
    /// A struct field or an enum variant.
    Field(&'static str),
    /// An element of a sequence (or a map entry without a key text), by position.
    Index(usize),
    /// A map entry, by its key's JSON text.
    Key(String),
}

/// `root` then `steps` (innermost first, as the walk returned through them), as
/// `root.rows[3].time_s`; `the value` for an empty path.
fn path(root: &str, steps: &[Step]) -> String {
    let mut s = root.to_string();
    let name = |s: &mut String, n: &str| {
        if !s.is_empty() && !n.starts_with('[') {
            s.push('.');
        }
        s.push_str(n);
    };
    for step in steps.iter().rev() {
        match step {
            Step::Field(n) => name(&mut s, n),
            Step::Key(k) => name(&mut s, k),
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    if s.is_empty() {
        s.push_str("the value");
    }
    s
}

/// Why the walk stopped.
#[derive(Debug)]
enum Found {
    /// A non-finite float, at the path of these steps (innermost first).
    NonFinite(Vec<Step>),
    Custom(String),
}

impl Found {
    /// The same stop, one step further out.
    fn at(mut self, step: Step) -> Found {
        if let Found::NonFinite(steps) = &mut self {
            steps.push(step);
        }
        self
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::NonFinite(steps) => write!(f, "non-finite value in {}", path("", steps)),
            Found::Custom(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        Found::Custom(msg.to_string())
    }
}

/// The walk: a serializer that writes nothing.
struct Walker;

impl Walker {
    fn float(v: f64) -> Result<(), Found> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(Found::NonFinite(Vec::new()))
        }
    }
}

/// A sequence, tuple, struct or map in progress: counts its elements for the path.
struct Compound {
    index: usize,
    /// The variant whose fields these are, if any.
    variant: Option<&'static str>,
    /// The JSON text of the map entry in progress's key (a buffer kept for the map's entries).
    key: Vec<u8>,
}

impl Compound {
    fn new(variant: Option<&'static str>) -> Self {
        Compound { index: 0, variant, key: Vec::new() }
    }

    /// Walk `v`, one of this compound's values, at the step `step` names (called only for the
    /// path of a non-finite value).
    fn within<T: Serialize + ?Sized>(&self, step: impl FnOnce() -> Step, v: &T) -> Result<(), Found> {
        v.serialize(Walker).map_err(|f| {
            let f = f.at(step());
            match self.variant {
                Some(name) => f.at(Step::Field(name)),
                None => f,
            }
        })
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let index = self.index;
        self.index += 1;
        self.within(|| Step::Index(index), v)
    }
}

macro_rules! leaf {
    ($($name:ident: $t:ty),*) => {
        $(fn $name(self, _: $t) -> Result<(), Found> { Ok(()) })*
    };
}

impl ser::Serializer for Walker {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Compound;
    type SerializeTuple = Compound;
    type SerializeTupleStruct = Compound;
    type SerializeTupleVariant = Compound;
    type SerializeMap = Compound;
    type SerializeStruct = Compound;
    type SerializeStructVariant = Compound;

    leaf!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
        serialize_u128: u128, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8]);

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        Walker::float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        Walker::float(v)
    }
    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Found> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), Found> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Found> {
        v.serialize(self).map_err(|f| f.at(Step::Field(variant)))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound, Found> {
        Ok(Compound::new(None))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound, Found> {
        Ok(Compound::new(None))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound, Found> {
        Ok(Compound::new(None))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound, Found> {
        Ok(Compound::new(Some(variant)))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound, Found> {
        Ok(Compound::new(None))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound, Found> {
        Ok(Compound::new(None))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound, Found> {
        Ok(Compound::new(Some(variant)))
    }
}

macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Compound {
            type Ok = ();
            type Error = Found;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
                self.element(v)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        })*
    };
}

sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

macro_rules! fields {
    ($($trait:ident),*) => {
        $(impl ser::$trait for Compound {
            type Ok = ();
            type Error = Found;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> Result<(), Found> {
                self.within(|| Step::Field(name), v)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Found> {
        // Keys are named by their JSON text where they have one (`"fp8"`), else by position.
        self.key.clear();
        if serde_json::to_writer(&mut self.key, k).is_err() {
            self.key.clear();
        }
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let index = self.index;
        self.index += 1;
        let step = || match String::from_utf8_lossy(&self.key).trim_matches('"') {
            "" => Step::Index(index),
            k => Step::Key(k.to_string()),
        };
        self.within(step, v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Row {
        op: &'static str,
        time_s: f64,
        peak: Option<f64>,
    }

    #[derive(Serialize)]
    struct Report {
        rows: Vec<Row>,
        by_format: BTreeMap<String, f64>,
        step_time_s: f64,
    }

    fn report(nan_at: usize) -> Report {
        let rows = (0..4)
            .map(|i| Row { op: "q_proj", time_s: if i == nan_at { f64::NAN } else { 1.0 }, peak: Some(2.0) })
            .collect();
        Report { rows, by_format: [("bf16".to_string(), 1.0)].into(), step_time_s: 1.0 }
    }

    #[test]
    fn a_nan_anywhere_is_refused_with_its_path() {
        assert_eq!(check("report", &report(9)), Ok(()));
        let e = check("report", &report(3)).unwrap_err();
        assert_eq!(e, Error::NonFinite { path: "report.rows[3].time_s".into() });
        assert_eq!(
            e.to_string(),
            "internal error: non-finite value in report.rows[3].time_s; please report this with the command line"
        );
        let mut r = report(9);
        r.by_format.insert("fp8".into(), f64::INFINITY);
        assert_eq!(check("report", &r).unwrap_err(), Error::NonFinite { path: "report.by_format.fp8".into() });
        r.rows[1].peak = Some(f64::NEG_INFINITY);
        assert_eq!(check("r", &r).unwrap_err(), Error::NonFinite { path: "r.rows[1].peak".into() });
    }

    #[test]
    fn a_streamed_sweep_point_holding_a_nan_is_refused() {
        use crate::sweep::{SweepPlan, SweepView};
        use crate::Format;
        let plan =
            SweepPlan::new(llm_ledger_core::Scenario::default_decode(), crate::sweep::tests::axes("1,2", "2048"), 2e9)
                .unwrap();
        let mut points = plan.points(10).unwrap();
        let view = SweepView::new(Format::Csv);
        assert!(view.point(&points[1], 1).is_ok());
        points[1].tokens_per_s = f64::NAN;
        assert_eq!(view.point(&points[1], 1).unwrap_err(), Error::NonFinite { path: "points[1].tokens_per_s".into() });
        assert!(view.render_all(&plan.head, &points).is_err());
    }

    /// Counts this thread's heap allocations (the test binary's allocator: the system's).
    struct Counting;

    thread_local! {
        static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    // SAFETY: every call is passed on to the system allocator unchanged; counting touches only
    // a const-initialised thread-local cell, which allocates nothing.
    unsafe impl std::alloc::GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
            std::alloc::System.alloc(layout)
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            std::alloc::System.dealloc(ptr, layout)
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    fn allocations_of(f: impl FnOnce()) -> usize {
        let before = ALLOCATIONS.with(|c| c.get());
        f();
        ALLOCATIONS.with(|c| c.get()) - before
    }

    #[test]
    fn checking_a_finite_report_allocates_nothing_per_value() {
        // The path is written out only for a non-finite value: a report of 1,000 rows and 1,000
        // map entries costs the walk no more allocations than one of 2 (a map's key buffer).
        let rows = |n: usize| Report {
            rows: (0..n).map(|_| Row { op: "q_proj", time_s: 1.0, peak: Some(2.0) }).collect(),
            by_format: (0..n).map(|i| (format!("format {i}"), 1.0)).collect(),
            step_time_s: 1.0,
        };
        let (small, large) = (rows(2), rows(1000));
        let a = allocations_of(|| assert_eq!(check("report", &small), Ok(())));
        let b = allocations_of(|| assert_eq!(check("report", &large), Ok(())));
        assert!(a <= 2 && b == a, "{a} allocations for 2 rows, {b} for 1,000");
    }
}
