"""The front door stays a front door: the README short with true links, the results page current and short, the
notebook in date order, the policy table generated from the registry."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _policy_table_script():
    spec = importlib.util.spec_from_file_location("policy_table", ROOT / "scripts" / "policy_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    block = lines[lines.index("```bash") + 1 : lines.index("```")]
    assert block[0].startswith("bash scripts/setup.sh local && bash scripts/demo.sh")
    assert block[1].startswith("bash scripts/setup.sh dev local-test && bash scripts/check.sh")
    text = "\n".join(lines)
    assert "pip install a-rag" not in text  # the package is not on PyPI: it is installed from the checkout


def test_every_relative_link_of_the_front_door_and_the_guides_leads_somewhere() -> None:
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to a missing {target}"


def test_the_results_page_is_current_and_short_and_the_notebook_is_dated() -> None:
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8").splitlines()
    assert len(results) <= 250
    notebook = sorted(p.name for p in (ROOT / "docs" / "notebook").glob("*.md") if p.name != "README.md")
    assert notebook and all(re.match(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$", name) for name in notebook)
    index = (ROOT / "docs" / "notebook" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"\]\((\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md)\)", index)
    assert listed == notebook  # every entry listed, in date order


def test_the_policy_table_is_the_registrys() -> None:
    script = _policy_table_script()
    page = script.PAGE.read_text(encoding="utf-8")
    effects = tomllib.loads(script.EFFECTS.read_text(encoding="utf-8"))
    assert script.render(page, effects) == page, "run: python scripts/policy_table.py"
