//! JSON objects on one line, without a serializer dependency: keys are ours, values are numbers,
//! booleans, short strings, and objects or arrays of objects built the same way.

use std::fmt::Write;

/// A flat JSON object under construction.
#[derive(Debug, Default, Clone)]
pub struct JsonObject {
    body: String,
}

impl JsonObject {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&mut self, k: &str) {
        if !self.body.is_empty() {
            self.body.push(',');
        }
        escape_into(&mut self.body, k);
        self.body.push(':');
    }

    /// Adds a string field.
    pub fn str(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        escape_into(&mut self.body, v);
        self
    }

    /// Adds an integer field.
    pub fn int(mut self, k: &str, v: u64) -> Self {
        self.key(k);
        let _ = write!(self.body, "{v}");
        self
    }

    /// Adds a number field when there is a value.
    pub fn opt_num(self, k: &str, v: Option<f64>) -> Self {
        match v {
            Some(v) => self.num(k, v),
            None => self,
        }
    }

    /// Adds a number field (non-finite values become null).
    pub fn num(mut self, k: &str, v: f64) -> Self {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.body, "{v}");
        } else {
            self.body.push_str("null");
        }
        self
    }

    /// Adds a boolean field.
    pub fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k);
        self.body.push_str(if v { "true" } else { "false" });
        self
    }

    /// Adds a nested object.
    pub fn object(mut self, k: &str, v: &JsonObject) -> Self {
        self.key(k);
        self.body.push_str(&v.finish());
        self
    }

    /// Adds an array of objects.
    pub fn objects(mut self, k: &str, vs: &[JsonObject]) -> Self {
        self.key(k);
        self.body.push('[');
        for (i, v) in vs.iter().enumerate() {
            if i > 0 {
                self.body.push(',');
            }
            self.body.push_str(&v.finish());
        }
        self.body.push(']');
        self
    }

    /// The object as one line of text.
    pub fn finish(&self) -> String {
        format!("{{{}}}", self.body)
    }
}

fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
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
            r#"{"s":"a\u000ab"}"#
        );
    }
}
