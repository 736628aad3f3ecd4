"""Delegated authentication and authorization: the API server decides who may scrape.

What kube-controller-manager's secure port and controller-runtime's
``filters.WithAuthenticationAndAuthorization`` do for ``/metrics``:

* the request's bearer token goes to the API server in a **TokenReview**
  (``authentication.k8s.io/v1``); a token it does not authenticate gets 401;
* the user it names is checked with a **SubjectAccessReview**
  (``authorization.k8s.io/v1``) for the non-resource path and verb (``get``
  ``/metrics``), evaluated by the cluster's authorizers (RBAC: a ClusterRole rule with
  ``nonResourceURLs: ["/metrics"]``); a denial gets 403.

Both answers are cached, as upstream's delegating authenticator and authorizer cache
them (``--authentication-token-webhook-cache-ttl``,
``--authorization-webhook-cache-authorized-ttl`` / ``-unauthorized-ttl``, 10 s each),
so a scraper costs at most two API calls per TTL, not two per scrape; concurrent
requests with the same token share one review. Failed reviews (API server
unreachable, hpactl not allowed to create reviews) are not cached: they answer 500
with a one-line message and are logged.

``DelegatedAuth(session, *, authentication_ttl=10.0, authorized_ttl=10.0,
unauthorized_ttl=10.0, timeout=10.0, max_entries=4096, monotonic=time.monotonic)``
    ``await auth.review(token, verb, path) -> AccessReview``: ``status`` 200 (allowed),
    401, 403 or 500, a one-line ``message`` and the ``user`` the token belongs to.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from hpactl.kube.errors import KubeError
from hpactl.kube.requests import create_json
from hpactl.kube.session import KubeSession

__all__ = ["AccessReview", "DelegatedAuth", "Identity"]

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Identity:
    """The user a TokenReview authenticated (``status.user``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def extra_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.extra}


@dataclass(frozen=True, slots=True)
class AccessReview:
    """The outcome for one HTTP request: the status to answer and a one-line message."""

    status: int
    message: str = ""
    user: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == 200


class ReviewFailed(Exception):
    """The API server did not answer a review (one line)."""


@dataclass(slots=True)
class _TTLCache(Generic[V]):
    """Entries expire after their own TTL; the oldest go first beyond ``max_entries``."""

    max_entries: int
    monotonic: Callable[[], float]
    _entries: dict[Hashable, tuple[float, V]] = field(default_factory=dict)

    def get(self, key: Hashable) -> tuple[bool, V | None]:
        hit = self._entries.get(key)
        if hit is None:
            return False, None
        expires, value = hit
        if self.monotonic() >= expires:
            del self._entries[key]
            return False, None
        return True, value

    def put(self, key: Hashable, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries.pop(key, None)
        while len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (self.monotonic() + ttl, value)

    def __len__(self) -> int:
        return len(self._entries)


class DelegatedAuth:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession,
        *,
        authentication_ttl: float = 10.0,
        authorized_ttl: float = 10.0,
        unauthorized_ttl: float = 10.0,
        timeout: float = 10.0,
        max_entries: int = 4096,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._authn_ttl = authentication_ttl
        self._allowed_ttl = authorized_ttl
        self._denied_ttl = unauthorized_ttl
        self._timeout = timeout
        self._identities: _TTLCache[Identity | None] = _TTLCache(max_entries, monotonic)
        self._decisions: _TTLCache[tuple[bool, str]] = _TTLCache(max_entries, monotonic)
        self._inflight: dict[Hashable, asyncio.Future[Any]] = {}

    # ------------------------------------------------------------------ the entry point

    async def review(self, token: str, verb: str, path: str) -> AccessReview:
        try:
            who = await self.authenticate(token)
        except ReviewFailed as exc:
            log.warning("delegated authentication failed: %s", exc)
            return AccessReview(500, f"Internal Server Error: {exc}")
        if who is None:
            return AccessReview(401, "Unauthorized")
        try:
            allowed, reason = await self.authorize(who, verb, path)
        except ReviewFailed as exc:
            log.warning("delegated authorization failed: %s", exc)
            return AccessReview(500, f"Internal Server Error: {exc}", who.username)
        if allowed:
            return AccessReview(200, "", who.username)
        # The apiserver's wording for a denied non-resource request.
        message = f'forbidden: User "{who.username}" cannot {verb} path "{path}"'
        if reason:
            message = f"{message}: {reason}"
        return AccessReview(403, " ".join(message.split()), who.username)

    # ------------------------------------------------------------------ authentication

    async def authenticate(self, token: str) -> Identity | None:
        """The token's user, or None when the API server does not authenticate it."""
        key = ("authn", hashlib.sha256(token.encode()).hexdigest())
        found, cached = self._identities.get(key)
        if found:
            return cached

        async def fetch() -> Identity | None:
            who = await self._token_review(token)
            self._identities.put(key, who, self._authn_ttl)
            return who

        result: Identity | None = await self._once(key, fetch)
        return result

    async def _token_review(self, token: str) -> Identity | None:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = await self._create(TOKEN_REVIEWS, body, "TokenReview")
        if status.get("authenticated") is not True:
            return None
        user = status.get("user")
        if not isinstance(user, Mapping) or not isinstance(user.get("username"), str):
            raise ReviewFailed("TokenReview failed: the answer names no user")
        extra = user.get("extra") or {}
        return Identity(
            username=str(user["username"]),
            uid=str(user.get("uid") or ""),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items()))
            if isinstance(extra, Mapping)
            else (),
        )

    # ------------------------------------------------------------------ authorization

    async def authorize(self, who: Identity, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason) for a non-resource request by ``who``."""
        key = ("authz", who, verb, path)
        found, cached = self._decisions.get(key)
        if found and cached is not None:
            return cached

        async def fetch() -> tuple[bool, str]:
            decision = await self._subject_access_review(who, verb, path)
            ttl = self._allowed_ttl if decision[0] else self._denied_ttl
            self._decisions.put(key, decision, ttl)
            return decision

        result: tuple[bool, str] = await self._once(key, fetch)
        return result

    async def _subject_access_review(self, who: Identity, verb: str, path: str) -> tuple[bool, str]:
        spec: dict[str, Any] = {
            "user": who.username,
            "groups": list(who.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if who.uid:
            spec["uid"] = who.uid
        if who.extra:
            spec["extra"] = who.extra_dict()
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = await self._create(SUBJECT_ACCESS_REVIEWS, body, "SubjectAccessReview")
        reason = str(status.get("reason") or "")
        evaluation_error = str(status.get("evaluationError") or "")
        if evaluation_error:
            reason = f"{reason}; {evaluation_error}" if reason else evaluation_error
        allowed = status.get("allowed") is True and status.get("denied") is not True
        return allowed, reason

    # ------------------------------------------------------------------ plumbing

    async def _create(self, path: str, body: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
        try:
            answer = await create_json(self._session, path, body, timeout=self._timeout)
        except KubeError as exc:
            raise ReviewFailed(f"{kind} failed: {_one_line(str(exc))}") from None
        except ValueError as exc:  # a body that is not JSON
            raise ReviewFailed(
                f"{kind} failed: undecodable answer: {_one_line(str(exc))}"
            ) from None
        status = answer.get("status")
        if not isinstance(status, Mapping):
            raise ReviewFailed(f"{kind} failed: the answer has no status")
        return status

    async def _once(self, key: Hashable, fetch: Callable[[], Awaitable[V]]) -> V:
        """Run ``fetch`` once for concurrent callers with the same key."""
        pending = self._inflight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(fetch())
            self._inflight[key] = pending

            def done(task: asyncio.Future[Any]) -> None:
                self._inflight.pop(key, None)
                if not task.cancelled():
                    task.exception()  # retrieved: every waiter may have gone away

            pending.add_done_callback(done)
        value: V = await asyncio.shield(pending)
        return value


def _one_line(text: str) -> str:
    return " ".join(text.split())
