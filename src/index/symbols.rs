//! The symbol table of one file: the functions, methods, classes, types and modules it defines,
//! with their line spans and first line, read with the language's tree-sitter grammar.

use tree_sitter::{Node, Parser};

use super::kinds::Language;

/// Files larger than this are not parsed: generated code, data, bundles.
pub const MAX_PARSED_BYTES: usize = 2 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Function,
    Method,
    Class,
    Type,
    Module,
    Constant,
}

impl SymbolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Class => "class",
            SymbolKind::Type => "type",
            SymbolKind::Module => "module",
            SymbolKind::Constant => "constant",
        }
    }
}

/// One definition: its name, what it is, lines `start..=end` (1-based) and its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    pub start: u32,
    pub end: u32,
    /// The definition's first line, trimmed and cut to [`MAX_SIGNATURE_CHARS`].
    pub signature: String,
    /// How many definitions enclose this one (a method in a class is 1).
    pub depth: u32,
}

pub const MAX_SIGNATURE_CHARS: usize = 160;

/// The definitions in `text`, in source order; empty for a file the grammar cannot read.
pub fn symbols(language: Language, text: &str) -> Vec<Symbol> {
    if text.len() > MAX_PARSED_BYTES {
        return Vec::new();
    }
    let mut parser = Parser::new();
    if parser.set_language(&grammar(language)).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    collect(language, tree.root_node(), text, &mut found);
    found
}

fn grammar(language: Language) -> tree_sitter::Language {
    match language {
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Java => tree_sitter_java::LANGUAGE.into(),
    }
}

/// Walks the tree depth-first in source order, with a stack of its own rather than recursion:
/// a repository's file may nest expressions thousands deep. A definition's children are one
/// level deeper.
fn collect(language: Language, root: Node, text: &str, found: &mut Vec<Symbol>) {
    let mut pending: Vec<(Node, u32)> = vec![(root, 0)];
    while let Some((node, depth)) = pending.pop() {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        // Pushed in reverse so that the first child is walked first.
        for child in children.into_iter().rev() {
            let deeper = if child.named_child_count() > 0 {
                Some(child)
            } else {
                None
            };
            let mut child_depth = depth;
            if let Some(symbol) = definition(language, child, depth, text) {
                found.push(symbol);
                child_depth += 1;
            }
            if let Some(child) = deeper {
                pending.push((child, child_depth));
            }
        }
    }
    found.sort_by_key(|symbol| (symbol.start, symbol.depth));
}

/// The symbol `node` defines, if it is a definition this language's table keeps.
fn definition(language: Language, node: Node, depth: u32, text: &str) -> Option<Symbol> {
    let kind = node.kind();
    let (symbol_kind, name_node) = match language {
        Language::Python => match kind {
            "function_definition" if depth > 0 => {
                (SymbolKind::Method, node.child_by_field_name("name")?)
            }
            "function_definition" => (SymbolKind::Function, node.child_by_field_name("name")?),
            "class_definition" => (SymbolKind::Class, node.child_by_field_name("name")?),
            _ => return None,
        },
        Language::Rust => match kind {
            "function_item" | "function_signature_item" if depth > 0 => {
                (SymbolKind::Method, node.child_by_field_name("name")?)
            }
            "function_item" | "function_signature_item" => {
                (SymbolKind::Function, node.child_by_field_name("name")?)
            }
            "struct_item" | "enum_item" | "union_item" | "type_item" => {
                (SymbolKind::Type, node.child_by_field_name("name")?)
            }
            "trait_item" => (SymbolKind::Class, node.child_by_field_name("name")?),
            "impl_item" => (SymbolKind::Class, node.child_by_field_name("type")?),
            "mod_item" => (SymbolKind::Module, node.child_by_field_name("name")?),
            "macro_definition" => (SymbolKind::Function, node.child_by_field_name("name")?),
            "const_item" | "static_item" => {
                (SymbolKind::Constant, node.child_by_field_name("name")?)
            }
            _ => return None,
        },
        Language::JavaScript | Language::TypeScript | Language::Tsx => match kind {
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                (SymbolKind::Function, node.child_by_field_name("name")?)
            }
            "class_declaration" | "abstract_class_declaration" | "class" => {
                (SymbolKind::Class, node.child_by_field_name("name")?)
            }
            "method_definition" | "method_signature" | "abstract_method_signature" => {
                (SymbolKind::Method, node.child_by_field_name("name")?)
            }
            "interface_declaration" | "type_alias_declaration" | "enum_declaration" => {
                (SymbolKind::Type, node.child_by_field_name("name")?)
            }
            "internal_module" | "module" => (SymbolKind::Module, node.child_by_field_name("name")?),
            "variable_declarator" => {
                let value = node.child_by_field_name("value")?;
                if !matches!(
                    value.kind(),
                    "arrow_function"
                        | "function_expression"
                        | "function"
                        | "class"
                        | "generator_function"
                ) {
                    return None;
                }
                (SymbolKind::Function, node.child_by_field_name("name")?)
            }
            "pair" => {
                let value = node.child_by_field_name("value")?;
                if !matches!(
                    value.kind(),
                    "arrow_function" | "function_expression" | "function"
                ) {
                    return None;
                }
                (SymbolKind::Method, node.child_by_field_name("key")?)
            }
            "assignment_expression" => {
                // `module.exports.foo = function () {…}`, `Foo.prototype.bar = (…) => …`
                let value = node.child_by_field_name("right")?;
                if !matches!(
                    value.kind(),
                    "arrow_function" | "function_expression" | "function"
                ) {
                    return None;
                }
                let left = node.child_by_field_name("left")?;
                let name = if left.kind() == "member_expression" {
                    left.child_by_field_name("property")?
                } else {
                    left
                };
                (SymbolKind::Function, name)
            }
            _ => return None,
        },
        Language::Go => match kind {
            "function_declaration" => (SymbolKind::Function, node.child_by_field_name("name")?),
            "method_declaration" => (SymbolKind::Method, node.child_by_field_name("name")?),
            "type_spec" => (SymbolKind::Type, node.child_by_field_name("name")?),
            _ => return None,
        },
        Language::Java => match kind {
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration" => {
                (SymbolKind::Class, node.child_by_field_name("name")?)
            }
            "method_declaration" | "constructor_declaration" => {
                (SymbolKind::Method, node.child_by_field_name("name")?)
            }
            _ => return None,
        },
    };
    let name = text.get(name_node.byte_range())?.trim();
    if name.is_empty() || name.len() > 200 {
        return None;
    }
    // A decorated Python definition starts at its first decorator.
    let outer = match node.parent() {
        Some(parent) if parent.kind() == "decorated_definition" => parent,
        _ => node,
    };
    Some(Symbol {
        name: simple_name(name).to_owned(),
        kind: symbol_kind,
        start: outer.start_position().row as u32 + 1,
        end: outer.end_position().row as u32 + 1,
        signature: signature(text, node),
        depth,
    })
}

/// `Foo<T>` → `Foo`, `'key'` → `key`: the name a person would write.
fn simple_name(name: &str) -> &str {
    let name = name.trim_matches(|c| c == '"' || c == '\'' || c == '`');
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(name.len());
    if end == 0 { name } else { &name[..end] }
}

/// The first line of the definition, trimmed and cut short.
fn signature(text: &str, node: Node) -> String {
    let start = node.start_byte();
    let line_end = text[start..].find('\n').map_or(text.len(), |at| start + at);
    let line = text[start..line_end].trim();
    if line.chars().count() > MAX_SIGNATURE_CHARS {
        let cut: String = line.chars().take(MAX_SIGNATURE_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// The innermost symbol whose span holds `line`.
pub fn enclosing(symbols: &[Symbol], line: u32) -> Option<&Symbol> {
    symbols
        .iter()
        .filter(|symbol| symbol.start <= line && line <= symbol.end)
        .min_by_key(|symbol| symbol.end - symbol.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(language: Language, text: &str) -> Vec<(String, SymbolKind, u32, u32)> {
        symbols(language, text)
            .into_iter()
            .map(|s| (s.name, s.kind, s.start, s.end))
            .collect()
    }

    #[test]
    fn python_classes_methods_and_functions_with_their_lines() {
        let text = "import os\n\nclass Session:\n    @property\n    def proxies(self):\n        return 1\n\ndef send(request):\n    pass\n";
        assert_eq!(
            names(Language::Python, text),
            [
                ("Session".into(), SymbolKind::Class, 3, 6),
                ("proxies".into(), SymbolKind::Method, 4, 6),
                ("send".into(), SymbolKind::Function, 8, 9),
            ]
        );
    }

    #[test]
    fn rust_items_impls_and_their_methods() {
        let text = "pub struct Clamp<T> { lo: T }\n\nimpl<T> Clamp<T> {\n    pub fn apply(&self) {}\n}\n\nfn free() {}\n";
        assert_eq!(
            names(Language::Rust, text),
            [
                ("Clamp".into(), SymbolKind::Type, 1, 1),
                ("Clamp".into(), SymbolKind::Class, 3, 5),
                ("apply".into(), SymbolKind::Method, 4, 4),
                ("free".into(), SymbolKind::Function, 7, 7),
            ]
        );
    }

    #[test]
    fn javascript_functions_arrow_functions_classes_and_exports() {
        let text = "function route(a) {}\nconst handle = (req) => {\n  return 1;\n};\nclass Router {\n  use(fn) {}\n}\nmodule.exports.render = function () {};\n";
        let found = names(Language::JavaScript, text);
        let just: Vec<&str> = found.iter().map(|(name, ..)| name.as_str()).collect();
        assert_eq!(just, ["route", "handle", "Router", "use", "render"]);
        assert_eq!(found[1].2..=found[1].3, 2..=4);
    }

    #[test]
    fn typescript_go_and_java_definitions() {
        let ts = names(
            Language::TypeScript,
            "export interface Options { a: string }\nexport function parse(o: Options): void {}\n",
        );
        assert_eq!(ts[0].0, "Options");
        assert_eq!(ts[1].0, "parse");
        let go = names(
            Language::Go,
            "package cobra\n\ntype Command struct {\n}\n\nfunc (c *Command) Execute() error {\n\treturn nil\n}\n",
        );
        assert_eq!(
            go,
            [
                ("Command".into(), SymbolKind::Type, 3, 4),
                ("Execute".into(), SymbolKind::Method, 6, 8),
            ]
        );
        let java = names(
            Language::Java,
            "package a;\npublic class Gson {\n  public String toJson(Object o) {\n    return null;\n  }\n}\n",
        );
        assert_eq!(
            java,
            [
                ("Gson".into(), SymbolKind::Class, 2, 6),
                ("toJson".into(), SymbolKind::Method, 3, 5),
            ]
        );
    }

    #[test]
    fn a_file_nested_thousands_deep_is_read_without_overflowing_the_stack() {
        let deep = format!(
            "x = {}1{}\ndef after():\n    pass\n",
            "[".repeat(20_000),
            "]".repeat(20_000)
        );
        let found = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || names(Language::Python, &deep))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert_eq!(found, [("after".into(), SymbolKind::Function, 2, 3)]);
    }

    #[test]
    fn the_innermost_symbol_holds_a_line() {
        let found = symbols(
            Language::Python,
            "class A:\n    def b(self):\n        x = 1\n        return x\n",
        );
        assert_eq!(enclosing(&found, 3).unwrap().name, "b");
        assert_eq!(enclosing(&found, 1).unwrap().name, "A");
        assert!(enclosing(&found, 9).is_none());
    }
}
