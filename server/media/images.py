"""``GET /mockllm/images/…``: the pictures whose URL an images answer gave, fetchable by the client.

A drawn picture's path says what to draw (:func:`~mockllm.runtime.providers.openai_images.image_path`),
so it is drawn again; a scripted picture's path holds the SHA-256 of its bytes, found among the
``image "PATH"`` lines of the loaded library. Anything else is a 404. Drawing runs in a worker thread:
a large picture does not hold up other requests."""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockllm.dsl.tree.nodes import Image
from mockllm.runtime.media.images import MEDIA_TYPES
from mockllm.runtime.providers.openai_images import FILE_PREFIX, URL_PREFIX, served_image

if TYPE_CHECKING:
    from mockllm.server.http.server_state import ServerState


def _sniffed(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return MEDIA_TYPES["png"]
    if data.startswith(b"\xff\xd8"):
        return MEDIA_TYPES["jpeg"]
    if data[8:12] == b"WEBP":
        return MEDIA_TYPES["webp"]
    return "application/octet-stream"


def scripted_picture(state: ServerState, digest: str) -> bytes | None:
    """The bytes of the library's ``image "PATH"`` file whose SHA-256 is ``digest``."""
    library = state.engine.library
    if library is None:
        return None
    blocks = [step.reply for m in library.machines for step in m.steps]
    if library.fallback is not None:
        blocks.append(library.fallback)
    for block in blocks:
        for el in block.elements:
            if isinstance(el, Image) and el.data is not None and hashlib.sha256(el.data).hexdigest() == digest:
                return el.data
    return None


def image_routes(state: ServerState) -> list[BaseRoute]:
    """The route serving the pictures of images answers."""

    async def picture(request: Request) -> Response:
        path = request.url.path
        if path.startswith(FILE_PREFIX):
            data = scripted_picture(state, path.removeprefix(FILE_PREFIX))
            if data is not None:
                return Response(data, media_type=_sniffed(data))
        else:
            found = await asyncio.to_thread(served_image, path)
            if found is not None:
                return Response(found[1], media_type=found[0])
        error = {"message": f"mockllm: no picture at {path}", "type": "invalid_request_error", "code": "not_found"}
        return JSONResponse({"error": error}, status_code=404)

    return [Route(URL_PREFIX + "{rest:path}", picture, methods=["GET"])]
