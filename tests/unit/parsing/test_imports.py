from ..fresh_python import run_fresh
from ..import_guard import HEAVY as ENGINE_HEAVY

# The engine's heavy stack, and the readers' own libraries, which load only when
# a document of their format is read.
HEAVY = [
    *ENGINE_HEAVY,
    "pypdfium2",
    "docx",
    "pptx",
    "PIL",
    "selectolax",
    "tiktoken",
    "tree_sitter_rust",
]


def test_importing_parsing_loads_no_heavy_library():
    probe = (
        "import ragsage.adapters.parsing, ragsage.adapters.parsing.contextualizing, sys; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = run_fresh(probe)
    assert result.stdout.strip() == ""


def test_routing_a_source_file_loads_no_grammar():
    # Deciding that a file is Rust (by name or by its text) must stay cheap:
    # the grammar loads only when the file is read.
    probe = (
        "import sys; from ragsage.adapters.parsing.formats import route, source_language; "
        "from ragsage.core.documents import RawSource; "
        "code = b'use std::io;\\npub fn main() {\\n    let mut x = 1;\\n}\\n'; "
        "print(route(RawSource(code, 'main.rs')), source_language(RawSource(code, 'x.txt')).name, "
        "[m for m in sys.modules if m.startswith('tree_sitter')])"
    )
    result = run_fresh(probe)
    assert result.stdout.strip() == "code rust []"
