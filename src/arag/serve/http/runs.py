"""The evaluation runs under ``--runs`` for the web page: each run's summary with intervals, its questions with
their failure tags, one question's record, and two runs compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import JSONResponse

from arag.errors import ARagError


def router(runs_dir: Path | None) -> APIRouter:
    """The runs' routes (``/api/runs…``, ``/api/compare``); without a runs folder, none is listed."""
    router = APIRouter()

    def run_path(name: str) -> Path:
        if runs_dir is None:
            raise HTTPException(404, "no runs folder (start with --runs DIR)")
        root = runs_dir.resolve()
        missing = HTTPException(404, f"no run {name[:200]!r}")
        # a NUL or a name longer than a file name made resolve() raise: a 500
        if not name or len(name) > 255 or "\x00" in name or "/" in name or name in (".", ".."):
            raise missing
        try:
            path = (root / name).resolve()
            found = path.parent == root and (path / "results.jsonl").is_file()
        except (OSError, ValueError):
            raise missing from None
        if not found:
            raise missing
        return path

    async def damaged_is_422(function: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(function, *args)
        except ARagError as exc:
            raise HTTPException(422, str(exc)) from None

    @router.get("/api/runs")
    async def runs() -> JSONResponse:
        """Every run's summary; a damaged run is left out and named, with why, in the ``X-Skipped-Runs`` header."""
        if runs_dir is None:
            return JSONResponse([])
        listed, skipped = await anyio.to_thread.run_sync(_list_runs, runs_dir)
        return JSONResponse(listed, headers={"X-Skipped-Runs": json.dumps(skipped)} if skipped else None)

    @router.get("/api/runs/{name}")
    async def run(name: str) -> dict[str, Any]:
        return await damaged_is_422(_run_detail, run_path(name))

    @router.get("/api/runs/{name}/questions/{question_id}")
    async def run_question(name: str, question_id: str) -> dict[str, Any]:
        from arag.eval.runs import RESULTS, read_results

        records = await damaged_is_422(read_results, run_path(name) / RESULTS)
        if question_id not in records:
            raise HTTPException(404, f"no question {question_id!r} in run {name!r}")
        return records[question_id]

    @router.get("/api/compare")
    async def compare(a: str = Query(max_length=200), b: str = Query(max_length=200)) -> dict[str, Any]:
        return await damaged_is_422(_compare, run_path(a), run_path(b))

    return router


def _list_runs(runs_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every readable run's summary, and "NAME: why" for each run that could not be read."""
    from arag.eval.runs import load_runs

    out, skipped = [], []
    for path in sorted(p for p in runs_dir.iterdir() if (p / "results.jsonl").is_file()):
        try:
            [run] = load_runs([path])
        except ARagError as exc:
            skipped.append(f"{path.name}: {exc}"[:500])
            continue
        out.append(_run_summary(path, run))
    return out, skipped


def _run_summary(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    from arag.eval.stats import accuracy

    records = run.pop("records")
    return {
        "name": path.name,
        **{k: v for k, v in run.items() if k != "run_dir"},
        "contain_acc_ci95": accuracy([r.get("contain_acc") for r in records]).to_dict() if records else None,
        "llm_acc_ci95": accuracy([r.get("llm_acc") for r in records]).to_dict()
        if any(r.get("llm_acc") is not None for r in records)
        else None,
    }


def _run_detail(path: Path) -> dict[str, Any]:
    from arag.eval.analyze import tag_record
    from arag.eval.runs import load_runs

    [run] = load_runs([path])
    records = list(run["records"])
    method = run.get("method")
    questions = [
        {
            "id": r["id"],
            "question": r.get("question"),
            "gold": r.get("gold"),
            "prediction": r.get("prediction"),
            "contain_acc": r.get("contain_acc"),
            "llm_acc": r.get("llm_acc"),
            "stop_reason": r.get("stop_reason"),
            "steps": r.get("steps"),
            "tag": tag_record(r, method)["tag"],
        }
        for r in records
    ]
    return {"summary": _run_summary(path, run), "questions": questions}


def _compare(a: Path, b: Path) -> dict[str, Any]:
    """Two runs on their shared questions, the ones where they differ first."""
    left, right = _run_detail(a), _run_detail(b)
    by_id = {q["id"]: q for q in right["questions"]}
    rows = [
        {"id": q["id"], "question": q["question"], "gold": q["gold"], "a": q, "b": by_id[q["id"]]}
        for q in left["questions"]
        if q["id"] in by_id
    ]
    rows.sort(key=lambda row: row["a"]["contain_acc"] == row["b"]["contain_acc"])
    return {"a": left["summary"], "b": right["summary"], "questions": rows}
