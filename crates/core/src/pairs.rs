//! Text inputs as `(key, value)` pairs (a URL query, a Python call's keyword arguments) into a
//! request struct of optional text fields ([`crate::ScenarioRequest`],
//! [`crate::serving::ServingRequest`]): every front end that is not clap reads its inputs through
//! [`from_pairs`], so an unknown or repeated key is refused by the struct's own derive
//! (`deny_unknown_fields`), with its name, and every value reaches the one resolver as text.

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// Deserialise a struct of optional text fields from decoded `(key, value)` pairs, as they are: an
/// unknown or repeated key is refused by the struct's derive, with its name.
pub fn from_pairs<'a, T, I>(pairs: I) -> Result<T, de::value::Error>
where
    T: Deserialize<'a>,
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    /// One value: text, and `Some` of it for an optional field.
    struct Text<'a>(&'a str);
    impl<'de> de::IntoDeserializer<'de, de::value::Error> for Text<'de> {
        type Deserializer = Self;
        fn into_deserializer(self) -> Self {
            self
        }
    }
    impl<'de> Deserializer<'de> for Text<'de> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            v.visit_borrowed_str(self.0)
        }
        fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            v.visit_some(self)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
            unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
        }
    }
    // Deserialising the map also checks that every pair was taken.
    T::deserialize(de::value::MapDeserializer::new(pairs.into_iter().map(|(k, v)| (k, Text(v)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScenarioRequest;

    #[test]
    fn pairs_fill_the_request_and_unknown_or_repeated_keys_are_refused() {
        let r: ScenarioRequest = from_pairs([("batch", "64"), ("kv", "fp8")]).unwrap();
        assert_eq!((r.batch.as_deref(), r.kv.as_deref(), r.ctx), (Some("64"), Some("fp8"), None));
        let e = from_pairs::<ScenarioRequest, _>([("bacth", "1")]).unwrap_err().to_string();
        assert!(e.starts_with("unknown field `bacth`, expected one of `model`"), "{e}");
        let e = from_pairs::<ScenarioRequest, _>([("batch", "1"), ("batch", "2")]).unwrap_err().to_string();
        assert_eq!(e, "duplicate field `batch`");
    }
}
