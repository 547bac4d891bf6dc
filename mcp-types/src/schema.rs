//! JSON Schema validation of tool arguments and structured results, with bounds.
//!
//! The dialect is JSON Schema 2020-12 unless the schema's `$schema` names another one
//! this validator knows (draft-07, draft-06, draft-04, 2019-09); any other dialect is
//! reported as unsupported, never guessed. References are resolved only inside the
//! schema: `jsonschema` is built without its network and file resolvers, so a `$ref`
//! to a URL makes the schema unusable (reported), not permissive.

use std::time::Duration;

use jsonschema::Draft;
use serde_json::Value;

/// Bounds that keep a hostile schema or argument from stalling the server.
///
/// `#[non_exhaustive]`: built from [`ValidationLimits::default`] with the setters, each
/// named after its field:
///
/// ```
/// # use std::time::Duration;
/// let l = mcp_types::schema::ValidationLimits::default()
///     .max_schema_depth(16)
///     .max_time(Duration::from_millis(500));
/// assert_eq!(l.max_schema_depth, 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValidationLimits {
    /// Deepest nesting of a schema.
    pub max_schema_depth: usize,
    /// Most subschemas (objects and arrays) in one schema.
    pub max_schema_nodes: usize,
    /// Largest instance (arguments or structured result), as encoded JSON.
    pub max_instance_bytes: usize,
    /// Longest a validation may run.
    pub max_time: Duration,
    /// Instances smaller than this many bytes are validated on the calling task, where a
    /// thread hand-off would cost more than the check; larger ones run on a blocking thread
    /// under `max_time`. (Pattern matching is bounded by the regex engine's backtrack limit
    /// either way.)
    pub inline_below_bytes: usize,
}

impl Default for ValidationLimits {
    fn default() -> Self {
        ValidationLimits {
            max_schema_depth: 64,
            max_schema_nodes: 10_000,
            max_instance_bytes: 4 * 1024 * 1024,
            max_time: Duration::from_secs(2),
            inline_below_bytes: 16 * 1024,
        }
    }
}

impl ValidationLimits {
    /// Sets [`ValidationLimits::max_schema_depth`].
    #[must_use]
    pub fn max_schema_depth(mut self, value: usize) -> Self {
        self.max_schema_depth = value;
        self
    }

    /// Sets [`ValidationLimits::max_schema_nodes`].
    #[must_use]
    pub fn max_schema_nodes(mut self, value: usize) -> Self {
        self.max_schema_nodes = value;
        self
    }

    /// Sets [`ValidationLimits::max_instance_bytes`].
    #[must_use]
    pub fn max_instance_bytes(mut self, value: usize) -> Self {
        self.max_instance_bytes = value;
        self
    }

    /// Sets [`ValidationLimits::max_time`].
    #[must_use]
    pub fn max_time(mut self, value: Duration) -> Self {
        self.max_time = value;
        self
    }

    /// Sets [`ValidationLimits::inline_below_bytes`].
    #[must_use]
    pub fn inline_below_bytes(mut self, value: usize) -> Self {
        self.inline_below_bytes = value;
        self
    }
}

/// Why a schema cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// `$schema` names a dialect this validator does not implement.
    #[error("unsupported JSON Schema dialect {0:?}")]
    UnsupportedDialect(String),
    /// Deeper or larger than [`ValidationLimits`] allow.
    #[error("schema exceeds limits: {0}")]
    TooComplex(String),
    /// Not a valid schema (or an unresolvable `$ref`).
    #[error("invalid schema: {0}")]
    Invalid(String),
}

/// Why an instance was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The instance breaks the schema; one readable line per problem.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
    /// Larger than allowed.
    #[error("too large: {0} bytes (limit {1})")]
    TooLarge(usize, usize),
    /// Validation ran out of time.
    #[error("validation took longer than {0:?}")]
    TimedOut(Duration),
    /// The schema itself is unusable.
    #[error("{0}")]
    Schema(SchemaError),
}

/// A compiled schema, or why it could not be compiled.
#[derive(Clone)]
pub struct SchemaValidator {
    compiled: Result<std::sync::Arc<jsonschema::Validator>, SchemaError>,
    limits: ValidationLimits,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator")
            .field("usable", &self.compiled.is_ok())
            .finish()
    }
}

fn dialect(schema: &Value) -> Result<Draft, SchemaError> {
    let Some(uri) = schema.get("$schema").and_then(Value::as_str) else {
        return Ok(Draft::Draft202012);
    };
    let bare = uri
        .trim_end_matches('#')
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    Ok(match bare {
        "json-schema.org/draft/2020-12/schema" => Draft::Draft202012,
        "json-schema.org/draft/2019-09/schema" => Draft::Draft201909,
        "json-schema.org/draft-07/schema" => Draft::Draft7,
        "json-schema.org/draft-06/schema" => Draft::Draft6,
        "json-schema.org/draft-04/schema" => Draft::Draft4,
        _ => return Err(SchemaError::UnsupportedDialect(uri.to_owned())),
    })
}

fn measure(
    v: &Value,
    depth: usize,
    nodes: &mut usize,
    limits: &ValidationLimits,
) -> Result<(), SchemaError> {
    if depth > limits.max_schema_depth {
        return Err(SchemaError::TooComplex(format!(
            "deeper than {}",
            limits.max_schema_depth
        )));
    }
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Object(m) => Box::new(m.values()),
        Value::Array(a) => Box::new(a.iter()),
        _ => return Ok(()),
    };
    *nodes += 1;
    if *nodes > limits.max_schema_nodes {
        return Err(SchemaError::TooComplex(format!(
            "more than {} subschemas",
            limits.max_schema_nodes
        )));
    }
    for c in children {
        measure(c, depth + 1, nodes, limits)?;
    }
    Ok(())
}

impl SchemaValidator {
    /// Compiles `schema` under `limits`. An unusable schema is kept as its error, reported
    /// on every validation.
    pub fn new(schema: &Value, limits: ValidationLimits) -> Self {
        let compiled = (|| {
            measure(schema, 0, &mut 0, &limits)?;
            let draft = dialect(schema)?;
            jsonschema::options()
                .with_draft(draft)
                .build(schema)
                .map(std::sync::Arc::new)
                .map_err(|e| SchemaError::Invalid(e.to_string()))
        })();
        SchemaValidator { compiled, limits }
    }

    /// Why the schema is unusable, if it is.
    pub fn schema_error(&self) -> Option<&SchemaError> {
        self.compiled.as_ref().err()
    }

    /// Validates `instance` within the time bound.
    pub async fn validate(&self, instance: &Value) -> Result<(), Rejection> {
        let validator = self.compiled.clone().map_err(Rejection::Schema)?;
        let size = serde_json::to_vec(instance)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        if size > self.limits.max_instance_bytes {
            return Err(Rejection::TooLarge(size, self.limits.max_instance_bytes));
        }
        fn check(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
            validator
                .iter_errors(instance)
                .take(5)
                .map(|e| {
                    let at = e.instance_path.to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("at {at}: {e}")
                    }
                })
                .collect()
        }
        let errors = if size < self.limits.inline_below_bytes {
            check(&validator, instance)
        } else {
            let instance = instance.clone();
            let work = tokio::task::spawn_blocking(move || check(&validator, &instance));
            match tokio::time::timeout(self.limits.max_time, work).await {
                Err(_) => return Err(Rejection::TimedOut(self.limits.max_time)),
                Ok(Err(join)) => vec![format!("validator failed: {join}")],
                Ok(Ok(errors)) => errors,
            }
        };
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Rejection::Invalid(errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(schema: Value) -> SchemaValidator {
        SchemaValidator::new(&schema, ValidationLimits::default())
    }

    #[tokio::test]
    async fn defaults_to_2020_12_and_honours_draft_07() {
        // prefixItems exists only in 2020-12.
        let s = json!({"type": "array", "prefixItems": [{"type": "integer"}]});
        assert!(v(s.clone()).validate(&json!(["x"])).await.is_err());
        let mut d7 = s;
        d7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert!(
            v(d7).validate(&json!(["x"])).await.is_ok(),
            "draft-07 ignores prefixItems"
        );
    }

    #[tokio::test]
    async fn unsupported_dialects_and_network_refs_are_reported_not_fatal() {
        let s = v(json!({"$schema": "https://example.com/my-dialect", "type": "object"}));
        assert!(matches!(
            s.schema_error(),
            Some(SchemaError::UnsupportedDialect(_))
        ));
        assert!(matches!(
            s.validate(&json!({})).await,
            Err(Rejection::Schema(_))
        ));
        let r = v(
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}),
        );
        assert!(
            r.schema_error().is_some(),
            "a network $ref must not be fetched nor ignored"
        );
    }

    #[tokio::test]
    async fn bounds_are_configurable() {
        let mut deep = json!({"type": "string"});
        for _ in 0..10 {
            deep = json!({"type": "array", "items": deep});
        }
        let tight = ValidationLimits {
            max_schema_depth: 5,
            ..Default::default()
        };
        assert!(matches!(
            SchemaValidator::new(&deep, tight).schema_error(),
            Some(SchemaError::TooComplex(_))
        ));
        assert!(v(deep).schema_error().is_none());
        let small = ValidationLimits {
            max_instance_bytes: 10,
            ..Default::default()
        };
        let s = SchemaValidator::new(&json!({}), small);
        assert!(matches!(
            s.validate(&json!({"long": "xxxxxxxxxxxx"})).await,
            Err(Rejection::TooLarge(..))
        ));
    }

    #[tokio::test]
    async fn messages_say_where_and_what() {
        let s = v(
            json!({"type": "object", "properties": {"limit": {"type": "integer", "maximum": 100}}, "required": ["q"]}),
        );
        let Err(Rejection::Invalid(msgs)) = s.validate(&json!({"limit": 500})).await else {
            panic!("invalid")
        };
        let all = msgs.join("\n");
        assert!(all.contains("at /limit") && all.contains("100"), "{all}");
        assert!(all.contains("\"q\" is a required property"), "{all}");
    }
}
