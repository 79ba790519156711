//! An order-preserving JSON value, its pretty printer (the layout of
//! `JSON.stringify(value, null, 1)`, so every committed vector file looks
//! alike), and the first-difference report `check` prints.
//!
//! `serde_json::Value` sorts object keys unless a workspace-wide feature is
//! turned on, and the vectors' field order is part of their readability, so
//! the generator builds and compares this type instead.

use std::fmt::Write as _;

use cairn_core::Hash;
use cairn_core::hex::to_hex;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A JSON value whose objects keep their insertion order. Numbers are the
/// non-negative integers the vectors use (sizes, indices, arities) and, for
/// decoding mutated proofs only, negative ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(i128),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(key, value)` pairs, in order.
    pub fn obj<K: Into<String>>(fields: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Obj(fields.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// `value` as 0x-hex.
    pub fn hash(value: &Hash) -> Json {
        Json::Str(to_hex(value))
    }

    /// `value` as 0x-hex, or null.
    pub fn hash_or_null(value: Option<Hash>) -> Json {
        value.as_ref().map_or(Json::Null, Json::hash)
    }

    /// Bytes as `0x`-prefixed lowercase hex of any length.
    pub fn bytes(value: &[u8]) -> Json {
        let mut out = String::with_capacity(2 + 2 * value.len());
        out.push_str("0x");
        for byte in value {
            let _ = write!(out, "{byte:02x}");
        }
        Json::Str(out)
    }

    /// Parses JSON text, keeping object key order.
    pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The value of `key` in an object, if any.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of `key` in an object, mutably, if any.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Obj(fields) => fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as compact JSON text.
    pub fn to_compact(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("serialising plain data: {e}"))
    }

    /// The value as the committed files hold it: one-space indentation, `": "`
    /// after keys, a trailing newline.
    pub fn to_pretty(&self) -> String {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        self.serialize(&mut serializer)
            .unwrap_or_else(|e| unreachable!("serialising plain data: {e}"));
        let mut text =
            String::from_utf8(out).unwrap_or_else(|e| unreachable!("serde_json writes UTF-8: {e}"));
        text.push('\n');
        text
    }
}

impl From<u64> for Json {
    fn from(value: u64) -> Json {
        Json::Num(i128::from(value))
    }
}

impl From<usize> for Json {
    fn from(value: usize) -> Json {
        Json::Num(value as i128)
    }
}

impl From<&str> for Json {
    fn from(value: &str) -> Json {
        Json::Str(value.to_owned())
    }
}

impl From<String> for Json {
    fn from(value: String) -> Json {
        Json::Str(value)
    }
}

impl<T: Into<Json>> From<Vec<T>> for Json {
    fn from(values: Vec<T>) -> Json {
        Json::Arr(values.into_iter().map(Into::into).collect())
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Num(n) => serializer.serialize_i128(*n),
            Json::Str(s) => serializer.serialize_str(s),
            Json::Arr(values) => {
                let mut seq = serializer.serialize_seq(Some(values.len()))?;
                for value in values {
                    seq.serialize_element(value)?;
                }
                seq.end()
            }
            Json::Obj(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        struct JsonVisitor;

        impl<'de> Visitor<'de> for JsonVisitor {
            type Value = Json;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value with integer numbers")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Num(i128::from(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Num(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
                Err(E::custom(format!(
                    "non-integer number {v} in a vector file"
                )))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut values = Vec::new();
                while let Some(value) = seq.next_element()? {
                    values.push(value);
                }
                Ok(Json::Arr(values))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut fields = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    fields.push((key, value));
                }
                Ok(Json::Obj(fields))
            }
        }

        deserializer.deserialize_any(JsonVisitor)
    }
}

/// The path and values of the first difference between the committed value
/// `a` and the freshly computed `b`, or `None` if they are equal.
pub fn first_difference(a: &Json, b: &Json, path: &str) -> Option<String> {
    let show = |v: &Json| {
        let text = v.to_compact();
        if text.chars().count() > 200 {
            format!("{}...", text.chars().take(197).collect::<String>())
        } else {
            text
        }
    };
    let here = if path.is_empty() { "(top)" } else { path };
    match (a, b) {
        (Json::Arr(xs), Json::Arr(ys)) => {
            for i in 0..xs.len().max(ys.len()) {
                let sub = format!("{path}[{i}]");
                match (xs.get(i), ys.get(i)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = first_difference(x, y, &sub) {
                            return Some(d);
                        }
                    }
                    (None, _) => return Some(format!("{sub}: missing from the committed file")),
                    (_, None) => {
                        return Some(format!(
                            "{sub}: in the committed file but no longer generated"
                        ));
                    }
                }
            }
            None
        }
        (Json::Obj(xs), Json::Obj(ys)) => {
            for (key, y) in ys {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match a.get(key) {
                    Some(x) => {
                        if let Some(d) = first_difference(x, y, &sub) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{sub}: missing from the committed file")),
                }
            }
            for (key, _) in xs {
                if b.get(key).is_none() {
                    let sub = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    return Some(format!(
                        "{sub}: in the committed file but no longer generated"
                    ));
                }
            }
            let xkeys: Vec<_> = xs.iter().map(|(k, _)| k).collect();
            let ykeys: Vec<_> = ys.iter().map(|(k, _)| k).collect();
            (xkeys != ykeys).then(|| {
                format!("{here}: key order differs: committed {xkeys:?}, computed {ykeys:?}")
            })
        }
        _ if a == b => None,
        _ => Some(format!(
            "{here}: committed {} != computed {}",
            show(a),
            show(b)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_printing_matches_json_stringify_with_one_space() {
        let value = Json::obj([
            ("a", Json::from(1u64)),
            ("b", Json::Arr(vec![])),
            (
                "c",
                Json::obj([("d", Json::Null), ("e", Json::from(vec!["x"]))]),
            ),
        ]);
        let want = "{\n \"a\": 1,\n \"b\": [],\n \"c\": {\n  \"d\": null,\n  \"e\": [\n   \"x\"\n  ]\n }\n}\n";
        assert_eq!(value.to_pretty(), want);
        assert_eq!(Json::parse(want).unwrap(), value);
    }

    #[test]
    fn the_first_difference_names_its_path() {
        let a = Json::parse(r#"{"x": [1, {"y": 2}]}"#).unwrap();
        let b = Json::parse(r#"{"x": [1, {"y": 3}]}"#).unwrap();
        assert_eq!(
            first_difference(&a, &b, "").unwrap(),
            "x[1].y: committed 2 != computed 3"
        );
        assert_eq!(first_difference(&a, &a, ""), None);
    }
}
