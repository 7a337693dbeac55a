//! Which namespaces a door (an MCP server, a socket client) may touch.

use serde_json::Value;

use super::error::{ApiError, ErrorCode};
use mnemon::Namespace;

/// One entry of an allow-list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceRule {
    /// Exactly this namespace.
    Exact(Namespace),
    /// Every namespace starting with this prefix (written `prefix*`).
    Prefix(String),
}

/// The namespaces a server serves.
///
/// * [`NamespacePolicy::Any`]: every call names its namespace; every
///   namespace and the store-wide operations (stats, compact, check,
///   maintenance of all namespaces) are allowed.
/// * [`NamespacePolicy::Only`]: one namespace; calls may omit it, naming
///   another is an error.
/// * [`NamespacePolicy::Allow`]: every call names a namespace that matches
///   one of the rules.
///
/// Restricted policies refuse store-wide operations: they would read or
/// change namespaces outside the policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum NamespacePolicy {
    /// No restriction.
    #[default]
    Any,
    /// This namespace only.
    Only(Namespace),
    /// Namespaces matching at least one rule.
    Allow(Vec<NamespaceRule>),
}

impl NamespacePolicy {
    /// Parses an allow-list: comma-separated namespaces, each optionally
    /// ending in `*` for a prefix rule (`team:*`).
    ///
    /// # Errors
    /// [`ErrorCode::InvalidInput`] for an empty list or an entry that is
    /// not a valid namespace (or prefix of one).
    pub fn allow_list(spec: &str) -> Result<NamespacePolicy, ApiError> {
        let mut rules = Vec::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            match entry.strip_suffix('*') {
                Some(prefix) => {
                    // A prefix must itself be namespace characters, and is
                    // kept in the form namespaces are (NFKC).
                    let prefix = if prefix.is_empty() {
                        String::new()
                    } else {
                        Namespace::new(prefix)
                            .map_err(|e| ApiError::invalid("allow_ns", super::error::reason_of(&e)))?
                            .as_str()
                            .to_string()
                    };
                    rules.push(NamespaceRule::Prefix(prefix));
                }
                None => rules.push(NamespaceRule::Exact(
                    Namespace::new(entry).map_err(|e| ApiError::invalid("allow_ns", super::error::reason_of(&e)))?,
                )),
            }
        }
        if rules.is_empty() {
            return Err(ApiError::invalid("allow_ns", "the allow-list is empty"));
        }
        Ok(NamespacePolicy::Allow(rules))
    }

    /// The namespace calls get when they omit it.
    pub fn default_namespace(&self) -> Option<&Namespace> {
        match self {
            NamespacePolicy::Only(ns) => Some(ns),
            _ => None,
        }
    }

    /// True when calls may name any namespace and run store-wide operations.
    pub fn is_unrestricted(&self) -> bool {
        matches!(self, NamespacePolicy::Any)
    }

    /// Checks the namespace a call names (`None` for a store-wide call).
    ///
    /// # Errors
    /// [`ErrorCode::NamespaceNotAllowed`] naming the field `namespace`.
    pub fn check(&self, ns: Option<&Namespace>) -> Result<(), ApiError> {
        let refuse = |msg: String| {
            Err(ApiError { code: ErrorCode::NamespaceNotAllowed, message: msg, field: Some("namespace".into()) })
        };
        match (self, ns) {
            (NamespacePolicy::Any, _) => Ok(()),
            (_, None) => {
                refuse("this server is restricted to some namespaces; store-wide operations are refused".into())
            }
            (NamespacePolicy::Only(only), Some(ns)) if only == ns => Ok(()),
            (NamespacePolicy::Only(only), Some(ns)) => refuse(format!(
                "namespace {:?} is not served here; this server serves {:?} only",
                ns.as_str(),
                only.as_str()
            )),
            (NamespacePolicy::Allow(rules), Some(ns)) => {
                let ok = rules.iter().any(|r| match r {
                    NamespaceRule::Exact(e) => e == ns,
                    NamespaceRule::Prefix(p) => ns.as_str().starts_with(p.as_str()),
                });
                if ok {
                    Ok(())
                } else {
                    refuse(format!("namespace {:?} is not in this server's allow-list", ns.as_str()))
                }
            }
        }
    }

    /// Fills in the namespace of a call's arguments when the policy has a
    /// default and the call omitted it (or sent `null`).
    pub fn fill_default(&self, args: &mut Value) {
        if let (Some(ns), Value::Object(map)) = (self.default_namespace(), args) {
            if map.get("namespace").is_none_or(Value::is_null) {
                map.insert("namespace".into(), Value::String(ns.as_str().to_string()));
            }
        }
    }
}
