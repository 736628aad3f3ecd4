"""Scale targets of kinds other than the four cached workloads, against the emulator.

A DaemonSet is a real, discoverable kind without a scale subresource: upstream's
``scaleForResourceMappings`` resolves it and its ``GET .../daemonsets/<name>/scale``
answers 404 from the API server; the error text goes, as it is, into the
FailedGetScale event and the AbleToScale condition.
"""

from __future__ import annotations

from typing import Any

from .builders import events, hpa
from .test_controller_emulator import Env, env  # noqa: F401  (the fixture)

NOT_FOUND = "the server could not find the requested resource"


def daemonset(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


async def test_daemonset_target_fails_to_get_scale_as_upstream(env: Env) -> None:  # noqa: F811
    env.emu.store.create(daemonset("agent"))
    env.emu.store.create(hpa("agent", "agent", kind="DaemonSet"))
    (rec,) = await env.step()
    assert rec.current is None and not rec.rescaled
    assert rec.errors and NOT_FOUND in rec.errors[0]
    (ev,) = events(env.emu, reason="FailedGetScale")
    assert (ev["type"], ev["message"]) == ("Warning", NOT_FOUND)
    status = env.hpa_obj("agent")["status"]
    (cond,) = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "AbleToScale",
        "False",
        "FailedGetScale",
    )
    assert cond["message"] == (
        f"the HPA controller was unable to get the target's current scale: {NOT_FOUND}"
    )
    # Nothing else was decided or written.
    assert status["desiredReplicas"] == 0 and "lastScaleTime" not in status
    ds = env.emu.store.get("apps", "daemonsets", "default", "agent")
    assert ds is not None and "replicas" not in ds["spec"]

    # The next sync says the same, aggregated into the same Event (count 2).
    (rec,) = await env.step(15)
    (ev,) = events(env.emu, reason="FailedGetScale")
    assert ev["count"] == 2 and ev["message"] == NOT_FOUND


async def test_missing_daemonset_is_not_found_too(env: Env) -> None:  # noqa: F811
    # The scale GET is refused before the object is looked up: the same text.
    env.emu.store.create(hpa("agent", "nope", kind="DaemonSet"))
    await env.step()
    (ev,) = events(env.emu, reason="FailedGetScale")
    assert ev["message"] == NOT_FOUND


async def test_ingress_target_has_no_scale_either(env: Env) -> None:  # noqa: F811
    env.emu.store.create(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "main", "namespace": "default"},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
        }
    )
    env.emu.store.create(hpa("main", "main", kind="Ingress", api_version="networking.k8s.io/v1"))
    await env.step()
    (ev,) = events(env.emu, reason="FailedGetScale")
    assert ev["message"] == NOT_FOUND
