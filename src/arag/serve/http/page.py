"""The web page and its assets, all shipped in the wheel (nothing from a CDN), and the offline API docs page."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, Response

WEB = "web"


def router() -> APIRouter:
    """The page (``/``, which keeps a ``?token=`` as a cookie), its assets (``/static/NAME``), ``/api/docs``."""
    router = APIRouter()
    web = Path(str(resources.files("arag.serve").joinpath(WEB)))

    @router.get("/", include_in_schema=False)
    async def page(token: str | None = None) -> Response:
        response = FileResponse(web / "index.html", headers={"Cache-Control": "no-store"})
        if token:  # the page's own requests (scripts, API calls) then carry it
            response.set_cookie("arag_token", token, httponly=True, samesite="strict")
        return response

    @router.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> FileResponse:
        if name not in {p.name for p in web.iterdir()} or name == "index.html":
            raise HTTPException(404, "not found")
        return FileResponse(web / name)

    @router.get("/api/docs", include_in_schema=False)
    async def docs() -> FileResponse:
        return FileResponse(web / "docs.html")

    return router
