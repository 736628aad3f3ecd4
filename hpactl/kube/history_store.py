"""Per-HPA history (stabilization recommendations, scale events) kept in ConfigMaps.

Upstream keeps it in memory only, so a new leader starts empty; with the history
persisted, the next leader reads what the last one decided with. The bytes are
:mod:`hpactl.core.history_codec`'s; this module is the I/O.

Objects: ConfigMaps in hpactl's namespace named ``<name>`` (part 0), ``<name>-1``,
``<name>-2``, ... Records go to part ``crc32(key) % k`` for the smallest ``k`` whose
parts each encode to at most ``max_object_bytes`` (the API server refuses a ConfigMap
whose values exceed 1 MiB); parts no longer needed are written empty, not deleted.
Each part carries the labels ``app.kubernetes.io/managed-by: hpactl`` and
``hpactl.dev/history: <name>``, the annotations ``hpactl.dev/history-writer``,
``hpactl.dev/history-epoch`` and ``hpactl.dev/history-parts`` (``k``), and the blob
as ``binaryData["history.json.gz"]``.

Ownership: the caller passes its ``epoch`` (a number that grows with each new
owner, e.g. the lease's transitions). A part stamped with a higher epoch was written
by a newer owner: :meth:`HistoryStore.load` does not trust it, and
:meth:`HistoryStore.save` raises :class:`HistoryFenced` instead of writing. Every
write is a compare-and-swap on the resourceVersion last seen; on a conflict the part
is read again and written once more only if its epoch is not newer than ours (our
own write whose answer was lost, or an older owner's late write). Writes go through
the session, so its write fence applies as well.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hpactl.core.history_codec import HistoryRecord, decode_histories, encode_histories
from hpactl.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, get_json, list_json, put_json
from hpactl.kube.session import KubeSession

__all__ = [
    "ANNOTATION_EPOCH",
    "ANNOTATION_PARTS",
    "ANNOTATION_WRITER",
    "DATA_KEY",
    "LABEL_HISTORY",
    "HistoryFenced",
    "HistoryStore",
    "HistoryTooLarge",
    "LoadResult",
]

DATA_KEY = "history.json.gz"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_HISTORY = "hpactl.dev/history"
ANNOTATION_WRITER = "hpactl.dev/history-writer"
ANNOTATION_EPOCH = "hpactl.dev/history-epoch"
ANNOTATION_PARTS = "hpactl.dev/history-parts"
#: More parts than this means something is wrong with the input, not with the split.
MAX_PARTS = 256
#: decode_histories' default max_entries: a longer list would not load.
MAX_ENTRIES = 256


class HistoryFenced(KubeError):
    """A newer writer (higher epoch) owns the history: stop writing it."""


class HistoryTooLarge(KubeError):
    """The records do not fit in ``MAX_PARTS`` objects."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """``objects``: ConfigMaps listed; ``bytes``: their compressed blobs together."""

    records: dict[str, HistoryRecord]
    problems: tuple[str, ...]
    objects: int
    bytes: int


@dataclass(slots=True)
class _Part:
    """What this store last saw of one part: ``records`` is None when its content is
    not known to match anything we would write (absent, unreadable, foreign)."""

    resource_version: str | None
    epoch: int
    writer: str = ""
    parts: int = 0
    records: dict[str, HistoryRecord] | None = None
    blob: bytes = b""


def _epoch_of(obj: Mapping[str, Any]) -> int | None:
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    try:
        return int(str(ann.get(ANNOTATION_EPOCH)))
    except ValueError:
        return None


class HistoryStore:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession,
        *,
        namespace: str,
        name: str,
        writer: str,
        max_object_bytes: int = 900 * 1024,
        request_timeout: float | None = None,
    ) -> None:
        self._s = session
        self.namespace = namespace
        self.name = name
        self.writer = writer
        self.max_object_bytes = max_object_bytes
        self._timeout = request_timeout
        self._parts: dict[int, _Part] = {}
        self._part_name = re.compile(rf"^{re.escape(name)}(?:-([1-9][0-9]{{0,3}}))?$")
        #: Records the last :meth:`save` could not write (each alone too large).
        self.last_save_problems: tuple[str, ...] = ()

    @property
    def stored_bytes(self) -> int:
        """Compressed bytes of the parts as last loaded or written (for metrics)."""
        return sum(len(p.blob) for p in self._parts.values())

    # -- names ---------------------------------------------------------------------
    def part_name(self, index: int) -> str:
        return self.name if index == 0 else f"{self.name}-{index}"

    def _path(self, index: int | None = None) -> str:
        return resource_path(
            "",
            "v1",
            "configmaps",
            namespace=self.namespace,
            name=None if index is None else self.part_name(index),
        )

    def _index(self, name: str) -> int | None:
        m = self._part_name.match(name)
        if m is None:
            return None
        return int(m.group(1) or 0)

    # -- load ------------------------------------------------------------------------
    async def load(self, *, epoch: int, adopt_newer: bool = False) -> LoadResult:
        """Read every part (one LIST) and merge what the caller may trust.

        Never raises for content: an unreadable part or record, or a part stamped
        with an epoch above ``epoch``, is left out with a problem line. API errors
        other than NotFound propagate.

        ``adopt_newer``: the caller holds the lease at ``epoch`` now, so a part stamped
        higher comes from an earlier life of that Lease (deleted and created again,
        its transitions counting from 0): its content is still not trusted, but the
        next save overwrites it instead of raising ``HistoryFenced`` for ever. A
        newer owner writing meanwhile still fences that save (its compare-and-swap
        conflicts, and the part read again carries the newer epoch).
        """
        try:
            listed = await list_json(
                self._s,
                self._path(),
                label_selector=f"{LABEL_HISTORY}={self.name}",
                timeout=self._timeout,
            )
            items = listed.items
        except NotFound:
            items = []
        self._parts = {}
        problems: list[str] = []
        merged: dict[str, tuple[tuple[int, datetime | None], HistoryRecord]] = {}
        total = 0
        for obj in items:
            meta = obj.get("metadata") or {}
            name = str(meta.get("name") or "")
            index = self._index(name)
            if index is None:
                problems.append(f"history object {name}: ignored: not a part of {self.name}")
                continue
            part_epoch = _epoch_of(obj)
            part = _Part(str(meta.get("resourceVersion") or "") or None, part_epoch or 0)
            self._parts[index] = part
            if part_epoch is not None and part_epoch > epoch:
                problems.append(_newer_problem(name, part_epoch, epoch, adopt_newer))
                if adopt_newer:
                    part.epoch = epoch
                continue
            raw = (obj.get("binaryData") or {}).get(DATA_KEY)
            if not isinstance(raw, str):
                problems.append(f"history object {name}: no {DATA_KEY}")
                continue
            try:
                blob = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError):
                problems.append(f"history object {name}: {DATA_KEY} is not base64")
                continue
            total += len(blob)
            decoded = decode_histories(blob)
            problems.extend(f"history object {name}: {p}" for p in decoded.problems)
            if part_epoch is None:
                part.epoch = decoded.epoch
                if decoded.epoch > epoch:
                    problems.append(_newer_problem(name, decoded.epoch, epoch, adopt_newer))
                    if adopt_newer:
                        part.epoch = epoch
                    continue
            ann = meta.get("annotations") or {}
            part.writer = str(ann.get(ANNOTATION_WRITER) or decoded.writer)
            part.parts = _int(ann.get(ANNOTATION_PARTS))
            if not decoded.problems:
                part.records = decoded.records  # known content: unchanged parts are not rewritten
                part.blob = blob
            rank = (part.epoch, decoded.written_at)
            for key, rec in decoded.records.items():
                # A key in two parts (a split changed, and a save stopped half way):
                # the newer part wins.
                seen = merged.get(key)
                if seen is None or _newer(rank, seen[0]):
                    merged[key] = (rank, rec)
        return LoadResult(
            {k: rec for k, (_, rec) in merged.items()}, tuple(problems), len(items), total
        )

    # -- save ------------------------------------------------------------------------
    async def save(self, records: Mapping[str, HistoryRecord], *, epoch: int, now: datetime) -> int:
        """Write the parts whose content changed since the last load or save; return
        how many objects were written (0 when nothing changed).

        Raises :class:`HistoryFenced` when a newer owner wrote (seen at load, or on a
        conflict), :class:`HistoryTooLarge`, or the API's errors.
        """
        newer = [i for i, p in self._parts.items() if p.epoch > epoch]
        if newer:
            p = self._parts[newer[0]]
            raise HistoryFenced(
                f"history {self.namespace}/{self.part_name(newer[0])} belongs to a newer "
                f"owner (epoch {p.epoch} > {epoch})"
            )
        if self._unchanged(records, epoch):
            self.last_save_problems = ()
            return 0  # without encoding: the common case of an idle period
        parts, blobs = self._split(records, epoch, now)
        k = len(parts)
        written = 0
        for index in sorted(set(range(k)) | set(self._parts)):  # old extra parts: emptied
            content = parts[index] if index < k else {}
            known = self._parts.get(index)
            if (
                known is not None
                and known.records == content
                and known.epoch == epoch
                and known.writer == self.writer
                and known.parts == k
            ):
                continue
            blob = (
                blobs[index]
                if index < k
                else encode_histories({}, writer=self.writer, epoch=epoch, written_at=now)
            )
            await self._write(index, blob, epoch, k)
            part = self._parts[index]
            part.records, part.blob, part.parts = content, blob, k
            written += 1
        return written

    def _unchanged(self, records: Mapping[str, HistoryRecord], epoch: int) -> bool:
        """Every part known, ours, and together exactly ``records``."""
        if not self._parts:
            return False
        union: dict[str, HistoryRecord] = {}
        for p in self._parts.values():
            if p.records is None or p.epoch != epoch or p.writer != self.writer:
                return False
            union.update(p.records)
        return len(union) == len(records) and all(union.get(k) == v for k, v in records.items())

    def _split(
        self, records: Mapping[str, HistoryRecord], epoch: int, now: datetime
    ) -> tuple[list[dict[str, HistoryRecord]], list[bytes]]:
        """The smallest number of parts that each fit. A record too large on its own,
        or with a list longer than a load accepts, is left out, with a line in
        ``last_save_problems``."""
        todo = dict(records)
        problems: list[str] = []
        for key, rec in records.items():
            h = rec.history
            longest = max(
                len(h.recommendations),
                len(h.scale_up_events),
                len(h.scale_down_events),
                len(h.failing_metrics),
            )
            if longest > MAX_ENTRIES:
                # decode_histories would drop it: the next owner starts it empty anyway.
                del todo[key]
                problems.append(
                    f"history of {key}: not saved: {longest} entries, more than {MAX_ENTRIES}"
                )
        k = 1
        while True:
            parts: list[dict[str, HistoryRecord]] = [{} for _ in range(k)]
            for key in sorted(todo):
                parts[zlib.crc32(key.encode("utf-8")) % k][key] = todo[key]
            blobs = [
                encode_histories(p, writer=self.writer, epoch=epoch, written_at=now) for p in parts
            ]
            big = [i for i, b in enumerate(blobs) if len(b) > self.max_object_bytes]
            if not big:
                self.last_save_problems = tuple(problems)
                return parts, blobs
            alone = [i for i in big if len(parts[i]) == 1]
            for i in alone:
                (key,) = parts[i]
                del todo[key]
                problems.append(
                    f"history of {key}: not saved: {len(blobs[i])} bytes encoded on its own, "
                    f"more than {self.max_object_bytes}"
                )
            if alone:
                continue
            k = max(k + 1, math.ceil(sum(len(b) for b in blobs) / self.max_object_bytes))
            if k > MAX_PARTS:
                raise HistoryTooLarge(
                    f"history {self.namespace}/{self.name}: {len(todo)} records need more "
                    f"than {MAX_PARTS} objects of {self.max_object_bytes} bytes"
                )

    def _body(self, index: int, blob: bytes, epoch: int, k: int, rv: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": self.part_name(index),
            "namespace": self.namespace,
            "labels": {LABEL_MANAGED_BY: "hpactl", LABEL_HISTORY: self.name},
            "annotations": {
                ANNOTATION_WRITER: self.writer,
                ANNOTATION_EPOCH: str(epoch),
                ANNOTATION_PARTS: str(k),
            },
        }
        if rv is not None:
            meta["resourceVersion"] = rv
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "binaryData": {DATA_KEY: base64.b64encode(blob).decode("ascii")},
        }

    async def _send(self, index: int, blob: bytes, epoch: int, k: int, rv: str | None) -> str:
        body = self._body(index, blob, epoch, k, rv)
        if rv is None:
            out = await create_json(self._s, self._path(), body, timeout=self._timeout)
        else:
            out = await put_json(self._s, self._path(index), body, timeout=self._timeout)
        return str((out.get("metadata") or {}).get("resourceVersion") or "")

    async def _write(self, index: int, blob: bytes, epoch: int, k: int) -> None:
        """Compare-and-swap one part; on a conflict, read it and try once more unless a
        newer owner wrote it."""
        known = self._parts.get(index)
        rv = known.resource_version if known is not None else None
        try:
            new_rv = await self._send(index, blob, epoch, k, rv)
        except (Conflict, AlreadyExists, NotFound) as exc:
            rv = await self._fresh(index, epoch, exc)
            new_rv = await self._send(index, blob, epoch, k, rv)
        self._parts[index] = _Part(new_rv or None, epoch, self.writer)

    async def _fresh(self, index: int, epoch: int, cause: KubeError) -> str | None:
        """The part's current resourceVersion (None: absent), or HistoryFenced."""
        try:
            obj = await get_json(self._s, self._path(index), timeout=self._timeout)
        except NotFound:
            return None
        theirs = _epoch_of(obj)
        if theirs is not None and theirs > epoch:
            self._parts[index] = _Part(None, theirs)
            raise HistoryFenced(
                f"history {self.namespace}/{self.part_name(index)} was written by a newer "
                f"owner (epoch {theirs} > {epoch}): {cause}"
            )
        return str((obj.get("metadata") or {}).get("resourceVersion") or "") or None


def _newer_problem(name: str, found: int, epoch: int, adopted: bool) -> str:
    if adopted:
        return (
            f"history object {name}: ignored: stamped epoch {found} > {epoch}, the lease's "
            "transitions now (the Lease was created again since); it will be overwritten"
        )
    return f"history object {name}: ignored: written by a newer owner (epoch {found} > {epoch})"


def _int(v: Any) -> int:
    try:
        return int(str(v))
    except ValueError:
        return 0


def _newer(a: tuple[int, datetime | None], b: tuple[int, datetime | None]) -> bool:
    if a[0] != b[0]:
        return a[0] > b[0]
    if a[1] is None or b[1] is None:
        return b[1] is None and a[1] is not None
    return a[1] > b[1]
