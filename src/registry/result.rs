//! Result records: a finished peer's numbers (e.g. how many sequencer values a client received),
//! left in the registry for the process that checks the run as a whole.

use super::{live, Registry};
use crate::error::{Error, Result};

/// Numbers a peer published when it finished, and the run that published them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRecord {
    /// Run id of the publisher.
    pub run_id: u64,
    fields: Vec<(String, u64)>,
}

impl ResultRecord {
    /// The field `key`, if the record has it.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.fields.iter().find(|(k, _)| k == key).map(|f| f.1)
    }
}

impl Registry {
    /// Publishes `fields` as `name`'s result. Like a done marker it is not deleted when this
    /// process leaves (it expires after a minute), so the checker may read it later.
    pub fn publish_result(&self, name: &str, fields: &[(&str, u64)]) -> Result<()> {
        let key = self.key(&format!("{name}-result"))?;
        let mut value = format!("result {:016x}", self.run_id());
        for (k, v) in fields {
            if k.is_empty() || k.contains([' ', '=']) {
                return Err(Error::config(format!("'{k}' is not a result field name")));
            }
            value.push_str(&format!(" {k}={v}"));
        }
        self.with_conn(
            |c| c.set(&key, value.as_bytes(), live::DONE_TTL_S),
            &format!("publishing {name}'s result"),
        )
    }

    /// `name`'s result record, if one is there.
    pub fn lookup_result(&self, name: &str) -> Result<Option<ResultRecord>> {
        let key = self.key(&format!("{name}-result"))?;
        let raw = self.with_conn(|c| c.get(&key), &format!("looking up {name}'s result"))?;
        let Some(raw) = raw else { return Ok(None) };
        let malformed = || Error::protocol(format!("{name}'s result record is malformed"));
        let text = String::from_utf8(raw).map_err(|_| malformed())?;
        let mut words = text.split(' ');
        if words.next() != Some("result") {
            return Err(malformed());
        }
        let run_id = words
            .next()
            .and_then(|r| u64::from_str_radix(r, 16).ok())
            .ok_or_else(malformed)?;
        let fields = words
            .map(|w| {
                let (k, v) = w.split_once('=')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(malformed)?;
        Ok(Some(ResultRecord { run_id, fields }))
    }
}
