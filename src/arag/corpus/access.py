"""Who may read the documents of a folder: ``.arag-access.toml`` rules, applied when the folder is indexed.

::

    # .arag-access.toml — for the files in this folder and below it
    default = "closed"          # the files no rule names: "open", "closed", or a list of groups
    [[rule]]
    path = "salaries/*"         # a glob on the path relative to this folder (fnmatch: * also crosses folders)
    groups = ["hr"]             # or "open", or "closed"

A document's own ``access`` field (Markdown front matter, a JSON Lines record's field) comes first; then the
first rule of the nearest rules file whose glob matches, that file's ``default``, and so up to the indexed folder;
a file no rule reaches is open. The result is recorded in the document's metadata (``access``: the groups; an
empty list for closed), so a changed rule changes the document's content hash and the next sync rewrites it
(its sentence vectors are reused, nothing is embedded again). A rules file that cannot be read stops indexing: a
document must not be opened by a typo.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from arag.errors import IngestError
from arag.principals import ACCESS_FIELD, Principal, PrincipalError

RULES_FILE = ".arag-access.toml"
Access = list[str] | None  # the groups that may read a document; None: open


@dataclass(frozen=True)
class RuleFile:
    folder: Path
    rules: tuple[tuple[str, Access], ...]  # (glob, access) in order
    default: tuple[bool, Access]  # (whether the file sets one, the access)


def access_of(path: Path, root: Path, cache: dict[Path, RuleFile | None]) -> tuple[bool, Access]:
    """(whether a rule decides, the access) for the file ``path`` indexed under the folder ``root``."""
    folder = path.parent
    while True:
        rules = _rules_in(folder, cache)
        if rules is not None:
            relative = str(PurePosixPath(path.relative_to(folder).as_posix()))
            for pattern, access in rules.rules:
                if fnmatch.fnmatchcase(relative, pattern):
                    return True, access
            if rules.default[0]:
                return rules.default
        if folder == root or folder == folder.parent or not folder.is_relative_to(root):
            return False, None
        folder = folder.parent


def with_access(metadata: dict[str, Any], decided: tuple[bool, Access]) -> dict[str, Any] | None:
    """The metadata with the access a rule decided, or None when it stays as it is (the document says it itself, or
    no rule decides)."""
    if ACCESS_FIELD in {str(key).strip().lower() for key in metadata} or not decided[0]:
        return None
    return {**metadata, ACCESS_FIELD: decided[1]} if decided[1] is not None else None


def _rules_in(folder: Path, cache: dict[Path, RuleFile | None]) -> RuleFile | None:
    if folder not in cache:
        file = folder / RULES_FILE
        cache[folder] = _load(file) if file.is_file() else None
    return cache[folder]


def _load(file: Path) -> RuleFile:
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise IngestError(f"{file}: cannot read the access rules: {exc}") from None
    unknown = sorted(set(data) - {"default", "rule"})
    if unknown:
        raise IngestError(f"{file}: unknown key {unknown[0]!r} (expected default and [[rule]])")
    rules = []
    for n, rule in enumerate(data.get("rule") or [], start=1):
        if not isinstance(rule, dict) or not isinstance(rule.get("path"), str) or not rule["path"].strip():
            raise IngestError(f"{file}: rule {n} needs a path (a glob)")
        if "groups" not in rule or set(rule) - {"path", "groups"}:
            raise IngestError(f"{file}: rule {n} needs exactly a path and groups")
        rules.append((rule["path"].strip(), _access(rule["groups"], file, f"rule {n}")))
    default = (True, _access(data["default"], file, "default")) if "default" in data else (False, None)
    return RuleFile(file.parent, tuple(rules), default)


def _access(value: Any, file: Path, where: str) -> Access:
    if value == "open":
        return None
    if value == "closed":
        return []
    if not isinstance(value, list) or not all(isinstance(group, str) for group in value):
        raise IngestError(f'{file}: {where}: groups must be "open", "closed" or a list of group names')
    try:
        return sorted(Principal.of("rule", value).groups)
    except PrincipalError as exc:
        raise IngestError(f"{file}: {where}: {exc}") from None
