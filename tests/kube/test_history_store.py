"""hpactl.kube.history_store against the API emulator: round trip, no needless writes,
split and merge, fencing by epoch, and garbage that loads as empty."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import zlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.kubectl import run_kubectl

from hpactl.core.history import History, Recommendation, ScaleEvent
from hpactl.core.history_codec import HistoryRecord, decode_histories, encode_histories
from hpactl.emulator import Emulator
from hpactl.kube.errors import NotFound, NotLeader
from hpactl.kube.history_store import (
    ANNOTATION_EPOCH,
    ANNOTATION_PARTS,
    ANNOTATION_WRITER,
    DATA_KEY,
    LABEL_HISTORY,
    HistoryFenced,
    HistoryStore,
)
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, get_json, list_json, put_json
from hpactl.kube.session import KubeSession

NS = "default"
NAME = "hpactl-history"
T0 = datetime(2026, 5, 1, 8, 0, 0, 250_001, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def record(i: int, n: int = 3) -> HistoryRecord:
    return HistoryRecord(
        f"uid-{i:05d}",
        History(
            tuple(Recommendation((i + k) % 17, at(-15 * k - i / 1000)) for k in range(n)),
            (ScaleEvent(1 + i % 3, at(-7)),),
            (ScaleEvent(2, at(-40), True),) if i % 2 else (),
        ),
    )


def records(n: int, start: int = 0) -> dict[str, HistoryRecord]:
    return {f"ns-{i % 7}/hpa-{i:05d}": record(i) for i in range(start, start + n)}


@pytest.fixture
async def session(emulator: Emulator) -> AsyncIterator[KubeSession]:
    async with KubeSession(master=emulator.url, qps=0) as s:
        yield s


def store(s: KubeSession, writer: str = "replica-a", **kw: Any) -> HistoryStore:
    return HistoryStore(s, namespace=NS, name=NAME, writer=writer, **kw)


def cm_path(name: str | None = None) -> str:
    return resource_path("", "v1", "configmaps", namespace=NS, name=name)


async def parts(s: KubeSession) -> dict[str, dict[str, Any]]:
    listed = await list_json(s, cm_path(), label_selector=f"{LABEL_HISTORY}={NAME}")
    return {o["metadata"]["name"]: o for o in listed.items}


def blob_of(obj: dict[str, Any]) -> bytes:
    return base64.b64decode(obj["binaryData"][DATA_KEY])


async def test_round_trip_through_the_api(session: KubeSession) -> None:
    data = records(20)
    assert await store(session).save(data, epoch=3, now=at(0)) == 1
    objs = await parts(session)
    assert list(objs) == [NAME]
    meta = objs[NAME]["metadata"]
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "hpactl", LABEL_HISTORY: NAME}
    assert meta["annotations"] == {
        ANNOTATION_WRITER: "replica-a",
        ANNOTATION_EPOCH: "3",
        ANNOTATION_PARTS: "1",
    }
    assert decode_histories(blob_of(objs[NAME])).written_at == at(0)

    loaded = await store(session, "replica-b").load(epoch=4)
    assert loaded.records == data
    assert loaded.problems == ()
    assert loaded.objects == 1
    assert loaded.bytes == len(blob_of(objs[NAME]))


async def test_nothing_missing_loads_empty(session: KubeSession) -> None:
    loaded = await store(session).load(epoch=1)
    assert (loaded.records, loaded.problems, loaded.objects, loaded.bytes) == ({}, (), 0, 0)


async def test_no_write_when_nothing_changed(session: KubeSession) -> None:
    st = store(session)
    data = records(5)
    assert await st.save(data, epoch=1, now=at(0)) == 1
    rv = (await parts(session))[NAME]["metadata"]["resourceVersion"]
    assert await st.save(dict(data), epoch=1, now=at(15)) == 0
    # The same owner after a restart: what it loaded is what it would write.
    again = store(session)
    await again.load(epoch=1)
    assert await again.save(data, epoch=1, now=at(30)) == 0
    assert (await parts(session))[NAME]["metadata"]["resourceVersion"] == rv
    # A change is written, with the new resourceVersion remembered for the next CAS.
    data["ns-0/hpa-00000"] = record(99)
    assert await again.save(data, epoch=1, now=at(45)) == 1
    data["ns-0/hpa-00000"] = record(98)
    assert await again.save(data, epoch=1, now=at(60)) == 1


async def test_a_new_owner_claims_the_parts_even_unchanged(session: KubeSession) -> None:
    data = records(5)
    await store(session).save(data, epoch=1, now=at(0))
    b = store(session, "replica-b")
    await b.load(epoch=2)
    assert await b.save(data, epoch=2, now=at(15)) == 1
    ann = (await parts(session))[NAME]["metadata"]["annotations"]
    assert (ann[ANNOTATION_WRITER], ann[ANNOTATION_EPOCH]) == ("replica-b", "2")


async def test_split_into_parts_merge_back_and_shrink(session: KubeSession) -> None:
    st = store(session, max_object_bytes=3000)
    data = records(300)
    written = await st.save(data, epoch=1, now=at(0))
    objs = await parts(session)
    k = len(objs)
    assert written == k >= 3
    assert set(objs) == {NAME} | {f"{NAME}-{i}" for i in range(1, k)}
    for obj in objs.values():
        assert len(blob_of(obj)) <= 3000
        assert obj["metadata"]["annotations"][ANNOTATION_PARTS] == str(k)
    # The smallest k that fits: one part fewer would not.
    reader = store(session, "replica-b")
    loaded = await reader.load(epoch=1)
    assert loaded.records == data and loaded.problems == () and loaded.objects == k
    assert reader.stored_bytes == loaded.bytes == st.stored_bytes

    small = records(3)
    assert await st.save(small, epoch=1, now=at(15)) == k  # part 0 + the others emptied
    objs = await parts(session)
    assert len(objs) == k  # not deleted
    for name, obj in objs.items():
        got = decode_histories(blob_of(obj)).records
        assert (got == small) if name == NAME else (got == {})
    loaded = await store(session, "replica-b").load(epoch=1)
    assert loaded.records == small and loaded.objects == k
    # Emptied parts stay empty without more writes.
    assert await st.save(small, epoch=1, now=at(30)) == 0


async def test_split_is_the_smallest_that_fits(session: KubeSession) -> None:
    data = records(300)
    st = store(session, max_object_bytes=3000)
    k = await st.save(data, epoch=1, now=at(0))
    # With k - 1 parts, some part would not fit.
    groups: list[dict[str, HistoryRecord]] = [{} for _ in range(k - 1)]
    for key, rec in data.items():
        groups[zlib.crc32(key.encode()) % (k - 1)][key] = rec
    sizes = [
        len(encode_histories(g, writer="replica-a", epoch=1, written_at=at(0))) for g in groups
    ]
    assert max(sizes) > 3000


async def test_stale_writer_is_fenced_after_a_newer_epoch_wrote(session: KubeSession) -> None:
    old = store(session, "replica-a")
    await old.save(records(5), epoch=1, now=at(0))
    new = store(session, "replica-b")
    await new.load(epoch=2)
    assert await new.save(records(6), epoch=2, now=at(15)) == 1
    before = (await parts(session))[NAME]["metadata"]["resourceVersion"]
    with pytest.raises(HistoryFenced, match="epoch 2 > 1"):
        await old.save(records(7), epoch=1, now=at(20))
    assert (await parts(session))[NAME]["metadata"]["resourceVersion"] == before
    # And it stays fenced without asking the server again.
    with pytest.raises(HistoryFenced):
        await old.save(records(8), epoch=1, now=at(25))
    loaded = await store(session, "replica-c").load(epoch=2)
    assert loaded.records == records(6)


async def test_an_older_owners_late_write_is_overwritten(session: KubeSession) -> None:
    old = store(session, "replica-a")
    await old.save(records(5), epoch=1, now=at(0))
    new = store(session, "replica-b")
    await new.load(epoch=2)
    # The old owner writes once more before the new one wrote anything (its lease
    # fence would normally stop it): the new owner's CAS conflicts, it reads the
    # part, sees an older epoch and writes.
    assert await old.save(records(2), epoch=1, now=at(10)) == 1
    assert await new.save(records(6), epoch=2, now=at(15)) == 1
    loaded = await store(session, "replica-c").load(epoch=2)
    assert loaded.records == records(6)


async def test_own_write_whose_answer_was_lost_is_retried(session: KubeSession) -> None:
    st = store(session)
    await st.save(records(5), epoch=1, now=at(0))
    # Someone (our earlier, unanswered write) moved the resourceVersion on.
    obj = await get_json(session, cm_path(NAME))
    obj["metadata"]["labels"]["touched"] = "yes"
    await put_json(session, cm_path(NAME), obj)
    assert await st.save(records(6), epoch=1, now=at(15)) == 1
    assert (await store(session).load(epoch=1)).records == records(6)


async def test_part_with_a_higher_epoch_is_ignored_at_load(session: KubeSession) -> None:
    await store(session, "replica-b").save(records(4), epoch=5, now=at(0))
    stale = store(session, "replica-a")
    loaded = await stale.load(epoch=3)
    assert loaded.records == {}
    assert len(loaded.problems) == 1
    assert "newer owner (epoch 5 > 3)" in loaded.problems[0]
    rv = (await parts(session))[NAME]["metadata"]["resourceVersion"]
    with pytest.raises(HistoryFenced):
        await stale.save(records(1), epoch=3, now=at(1))
    assert (await parts(session))[NAME]["metadata"]["resourceVersion"] == rv


async def test_writes_go_through_the_session_write_fence(session: KubeSession) -> None:
    session.write_fence = lambda: False
    with pytest.raises(NotLeader):
        await store(session).save(records(1), epoch=1, now=at(0))
    session.write_fence = None
    assert await parts(session) == {}


async def put_part(s: KubeSession, name: str, blob: bytes, epoch: str = "1") -> None:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "labels": {LABEL_HISTORY: NAME},
        "annotations": {ANNOTATION_EPOCH: epoch},
    }
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "binaryData": {DATA_KEY: base64.b64encode(blob).decode()},
    }
    try:
        obj = await get_json(s, cm_path(name))
        meta["resourceVersion"] = obj["metadata"]["resourceVersion"]
        await put_json(s, cm_path(name), body)
    except NotFound:
        await create_json(s, cm_path(), body)


async def test_garbage_part_loads_as_empty_with_a_problem_and_is_rewritten(
    session: KubeSession,
) -> None:
    await store(session).save(records(5), epoch=1, now=at(0))
    await put_part(session, NAME, os.urandom(2000))
    st = store(session)
    loaded = await st.load(epoch=1)
    assert loaded.records == {}
    assert len(loaded.problems) == 1 and "not gzip" in loaded.problems[0]
    # The next save replaces the garbage even though the records "did not change".
    assert await st.save({}, epoch=1, now=at(5)) == 1
    assert (await store(session).load(epoch=1)).problems == ()


async def test_garbage_written_with_kubectl(
    emulator: Emulator, kubeconfig: Path, session: KubeSession, tmp_path: Path
) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not on PATH")
    garbage = tmp_path / DATA_KEY
    garbage.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(500))  # a gzip header, then noise
    # kubectl's typed create sends protobuf; build the object client-side and send it
    # as YAML instead.
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        await kubectl(
            kubeconfig,
            "create",
            "configmap",
            NAME,
            "-n",
            NS,
            f"--from-file={garbage}",
            "--dry-run=client",
            "-o",
            "yaml",
        )
    )
    await kubectl(kubeconfig, "create", "-f", str(manifest))
    await kubectl(kubeconfig, "label", "configmap", NAME, "-n", NS, f"{LABEL_HISTORY}={NAME}")
    obj = await get_json(session, cm_path(NAME))
    assert DATA_KEY in obj["binaryData"]  # kubectl put the non-UTF-8 file there
    loaded = await store(session).load(epoch=1)
    assert loaded.records == {} and len(loaded.problems) == 1
    assert loaded.problems[0].startswith(f"history object {NAME}: history blob:")


async def kubectl(kubeconfig: Path, *args: str) -> str:
    code, out, err = await run_kubectl(kubeconfig, *args)
    assert code == 0, out + err
    return out


def doc_with(extra: dict[str, Any]) -> bytes:
    good = records(3)
    doc: dict[str, Any] = {"v": 1, "w": "x", "e": 1, "t": 0, "h": {}}
    for key, rec in good.items():
        doc["h"][key] = {
            "u": rec.uid,
            "r": [
                [
                    r.recommendation,
                    (r.timestamp - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1),
                ]
                for r in rec.history.recommendations
            ],
        }
    doc["h"].update(extra)
    return gzip.compress(json.dumps(doc).encode(), mtime=0)


async def test_one_bad_record_is_dropped_the_rest_loads(session: KubeSession) -> None:
    await put_part(session, NAME, doc_with({"ns/bad": {"u": "u", "r": [[-3, 5]]}}))
    loaded = await store(session).load(epoch=1)
    assert set(loaded.records) == set(records(3))
    assert len(loaded.problems) == 1 and "history of ns/bad: dropped" in loaded.problems[0]


async def test_oversized_record_in_the_object_is_dropped(session: KubeSession) -> None:
    too_many = {"ns/huge": {"u": "u", "r": [[1, i] for i in range(1000)]}}
    await put_part(session, NAME, doc_with(too_many))
    loaded = await store(session).load(epoch=1)
    assert set(loaded.records) == set(records(3))
    assert "1000 entries, more than 256" in loaded.problems[0]


async def test_record_too_large_for_any_object_is_left_out_of_the_save(
    session: KubeSession,
) -> None:
    st = store(session, max_object_bytes=600)
    huge = HistoryRecord("u", History(tuple(Recommendation(i, at(-i / 7)) for i in range(200))))
    data = {**records(2), "ns/huge": huge}
    assert await st.save(data, epoch=1, now=at(0)) >= 1
    assert len(st.last_save_problems) == 1
    assert st.last_save_problems[0].startswith("history of ns/huge: not saved:")
    assert "bytes encoded on its own, more than 600" in st.last_save_problems[0]
    assert (await store(session).load(epoch=1)).records == records(2)


async def test_foreign_object_with_our_label_is_ignored(session: KubeSession) -> None:
    await put_part(session, "something-else", b"x")
    loaded = await store(session).load(epoch=1)
    assert loaded.records == {}
    assert loaded.problems == (
        "history object something-else: ignored: not a part of hpactl-history",
    )


async def test_record_longer_than_a_load_accepts_is_left_out_of_the_save(
    session: KubeSession,
) -> None:
    st = store(session)
    long = HistoryRecord("u", History(tuple(Recommendation(i, at(-i)) for i in range(257))))
    await st.save({**records(2), "ns/long": long}, epoch=1, now=at(0))
    assert st.last_save_problems == ("history of ns/long: not saved: 257 entries, more than 256",)
    loaded = await store(session).load(epoch=1)
    assert loaded.records == records(2) and loaded.problems == ()


async def test_a_recreated_lease_adopts_history_stamped_higher(session: KubeSession) -> None:
    """A Lease deleted and created again counts its transitions from 0: the history its
    earlier life stamped with epoch 7 is not trusted, but is overwritten, not fenced."""
    data = records(3)
    assert await store(session, "old-life").save(data, epoch=7, now=at(0)) == 1
    fenced = store(session, "new-life")
    await fenced.load(epoch=0)
    with pytest.raises(HistoryFenced):
        await fenced.save(data, epoch=0, now=at(15))
    adopting = store(session, "new-life")
    loaded = await adopting.load(epoch=0, adopt_newer=True)
    assert loaded.records == {}
    assert len(loaded.problems) == 1 and "created again" in loaded.problems[0]
    fresh = records(2)
    assert await adopting.save(fresh, epoch=0, now=at(15)) == 1
    assert (await store(session, "reader").load(epoch=0)).records == fresh
