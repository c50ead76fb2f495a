"""Office documents made with the registries' writers (python-docx, python-pptx, openpyxl, ebooklib, email), for
the readers' tests and the store parity test."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

TEAMS = [["Team", "Engineers", "Lead"], *([f"Team {i}", i % 17, f"Lead {i}"] for i in range(150))]


def write_docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.author = "Maria Castellanos"
    document.core_properties.title = "Travel policy"
    document.add_heading("Flights", 1)
    document.add_paragraph("Employees fly economy on flights under six hours.")
    table = document.add_table(rows=3, cols=2)
    for i, row in enumerate([["Route", "Max fare"], ["Lisbon–Boston", "$900"], ["Lisbon–Tokyo", "$1,400"]]):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    document.add_heading("Hotels", 1)
    document.add_heading("Europe", 2)
    document.add_paragraph("Hotels in Europe cost up to $180 a night.")
    document.save(str(path))


def write_pptx(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Q3 results"
    first.placeholders[1].text = "Revenue grew 12% to $4.1M."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "By region"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(4), Inches(2)).table
    for i, row in enumerate([["Region", "Revenue"], ["EMEA", "$1.9M"], ["APAC", "$2.2M"]]):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    second.notes_slide.notes_text_frame.text = "APAC overtook EMEA for the first time."
    deck.save(str(path))


def write_xlsx(path: Path) -> None:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Headcount"
    for row in TEAMS:
        sheet.append(row)
    budget = workbook.create_sheet("Budget")
    budget["B3"], budget["C3"] = "Item", "Cost"  # a table that does not start at A1
    budget["B4"], budget["C4"] = "Laptops", 52000
    workbook.create_sheet("Empty")
    workbook.save(str(path))


def write_epub(path: Path) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("guide-1")
    book.set_title("Field guide")
    book.set_language("en")
    book.add_author("Ana Silva")
    chapters = []
    for number, (title, text) in enumerate(
        [("Birds", "The kestrel hovers over fields."), ("Trees", "The cork oak grows in Alentejo.")], 1
    ):
        chapter = epub.EpubHtml(title=title, file_name=f"c{number}.xhtml", lang="en")
        chapter.content = f"<h1>{title}</h1><p>{text}</p>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = tuple(chapters)
    book.spine = ["nav", *chapters]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    epub.write_epub(str(path), book)


def write_eml(path: Path) -> None:
    message = EmailMessage()
    message["From"] = "Ana <ana@example.com>"
    message["To"] = "team@example.com"
    message["Subject"] = "Offsite moved"
    message["Date"] = "Tue, 03 Nov 2026 10:00:00 +0000"
    message.set_content("The offsite moves to 14 November, in Porto.")
    message.add_alternative("<p>The offsite moves to <b>14 November</b>, in Porto.</p>", subtype="html")
    message.add_attachment(b"agenda", maintype="application", subtype="octet-stream", filename="agenda.pdf")
    path.write_bytes(bytes(message))


def write_office_folder(folder: Path) -> Path:
    """One file of each office kind in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_docx(folder / "policy.docx")
    write_pptx(folder / "q3.pptx")
    write_xlsx(folder / "headcount.xlsx")
    write_epub(folder / "guide.epub")
    write_eml(folder / "offsite.eml")
    (folder / "people.csv").write_text("name;city;age\nAna;Lisbon;34\nBo;Oslo;41\n", encoding="utf-8")
    (folder / "scores.tsv").write_text("team\tscore\nRed\t7\n", encoding="utf-8")
    return folder


DEPOTS = [["Depot", "Crates", "Manager"], *([f"Depot {i}", str(i * 7), f"Manager {i}"] for i in range(90))]


def write_table_pdf(path: Path) -> None:
    """A sentence, a ruled table of 90 rows over three pages (its header on the first page only), a sentence."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.cell(text="Quarterly shipments by depot, 2026.")
    pdf.ln(12)
    with pdf.table(repeat_headings=0) as table:
        for values in DEPOTS:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.ln(6)
    pdf.cell(text="All depots report monthly.")
    pdf.output(str(path))


def text_image(lines: list[str], width: int = 1240) -> object:
    """A white image with ``lines`` written on it in a 32-pixel font."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (width, 120 + 70 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=32)
    for number, line in enumerate(lines):
        draw.text((60, 60 + 70 * number), line, fill="black", font=font)
    return image
