//! The safety net under every report: a NaN or an infinity in a report is an internal error,
//! caught before anything is printed. [`check`] walks a value's serde form (the JSON every report
//! renders from) with a serializer that records where the first non-finite float is, as a path
//! (`rows[3].time_s`). serde_json would have written `null` for it, so the check runs before that.

use llm_ledger_core::error::Error;
use serde::ser::{self, Serialize};
use std::fmt;

/// `Ok` when every float in `value`'s serde form is finite; otherwise [`Error::NonFinite`] naming
/// the first one's path (`root` prefixes it, e.g. `point`; `""` for none).
pub fn check<T: Serialize + ?Sized>(root: &str, value: &T) -> Result<(), Error> {
    let mut walker = Walker { root, path: Vec::new() };
    match value.serialize(&mut walker) {
        Ok(()) => Ok(()),
        Err(Found::NonFinite(path)) => Err(Error::NonFinite { path }),
        // Serialising a report cannot fail otherwise; a custom error is reported as found at the root.
        Err(Found::Custom(m)) => Err(Error::NonFinite { path: format!("{root} ({m})") }),
    }
}

/// Why the walk stopped.
#[derive(Debug)]
enum Found {
    NonFinite(String),
    Custom(String),
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::NonFinite(p) => write!(f, "non-finite value in {p}"),
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

/// One step of the path from the root to the value being walked. Field names are the serde
/// form's own `&'static str`s and indices are numbers, so walking allocates nothing per value: the
/// path is written out only for the non-finite value it names.
enum Step {
    /// A struct field or an enum variant.
    Field(&'static str),
    /// An element of a sequence (or a map entry without a key text), by position.
    Index(usize),
    /// A map entry, by its key's JSON text.
    Key(String),
}

struct Walker<'r> {
    root: &'r str,
    path: Vec<Step>,
}

impl Walker<'_> {
    /// The path walked so far: `rows[3].time_s` (after the root, when there is one).
    fn here(&self) -> String {
        let mut s = self.root.to_string();
        let name = |s: &mut String, n: &str| {
            if !s.is_empty() && !n.starts_with('[') {
                s.push('.');
            }
            s.push_str(n);
        };
        for step in &self.path {
            match step {
                Step::Field(n) => name(&mut s, n),
                Step::Key(k) => name(&mut s, k),
                Step::Index(i) => s.push_str(&format!("[{i}]")),
            }
        }
        s
    }

    fn float(&mut self, v: f64) -> Result<(), Found> {
        if v.is_finite() {
            return Ok(());
        }
        match self.here() {
            p if p.is_empty() => Err(Found::NonFinite("the value".into())),
            p => Err(Found::NonFinite(p)),
        }
    }

    fn within<T: Serialize + ?Sized>(&mut self, step: Step, v: &T) -> Result<(), Found> {
        self.path.push(step);
        let r = v.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// A sequence, tuple or map in progress: counts its elements for the path.
struct Compound<'a, 'r> {
    walker: &'a mut Walker<'r>,
    index: usize,
    /// Whether it is a variant's (which pushed the variant's name).
    variant: bool,
    /// The key of the map entry in progress.
    key: Option<String>,
}

impl<'a, 'r> Compound<'a, 'r> {
    fn new(walker: &'a mut Walker<'r>, variant: bool) -> Self {
        Compound { walker, index: 0, variant, key: None }
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let step = Step::Index(self.index);
        self.index += 1;
        self.walker.within(step, v)
    }
}

macro_rules! leaf {
    ($($name:ident: $t:ty),*) => {
        $(fn $name(self, _: $t) -> Result<(), Found> { Ok(()) })*
    };
}

impl<'a, 'r> ser::Serializer for &'a mut Walker<'r> {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Compound<'a, 'r>;
    type SerializeTuple = Compound<'a, 'r>;
    type SerializeTupleStruct = Compound<'a, 'r>;
    type SerializeTupleVariant = Compound<'a, 'r>;
    type SerializeMap = Compound<'a, 'r>;
    type SerializeStruct = Compound<'a, 'r>;
    type SerializeStructVariant = Compound<'a, 'r>;

    leaf!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
        serialize_u128: u128, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8]);

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.float(v)
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
        self.within(Step::Field(variant), v)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a, 'r>, Found> {
        Ok(Compound::new(self, false))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a, 'r>, Found> {
        Ok(Compound::new(self, false))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a, 'r>, Found> {
        Ok(Compound::new(self, false))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a, 'r>, Found> {
        self.path.push(Step::Field(variant));
        Ok(Compound::new(self, true))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a, 'r>, Found> {
        Ok(Compound::new(self, false))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a, 'r>, Found> {
        Ok(Compound::new(self, false))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a, 'r>, Found> {
        self.path.push(Step::Field(variant));
        Ok(Compound::new(self, true))
    }
}

impl Compound<'_, '_> {
    /// Close a variant's compound (it pushed the variant's name).
    fn close(self) -> Result<(), Found> {
        if self.variant {
            self.walker.path.pop();
        }
        Ok(())
    }
}

macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Found;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
                self.element(v)
            }
            fn end(self) -> Result<(), Found> {
                self.close()
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
        $(impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Found;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> Result<(), Found> {
                self.walker.within(Step::Field(name), v)
            }
            fn end(self) -> Result<(), Found> {
                self.close()
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Found> {
        // Keys are named by their JSON text where they have one (`"fp8"`), else by position.
        self.key = Some(serde_json::to_string(k).map(|s| s.trim_matches('"').to_string()).unwrap_or_default());
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let step = match self.key.take().filter(|k| !k.is_empty()) {
            Some(k) => Step::Key(k),
            None => Step::Index(self.index),
        };
        self.index += 1;
        self.walker.within(step, v)
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
        let plan = SweepPlan::new(llm_ledger_core::Scenario::default_decode(), Some("1,2"), None, 2e9).unwrap();
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
        // The path is written out only for a non-finite value: a report of 1,000 rows costs the
        // walk no more allocations than one of 2 (the path's own stack, at most).
        let rows = |n: usize| Report {
            rows: (0..n).map(|_| Row { op: "q_proj", time_s: 1.0, peak: Some(2.0) }).collect(),
            by_format: BTreeMap::new(),
            step_time_s: 1.0,
        };
        let (small, large) = (rows(2), rows(1000));
        let a = allocations_of(|| assert_eq!(check("report", &small), Ok(())));
        let b = allocations_of(|| assert_eq!(check("report", &large), Ok(())));
        assert!(a <= 4 && b == a, "{a} allocations for 2 rows, {b} for 1,000");
    }
}
