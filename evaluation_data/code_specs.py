"""How each language's definitions and doc comments are found in its syntax tree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """How one language's definitions and doc comments are found in its syntax tree."""

    module: str
    entry: str
    definitions: frozenset[str]
    # Node types whose insides are not searched for definitions (function bodies).
    functions: frozenset[str]
    # Parents that belong to a definition's span and carry its doc comment
    # (decorators, ``export``, ``template<...>``, a one-type ``type`` declaration).
    wrappers: frozenset[str] = frozenset()
    comments: frozenset[str] = frozenset({"comment"})
    # Nodes above a definition that are part of its span but are not its doc (Rust attributes).
    attributes: frozenset[str] = frozenset()
    # "docstring", "rust" (/// and /**), "javadoc" (one /** block), "slash" (// and /*), "hash" (#).
    doc: str = "javadoc"


_JS_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"function_expression", "function", "arrow_function", "generator_function"}
)
_JS_DEFINITIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "class_declaration"}
    | {"method_definition", "lexical_declaration", "variable_declaration", "expression_statement"}
)
_C_DEFINITIONS = frozenset(
    {"function_definition", "struct_specifier", "union_specifier", "enum_specifier"}
)
SPECS: dict[str, LanguageSpec] = {
    "rust": LanguageSpec(
        "tree_sitter_rust",
        "language",
        frozenset({"function_item", "struct_item", "enum_item", "union_item", "trait_item"})
        | frozenset({"impl_item", "type_item", "macro_definition", "mod_item"}),
        frozenset({"function_item", "closure_expression"}),
        comments=frozenset({"line_comment", "block_comment"}),
        attributes=frozenset({"attribute_item"}),
        doc="rust",
    ),
    "go": LanguageSpec(
        "tree_sitter_go",
        "language",
        frozenset({"function_declaration", "method_declaration", "type_spec"}),
        frozenset({"function_declaration", "method_declaration", "func_literal"}),
        wrappers=frozenset({"type_declaration"}),
        doc="slash",
    ),
    "python": LanguageSpec(
        "tree_sitter_python",
        "language",
        frozenset({"function_definition", "class_definition"}),
        frozenset({"function_definition", "lambda"}),
        wrappers=frozenset({"decorated_definition"}),
        doc="docstring",
    ),
    "java": LanguageSpec(
        "tree_sitter_java",
        "language",
        frozenset({"class_declaration", "interface_declaration", "enum_declaration"})
        | frozenset({"record_declaration", "annotation_type_declaration"})
        | frozenset({"method_declaration", "constructor_declaration"}),
        frozenset({"method_declaration", "constructor_declaration", "lambda_expression"}),
        comments=frozenset({"block_comment", "line_comment"}),
    ),
    "javascript": LanguageSpec(
        "tree_sitter_javascript",
        "language",
        _JS_DEFINITIONS,
        _JS_FUNCTIONS,
        wrappers=frozenset({"export_statement"}),
    ),
    "typescript": LanguageSpec(
        "tree_sitter_typescript",
        "language_typescript",
        _JS_DEFINITIONS
        | frozenset({"interface_declaration", "type_alias_declaration", "enum_declaration"})
        | frozenset({"abstract_class_declaration"}),
        _JS_FUNCTIONS,
        wrappers=frozenset({"export_statement"}),
    ),
    "c": LanguageSpec(
        "tree_sitter_c",
        "language",
        _C_DEFINITIONS,
        frozenset({"function_definition"}),
        wrappers=frozenset({"type_definition", "declaration"}),
        doc="slash",
    ),
    "cpp": LanguageSpec(
        "tree_sitter_cpp",
        "language",
        _C_DEFINITIONS | frozenset({"class_specifier"}),
        frozenset({"function_definition", "lambda_expression"}),
        wrappers=frozenset({"type_definition", "declaration", "template_declaration"})
        | frozenset({"friend_declaration", "field_declaration"}),
        doc="slash",
    ),
    "ruby": LanguageSpec(
        "tree_sitter_ruby",
        "language",
        frozenset({"method", "singleton_method", "class", "module"}),
        frozenset({"method", "singleton_method", "lambda", "block", "do_block"}),
        doc="hash",
    ),
    "php": LanguageSpec(
        "tree_sitter_php",
        "language_php",
        frozenset({"function_definition", "method_declaration", "class_declaration"})
        | frozenset({"interface_declaration", "trait_declaration", "enum_declaration"}),
        frozenset({"function_definition", "method_declaration", "anonymous_function"})
        | frozenset({"arrow_function"}),
    ),
    "shell": LanguageSpec(
        "tree_sitter_bash",
        "language",
        frozenset({"function_definition"}),
        frozenset({"function_definition"}),
        doc="hash",
    ),
}
