"""ConfigMaps over 1 MiB are refused as kube-apiserver refuses them
(``ValidateConfigMap``: data and decoded binaryData together at most MaxSecretSize)."""

from __future__ import annotations

import asyncio
import base64
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hpactl.emulator import Emulator
from hpactl.kube import errors
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, get_json, put_json
from hpactl.kube.session import KubeSession

MIB = 1024 * 1024
PATH = resource_path("", "v1", "configmaps", namespace="default")
MESSAGE = 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'


def configmap(
    data: dict[str, str] | None = None, binary: dict[str, bytes] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "default"},
    }
    if data is not None:
        body["data"] = data
    if binary is not None:
        body["binaryData"] = {k: base64.b64encode(v).decode() for k, v in binary.items()}
    return body


@pytest.fixture
async def session(emulator: Emulator) -> AsyncIterator[KubeSession]:
    async with KubeSession(master=emulator.url, qps=0) as s:
        yield s


async def test_exactly_one_mib_is_accepted_counting_decoded_binary_bytes(
    session: KubeSession,
) -> None:
    # 512 KiB of text + 512 KiB of bytes (about 683 KiB as base64): exactly the limit.
    body = configmap({"a": "x" * (MIB // 2)}, {"b": b"\xff" * (MIB // 2)})
    created = await create_json(session, PATH, body)
    assert len(base64.b64decode(created["binaryData"]["b"])) == MIB // 2


async def test_one_byte_more_is_invalid(session: KubeSession) -> None:
    body = configmap({"a": "x" * (MIB // 2)}, {"b": b"\xff" * (MIB // 2 + 1)})
    with pytest.raises(errors.Invalid) as info:
        await create_json(session, PATH, body)
    assert info.value.code == 422
    assert str(info.value) == MESSAGE
    assert info.value.status is not None
    assert info.value.status["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 1048576 bytes",
            "field": "[]",
        }
    ]


async def test_update_over_the_limit_is_invalid(session: KubeSession) -> None:
    await create_json(session, PATH, configmap({"a": "small"}))
    obj = await get_json(session, PATH + "/big")
    obj["data"] = {"a": "é" * (MIB // 2 + 1)}  # UTF-8 bytes count, not characters
    with pytest.raises(errors.Invalid, match="Too long"):
        await put_json(session, PATH + "/big", obj)


async def test_binary_data_that_is_not_base64_is_a_bad_request(session: KubeSession) -> None:
    body = configmap()
    body["binaryData"] = {"b": "not base64!"}
    with pytest.raises(errors.BadRequest, match="illegal base64 data at input byte 3"):
        await create_json(session, PATH, body)


async def test_kubectl_sees_the_same_error(kubeconfig: Path, tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not on PATH")
    manifest = tmp_path / "big.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: default}\n"
        f"data:\n  a: {'x' * (MIB + 1)}\n"
    )
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        f"--cache-dir={tmp_path / '.kube-cache'}",
        "create",
        "-f",
        str(manifest),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert MESSAGE in err.decode(), out.decode() + err.decode()
