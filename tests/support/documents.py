"""Documents with known structure for the scope and citation tests: a PDF with known text on known pages (written
here byte by byte, so no PDF library is needed), Markdown with nested headings and front matter, HTML with
<meta> fields and headings."""

from __future__ import annotations

from pathlib import Path


def write_pdf(path: Path, pages: list[list[str]], info: dict[str, str] | None = None) -> Path:
    """A PDF whose page n (from 1) shows the lines ``pages[n - 1]`` in Helvetica; ``info``: its /Info fields."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    n = len(pages)
    font = 3 + 2 * n
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{3 + 2 * i} 0 R' for i in range(n))}] /Count {n} >>".encode(),
    ]
    for i, lines in enumerate(pages):
        content = "BT /F1 11 Tf 14 TL 72 720 Td " + " T* ".join(f"({escape(line)}) Tj" for line in lines) + " ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        data = content.encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_ref = ""
    if info:
        fields = " ".join(f"/{key} ({escape(value)})" for key, value in info.items())
        objects.append(f"<< {fields} >>".encode())
        info_ref = f" /Info {len(objects)} 0 R"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info_ref} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


GUIDELINES_MD = """---
title: Treatment guidelines
year: 2024
tags: [oncology, radiation]
review:
  status: final
---
# Guidelines

Introduction to the guidelines. They cover several cancers.

## Anal cancer

Anal cancer is rare. It starts in the anal canal.

### Radiation

Radiation therapy for anal cancer is given with chemotherapy. The usual dose is 54 Gy over six weeks.

### Surgery

Surgery is used when cancer remains after chemoradiation.

## Skin cancer

Basal cell carcinoma is the most common skin cancer.
"""

PAGE_HTML = """<html><head><title>Kidney page</title>
<meta name="author" content="Dr. Lee"><meta name="keywords" content="kidney, renal"></head>
<body><h1>Kidney cancer</h1><p>Kidney cancer starts in the kidneys.</p>
<h2>Spread</h2><p>It can spread to the adrenal glands beside the kidney.</p></body></html>
"""
