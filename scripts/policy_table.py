"""Write the policy table of docs/policies.md from the policy registry (name, profiles, what it does) and
docs/policy-effects.toml (what each did when measured), so the table cannot drift from the code.

    python scripts/policy_table.py            # rewrite the table between its markers
    python scripts/policy_table.py --check    # exit 1 if the page's table is not the generated one
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

from arag.harness import describe_policies

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "policies.md"
EFFECTS = ROOT / "docs" / "policy-effects.toml"
START, END = "<!-- policy table: scripts/policy_table.py writes it -->", "<!-- /policy table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(effects: dict[str, str]) -> str:
    """The Markdown table: one row per registered policy, in the compact profile's order, then the others."""
    rows = describe_policies()
    missing = [row.name for row in rows if row.name not in effects]
    if missing:
        raise SystemExit(f"docs/policy-effects.toml has no entry for: {', '.join(missing)}")
    stale = sorted(set(effects) - {row.name for row in rows})
    if stale:
        raise SystemExit(f"docs/policy-effects.toml names policies that are not registered: {', '.join(stale)}")
    lines = ["| Policy | Profiles | What it does | Measured effect |", "|---|---|---|---|"]
    for row in rows:
        profiles = ", ".join(row.profiles) or "— (`+NAME`)"
        lines.append(f"| `{row.name}` | {profiles} | {_cell(row.summary)} | {_cell(effects[row.name])} |")
    return "\n".join(lines)


def render(page: str, effects: dict[str, str]) -> str:
    """``page`` with the text between the markers replaced by the generated table."""
    head, found, rest = page.partition(START)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise SystemExit(f"{PAGE.name} lacks the markers {START} … {END}")
    return f"{head}{START}\n{table(effects)}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the page's table is not the generated one")
    args = parser.parse_args()
    effects = tomllib.loads(EFFECTS.read_text(encoding="utf-8"))
    page = PAGE.read_text(encoding="utf-8")
    wanted = render(page, effects)
    if args.check:
        if wanted != page:
            print(f"{PAGE} is out of date: run python scripts/policy_table.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
