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
    let mut walker = Walker { path: vec![root.to_string()] };
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

struct Walker {
    path: Vec<String>,
}

impl Walker {
    fn here(&self) -> String {
        let mut s = String::new();
        for p in &self.path {
            if !s.is_empty() && !p.starts_with('[') {
                s.push('.');
            }
            s.push_str(p);
        }
        s
    }

    fn float(&mut self, v: f64) -> Result<(), Found> {
        match (v.is_finite(), self.here()) {
            (true, _) => Ok(()),
            (false, p) if p.is_empty() => Err(Found::NonFinite("the value".into())),
            (false, p) => Err(Found::NonFinite(p)),
        }
    }

    fn within<T: Serialize + ?Sized>(&mut self, segment: String, v: &T) -> Result<(), Found> {
        self.path.push(segment);
        let r = v.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// A sequence, tuple or map in progress: counts its elements for the path.
struct Compound<'a> {
    walker: &'a mut Walker,
    index: usize,
    key: Option<String>,
}

impl<'a> Compound<'a> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let segment = format!("[{}]", self.index);
        self.index += 1;
        self.walker.within(segment, v)
    }
}

macro_rules! leaf {
    ($($name:ident: $t:ty),*) => {
        $(fn $name(self, _: $t) -> Result<(), Found> { Ok(()) })*
    };
}

impl<'a> ser::Serializer for &'a mut Walker {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

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
        self.within(variant.to_string(), v)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound { walker: self, index: 0, key: None })
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound { walker: self, index: 0, key: None })
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound { walker: self, index: 0, key: None })
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        self.path.push(variant.to_string());
        Ok(Compound { walker: self, index: 0, key: Some(String::new()) })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound { walker: self, index: 0, key: None })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound { walker: self, index: 0, key: None })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        self.path.push(variant.to_string());
        Ok(Compound { walker: self, index: 0, key: Some(String::new()) })
    }
}

impl Compound<'_> {
    /// Close a variant's compound (it pushed the variant's name).
    fn close(self) -> Result<(), Found> {
        if self.key.is_some() {
            self.walker.path.pop();
        }
        Ok(())
    }
}

macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Compound<'_> {
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
        $(impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Found;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> Result<(), Found> {
                self.walker.within(name.to_string(), v)
            }
            fn end(self) -> Result<(), Found> {
                self.close()
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Found> {
        // Keys are named by their JSON text where they have one (`"fp8"`), else by position.
        self.key = Some(serde_json::to_string(k).map(|s| s.trim_matches('"').to_string()).unwrap_or_default());
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let key = self.key.take().filter(|k| !k.is_empty()).unwrap_or_else(|| format!("[{}]", self.index));
        self.index += 1;
        self.walker.within(key, v)
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
}
