"""Regenerate the binary sample documents in examples/docs/ (PDF, DOCX, PPTX).

    .venv/bin/python examples/make_samples.py

The outputs are committed so `make run` needs no generator; the text is ours.
"""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).with_name("docs")


def make_pdf(path: Path) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pages = [
        (
            "Deployment guide",
            [
                "ragsage runs as three kinds of process: the API, the ingestion workers",
                "and a one-shot migration job. All of them read one settings object from",
                "environment variables that start with RAGSAGE_.",
                "",
                "Postgres 15 or newer with pgvector 0.8 or newer is required. The",
                "migration job creates the tables, the indexes and the application role.",
            ],
        ),
        (
            "Scaling workers",
            [
                "Workers take one document at a time and acknowledge a job only after",
                "its chunks are committed, so a worker that dies mid-job loses nothing:",
                "the job's lease expires and another worker picks it up within seconds.",
                "",
                "Bulk re-index jobs use their own queue, so uploads are never starved.",
            ],
        ),
    ]
    pdf = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    pdf.setTitle("ragsage deployment guide")
    for title, lines in pages:
        pdf.setFont("Helvetica-Bold", 18)
        pdf.drawString(72, 770, title)
        pdf.setFont("Helvetica", 11)
        y = 740
        for line in lines:
            pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()


def make_docx(path: Path) -> None:
    from docx import Document

    document = Document()
    document.core_properties.title = "Onboarding checklist"
    document.add_heading("Onboarding checklist", level=1)
    document.add_paragraph(
        "New team members get access to the knowledge base on their first day. "
        "Their API key is created by an admin with the read role."
    )
    document.add_heading("First week", level=2)
    for item in (
        "Upload the team's runbooks to the shared namespace.",
        "Ask three questions and check that every answer cites its sources.",
        "Report any answer without a citation to the platform team.",
    ):
        document.add_paragraph(item, style="List Bullet")
    document.add_heading("Support contacts", level=2)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Topic", "Contact"
    for topic, contact in (("Access and keys", "platform team"), ("Billing", "finance desk")):
        row = table.add_row()
        row.cells[0].text, row.cells[1].text = topic, contact
    document.save(str(path))


def make_pptx(path: Path) -> None:
    from pptx import Presentation

    deck = Presentation()
    slides = [
        (
            "Quarterly roadmap",
            "Hybrid search quality, faster re-indexing, audit logs.",
            "Mention that audit logs were the most requested feature.",
        ),
        (
            "Hybrid search quality",
            "Identifier-aware keyword indexing for code and APIs.",
            "The evaluation harness measures nDCG@10 on a fixed development set.",
        ),
    ]
    for title, body, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        slide.notes_slide.notes_text_frame.text = notes
    deck.save(str(path))


def main() -> None:
    make_pdf(DOCS / "deployment-guide.pdf")
    make_docx(DOCS / "onboarding-checklist.docx")
    make_pptx(DOCS / "quarterly-roadmap.pptx")


if __name__ == "__main__":
    main()
