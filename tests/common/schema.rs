//! A validator for the subset of JSON Schema that loadlab's checked-in
//! schemas use (`$ref`, `oneOf`, `type`, `const`, `enum`, `minimum`,
//! `items`, `required`, `properties`, `additionalProperties`), so the JSON
//! outputs are held to their documented shape without a schema crate.

use serde_json::Value;

/// Errors of `doc` against docs/schema/NAME; empty when it conforms.
pub fn validate(name: &str, doc: &Value) -> Vec<String> {
    let path = format!("{}/docs/schema/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap();
    let mut errs = Vec::new();
    check(&schema, &schema, doc, "", &mut errs);
    errs
}

pub fn check(schema: &Value, root: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("bad $ref {r}"));
        return check(target, root, v, path, errs);
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let ok = options
            .iter()
            .filter(|o| {
                let mut e = Vec::new();
                check(o, root, v, path, &mut e);
                e.is_empty()
            })
            .count();
        if ok != 1 {
            errs.push(format!("{path}: matches {ok} of oneOf"));
        }
        return;
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let is = |ty: &str| match ty {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            _ => panic!("schema uses unsupported type {ty}"),
        };
        if !types.iter().any(|ty| is(ty)) {
            errs.push(format!("{path}: expected {types:?}, got {v}"));
            return;
        }
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            errs.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errs.push(format!("{path}: {v} not in {e:?}"));
        }
    }
    if let (Some(min), Some(x)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            errs.push(format!("{path}: {x} < minimum {min}"));
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, item) in arr.iter().enumerate() {
            check(items, root, item, &format!("{path}/{i}"), errs);
        }
    }
    if let Some(obj) = v.as_object() {
        for req in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(req.as_str().unwrap()) {
                errs.push(format!("{path}: missing required {req}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            let p = format!("{path}/{k}");
            match (
                props.and_then(|p| p.get(k)),
                schema.get("additionalProperties"),
            ) {
                (Some(s), _) => check(s, root, val, &p, errs),
                (None, Some(Value::Bool(false))) => errs.push(format!("{p}: not in the schema")),
                (None, Some(s)) if s.is_object() => check(s, root, val, &p, errs),
                _ => {}
            }
        }
    }
}
