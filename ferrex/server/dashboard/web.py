"""The dashboard's HTTP side: sessions, the pages and the JSON API, as Starlette routes.

Every route reads through the hub with the caller the request's token grants, exactly like
an MCP tool call over HTTP, so a page shows only what that token's agent may see.

Authentication (see :mod:`ferrex.server.mcp_auth` for the tokens):

- A URL carrying ``?token=…`` (what ``ferrex ui`` prints) is exchanged once for a session: the
  server keeps the token in memory under a random session id, sets that id as a cookie
  (HttpOnly, SameSite=Strict, Path=/) and redirects (303) to the same URL without the token,
  so the token leaves the address bar and the history.
- Each request's session token is looked up in the current token table, so a token revoked
  in ferrex.toml ends its sessions at once. ``Authorization: Bearer`` works too (scripts).
- Sessions are capped per principal (:data:`SESSIONS_PER_PRINCIPAL`, the oldest of that
  principal's dropped first), so one token's logins never push out another's session.
- Without a token table (``auth.open_loopback`` on loopback) every request is the server's
  own caller, as for ``/mcp``.

Actions (confirm, forget, verify) are POST forms; a POST authenticated by its session cookie
(or by nothing, on an open loopback server) must carry an ``Origin`` header equal to the
dashboard's origin, so another site cannot make a browser act, and the SameSite cookie is not
sent cross-site either. Only a request authenticated by an ``Authorization: Bearer`` token
(which a browser never adds by itself) skips that check. The dashboard's origin is the
request's own (scheme and ``Host``), or ``server.public_url`` (behind a TLS proxy), or what a
proxy listed in ``server.trusted_proxies`` says in ``X-Forwarded-Proto``/``X-Forwarded-Host``;
when that origin is https the session cookie is ``Secure``. Forget shows a confirmation page
first. Responses, error pages included, forbid framing and every external load
(Content-Security-Policy) and send no referrer beyond the dashboard itself.

On a loopback address (and wherever ``server.public_url`` is set) only these ``Host`` names
are answered: ``localhost``, IP literals (``127.0.0.1``, ``[::1]``, …) and the public URL's
host. A name is not an address: ``127.attacker.example`` re-pointed at 127.0.0.1 (DNS
rebinding) is refused.
"""

from __future__ import annotations

import ipaddress
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ferrex.errors import FerrexError, UsageError
from ferrex.rules.arguments import SEARCH_LIMIT
from ferrex.server.dashboard import pages
from ferrex.server.dashboard.api import INTERNAL, WriteApi, not_found_json
from ferrex.server.dashboard.edge import (
    HEADERS,
    Forbidden,
    Unauthorized,
    error_body,
    error_headers,
    status_of,
)
from ferrex.server.dashboard.owned import PerOwner
from ferrex.server.dashboard.params import (
    ENTITIES_QUERY,
    LIST_QUERY,
    REFLECT_QUERY,
    SEARCH_QUERY,
    STATS_QUERY,
    TAGS_QUERY,
    Param,
    check_query,
    number,
    query_args,
    whole,
)
from ferrex.server.dashboard.stream import STREAMS_PER_PRINCIPAL, ChangeStream, Streams
from ferrex.server.hub import Hub
from ferrex.server.mcp_auth import TokenTable
from ferrex.server.service import Caller, error_document
from ferrex.server.tool_calls import Recall, RecallArgs, decode

if TYPE_CHECKING:
    from ferrex.server.mcp_server import ToolInput

log = logging.getLogger("ferrex.dashboard")

COOKIE = "ferrex_session"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 256
#: Sessions one principal (the operator, or one agent) may hold at once.
SESSIONS_PER_PRINCIPAL = 16
_FLAGS = ("include_stale", "include_invalidated")
_TEXTS = ("as_of", "after", "before", "namespace", "strategy")


class Sessions:
    """Session id → token, in memory only (a restart ends every session).

    Beyond :data:`SESSIONS_PER_PRINCIPAL` sessions of one principal, that principal's oldest
    is dropped; beyond :data:`MAX_SESSIONS` in all, the oldest of the principal holding the
    most. So an agent logging in again and again only ever replaces its own sessions.
    """

    def __init__(
        self, per_principal: int = SESSIONS_PER_PRINCIPAL, total: int = MAX_SESSIONS
    ) -> None:
        self._lock = threading.Lock()
        # session id → (token, when it ends), of its principal
        self._by_id = PerOwner[tuple[str, float]](per_principal, total)

    def open(self, token: str, principal: str = "") -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            self._by_id.put(sid, principal, (token, time.monotonic() + SESSION_SECONDS))
        return sid

    def __len__(self) -> int:
        return len(self._by_id)

    def token(self, sid: str) -> str | None:
        with self._lock:
            found = self._by_id.get(sid)
            if found is None:
                return None
            if found[1] < time.monotonic():
                self._by_id.drop(sid)
                return None
            return found[0]


class Dashboard:
    """The dashboard over one hub and token table (None: no tokens needed)."""

    def __init__(
        self,
        hub: Hub,
        tokens: TokenTable | None,
        *,
        loopback: bool = True,
        public_url: str | None = None,
        trusted_proxies: Iterable[str] = (),
        tools: Mapping[str, ToolInput] | None = None,
        streams: tuple[int, int] | None = None,
    ) -> None:
        self.hub = hub
        self.tokens = tokens
        self.loopback = loopback
        self.public = origin_of(public_url) if public_url else None
        self.trusted_proxies = frozenset(str(ipaddress.ip_address(a)) for a in trusted_proxies)
        self.sessions = Sessions()
        # The write API (ferrex.server.dashboard.api) needs the tools' argument checks.
        self.write_api = WriteApi(self, tools) if tools is not None else None
        per_principal, total = streams or (STREAMS_PER_PRINCIPAL, STREAMS_PER_PRINCIPAL * 16)
        self.changes = ChangeStream(self, Streams(per_principal, total))

    # -- who is asking ----------------------------------------------------------------------

    def forwarded(self, request: Request) -> tuple[str, str] | None:
        """(scheme, host) a trusted proxy says the browser used, if it sent both."""
        client = request.client.host if request.client else None
        if client is None or _address(client) not in self.trusted_proxies:
            return None
        proto = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        host = request.headers.get("x-forwarded-host", "").split(",")[0].strip()
        if proto not in ("http", "https") or not host:
            return None
        return proto, host

    def check_host(self, request: Request) -> None:
        """On a loopback address (or with a public URL), only ``localhost``, an IP literal
        or the public URL's host: a page of another site whose name was re-pointed at
        127.0.0.1 (DNS rebinding) is refused, which matters most with
        ``auth.open_loopback``, where no token stands in its way. A trusted proxy's
        forwarded host must pass as well."""
        if not self.loopback and self.public is None:
            return
        hosts = [request.headers.get("host", "")]
        forwarded = self.forwarded(request)
        if forwarded is not None:
            hosts.append(forwarded[1])
        public = urlsplit(self.public).hostname if self.public else None
        for host in hosts:
            name = host_name(host)
            if not (name == public or is_local_name(name)):
                raise Forbidden(
                    f"this dashboard answers only to localhost, an IP address or its "
                    f"configured public name, not {name or host!r}",
                    hint="behind a proxy, set server.public_url to the address people use",
                )

    def origins(self, request: Request) -> set[str]:
        """The origins a dashboard action may come from: the request's own, the public
        URL's, and a trusted proxy's (the host was checked before)."""
        found = {f"{request.url.scheme}://{request.headers.get('host', '')}"}
        if self.public is not None:
            found.add(self.public)
        forwarded = self.forwarded(request)
        if forwarded is not None:
            found.add(f"{forwarded[0]}://{forwarded[1]}")
        return found

    def secure(self, request: Request) -> bool:
        """Whether the browser reached this request over https: the session cookie is then
        ``Secure``."""
        if request.url.scheme == "https":
            return True
        forwarded = self.forwarded(request)
        if forwarded is not None:
            return forwarded[0] == "https"
        if self.public is not None and self.public.startswith("https://"):
            return host_name(request.headers.get("host", "")) == urlsplit(self.public).hostname
        return False

    def caller(self, request: Request) -> Caller:
        """The caller the request's session or bearer token grants; Unauthorized if none."""
        return self.authenticated(request)[0]

    def authenticated(self, request: Request) -> tuple[Caller, bool]:
        """The caller, and whether a bearer token (not the cookie, not an open server) is
        what authenticated the request."""
        self.check_host(request)
        namespace = self.hub.caller.namespace
        if self.tokens is None:
            return self.hub.caller, False
        token = None
        bearer = False
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            token = header[7:].strip()
            bearer = True
        elif COOKIE in request.cookies:
            token = self.sessions.token(request.cookies[COOKIE])
        grant = self.tokens.lookup(token) if token else None
        if grant is None:
            raise _refused(request, presented=bearer)
        caller = Caller(agent_id=grant.agent, namespace=namespace,
                        visibility=self.hub.caller.visibility)  # fmt: skip
        return caller, bearer

    def login(self, request: Request) -> Response | None:
        """A request carrying ``?token=`` becomes a session and a redirect without it."""
        token = request.query_params.get("token")
        if token is None:
            return None
        try:
            self.check_host(request)
        except Forbidden as exc:
            return _html(pages.message_page("Refused", exc.message), 403)
        grant = self.tokens.lookup(token) if self.tokens is not None else None
        if self.tokens is not None and grant is None:
            return _html(
                pages.message_page(
                    "Unknown token",
                    "That token is not known "
                    "(revoked, or mistyped). Ask `ferrex ui` for a new URL.",
                ),
                401,
            )
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(target, status_code=303, headers=HEADERS)
        if grant is not None:
            response.set_cookie(
                COOKIE,
                self.sessions.open(token, grant.client_id),
                max_age=SESSION_SECONDS,
                path="/",
                httponly=True,
                samesite="strict",
                secure=self.secure(request),
            )
        return response

    def _call(self, tool: str, args: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        """A page's call: the arguments its query and form gave, decoded once, here."""
        return self.hub.call(decode(tool, args), caller)

    # -- pages ------------------------------------------------------------------------------

    def page(self, render: Callable[[Request, Caller, str], str]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            login = self.login(request)
            if login is not None:
                return login
            try:
                caller = self.caller(request)
            except Unauthorized as exc:
                return _html(pages.message_page("Sign in", f"{exc.message}: {exc.hint}"), 401)
            except Forbidden as exc:
                return _html(pages.message_page("Refused", exc.message), 403)
            try:
                return _html(render(request, caller, _who(caller)))
            except FerrexError as exc:
                doc = error_document(exc)
                return _html(
                    pages.layout("Error", "", _who(caller), pages.error_box(doc)),
                    status_of(exc.code),
                )

        return endpoint

    def search(self, request: Request, caller: Caller, who: str) -> str:
        params = search_params(request)
        if not params.get("q"):
            return pages.search_page(params, None, None, who)
        try:
            doc = self.hub.call(recall_request(params), caller)
        except FerrexError as exc:
            return pages.search_page(params, None, error_document(exc), who)
        return pages.search_page(params, doc, None, who)

    def memory(self, request: Request, caller: Caller, who: str) -> str:
        memory_id = request.path_params["memory_id"]
        doc = self._memory(memory_id, caller)
        history = self._call("dashboard", {"view": "history", "id": memory_id}, caller)
        return pages.memory_page(doc, history, who, can_act=True)

    def _memory(self, memory_id: str, caller: Caller) -> dict[str, Any]:
        return self._call(
            "resource", {"uri": f"ferrex://memory/{quote(memory_id, safe='')}"}, caller
        )

    def entities(self, request: Request, caller: Caller, who: str) -> str:
        name = request.query_params.get("name", "")
        offset = _offset(request)
        if not name.strip():
            prefix = request.query_params.get("prefix", "")
            listing = self._call(
                "dashboard", {"view": "entities", "prefix": prefix, "offset": offset}, caller
            )
            return pages.entities_page(listing, None, None, name, who)
        try:
            entity = self._call(
                "dashboard", {"view": "entity", "name": name, "offset": offset}, caller
            )
        except FerrexError as exc:
            return pages.entities_page(None, None, error_document(exc), name, who)
        return pages.entities_page(None, entity, None, name, who)

    def health(self, request: Request, caller: Caller, who: str, notice: str | None = None) -> str:
        stats = self._call("stats", {"detailed": True}, caller)
        reflect = self._call("reflect", {"limit": 20}, caller)
        return pages.health_page(stats, reflect, who, can_act=True, notice=notice)

    def journal(self, request: Request, caller: Caller, who: str) -> str:
        try:
            doc = self._call("dashboard", {"view": "journal"}, caller)
        except FerrexError as exc:
            if exc.code == "forbidden":  # an agent's token: the page's status says so (403)
                raise
            return pages.journal_page(None, error_document(exc), who)
        return pages.journal_page(doc, None, who)

    # -- actions ----------------------------------------------------------------------------

    def action(
        self, run: Callable[[Caller, Mapping[str, Any], str], Response]
    ) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            try:
                caller, by_bearer = self.authenticated(request)
                if not by_bearer:  # the cookie (or nothing) authenticated it: a browser may
                    self.same_origin(request)  # have been made to send it by another site
            except (Unauthorized, Forbidden) as exc:
                return _html(pages.message_page("Refused", f"{exc.message}"), status_of(exc.code))
            form = await request.form()
            fields = {
                "ids": [str(v) for v in form.getlist("ids")],
                "confirmed": str(form.get("confirmed", "")),
            }
            return await run_in_threadpool(run, caller, fields, _who(caller))

        return endpoint

    def confirm_action(self, caller: Caller, form: Mapping[str, Any], who: str) -> Response:
        try:
            doc = self._call("confirm", {"ids": form["ids"]}, caller)
        except FerrexError as exc:
            return _error_page(exc, who)
        return _html(pages.done_page("Confirmed", _flat(doc), who))

    def forget_action(self, caller: Caller, form: Mapping[str, Any], who: str) -> Response:
        ids = form["ids"]
        if form.get("confirmed") != "yes":
            summaries = {}
            for memory_id in ids[:100]:
                try:
                    summaries[memory_id] = str(self._memory(memory_id, caller).get("summary"))
                except FerrexError:
                    summaries[memory_id] = f"{memory_id} (not found)"
            return _html(pages.confirm_forget_page(ids, summaries, who))
        try:
            doc = self._call("forget", {"ids": ids}, caller)
        except FerrexError as exc:
            return _error_page(exc, who)
        return _html(pages.done_page("Forgotten", _flat(doc), who))

    def verify_action(self, caller: Caller, form: Mapping[str, Any], who: str) -> Response:
        try:
            self._call("dashboard", {"view": "verify"}, caller)
        except FerrexError as exc:
            return _error_page(exc, who)
        return RedirectResponse("/journal", status_code=303, headers=HEADERS)

    # -- the JSON API -----------------------------------------------------------------------

    def api(
        self, read: Callable[[Request, Caller], dict[str, Any]], params: tuple[Param, ...] = ()
    ) -> Callable[[Request], Response]:
        """A read route of the JSON API; ``params``: the query parameters it takes (any
        other is refused, as a POST refuses an unknown field)."""

        def endpoint(request: Request) -> Response:
            failure: FerrexError
            try:
                caller = self.caller(request)
                check_query(request, params)
                return JSONResponse(read(request, caller), headers=HEADERS)
            except FerrexError as exc:
                failure = exc
            except Exception:
                log.exception("%s %s failed unexpectedly", request.method, request.url.path)
                failure = INTERNAL
            status = status_of(failure.code)
            return JSONResponse(
                {"error": error_body(failure)}, status_code=status, headers=error_headers(status)
            )

        return endpoint

    def api_recall(self, request: Request, caller: Caller) -> dict[str, Any]:
        params = search_params(request)
        if not params.get("q"):
            raise UsageError("q is required: the words to look for")
        return self.hub.call(recall_request(params), caller)

    def api_memory(self, request: Request, caller: Caller) -> dict[str, Any]:
        return self._memory(request.path_params["memory_id"], caller)

    def api_history(self, request: Request, caller: Caller) -> dict[str, Any]:
        return self._call(
            "dashboard", {"view": "history", "id": request.path_params["memory_id"]}, caller
        )

    def api_entities(self, request: Request, caller: Caller) -> dict[str, Any]:
        name = request.query_params.get("name", "")
        offset = _offset(request)
        if name.strip() and request.query_params.get("prefix", "").strip():
            raise UsageError(
                "name and prefix ask two things: one entity, or the names that start so",
                hint="send name=NAME for one entity, or prefix=TEXT for a list of names",
            )
        if name.strip():
            return self._call(
                "dashboard", {"view": "entity", "name": name, "offset": offset}, caller
            )
        prefix = request.query_params.get("prefix", "")
        return self._call(
            "dashboard", {"view": "entities", "prefix": prefix, "offset": offset}, caller
        )

    def api_stats(self, request: Request, caller: Caller) -> dict[str, Any]:
        return self._call("stats", {"detailed": True, **query_args(request, STATS_QUERY)}, caller)

    def api_reflect(self, request: Request, caller: Caller) -> dict[str, Any]:
        return self._call("reflect", query_args(request, REFLECT_QUERY), caller)

    def api_memories(self, request: Request, caller: Caller) -> dict[str, Any]:
        args = {"view": "memories", **query_args(request, LIST_QUERY)}
        return self._call("dashboard", args, caller)

    def api_tags(self, request: Request, caller: Caller) -> dict[str, Any]:
        return self._call("dashboard", {"view": "tags", **query_args(request, TAGS_QUERY)}, caller)

    def same_origin(self, request: Request) -> None:
        origin = request.headers.get("origin")
        expected = self.origins(request)
        if origin not in expected:
            raise Forbidden(
                f"a dashboard action must come from the dashboard itself "
                f"({', '.join(sorted(expected))}); "
                f"this one came from {origin or 'nowhere (no Origin header)'}"
            )

    async def not_found(self, request: Request, exc: Exception) -> Response:
        """Starlette's own 404 and 405, as pages with the dashboard's headers."""
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        allow = _allowed(request) if status == 405 else None
        if request.url.path.startswith("/api/"):  # the API's clients read JSON errors
            return not_found_json(request, status, allow)
        if status == 405:
            text = "this address does not take that method"
            page = pages.message_page("Method not allowed", text)
        else:
            status = 404
            page = pages.message_page("Not found", "nothing is served at this address")
        answer = _html(page, status)
        if status == 405 and allow:
            answer.headers["Allow"] = allow
        return answer

    # -- the routes -------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/", self.page(self.search), methods=["GET"]),
            Route("/memory/{memory_id:path}", self.page(self.memory), methods=["GET"]),
            Route("/entities", self.page(self.entities), methods=["GET"]),
            Route("/health", self.page(self.health), methods=["GET"]),
            Route("/journal", self.page(self.journal), methods=["GET"]),
            Route("/actions/confirm", self.action(self.confirm_action), methods=["POST"]),
            Route("/actions/forget", self.action(self.forget_action), methods=["POST"]),
            Route("/journal/verify", self.action(self.verify_action), methods=["POST"]),
            Route("/api/v1/recall", self.api(self.api_recall, SEARCH_QUERY), methods=["GET"]),
            Route("/api/v1/memory/{memory_id:path}", self.api(self.api_memory), methods=["GET"]),
            Route("/api/v1/history/{memory_id:path}", self.api(self.api_history), methods=["GET"]),
            Route("/api/v1/entities", self.api(self.api_entities, ENTITIES_QUERY), methods=["GET"]),
            Route("/api/v1/stats", self.api(self.api_stats, STATS_QUERY), methods=["GET"]),
            Route("/api/v1/reflect", self.api(self.api_reflect, REFLECT_QUERY), methods=["GET"]),
            Route("/api/v1/memories", self.api(self.api_memories, LIST_QUERY), methods=["GET"]),
            Route("/api/v1/tags", self.api(self.api_tags, TAGS_QUERY), methods=["GET"]),
            Route("/api/v1/changes", self.changes.endpoint, methods=["GET"]),
            *(self.write_api.routes() if self.write_api is not None else ()),
        ]


def search_params(request: Request) -> dict[str, Any]:
    """The search form's fields from a query string: ``types`` and ``entities`` repeated or
    comma-separated, flags present or not."""
    q = request.query_params

    def listed(name: str) -> list[str]:
        return [p.strip() for v in q.getlist(name) for p in v.split(",") if p.strip()]

    params: dict[str, Any] = {
        "q": q.get("q", "").strip(),
        "types": listed("types"),
        "entities": listed("entities"),
        "limit": q.get("limit", ""),
    }
    params["min_relevance"] = q.get("min_relevance", "")
    for name in _TEXTS:
        params[name] = q.get(name, "").strip()
    for name in _FLAGS:
        params[name] = q.get(name, "") not in ("", "0", "false")
    return params


def recall_request(params: Mapping[str, Any]) -> Recall:
    """The recall request for the search form's fields: always explained, and not counted as
    a use (a person looking is not an agent relying on a memory)."""

    def text(name: str) -> str | None:
        given: str = params.get(name) or ""
        return given or None

    def flag(name: str) -> bool:
        return bool(params.get(name))

    relevance = params.get("min_relevance")
    args = RecallArgs(
        query=params["q"],
        explain=True,
        limit=whole(params.get("limit") or str(SEARCH_LIMIT), "limit"),
        types=tuple(params.get("types") or ()),
        entities=tuple(params.get("entities") or ()),
        min_relevance=number(relevance, "min_relevance") if relevance else None,
        as_of=text("as_of"),
        after=text("after"),
        before=text("before"),
        namespace=text("namespace"),
        strategy=text("strategy"),
        include_stale=flag("include_stale"),
        include_invalidated=flag("include_invalidated"),
    )
    return Recall(args=args, count_access=False)


def _offset(request: Request) -> int:
    return whole(request.query_params.get("offset", "0") or "0", "offset")


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-cased, the default port left out."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    port = f":{parts.port}" if parts.port is not None and parts.port != default else ""
    return f"{scheme}://{host}{port}"


def host_name(host: str) -> str:
    """The name of a ``Host`` header's value, without its port or brackets, lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def is_local_name(name: str) -> bool:
    """``localhost`` or an IP literal: a name that no DNS answer can re-point."""
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text


def _refused(request: Request, *, presented: bool) -> Unauthorized:
    """Why a request has no caller: a bearer token no entry knows, or no token at all (an API
    client is told to send one, a browser how to sign in)."""
    where = "the operator's is run/http.token in the data directory"
    if presented:
        return Unauthorized(
            "this bearer token is not known (mistyped, or revoked)",
            hint=f"send a token the server knows: {where}, an agent's is one that "
            "[[auth.tokens]] in ferrex.toml names by its sha256",
        )
    if request.url.path.startswith("/api/"):
        return Unauthorized(
            "this API needs a bearer token",
            hint=f"send Authorization: Bearer <token>; {where}",
        )
    return Unauthorized(
        "this dashboard needs a token",
        hint="open the URL `ferrex ui` prints, or send Authorization: Bearer <token>",
    )


def _who(caller: Caller) -> str:
    return "operator" if caller.agent_id is None else f"agent {caller.agent_id}"


def _flat(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (", ".join(map(str, v)) if isinstance(v, list) else v) for k, v in doc.items()}


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=error_headers(status))


def _error_page(exc: FerrexError, who: str) -> Response:
    doc = error_document(exc)
    return _html(pages.layout("Error", "", who, pages.error_box(doc)), status_of(exc.code))


def _allowed(request: Request) -> str | None:
    """The methods the address of a 405 takes, for its ``Allow`` header: of every route of
    its path (Starlette's own header names only the first route's, and a path served by two,
    ``GET`` and ``POST`` of ``/api/v1/memories``, takes both)."""
    path = request.url.path
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods and route.path_regex.fullmatch(path):
            methods |= route.methods
    return ", ".join(sorted(methods)) or None
