//! Serde helpers that store UTC times as `i64` microseconds since the Unix
//! epoch: compact in the binary log, exact, and independent of chrono's own
//! string encoding.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Converts microseconds since the epoch to a time, if in chrono's range.
pub(crate) fn from_micros(us: i64) -> Option<DateTime<Utc>> {
    DateTime::<Utc>::from_timestamp_micros(us)
}

pub(crate) fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    if s.is_human_readable() {
        t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true).serialize(s)
    } else {
        t.timestamp_micros().serialize(s)
    }
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    if d.is_human_readable() {
        let s = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&s).map(|t| t.with_timezone(&Utc)).map_err(serde::de::Error::custom)
    } else {
        let us = i64::deserialize(d)?;
        from_micros(us).ok_or_else(|| serde::de::Error::custom("time out of range"))
    }
}

pub(crate) mod option {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct W(#[serde(with = "super")] DateTime<Utc>);

    pub(crate) fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        t.map(W).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
    }
}
