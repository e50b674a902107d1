//! A deterministic YAML writer for JSON-shaped documents.
//!
//! No maintained, small serde YAML crate exists, and a generated document only needs the
//! JSON subset of YAML: block mappings and sequences of strings, numbers, booleans and null.
//! [`Node`] keeps object keys in the order they were written (serde_json's `Value` sorts
//! them), so a document reads top-down as its model declares it.

use std::fmt::Write;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A JSON value whose objects keep their key order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json holds it.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Seq(Vec<Node>),
    /// An object, keys in document order.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// Converts any serializable value, keeping struct fields in declaration order.
    pub(crate) fn from_serialize<T: Serialize>(value: &T) -> serde_json::Result<Self> {
        // Through text, because `serde_json::Value` would sort the keys.
        serde_json::from_str(&serde_json::to_string(value)?)
    }

    /// Parses JSON text, keeping key order.
    pub(crate) fn from_json(text: &str) -> serde_json::Result<Self> {
        serde_json::from_str(text)
    }

    /// The document as YAML, ending in a newline.
    pub(crate) fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Node::Map(entries) if !entries.is_empty() => write_map(&mut out, entries, 0),
            Node::Seq(items) if !items.is_empty() => write_seq(&mut out, items, 0),
            scalar => {
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
        out
    }
}

fn write_map(out: &mut String, entries: &[(String, Node)], indent: usize) {
    for (key, value) in entries {
        let _ = write!(out, "{:indent$}{}:", "", scalar_string(key));
        write_value(out, value, indent);
    }
}

fn write_seq(out: &mut String, items: &[Node], indent: usize) {
    for item in items {
        let _ = write!(out, "{:indent$}-", "");
        match item {
            Node::Map(entries) if !entries.is_empty() => {
                // The first entry shares the dash's line; the rest align under it.
                let mut first = String::new();
                write_map(&mut first, entries, indent + 2);
                out.push(' ');
                out.push_str(&first[indent + 2..]);
            }
            Node::Seq(inner) if !inner.is_empty() => {
                out.push('\n');
                write_seq(out, inner, indent + 2);
            }
            scalar => {
                out.push(' ');
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

/// Writes what follows `key:` on its line, and any nested lines.
fn write_value(out: &mut String, value: &Node, indent: usize) {
    match value {
        Node::Map(entries) if !entries.is_empty() => {
            out.push('\n');
            write_map(out, entries, indent + 2);
        }
        Node::Seq(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent + 2);
        }
        Node::String(text) if literal_chomping(text).is_some() => {
            write_literal(out, text, indent + 2);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

/// The chomping indicator that lets `text` be a literal block (`|`), if one can: multi-line
/// text of printable characters, not starting with a space, ending in at most one newline.
fn literal_chomping(text: &str) -> Option<&'static str> {
    let (body, chomping) = match text.strip_suffix('\n') {
        Some(body) => (body, ""),
        None => (text, "-"),
    };
    let printable = body
        .chars()
        .all(|c| c == '\n' || c == ' ' || c.is_ascii_graphic());
    let fits = body.contains('\n')
        && printable
        && !body.starts_with(' ')
        && !body.ends_with('\n')
        && body.lines().all(|line| !line.ends_with(' '));
    fits.then_some(chomping)
}

fn write_literal(out: &mut String, text: &str, indent: usize) {
    let chomping = literal_chomping(text).expect("checked by the caller");
    let _ = writeln!(out, " |{chomping}");
    for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{:indent$}{line}", "");
        }
    }
}

/// A scalar or an empty collection, on one line.
fn inline(node: &Node) -> String {
    match node {
        Node::Null => "null".to_owned(),
        Node::Bool(b) => b.to_string(),
        Node::Number(n) => n.to_string(),
        Node::String(s) => scalar_string(s),
        Node::Seq(_) => "[]".to_owned(),
        Node::Map(_) => "{}".to_owned(),
    }
}

/// A string as a plain scalar when that cannot be misread, else double-quoted with JSON
/// escapes (which YAML's double-quoted style understands).
fn scalar_string(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else {
        serde_json::to_string(s).expect("strings always serialize")
    }
}

fn is_plain_safe(s: &str) -> bool {
    // Words that YAML 1.1 or 1.2 readers turn into booleans or null.
    const RESERVED: &[&str] = &["true", "false", "null", "yes", "no", "on", "off", "y", "n"];
    let Some(first) = s.chars().next() else {
        return false;
    };
    // Starting with a letter rules out numbers, dates and every indicator character.
    (first.is_ascii_alphabetic() || first == '$' || first == '/')
        && s.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        && !s.ends_with([' ', ':'])
        && !s.contains(" #")
        && !s.contains(": ")
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Number(n) => n.serialize(s),
            Node::String(v) => s.serialize_str(v),
            Node::Seq(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        serde_json::Number::from_f64(v)
            .map(Node::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Node>()? {
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

/// The YAML as a JSON value, read back by an independent YAML parser.
#[cfg(test)]
pub(crate) fn parse_yaml(text: &str) -> serde_json::Value {
    use yaml_rust2::{Yaml, YamlLoader};

    fn convert(y: &Yaml) -> serde_json::Value {
        match y {
            Yaml::Null => serde_json::Value::Null,
            Yaml::Boolean(b) => (*b).into(),
            Yaml::Integer(i) => (*i).into(),
            Yaml::Real(r) => r.parse::<f64>().expect("a real number").into(),
            Yaml::String(s) => s.clone().into(),
            Yaml::Array(items) => items.iter().map(convert).collect(),
            Yaml::Hash(map) => map
                .iter()
                .map(|(k, v)| (k.as_str().expect("string keys").to_owned(), convert(v)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            other => panic!("unexpected YAML node {other:?}"),
        }
    }
    let docs = YamlLoader::load_from_str(text).expect("valid YAML");
    assert_eq!(docs.len(), 1, "one YAML document");
    convert(&docs[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, expect: &str) {
        let node = Node::from_json(json).unwrap();
        let yaml = node.to_yaml();
        assert_eq!(yaml, expect, "YAML of {json}");
        let original: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(
            parse_yaml(&yaml),
            original,
            "{json} does not survive YAML:\n{yaml}"
        );
    }

    #[test]
    fn writes_block_yaml_that_reads_back_as_the_same_json() {
        check(r#"{"b": 1, "a": "x"}"#, "b: 1\na: x\n");
        check(
            r#"{"a": {"b": [1, "two", {"c": null, "d": true}], "e": {}, "f": []}}"#,
            "a:\n  b:\n    - 1\n    - two\n    - c: null\n      d: true\n  e: {}\n  f: []\n",
        );
        check(r#"[[1, 2], []]"#, "-\n  - 1\n  - 2\n- []\n");
        check(
            r##"{"$ref": "#/components/messages/x"}"##,
            "$ref: \"#/components/messages/x\"\n",
        );
        check(
            r#"{"x": -1.5, "s": "3", "n": "y"}"#,
            "x: -1.5\ns: \"3\"\n\"n\": \"y\"\n",
        );
        check(
            r#"{"d": "Say `hi`, it's {fine} [ok] <a|b> 50% a#b a:b x!"}"#,
            "d: Say `hi`, it's {fine} [ok] <a|b> 50% a#b a:b x!\n",
        );
        check(r#""plain words""#, "plain words\n");
        check(
            r#"{"a": "one\ntwo\n\nthree", "b": "x\n", "c": "x\ny\n", "d": "x\ny\n\n", "e": " x\ny"}"#,
            "a: |-\n  one\n  two\n\n  three\nb: \"x\\n\"\nc: |\n  x\n  y\nd: \"x\\ny\\n\\n\"\ne: \" x\\ny\"\n",
        );
        check(
            r#"[{"k": {"l": "a\nb"}}]"#,
            "- k:\n    l: |-\n      a\n      b\n",
        );
    }

    #[test]
    fn quotes_every_string_a_reader_could_misread() {
        for tricky in [
            "",
            "true",
            "No",
            "null",
            "~",
            "1.0",
            "0x1f",
            "2026-05-25",
            "a: b",
            "a #b",
            "-a",
            "*a",
            "&a",
            "!a",
            "|",
            ">",
            "@a",
            "`a",
            "{a}",
            "[a]",
            "'a'",
            "\"a\"",
            "%a",
            "a\nb",
            "a\tb",
            " a",
            "a ",
            "é",
            "?a",
            "a:",
            "a\\b",
            "\u{1}",
        ] {
            let json = serde_json::to_string(&serde_json::json!({ tricky: tricky })).unwrap();
            let yaml = Node::from_json(&json).unwrap().to_yaml();
            let original: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(parse_yaml(&yaml), original, "{tricky:?} became:\n{yaml}");
        }
    }

    #[test]
    fn keeps_key_order_and_refuses_duplicates() {
        let node = Node::from_json(r#"{"z": 1, "a": 2, "m": 3}"#).unwrap();
        assert_eq!(node.to_yaml(), "z: 1\na: 2\nm: 3\n");
        assert!(Node::from_json(r#"{"a": 1, "a": 2}"#).is_err());
    }
}
