"""Fault injection for the emulator: errors, latency, dropped watches, forced 410s,
metrics API groups going away and coming back, and etcd restores.

Rules come from Python (:meth:`FaultInjector.add`) or from CLI-style specs
(:func:`parse_fault_spec`), e.g.::

    path=/apis/metrics.k8s.io/*,verb=GET,status=500,rate=0.5
    latency=200ms,path=/apis/autoscaling/v2/*
    watch-drop=/api/v1/pods,events=3
    gone=/apis/autoscaling/v2/*
    unavailable=custom.metrics.k8s.io,after=2,count=3
    reset=/apis/autoscaling/v2/*,verb=update,after=20
    restore=*,after=500

A spec is comma-separated ``key=value`` pairs:

- exactly one effect: ``status=<400..599>`` (optionally with ``latency``),
  ``latency=<Go duration>``, ``watch-drop=<path glob>``, ``gone=<path glob>``,
  ``unavailable=<metrics API group>``, ``restore=<path glob>`` (before the matching
  request is served, the store goes back to the restore point: by default the state
  when the first request arrived, lower resourceVersions included; open watches
  end), ``reset=<path glob>`` (the same with an empty store: an emptied etcd);
- filters: ``path=<glob>`` (fnmatch, ``*`` crosses ``/``; default ``*``),
  ``verb=<v>[|<v>...]`` (HTTP methods in capitals ``GET``, ``PUT``... or Kubernetes
  verbs in lower case ``list``, ``watch``, ``get``, ``update``...);
- ``rate=<0..1>`` probability per matching request, drawn from a seeded
  ``random.Random`` (reproducible; no draw is made for rate 1);
- ``after=<n>`` let the first n matching requests through, ``count=<n>`` then apply
  to n of them and stop (a group that goes away and comes back); restore= and reset=
  default to ``count=1``;
- ``events=<n>`` (watch-drop only) end the stream after n events (default 0: at once);
- ``message=<text>`` (status only; no commas) the Status message.

Latency is real ``asyncio.sleep`` by default (the one place the emulator sleeps in
real time); pass ``sleep=`` to use a virtual clock instead.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from hpactl.emulator.errors import ApiError
from hpactl.emulator.rbac import request_attributes
from hpactl.model.times import parse_go_duration

if TYPE_CHECKING:
    from hpactl.emulator.metrics_api import MetricsState


__all__ = ["FaultInjector", "FaultRule", "StoreControl", "parse_fault_spec"]


class StoreControl(Protocol):
    """What restore= and reset= rules act on (the `Emulator`)."""

    def snapshot(self) -> Any: ...

    def restore(self, snapshot: Any) -> None: ...

    def reset(self) -> None: ...


_METRICS_GROUPS = {
    "metrics.k8s.io": "v1beta1",
    "custom.metrics.k8s.io": "v1beta2",
    "external.metrics.k8s.io": "v1beta1",
}

# Status reasons the apiserver uses for these codes (metav1.StatusReason*).
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

_EFFECT_KEYS = ("status", "latency", "watch-drop", "gone", "unavailable", "restore", "reset")
_PATH_EFFECTS = ("watch-drop", "gone", "restore", "reset")
_KINDS = ("error", "latency", "watch-drop", "gone", "unavailable", "restore", "reset")
_ALL_KEYS = (*_EFFECT_KEYS, "path", "verb", "rate", "after", "count", "events", "message")


@dataclass(frozen=True, slots=True)
class FaultRule:
    """One fault. ``kind`` is ``error``, ``latency``, ``watch-drop``, ``gone``,
    ``unavailable``, ``restore`` or ``reset``; an ``error`` rule may also carry
    ``latency``."""

    kind: str
    path: str = "*"
    verbs: frozenset[str] = frozenset()
    status: int = 0
    latency: float = 0.0
    rate: float = 1.0
    after: int = 0
    count: int | None = None
    events: int = 0
    group: str = ""
    message: str = ""
    spec: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}")
        if self.kind == "error" and not 400 <= self.status <= 599:
            raise ValueError(f"fault status must be an HTTP error code 400..599, got {self.status}")
        if not 0.0 < self.rate <= 1.0:
            raise ValueError(f"fault rate must be in (0, 1], got {self.rate}")
        if self.latency < 0:
            raise ValueError(f"fault latency must not be negative, got {self.latency}")
        if self.after < 0 or self.events < 0 or (self.count is not None and self.count < 1):
            raise ValueError("fault after and events must be >= 0 and count >= 1")
        if self.kind == "unavailable" and self.group not in _METRICS_GROUPS:
            raise ValueError(
                f"unavailable= takes a metrics API group ({', '.join(_METRICS_GROUPS)}), got {self.group!r}"
            )

    def matches_path(self, path: str) -> bool:
        if self.kind == "unavailable":
            prefix = f"/apis/{self.group}/{_METRICS_GROUPS[self.group]}"
            return path == prefix or path.startswith(prefix + "/")
        return fnmatch.fnmatchcase(path, self.path)

    def matches_verb(self, method: str, k8s_verb: str) -> bool:
        return not self.verbs or method in self.verbs or k8s_verb in self.verbs

    @classmethod
    def error(cls, status: int, path: str = "*", **kw: Any) -> FaultRule:
        return cls(kind="error", status=status, path=path, **kw)

    @classmethod
    def slow(cls, seconds: float, path: str = "*", **kw: Any) -> FaultRule:
        return cls(kind="latency", latency=seconds, path=path, **kw)

    @classmethod
    def watch_drop(cls, path: str = "*", events: int = 0, **kw: Any) -> FaultRule:
        return cls(kind="watch-drop", path=path, events=events, **kw)

    @classmethod
    def gone(cls, path: str = "*", **kw: Any) -> FaultRule:
        return cls(kind="gone", path=path, **kw)

    @classmethod
    def unavailable(cls, group: str, **kw: Any) -> FaultRule:
        return cls(kind="unavailable", group=group, **kw)

    @classmethod
    def restore(cls, path: str = "*", **kw: Any) -> FaultRule:
        """Go back to the restore point (an etcd restore) before a matching request."""
        kw.setdefault("count", 1)
        return cls(kind="restore", path=path, **kw)

    @classmethod
    def reset(cls, path: str = "*", **kw: Any) -> FaultRule:
        """Empty the store (an emptied etcd) before a matching request."""
        kw.setdefault("count", 1)
        return cls(kind="reset", path=path, **kw)


def _int(key: str, value: str, text: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"fault spec {text!r}: {key}= needs an integer, got {value!r}") from None


def parse_fault_spec(text: str) -> FaultRule:
    """Parse one ``--fault`` spec (see the module docstring). ValueError names the
    spec and what is wrong with it."""
    if not text.strip():
        raise ValueError("empty fault spec")
    values: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq:
            raise ValueError(f"fault spec {text!r}: expected key=value, got {part!r}")
        if key not in _ALL_KEYS:
            raise ValueError(
                f"fault spec {text!r}: unknown key {key!r}; expected one of {', '.join(_ALL_KEYS)}"
            )
        if key in values:
            raise ValueError(f"fault spec {text!r}: {key}= given twice")
        values[key] = value.strip()
    effects = [k for k in _EFFECT_KEYS if k in values]
    if "status" in effects and "latency" in effects:
        effects.remove("latency")
    if len(effects) != 1:
        raise ValueError(
            f"fault spec {text!r}: needs exactly one of status=, latency=, watch-drop=, gone=, "
            f"unavailable=, restore=, reset= (status= may be combined with latency=)"
        )
    effect = effects[0]
    kw: dict[str, Any] = {"spec": text}
    if "path" in values:
        if effect in (*_PATH_EFFECTS, "unavailable"):
            raise ValueError(f"fault spec {text!r}: {effect}= already names the path; drop path=")
        kw["path"] = values["path"]
    if "verb" in values:
        verbs = frozenset(v.strip() for v in values["verb"].split("|") if v.strip())
        if not verbs:
            raise ValueError(f"fault spec {text!r}: verb= is empty")
        kw["verbs"] = verbs
    if "rate" in values:
        try:
            kw["rate"] = float(values["rate"])
        except ValueError:
            raise ValueError(
                f"fault spec {text!r}: rate= needs a number, got {values['rate']!r}"
            ) from None
    if "latency" in values:
        try:
            kw["latency"] = parse_go_duration(values["latency"]).total_seconds()
        except ValueError as exc:
            raise ValueError(f"fault spec {text!r}: latency=: {exc}") from None
    for key in ("after", "count", "events"):
        if key in values:
            kw[key] = _int(key, values[key], text)
    if "events" in values and effect != "watch-drop":
        raise ValueError(f"fault spec {text!r}: events= only applies to watch-drop=")
    if "message" in values:
        if effect != "status":
            raise ValueError(f"fault spec {text!r}: message= only applies to status=")
        kw["message"] = values["message"]
    if effect == "status":
        kw["kind"] = "error"
        kw["status"] = _int("status", values["status"], text)
    elif effect == "latency":
        kw["kind"] = "latency"
    elif effect in _PATH_EFFECTS:
        if not values[effect]:
            raise ValueError(f"fault spec {text!r}: {effect}= needs a path glob")
        kw["kind"] = effect
        kw["path"] = values[effect]
        if effect in ("restore", "reset"):
            kw.setdefault("count", 1)
    else:
        kw["kind"] = "unavailable"
        kw["group"] = values["unavailable"]
    try:
        return FaultRule(**kw)
    except ValueError as exc:
        raise ValueError(f"fault spec {text!r}: {exc}") from None


class FaultInjector:
    """Holds fault rules and applies them.

    - :attr:`middleware` (aiohttp) answers matching requests with the rule's error
      (a ``Status`` body; 503 plain text ``service unavailable`` for an unavailable
      metrics group, as kube-aggregator writes it) after any matching latency;
    - :meth:`watch_drop_after` is asked by the watch handler when a stream opens;
      :meth:`force_gone` by list and watch handlers
      given a resourceVersion (True: answer 410 Expired as if it had been compacted);
    - restore= and reset= rules act in the middleware too, before the request is
      served, through the `StoreControl` given to :meth:`bind_store_control` (the
      `Emulator` binds itself).

    Each rule keeps its own match counter (for ``after``/``count``) and hit counter.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        metrics_state: MetricsState | None = None,
    ) -> None:
        self._random = random.Random(seed)
        self._sleep = sleep
        self._metrics_state = metrics_state
        self._rules: list[FaultRule] = []
        self._seen: dict[int, int] = {}
        self._hits: dict[int, int] = {}
        self._control: StoreControl | None = None
        self._restore_point: Any = None

    def bind_store_control(self, control: StoreControl) -> None:
        """What restore= and reset= rules act on (the Emulator calls this)."""
        self._control = control

    def set_restore_point(self, snapshot: Any) -> None:
        """The state restore= rules go back to (default: the state when the first
        request arrived)."""
        self._restore_point = snapshot

    # ----------------------------------------------------------------- rules

    def add(self, rule: FaultRule | str) -> FaultRule:
        if isinstance(rule, str):
            rule = parse_fault_spec(rule)
        self._rules.append(rule)
        return rule

    def add_specs(self, specs: Iterable[str]) -> list[FaultRule]:
        return [self.add(s) for s in specs]

    def remove(self, rule: FaultRule) -> None:
        for i, r in enumerate(self._rules):
            if r is rule:
                del self._rules[i]
                self._seen.pop(id(rule), None)
                self._hits.pop(id(rule), None)
                return
        raise ValueError("fault rule not installed")

    def clear(self) -> None:
        self._rules.clear()
        self._seen.clear()
        self._hits.clear()

    @property
    def rules(self) -> tuple[FaultRule, ...]:
        return tuple(self._rules)

    def hits(self, rule: FaultRule) -> int:
        """How many times the rule has fired."""
        return self._hits.get(id(rule), 0)

    def set_group_unavailable(self, group: str, unavailable: bool = True) -> None:
        """Take a metrics API group away (or bring it back) until told otherwise.
        Delegates to the MetricsState when one was given, else uses a rule."""
        if group not in _METRICS_GROUPS:
            raise ValueError(f"unknown metrics API group {group!r}")
        if self._metrics_state is not None:
            current = set(self._metrics_state.unavailable)
            if unavailable:
                current.add(group)
            else:
                current.discard(group)
            self._metrics_state.set_unavailable(current)
            return
        for rule in [
            r for r in self._rules if r.kind == "unavailable" and r.group == group and not r.spec
        ]:
            self.remove(rule)
        if unavailable:
            self.add(FaultRule.unavailable(group))

    # ----------------------------------------------------------------- matching

    def _fires(self, rule: FaultRule) -> bool:
        """Count a match and decide whether the rule fires for it."""
        key = id(rule)
        seen = self._seen.get(key, 0) + 1
        self._seen[key] = seen
        if seen <= rule.after:
            return False
        if rule.count is not None and self._hits.get(key, 0) >= rule.count:
            return False
        if rule.rate < 1.0 and self._random.random() >= rule.rate:
            return False
        self._hits[key] = self._hits.get(key, 0) + 1
        return True

    def _first(
        self, kinds: tuple[str, ...], path: str, method: str | None, verb: str | None
    ) -> FaultRule | None:
        for rule in self._rules:
            if rule.kind not in kinds or not rule.matches_path(path):
                continue
            if method is not None and verb is not None and not rule.matches_verb(method, verb):
                continue
            if self._fires(rule):
                return rule
        return None

    def watch_drop_after(self, path: str) -> int | None:
        """Asked once when a watch stream opens: None keeps the stream; n ends it after
        n events (0: at once), as a dropped connection or an apiserver restart does."""
        rule = self._first(("watch-drop",), path, "GET", "watch")
        return None if rule is None else rule.events

    def should_drop_watch(self, path: str) -> bool:
        """watch_drop_after(path) is not None (for handlers that only drop at once)."""
        return self.watch_drop_after(path) is not None

    def force_gone(self, path: str) -> bool:
        return self._first(("gone",), path, None, None) is not None

    def _apply_restores(self, method: str, path: str, verb: str) -> None:
        control = self._control
        if control is None:
            return
        for rule in self._rules:
            if rule.kind not in ("restore", "reset"):
                continue
            if rule.matches_path(path) and rule.matches_verb(method, verb) and self._fires(rule):
                if rule.kind == "reset":
                    control.reset()
                else:
                    control.restore(self._restore_point)

    # ----------------------------------------------------------------- HTTP

    def _error_response(self, rule: FaultRule) -> web.Response:
        if rule.kind == "unavailable":
            resp = web.Response(
                text="service unavailable\n", status=503, content_type="text/plain", charset="utf-8"
            )
            resp.headers["X-Content-Type-Options"] = "nosniff"
            return resp
        reason = _REASONS.get(rule.status, "InternalError" if rule.status >= 500 else "BadRequest")
        message = rule.message or f"injected fault: HTTP {rule.status}"
        body = ApiError(rule.status, reason, message).status()
        headers = {}
        if rule.status == 429:
            body["details"] = {"retryAfterSeconds": 1}
            headers["Retry-After"] = "1"
        return web.Response(
            body=json.dumps(body).encode(),
            status=rule.status,
            content_type="application/json",
            headers=headers,
        )

    async def apply(self, method: str, path: str, query: dict[str, str]) -> web.Response | None:
        """Run the latency and error rules for one request; the response to send
        instead of the real one, or None to go on."""
        if self._control is not None and self._restore_point is None:
            self._restore_point = self._control.snapshot()  # the state when serving began
        if not self._rules:
            return None
        verb = request_attributes(method, path, query).verb
        self._apply_restores(method, path, verb)
        delay = 0.0
        for rule in self._rules:
            if (
                rule.kind == "latency"
                and rule.matches_path(path)
                and rule.matches_verb(method, verb)
                and self._fires(rule)
            ):
                delay += rule.latency
        failing = self._first(("error", "unavailable"), path, method, verb)
        if failing is not None:
            delay += failing.latency
        if delay > 0:
            await self._sleep(delay)
        return None if failing is None else self._error_response(failing)

    @property
    def middleware(self) -> Any:
        """An aiohttp middleware applying the latency and error rules."""

        @web.middleware
        async def fault_middleware(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            response = await self.apply(request.method, request.path, dict(request.query))
            if response is not None:
                return response
            return await handler(request)

        return fault_middleware
