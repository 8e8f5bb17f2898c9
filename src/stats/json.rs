//! JSON objects on one line, in the order their fields were added, through serde_json (keys
//! are ours; values are numbers, booleans, strings, and objects or arrays of objects built the
//! same way).

use serde_json::{Map, Number, Value};

/// A JSON object under construction; fields keep their insertion order.
#[derive(Debug, Default, Clone)]
pub struct JsonObject {
    fields: Map<String, Value>,
}

impl JsonObject {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    fn with(mut self, k: &str, v: Value) -> Self {
        self.fields.insert(k.to_owned(), v);
        self
    }

    /// Adds a string field.
    pub fn str(self, k: &str, v: &str) -> Self {
        self.with(k, Value::String(v.to_owned()))
    }

    /// Adds an integer field.
    pub fn int(self, k: &str, v: u64) -> Self {
        self.with(k, Value::Number(v.into()))
    }

    /// Adds a number field when there is a value.
    pub fn opt_num(self, k: &str, v: Option<f64>) -> Self {
        match v {
            Some(v) => self.num(k, v),
            None => self,
        }
    }

    /// Adds a number field (non-finite values, which JSON cannot carry, become null).
    pub fn num(self, k: &str, v: f64) -> Self {
        self.with(k, Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    /// Adds a boolean field.
    pub fn bool(self, k: &str, v: bool) -> Self {
        self.with(k, Value::Bool(v))
    }

    /// Adds a nested object.
    pub fn object(self, k: &str, v: &JsonObject) -> Self {
        self.with(k, Value::Object(v.fields.clone()))
    }

    /// Adds an array of objects.
    pub fn objects(self, k: &str, vs: &[JsonObject]) -> Self {
        let items = vs.iter().map(|v| Value::Object(v.fields.clone()));
        self.with(k, Value::Array(items.collect()))
    }

    /// Adds an array of strings.
    pub fn strs(self, k: &str, vs: &[&str]) -> Self {
        let items = vs.iter().map(|v| Value::String((*v).to_owned()));
        self.with(k, Value::Array(items.collect()))
    }

    /// Adds every field of `other`, in its order.
    pub fn merge(mut self, other: &JsonObject) -> Self {
        for (k, v) in &other.fields {
            self.fields.insert(k.clone(), v.clone());
        }
        self
    }

    /// The object as one line of text.
    pub fn finish(&self) -> String {
        // Serializing a map of JSON values cannot fail (keys are strings, numbers finite).
        serde_json::to_string(&self.fields).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_flat_objects_with_escapes() {
        let o = JsonObject::new()
            .str("bench", "rw-\"tput\"")
            .int("ops", 12)
            .num("mops", 0.5)
            .bool("summary", true);
        assert_eq!(
            o.finish(),
            r#"{"bench":"rw-\"tput\"","ops":12,"mops":0.5,"summary":true}"#
        );
        assert_eq!(
            JsonObject::new().num("x", f64::NAN).finish(),
            r#"{"x":null}"#
        );
        let inner = JsonObject::new().int("a", 1);
        assert_eq!(
            JsonObject::new()
                .object("o", &inner)
                .objects("l", &[inner.clone(), inner.clone()])
                .objects("e", &[])
                .finish(),
            r#"{"o":{"a":1},"l":[{"a":1},{"a":1}],"e":[]}"#
        );
        assert_eq!(
            JsonObject::new().str("s", "a\nb").finish(),
            r#"{"s":"a\nb"}"#
        );
        // Whatever we build parses back to the same fields.
        let v: serde_json::Value = serde_json::from_str(&o.finish()).unwrap();
        assert_eq!(v["bench"], "rw-\"tput\"");
        assert_eq!(v["mops"], 0.5);
    }
}
