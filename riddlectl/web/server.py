"""Running the application: a socket bound first (so that a taken port is one clear
line), uvicorn on it, and a stop within two seconds on SIGTERM or SIGINT, live streams
open or not.
"""

from __future__ import annotations

import socket
from typing import Any

from riddlectl.errors import RiddleError
from riddlectl.web.app import create_app
from riddlectl.web.security import Guard
from riddlectl.web.service import Service

# Seconds uvicorn waits for open requests once asked to stop; the live streams end at
# once (the hub closes them), so this only bounds a slow request.
GRACE = 1


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or `RiddleError` naming the address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by every connection: a response written in two parts (head, body)
        # would otherwise wait 40 ms for the client's delayed ACK on a kept-alive
        # connection (uvicorn sets it only on sockets it binds itself).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise RiddleError(f"cannot listen: {exc.strerror}", where=f"{host}:{port}") from None
    return sock


def serve(web: Service, guard: Guard, sock: socket.socket, announce: Any = None) -> int | None:
    """Serve until SIGTERM or SIGINT; `announce` is called with the URL once listening.
    Returns the signal that stopped it."""
    import uvicorn

    app = create_app(web, guard)
    hub = app.app.state.hub
    stopped_by: list[int] = []

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stopped_by.append(sig)
            hub.close()  # end the live streams now, not after the grace period
            super().handle_exit(sig, frame)
            # A stop that was asked for is a success (exit 0, as for the agents): uvicorn
            # would raise the signal again once stopped, and die of it.
            self._captured_signals.clear()

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACE,
        server_header=False,
        lifespan="on",
    )
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/app/table"

    class AnnouncedServer(Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            # Said once the server is up and its signal handlers are in place: whoever
            # waits for this line may stop it at once, and it stops in order.
            if announce is not None:
                announce(url)

    AnnouncedServer(config).run(sockets=[sock])
    return stopped_by[0] if stopped_by else None
