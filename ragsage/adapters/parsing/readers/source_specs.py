"""Which tree-sitter nodes are definitions, in each language's grammar.

A reader needs four kinds of node per language:

* **definitions** — functions, methods, type aliases, structs without members
  worth a heading of their own: each is one unit, never looked inside;
* **containers** — classes, impls, traits, namespaces, modules: a heading of
  their own, and their members are looked through for further definitions;
* **wrappers** — a node around one definition that belongs to its span
  (``export``, decorators, C++ ``template <...>``);
* **transparent** — blocks that only group top-level code (``#ifdef``,
  ``extern "C" {}``), looked through at the same depth.

Comments and attributes (``#[derive]``) right above a definition, with no
blank line between, belong to it: that is where doc comments live.  The node
type names come from each grammar's ``node-types.json``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Spec:
    """The node types that give a language's file its structure."""

    definitions: frozenset[str]
    containers: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    transparent: frozenset[str] = frozenset()
    comments: frozenset[str] = frozenset({"comment"})
    attributes: frozenset[str] = frozenset()
    # Declarations that name the file's package or namespace without a body.
    units: frozenset[str] = frozenset()
    # JavaScript-like ``const name = () => {}``: a variable declaration counts
    # as a definition when a declarator's value is one of these.
    function_values: frozenset[str] = frozenset()


def _set(*names: str) -> frozenset[str]:
    return frozenset(names)


_C_TRANSPARENT = _set(
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
    "linkage_specification",
    "declaration_list",
)
_JS_VALUES = _set(
    "arrow_function", "function_expression", "function", "generator_function", "class"
)
_JS_DEFINITIONS = _set(
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "lexical_declaration",
    "variable_declaration",
)
_TS_DEFINITIONS = _JS_DEFINITIONS | _set(
    "type_alias_declaration",
    "function_signature",
    "method_signature",
    "abstract_method_signature",
    "enum_declaration",
)
_TS_CONTAINERS = _set(
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "internal_module",
    "module",
)

SPECS: dict[str, Spec] = {
    "python": Spec(
        definitions=_set("function_definition"),
        containers=_set("class_definition"),
        wrappers=_set("decorated_definition"),
        transparent=_set(
            "if_statement",
            "try_statement",
            "with_statement",
            "else_clause",
            "elif_clause",
            "except_clause",
            "finally_clause",
            "block",
        ),
    ),
    "javascript": Spec(
        definitions=_JS_DEFINITIONS,
        containers=_set("class_declaration"),
        wrappers=_set("export_statement"),
        function_values=_JS_VALUES,
    ),
    "typescript": Spec(
        definitions=_TS_DEFINITIONS,
        containers=_TS_CONTAINERS,
        wrappers=_set("export_statement", "ambient_declaration"),
        transparent=_set("expression_statement"),
        # Method decorators are siblings of the method in a class body here.
        attributes=_set("decorator"),
        function_values=_JS_VALUES,
    ),
    "go": Spec(
        definitions=_set(
            "function_declaration",
            "method_declaration",
            "type_declaration",
        ),
        units=_set("package_clause"),
    ),
    "rust": Spec(
        definitions=_set(
            "function_item",
            "function_signature_item",
            "struct_item",
            "enum_item",
            "union_item",
            "type_item",
            "macro_definition",
            "const_item",
            "static_item",
        ),
        containers=_set("impl_item", "trait_item", "mod_item", "foreign_mod_item"),
        comments=_set("line_comment", "block_comment"),
        attributes=_set("attribute_item"),
    ),
    "java": Spec(
        definitions=_set(
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
        ),
        containers=_set(
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
        ),
        comments=_set("line_comment", "block_comment"),
        units=_set("package_declaration"),
    ),
    "c": Spec(
        definitions=_set(
            "function_definition",
            "type_definition",
            "struct_specifier",
            "enum_specifier",
            "union_specifier",
        ),
        transparent=_C_TRANSPARENT,
    ),
    "cpp": Spec(
        definitions=_set(
            "function_definition",
            "type_definition",
            "alias_declaration",
            "enum_specifier",
            "union_specifier",
            "concept_definition",
        ),
        containers=_set("class_specifier", "struct_specifier", "namespace_definition"),
        wrappers=_set("template_declaration"),
        transparent=_C_TRANSPARENT,
    ),
    "csharp": Spec(
        definitions=_set(
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "property_declaration",
            "operator_declaration",
            "indexer_declaration",
            "delegate_declaration",
            "enum_declaration",
            "local_function_statement",
        ),
        containers=_set(
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "record_declaration",
            "namespace_declaration",
        ),
        units=_set("file_scoped_namespace_declaration"),
    ),
    "ruby": Spec(
        definitions=_set("method", "singleton_method"),
        containers=_set("class", "module", "singleton_class"),
    ),
    "php": Spec(
        definitions=_set("function_definition", "method_declaration"),
        containers=_set(
            "class_declaration",
            "interface_declaration",
            "trait_declaration",
            "enum_declaration",
        ),
        units=_set("namespace_definition"),
    ),
    "kotlin": Spec(
        definitions=_set("function_declaration", "type_alias", "secondary_constructor"),
        containers=_set("class_declaration", "object_declaration", "companion_object"),
        comments=_set("line_comment", "block_comment", "comment"),
        # The grammar reads a top-level ``@Suppress("X")`` above a function as
        # an annotated expression of its own: it belongs to the function.
        attributes=_set("annotation", "annotated_expression"),
        units=_set("package_header"),
    ),
    "swift": Spec(
        definitions=_set(
            "function_declaration",
            "init_declaration",
            "deinit_declaration",
            "protocol_function_declaration",
            "subscript_declaration",
            "typealias_declaration",
        ),
        containers=_set("class_declaration", "protocol_declaration"),
        comments=_set("comment", "multiline_comment"),
    ),
    "bash": Spec(definitions=_set("function_definition")),
}
SPECS["tsx"] = SPECS["typescript"]

# Where a container keeps its members, when the grammar has no ``body`` field.
BODY_TYPES = _set(
    "class_body",
    "declaration_list",
    "field_declaration_list",
    "interface_body",
    "enum_body",
    "enum_class_body",
    "protocol_body",
    "body_statement",
    "statement_block",
    "block",
    "object_type",
    "enum_member_declaration_list",
    "function_body",
    "compound_statement",
    "constructor_body",
)
