"""The labelling web app: one page per trace, 14 yes / no / unsure answers, blind by default.

Built on Starlette (a small ASGI toolkit; the app needs routing, forms and cookies, not the
request models and OpenAPI of a larger framework) and served by uvicorn. Everything is in one
process and one SQLite file (:mod:`mast.label.queue`), so several labellers can use one
server (each with their own name) or run their own against a shared file.

Security, because traces are hostile input: every text is escaped by the template engine
(jinja2 autoescape), the page loads nothing from elsewhere and its Content-Security-Policy
allows only its own inline script (by nonce) and style; forms carry a per-server token so
another site cannot post labels through the labeller's browser; the server listens on
127.0.0.1 unless told otherwise, and then requires an access token.

>>> from starlette.routing import Route
>>> sorted(r.path for r in create_routes())
['/', '/done', '/item/{position:int}', '/labeller']
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote

import jinja2

from mast.errors import MissingDependencyError
from mast.judge.prompt.render import steps_as_shown
from mast.label.queue import LabelQueue, QueueError
from mast.taxonomy import Taxonomy, load_taxonomy

__all__ = ["LabelApp", "create_app", "create_routes", "serve"]

_INSTALL = "pip install 'mast-annotator[label]'"
_TEMPLATES = Path(__file__).resolve().parent / "templates"
_LABELLER_COOKIE = "mast_labeller"
_TOKEN_COOKIE = "mast_label_token"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# A server bound to every interface is reached under names it cannot know; it always
# requires the access token, which a page on another site does not have.
_WILDCARD = {"0.0.0.0", "::", ""}


def _starlette() -> Any:
    try:
        import starlette
    except ImportError:
        raise MissingDependencyError(
            f"the labelling app needs starlette and uvicorn. Install them with: {_INSTALL}"
        ) from None
    import starlette.applications
    import starlette.responses
    import starlette.routing

    return starlette


@dataclass
class LabelApp:
    """What the routes share: the queue, who labels, and the server's secrets."""

    queue: LabelQueue
    taxonomy: Taxonomy
    labeller: str | None = None
    show_judge: bool = False
    access_token: str | None = None
    form_token: str = ""

    def __post_init__(self) -> None:
        self.form_token = self.form_token or secrets.token_urlsafe(16)
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )


def create_routes() -> list[Any]:
    routing = _starlette().routing
    return [
        routing.Route("/", _home),
        routing.Route("/labeller", _labeller_form, methods=["GET", "POST"]),
        routing.Route("/item/{position:int}", _item, methods=["GET", "POST"]),
        routing.Route("/done", _done),
    ]


def create_app(
    queue: str | Path | LabelQueue,
    *,
    labeller: str | None = None,
    show_judge: bool = False,
    access_token: str | None = None,
    allowed_hosts: Iterable[str] | None = (),
) -> Any:
    """The ASGI app for ``queue``. ``access_token`` (if given) is required on every request.

    Requests must name one of ``allowed_hosts`` or a loopback name in their ``Host`` header
    (``None`` accepts any name: for a server bound to every interface, which always has a
    token). That check stops DNS rebinding: a page on another site whose name was made to
    resolve to 127.0.0.1 reaches the port, but under its own name.
    """
    star = _starlette()
    q = queue if isinstance(queue, LabelQueue) else LabelQueue(queue)
    state = LabelApp(
        q,
        _queue_taxonomy(q),
        labeller=labeller.strip() if labeller else None,
        show_judge=show_judge,
        access_token=access_token,
    )
    app = star.applications.Starlette(routes=create_routes())
    app.state.label = state
    hosts = None if allowed_hosts is None else {_bare_host(h) for h in [*_LOOPBACK, *allowed_hosts]}
    return _Guard(app, state, hosts)


def _queue_taxonomy(queue: LabelQueue) -> Taxonomy:
    tax = load_taxonomy()
    if tax.label == queue.meta["taxonomy"] or tax.codes == queue.codes:
        return tax
    for name in ("sre",):
        other = load_taxonomy(name)
        if other.label == queue.meta["taxonomy"]:
            return other
    return tax


class _Guard:
    """ASGI middleware: access token (when set) and security headers on every response."""

    def __init__(self, app: Any, state: LabelApp, hosts: set[str] | None) -> None:
        self.app = app
        self.state = state
        self.hosts = hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.hosts is not None and _host_header(scope) not in self.hosts:
            body = b"Forbidden: this server answers only under the host names it is bound to "
            body += b"(add one with `mast label serve --allow-host NAME`)."
            await _plain(send, 403, body)
            return
        token = self.state.access_token
        set_cookie = False
        if token is not None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            cookies = _cookies(scope)
            given = (query.get("token") or [cookies.get(_TOKEN_COOKIE, "")])[0]
            # bytes: compare_digest refuses a str with non-ASCII characters (TypeError)
            if not secrets.compare_digest(given.encode("utf-8", "replace"), token.encode()):
                body = b"Forbidden: open the URL with ?token=... printed by `mast label serve`."
                await _plain(send, 403, body)
                return
            set_cookie = _TOKEN_COOKIE not in cookies

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ]
                if set_cookie and token is not None:
                    headers.append(
                        (
                            b"set-cookie",
                            f"{_TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode(),
                        )
                    )
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


async def _plain(send: Any, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _bare_host(host: str) -> str:
    """``host`` without its port or IPv6 brackets, lower-case: ``[::1]:8765`` → ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host


def _host_header(scope: Any) -> str:
    for name, value in scope.get("headers", []):
        if name == b"host":
            return _bare_host(value.decode("latin-1"))
    return ""


def _cookies(scope: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, val = part.strip().partition("=")
                out[key] = val
    return out


def _state(request: Any) -> LabelApp:
    state: LabelApp = request.app.state.label
    return state


def _who(request: Any) -> str | None:
    state = _state(request)
    # the cookie holds the name percent-encoded (cookies cannot carry every character):
    # decoded once here, so "Ann Lee" is stored as typed and stays one rater
    return state.labeller or unquote(request.cookies.get(_LABELLER_COOKIE, "")) or None


def _html(request: Any, template: str, status: int = 200, **data: Any) -> Any:
    responses = _starlette().responses
    state = _state(request)
    nonce = secrets.token_urlsafe(12)
    text = state.env.get_template(template).render(
        nonce=nonce, form_token=state.form_token, queue=state.queue, **data
    )
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'nonce-{nonce}'; form-action 'self'; base-uri 'none'; img-src 'none'"
    )
    return responses.HTMLResponse(
        text, status_code=status, headers={"content-security-policy": csp}
    )


def _redirect(url: str) -> Any:
    return _starlette().responses.RedirectResponse(url, status_code=303)


class _BadForm(ValueError):
    """A form body that is not UTF-8 text."""


async def _form(request: Any) -> dict[str, list[str]]:
    # urlencoded forms only: no multipart parser needed (and none installed).
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        raise _BadForm("the form is not UTF-8") from None
    return parse_qs(text, keep_blank_values=True)


def _checked(request: Any, form: dict[str, list[str]]) -> bool:
    given = (form.get("form_token") or [""])[0].encode("utf-8", "replace")
    return secrets.compare_digest(given, _state(request).form_token.encode())


def _bad_request(request: Any, text: str) -> Any:
    return _html(request, "message.html.j2", 400, title="Bad request", text=text)


async def _home(request: Any) -> Any:
    who = _who(request)
    if who is None:
        return _redirect("/labeller")
    position = _state(request).queue.next_position(who)
    return _redirect("/done" if position is None else f"/item/{position}")


async def _labeller_form(request: Any) -> Any:
    if request.method == "POST":
        try:
            form = await _form(request)
        except _BadForm as exc:
            return _bad_request(request, str(exc))
        name = (form.get("name") or [""])[0].strip()
        if not _checked(request, form) or not name or len(name) > 80:
            return _html(
                request, "labeller.html.j2", 400, error="give a name (up to 80 characters)"
            )
        response = _redirect("/")
        response.set_cookie(_LABELLER_COOKIE, quote(name, safe=""), samesite="strict")
        return response
    return _html(request, "labeller.html.j2", error=None)


async def _item(request: Any) -> Any:
    state = _state(request)
    who = _who(request)
    if who is None:
        return _redirect("/labeller")
    position = int(request.path_params["position"])
    try:
        item = state.queue.item(position)
    except QueueError as exc:
        return _html(request, "message.html.j2", 404, title="Not in the queue", text=str(exc))
    if request.method == "POST":
        try:
            form = await _form(request)
        except _BadForm as exc:
            return _bad_request(request, str(exc))
        if not _checked(request, form):
            return _html(request, "message.html.j2", 403, title="Refused", text="stale form")
        labels, evidence = _answers(form, state.queue.codes)
        note = (form.get("note") or [""])[0][:5000]
        state.queue.submit(item.trace.id, who, labels, evidence=evidence, note=note)
        following = state.queue.next_position(who, after=position)
        if following is None:
            following = state.queue.next_position(who)
        return _redirect("/done" if following is None else f"/item/{following}")
    mine = state.queue.latest(who).get(item.trace.id)
    reveal = state.show_judge or mine is not None
    return _html(
        request,
        "item.html.j2",
        item=item,
        steps=steps_as_shown(item.trace),
        modes=[_mode_view(state.taxonomy, code) for code in state.queue.codes],
        mine=mine,
        judges=item.judges if reveal else None,
        labeller=who,
        done=len(state.queue.latest(who)),
        previous=position - 1 if position > 0 else None,
        next=position + 1 if position + 1 < state.queue.size else None,
    )


def _answers(
    form: dict[str, list[str]], codes: list[str]
) -> tuple[dict[str, bool | None], dict[str, str]]:
    values = {"yes": True, "no": False}
    labels = {code: values.get((form.get(f"m_{code}") or ["unsure"])[0]) for code in codes}
    evidence = {
        code: (form.get(f"ev_{code}") or [""])[0].strip()[:40]
        for code in codes
        if labels[code] is True
    }
    return labels, {c: s for c, s in evidence.items() if s}


def _mode_view(tax: Taxonomy, code: str) -> dict[str, Any]:
    if code not in tax.codes:
        return {
            "code": code,
            "name": code,
            "definition": "",
            "look_for": [],
            "not_this": [],
            "rules": [],
        }
    mode = tax[code]
    rules = [f"{' / '.join(r.modes)}: {r.rule}" for r in tax.decision_rules if code in r.modes]
    return {
        "code": code,
        "name": mode.name,
        "definition": mode.definition,
        "look_for": list(mode.look_for),
        "not_this": list(mode.not_this),
        "rules": rules,
    }


async def _done(request: Any) -> Any:
    state = _state(request)
    who = _who(request)
    return _html(
        request,
        "message.html.j2",
        title="Queue done" if who else "Nothing to label",
        text=(
            f"{who}: {len(state.queue.latest(who))} of {state.queue.size} traces labelled. "
            f"Export with: mast label export {state.queue.path} --out labels.csv"
            if who
            else "no labeller chosen"
        ),
    )


def serve(
    queue: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    labeller: str | None = None,
    show_judge: bool = False,
    token: str | None = None,
    allow_hosts: Iterable[str] = (),
) -> None:
    """Run the app until interrupted. Off loopback, an access token is always required.

    The app answers under the loopback names, ``host`` and ``allow_hosts`` (any name when
    ``host`` is a wildcard address such as 0.0.0.0, which always has a token).
    """
    if host not in _LOOPBACK and token is None:
        token = secrets.token_urlsafe(16)
    hosts = None if host in _WILDCARD else [host, *allow_hosts]
    app = create_app(
        queue, labeller=labeller, show_judge=show_judge, access_token=token, allowed_hosts=hosts
    )
    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError(
            f"the labelling app needs uvicorn. Install it with: {_INSTALL}"
        ) from None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    print(f"labelling {queue} at {url}  (Ctrl+C to stop)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
