"""How long each reader takes per page, against pypdf's plain text extraction measured in the same run: a 100-page
text PDF (no table: pdfium's path count keeps pdfplumber off it), a 3-page ruled table, a scanned page (OCR), an
image, and the office formats of the tests. Generated here (fpdf2, Pillow, python-docx, python-pptx, openpyxl),
read with ``arag.corpus.readers.read_source``; the best of ``--repeat`` runs each, the OCR engine loaded first.

    python benchmarks/bench_readers.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from arag.corpus.ocr import ocr_image
from arag.corpus.readers import read_source
from support.office_files import text_image, write_docx, write_pptx, write_table_pdf, write_xlsx


def text_pdf(path: Path, pages: int = 100) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for page in range(pages):
        pdf.add_page()
        for line in range(45):
            pdf.cell(text=f"Page {page} line {line}: the quick brown fox jumps over the lazy dog by the river.")
            pdf.ln(6)
    pdf.output(str(path))


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-readers-"))
    text_pdf(folder / "text.pdf")
    write_table_pdf(folder / "table.pdf")
    text_image(["Scanned memo: the Tromso depot closes on 12 March."] * 12).save(folder / "scan.pdf")
    text_image(["A photo of a notice: the ferry leaves at nine."]).save(folder / "notice.png")
    write_docx(folder / "policy.docx")
    write_pptx(folder / "deck.pptx")
    write_xlsx(folder / "sheet.xlsx")
    ocr_image(text_image(["warm up"]))  # the engine's load is paid once per process, not per file

    from pypdf import PdfReader

    baseline = best(lambda: [p.extract_text() for p in PdfReader(str(folder / "text.pdf")).pages], args.repeat) / 100
    print(f"baseline: pypdf text extraction, {1000 * baseline:.1f} ms a page\n")
    print("| file | pages | read_source, ms a page | × pypdf's text a page |\n|---|---|---|---|")
    for name, pages in [
        ("text.pdf", 100),
        ("table.pdf", 3),
        ("scan.pdf", 1),
        ("notice.png", 1),
        ("policy.docx", 1),
        ("deck.pptx", 2),
        ("sheet.xlsx", 1),
    ]:
        seconds = best(lambda name=name: read_source(folder / name), args.repeat) / pages  # type: ignore[misc]
        print(f"| {name} | {pages} | {1000 * seconds:.1f} | {seconds / baseline:.1f} |")


if __name__ == "__main__":
    main()
