"""Write audit: every mutating request the emulator answers, and who may have made it.

``AuditLog`` is an aiohttp middleware plus a store hook. For each POST, PUT, PATCH
and DELETE it keeps one record (monotonic and wall time at receipt and at answer,
method, path, User-Agent, status code) and, inside it, the writes the request
committed, in commit order (``rv``: the store's resourceVersion counter is one
sequence across every resource, as etcd's revision is), with a Lease's
``holderIdentity`` as stored. The log is bounded (oldest records dropped, counted) and
served read-only as JSON at ``GET /emulator/audit`` (``?since=SEQ`` for records after
one already read). A real API server has nothing like it: it is a test double's
instrument.

``check_shard_writes`` is the proof over such a log that sharded controller replicas
never wrote one HPA in overlapping tenures: every committed write for shard ``s``
(an HPA, its target's ``/scale``, an Event in its namespace, the shard's history
ConfigMap) was made by the replica the commit order says held Lease ``<name>-shard-<s>``
at that point. It is pure: the shard function is passed in, so the emulator imports
nothing from the controller side.
"""

from __future__ import annotations

import collections
import contextvars
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from hpactl.emulator.store import WatchEvent

AUDIT_PATH = "/emulator/audit"
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_SIZE = 200_000

Obj = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_current: contextvars.ContextVar[Obj | None] = contextvars.ContextVar(
    "hpactl_emulator_audit", default=None
)


class AuditLog:
    """The bounded record of mutating requests; wire ``middleware`` first in the app
    and ``on_write`` into ``Store.on_write``."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError(f"audit size must be positive, got {size}")
        self._records: collections.deque[Obj] = collections.deque(maxlen=size)
        self._seq = 0
        self.dropped = 0

    def records(self, since: int = 0) -> list[Obj]:
        """Records with ``seq`` > since, oldest first."""
        return [r for r in self._records if r["seq"] > since]

    def as_json(self, since: int = 0) -> Obj:
        return {
            "kind": "EmulatorAudit",
            "size": self._records.maxlen,
            "dropped": self.dropped,
            "last": self._seq,
            "items": self.records(since),
        }

    def on_write(self, ev: WatchEvent) -> None:
        """Store hook: note a committed write under the request that made it (none for
        writes made in-process, e.g. a test's ``emu.store.create``)."""
        rec = _current.get()
        if rec is None:
            return
        group, resource = ev.key
        commit: Obj = {
            "rv": ev.rv,
            "type": ev.type,
            "group": group,
            "resource": resource,
            "namespace": ev.namespace,
            "name": ev.name,
        }
        if ev.key == ("coordination.k8s.io", "leases"):
            spec = ev.entry.obj.get("spec") or {}
            holder = "" if ev.type == "DELETED" else str(spec.get("holderIdentity") or "")
            commit["holder"] = holder
        elif resource == "events":
            about = ev.entry.obj.get("involvedObject") or ev.entry.obj.get("regarding") or {}
            commit["about"] = f"{about.get('kind', '')}/{about.get('name', '')}"
        rec["commits"].append(commit)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.rstrip("/") == AUDIT_PATH:
            return self._serve(request)
        if request.method not in MUTATING:
            return await handler(request)
        rec: Obj = {
            "seq": 0,
            "received": time.monotonic(),
            "received_wall": time.time(),
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
            "user_agent": request.headers.get("User-Agent", ""),
            "commits": [],
        }
        token = _current.set(rec)
        status = 500
        try:
            resp = await handler(request)
            status = resp.status
            return resp
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            _current.reset(token)
            rec["answered"] = time.monotonic()
            rec["answered_wall"] = time.time()
            rec["status"] = status
            self._append(rec)

    def _append(self, rec: Obj) -> None:
        self._seq += 1
        rec["seq"] = self._seq
        if len(self._records) == self._records.maxlen:
            self.dropped += 1
        self._records.append(rec)

    def _serve(self, request: web.Request) -> web.Response:
        if request.method not in ("GET", "HEAD"):
            return web.json_response(
                {"kind": "Status", "status": "Failure", "reason": "MethodNotAllowed", "code": 405},
                status=405,
            )
        try:
            since = int(request.query.get("since", "0"))
        except ValueError:
            return web.json_response(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "BadRequest",
                    "message": "since: not an integer",
                    "code": 400,
                },
                status=400,
            )
        return web.json_response(self.as_json(since))


# -- the check ------------------------------------------------------------------------

_IDENTITY = re.compile(r"\(([^()]*)\)\s*$")
_HPA_KIND = "HorizontalPodAutoscaler"
_SHARDED_RESOURCES = frozenset(
    {("autoscaling", "horizontalpodautoscalers"), ("", "events"), ("events.k8s.io", "events")}
)


def identity_of(user_agent: str) -> str:
    """The replica identity in a User-Agent ``hpactl/<version> (<identity>)``; "" if none."""
    m = _IDENTITY.search(user_agent)
    return m.group(1) if m else ""


@dataclass(frozen=True)
class Violation:
    seq: int
    rv: int
    shard: int
    writer: str
    holder: str  # the recorded holder at that commit ("" = nobody)
    what: str  # "PUT /apis/..."

    def __str__(self) -> str:
        who = self.holder or "nobody"
        return f"rv {self.rv}: {self.writer or '?'} wrote shard {self.shard} held by {who}: {self.what}"


@dataclass
class AuditResult:
    checked: int = 0  # committed writes attributed to a shard
    by_writer: dict[str, int] = field(default_factory=dict)
    transitions: int = 0  # changes of holder on the shard leases
    uncommitted: int = 0  # sharded write attempts that committed nothing (409, 404...)
    unattributed: int = 0  # committed writes to no shard (leases, member leases, others)
    dropped: int = 0  # records the bounded log lost: the proof is then incomplete
    violations: list[Violation] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return not self.violations and self.dropped == 0 and self.checked > 0

    def summary(self) -> str:
        writers = ", ".join(f"{w or '?'}={n}" for w, n in sorted(self.by_writer.items()))
        return (
            f"{self.checked} sharded writes checked ({writers}), {self.transitions} lease "
            f"holder changes, {self.uncommitted} attempts not committed, "
            f"{self.unattributed} other writes, {self.dropped} records dropped: "
            f"{len(self.violations)} violations"
        )


def _shard_of_commit(
    c: Mapping[str, Any],
    path: str,
    lease_namespace: str,
    history_prefix: str,
    shard_for: Callable[[str], int],
) -> int | None:
    key = (str(c["group"]), str(c["resource"]))
    ns = str(c["namespace"])
    if key == ("", "configmaps") and ns == lease_namespace:
        name = str(c["name"])
        if name.startswith(history_prefix):
            suffix = name[len(history_prefix) :]
            return int(suffix) if suffix.isdigit() else None
        return None
    if not ns:
        return None
    if key in _SHARDED_RESOURCES:
        if key[1] == "events" and not str(c.get("about", "")).startswith(_HPA_KIND + "/"):
            return None  # an Event about something else (a Lease...)
        return shard_for(ns)
    if path.endswith("/scale"):
        return shard_for(ns)
    return None


def check_shard_writes(
    records: Iterable[Mapping[str, Any]],
    *,
    lease_name: str,
    lease_namespace: str,
    shard_for: Callable[[str], int],
    dropped: int = 0,
) -> AuditResult:
    """Prove from an audit log that each shard's writes came from its recorded holder.

    Commits are replayed in resourceVersion order; Lease ``<lease_name>-shard-<i>`` in
    ``lease_namespace`` sets shard i's holder (a release or deletion sets nobody). A
    committed write for shard i whose writer (the User-Agent's identity) is not the
    holder at that point is a violation. What counts as a write for shard i: HPA
    objects, Events and any ``/scale`` in a namespace ``shard_for`` maps to i, and the
    ConfigMap ``<lease_name>-history-<i>`` in the lease namespace."""
    shard_prefix = f"{lease_name}-shard-"
    history_prefix = f"{lease_name}-history-"
    result = AuditResult(dropped=dropped)
    commits: list[tuple[int, Mapping[str, Any], Mapping[str, Any]]] = []
    for r in records:
        cs = r.get("commits") or []
        if not cs:
            path = str(r.get("path", ""))
            if "/namespaces/" in path and "/leases/" not in path:
                result.uncommitted += 1
            continue
        for c in cs:
            commits.append((int(c["rv"]), c, r))
    commits.sort(key=lambda t: t[0])
    holder: dict[int, str] = {}
    for rv, c, r in commits:
        if (
            (c["group"], c["resource"]) == ("coordination.k8s.io", "leases")
            and c["namespace"] == lease_namespace
            and str(c["name"]).startswith(shard_prefix)
        ):
            suffix = str(c["name"])[len(shard_prefix) :]
            if suffix.isdigit():
                new = str(c.get("holder") or "")
                if holder.get(int(suffix), "") != new:
                    result.transitions += 1
                holder[int(suffix)] = new
                continue
        path = str(r.get("path", ""))
        shard = _shard_of_commit(c, path, lease_namespace, history_prefix, shard_for)
        if shard is None:
            result.unattributed += 1
            continue
        writer = identity_of(str(r.get("user_agent", "")))
        result.checked += 1
        result.by_writer[writer] = result.by_writer.get(writer, 0) + 1
        held_by = holder.get(shard, "")
        if not writer or writer != held_by:
            result.violations.append(
                Violation(
                    seq=int(r.get("seq", 0)),
                    rv=rv,
                    shard=shard,
                    writer=writer,
                    holder=held_by,
                    what=f"{r.get('method')} {path}",
                )
            )
    return result
