//! One-line JSON objects with their fields in the documented order (the
//! README's "CLI JSON fields"). `serde_json` sorts object keys; reports are
//! easier to read in the order the help lists them, so objects are built
//! here field by field and values rendered by `serde_json`.

use cairn_core::Hash;
use cairn_core::hex::to_hex;
use serde_json::Value;

/// A JSON object under construction.
#[derive(Debug, Default)]
pub struct Object {
    text: String,
}

impl Object {
    /// An empty object.
    pub fn new() -> Object {
        Object::default()
    }

    fn key(&mut self, key: &str) {
        self.text.push(if self.text.is_empty() { '{' } else { ',' });
        self.text.push_str(&Value::from(key).to_string());
        self.text.push(':');
    }

    /// Adds `key` with a scalar, string or `null` (`None`) value.
    pub fn field(mut self, key: &str, value: impl Into<Value>) -> Object {
        self.key(key);
        self.text.push_str(&value.into().to_string());
        self
    }

    /// Adds `key` with a 32-byte value as 0x-hex, or `null`.
    pub fn hash(self, key: &str, value: Option<&Hash>) -> Object {
        self.field(key, value.map(to_hex))
    }

    /// Adds `key` with a value already rendered as JSON (an object or array
    /// built here).
    pub fn raw(mut self, key: &str, json: &str) -> Object {
        self.key(key);
        self.text.push_str(json);
        self
    }

    /// The object's text.
    pub fn finish(mut self) -> String {
        if self.text.is_empty() {
            self.text.push('{');
        }
        self.text.push('}');
        self.text
    }
}

/// A JSON array of already rendered values.
pub fn array(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_order_and_values_are_escaped() {
        let json = Object::new()
            .field("size", 3u64)
            .field("name", "a \"b\"")
            .field("none", None::<u64>)
            .hash("root", Some(&[1; 32]))
            .raw("list", &array(["1".to_owned(), "{}".to_owned()]))
            .finish();
        assert!(json.starts_with(r#"{"size":3,"name":"a \"b\"","none":null,"root":"0x0101"#));
        assert!(json.ends_with(r#"","list":[1,{}]}"#));
        let parsed: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["size"], 3);
        assert_eq!(Object::new().finish(), "{}");
    }
}
