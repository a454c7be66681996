"""The playground's HTTP server: the standard library's, serving the page and the JSON API.

Safe by default, since the templates it renders come from anywhere:
- it binds to 127.0.0.1 unless told otherwise, and then answers only requests whose Host is a
  loopback name (a web page cannot reach it through DNS rebinding);
- the API takes only `application/json` bodies with a Content-Length, up to MAX_BODY bytes (a
  cross-site form cannot post one without a preflight, which is never granted);
- every answer, errors included, is JSON or one of the page's own files: a failure inside a
  handler is answered with a JSON error, never a traceback page;
- the page's Content-Security-Policy allows only its own files (no CDN, works offline).
"""
from __future__ import annotations

import json
import socket
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable, Optional

from .api import Playground, RequestError

MAX_BODY = 2_000_000  # bytes of a request: a template at the size limit and a long conversation
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".js": "text/javascript; charset=utf-8", ".png": "image/png",
                ".svg": "image/svg+xml"}
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class PlaygroundServer(ThreadingHTTPServer):
    """A threading HTTP server holding the `Playground`; closed connections are not errors."""
    daemon_threads = True

    def __init__(self, address: tuple[str, int], playground: Playground, quiet: bool = True) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, PlaygroundHandler)
        self.playground = playground
        self.quiet = quiet
        self.loopback = address[0] in LOOPBACK_NAMES or address[0].startswith("127.")

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return  # the browser went away
        print(f"jinjamark serve: {type(error).__name__}: {error}", file=sys.stderr)


class PlaygroundHandler(BaseHTTPRequestHandler):
    """GET / and /static/NAME (the page's files), GET /api/state; POST /api/render and
    /api/analyze (a JSON object in, a JSON object out)."""
    server: PlaygroundServer
    server_version = "jinjamark-playground"
    timeout = 30  # seconds a client may take to send its request
    error_content_type = "application/json"

    def routes(self) -> dict[tuple[str, str], Callable[[], Any]]:
        playground = self.server.playground
        return {("GET", "/api/state"): lambda: (200, playground.state()),
                ("POST", "/api/render"): lambda: (200, playground.render(self.json_body())),
                ("POST", "/api/analyze"): lambda: (200, playground.analyze(self.json_body()))}

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def dispatch(self, method: str) -> None:
        """Answer one request; whatever goes wrong is answered as a JSON error."""
        try:
            if not self.host_allowed():
                raise HTTPError(HTTPStatus.FORBIDDEN, "this server answers only requests to localhost")
            path = self.path.split("?", 1)[0]
            route = self.routes().get((method, path))
            if route is not None:
                status, answer = route()
                self.send_json(status, answer)
            elif method == "GET":
                self.send_static(path)
            else:
                raise HTTPError(HTTPStatus.NOT_FOUND, f"no such API: {method} {path}")
        except RequestError as error:
            self.send_json(HTTPStatus.BAD_REQUEST, {"error": error.as_json()})
        except HTTPError as error:
            self.send_json(error.status, {"error": {"kind": "HTTPError", "message": error.message}})
        except (ConnectionError, TimeoutError):
            raise
        except Exception as error:  # noqa: BLE001 -- a bug of ours: still JSON, never a traceback
            self.send_json(HTTPStatus.INTERNAL_SERVER_ERROR,
                           {"error": {"kind": "InternalError", "message": f"{type(error).__name__}: {error}"}})

    def host_allowed(self) -> bool:
        if not self.server.loopback:
            return True
        host = self.headers.get("Host", "")
        name = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0]
        return name.lower() in LOOPBACK_NAMES or name.startswith("127.")

    def json_body(self) -> dict:
        """The request's JSON object, refused when it is not JSON, too large or has no length."""
        if self.headers.get_content_type() != "application/json":
            raise HTTPError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "the API takes application/json")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise HTTPError(HTTPStatus.LENGTH_REQUIRED, "a request needs a Content-Length")
        if int(length) > MAX_BODY:
            self.close_connection = True  # the body is not read
            raise HTTPError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            f"the request is larger than {MAX_BODY} bytes")
        body = self.rfile.read(int(length))
        try:
            request = json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError):
            raise RequestError("the request body is not JSON") from None
        if not isinstance(request, dict):
            raise RequestError("the request body must be a JSON object")
        return request

    def send_static(self, path: str) -> None:
        name = "index.html" if path == "/" else path[len("/static/"):] if path.startswith("/static/") else ""
        suffix = name[name.rfind("."):] if "." in name else ""
        static = resources.files("jinjamark.playground") / "static"
        # only plain names of files in static/ (no "..", no sub-folders)
        if not name or "/" in name or "\\" in name or name.startswith(".") or suffix not in STATIC_TYPES:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no such page: {path}")
        resource = static / name
        if not resource.is_file():
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no such page: {path}")
        self.send_body(HTTPStatus.OK, resource.read_bytes(), STATIC_TYPES[suffix])

    def send_json(self, status: int, answer: Any) -> None:
        self.send_body(status, json.dumps(answer, ensure_ascii=False).encode("utf-8"),
                       "application/json; charset=utf-8")

    def send_body(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_error(self, code: int, message: Optional[str] = None, explain: Optional[str] = None) -> None:
        """The standard library's own errors (a malformed request, an unknown method), as JSON."""
        self.close_connection = True
        try:
            self.send_json(code, {"error": {"kind": "HTTPError",
                                            "message": message or HTTPStatus(code).phrase}})
        except (ConnectionError, ValueError):
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- the base class's name
        if not self.server.quiet:
            super().log_message(format, *args)


class HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def make_server(playground: Playground, host: str = "127.0.0.1", port: int = 0,
                quiet: bool = True) -> PlaygroundServer:
    """A server bound to (host, port); port 0 picks a free one (see `server.url`)."""
    return PlaygroundServer((host, port), playground, quiet)
