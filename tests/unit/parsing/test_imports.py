import subprocess
import sys

HEAVY = [
    "sqlalchemy",
    "celery",
    "flask",
    "numpy",
    "voyageai",
    "openai",
    "torch",
    "pypdfium2",
    "docx",
    "pptx",
    "PIL",
    "selectolax",
    "tiktoken",
]


def test_importing_parsing_loads_no_heavy_library():
    probe = (
        "import ragsage.parsing, ragsage.contextualizing, sys; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
