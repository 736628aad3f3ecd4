"""The emulator's HTTP API against the semantics of kube-apiserver (raw JSON)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator

import pytest
from support.objects import scale_crd

from hpactl.emulator import Emulator

from .helpers import DEPLOYMENTS, EVENTS, HPAS, HPAS_V1, PODS, TABLE, Http, deployment, hpa_v2, pod


@pytest.fixture
async def http(emulator: Emulator) -> AsyncIterator[Http]:
    h = Http(emulator)
    yield h
    await h.close()


# ---- discovery --------------------------------------------------------------------------


async def test_discovery_documents(http: Http) -> None:
    code, version = await http.get("/version")
    assert code == 200 and version["major"] == "1"
    code, api = await http.get("/api")
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    code, groups = await http.get("/apis")
    by_name = {g["name"]: g for g in groups["groups"]}
    assert by_name["autoscaling"]["preferredVersion"]["version"] == "v2"
    assert [v["version"] for v in by_name["autoscaling"]["versions"]] == ["v2", "v1"]
    for g in (
        "apps",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "metrics.k8s.io",
        "custom.metrics.k8s.io",
        "external.metrics.k8s.io",
    ):
        assert g in by_name
    code, apps = await http.get("/apis/apps/v1")
    res = {r["name"]: r for r in apps["resources"]}
    assert res["deployments"]["shortNames"] == ["deploy"]
    assert res["deployments/scale"]["group"] == "autoscaling"
    assert res["deployments/scale"]["kind"] == "Scale"
    assert res["deployments/status"]["verbs"] == ["get", "patch", "update"]
    code, core = await http.get("/api/v1")
    names = {r["name"] for r in core["resources"]}
    assert {
        "pods",
        "pods/status",
        "namespaces",
        "events",
        "replicationcontrollers/scale",
        "serviceaccounts",
    } <= names
    code, group = await http.get("/apis/autoscaling")
    assert group["kind"] == "APIGroup" and group["preferredVersion"]["version"] == "v2"
    code, body = await http.get("/apis/nope.example.com/v1")
    assert code == 404 and body["reason"] == "NotFound"


# ---- create / get / update / delete -------------------------------------------------------


async def test_create_get_and_errors(http: Http) -> None:
    code, d = await http.post(DEPLOYMENTS, deployment("web"))
    assert code == 201
    assert d["metadata"]["resourceVersion"] and d["metadata"]["generation"] == 1
    assert "status" not in d or d["status"] == {}
    code, got = await http.get(DEPLOYMENTS + "/web")
    assert code == 200 and got["metadata"]["uid"] == d["metadata"]["uid"]
    code, err = await http.post(DEPLOYMENTS, deployment("web"))
    assert code == 409
    assert err["reason"] == "AlreadyExists"
    assert err["message"] == 'deployments.apps "web" already exists'
    assert err["details"] == {"name": "web", "group": "apps", "kind": "deployments"}
    code, err = await http.get(DEPLOYMENTS + "/nope")
    assert (code, err["reason"], err["message"]) == (
        404,
        "NotFound",
        'deployments.apps "nope" not found',
    )
    code, err = await http.get(PODS + "/nope")
    assert err["message"] == 'pods "nope" not found'
    code, err = await http.post("/apis/apps/v1/namespaces/missing/deployments", deployment("x"))
    assert (code, err["message"]) == (404, 'namespaces "missing" not found')
    code, err = await http.post(
        DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}
    )
    assert code == 422 and err["reason"] == "Invalid"
    assert "name or generateName is required" in err["message"]
    gen = deployment("x")
    gen["metadata"] = {"generateName": "web-", "labels": {"app": "x"}}
    code, made = await http.post(DEPLOYMENTS, gen)
    assert code == 201 and made["metadata"]["name"].startswith("web-")
    assert len(made["metadata"]["name"]) == len("web-") + 5
    code, err = await http.post(
        "/apis/apps/v1/namespaces/kube-system/deployments",
        deployment("web") | {"metadata": {"name": "web", "namespace": "default"}},
    )
    assert code == 400 and "does not match the namespace" in err["message"]


async def test_update_conflict_and_status_rules(http: Http) -> None:
    _, d = await http.post(DEPLOYMENTS, deployment("web"))
    d2 = copy.deepcopy(d)
    d2["spec"]["replicas"] = 3
    d2["status"] = {"replicas": 99}  # ignored on the main resource
    code, upd = await http.put(DEPLOYMENTS + "/web", d2)
    assert code == 200
    assert upd["metadata"]["generation"] == 2
    assert upd.get("status", {}).get("replicas") is None
    d["spec"]["replicas"] = 5
    code, err = await http.put(DEPLOYMENTS + "/web", d)
    assert code == 409 and err["reason"] == "Conflict"
    assert err["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    # status subresource: only status changes, generation stays
    upd["status"] = {"replicas": 3, "readyReplicas": 2}
    upd["spec"]["replicas"] = 7
    code, st = await http.put(DEPLOYMENTS + "/web/status", upd)
    assert code == 200
    assert st["status"] == {"replicas": 3, "readyReplicas": 2}
    assert st["spec"]["replicas"] == 3 and st["metadata"]["generation"] == 2
    code, err = await http.put(DEPLOYMENTS + "/web/status", upd)  # stale RV again
    assert code == 409
    code, err = await http.put(DEPLOYMENTS + "/nope", deployment("nope"))
    assert code == 404
    code, err = await http.put(DEPLOYMENTS + "/web", deployment("other"))
    assert code == 400 and "does not match the name on the URL" in err["message"]
    code, err = await http.get(PODS + "/x/status")
    assert code == 404


async def test_delete_responses_and_preconditions(http: Http) -> None:
    _, d = await http.post(DEPLOYMENTS, deployment("web"))
    code, err = await http.delete(DEPLOYMENTS + "/web", {"preconditions": {"uid": "wrong"}})
    assert code == 409 and "Precondition failed: UID in precondition: wrong" in err["message"]
    code, st = await http.delete(DEPLOYMENTS + "/web", {"propagationPolicy": "Foreground"})
    assert code == 200 and st["kind"] == "Status" and st["status"] == "Success"
    assert st["details"] == {
        "name": "web",
        "group": "apps",
        "kind": "deployments",
        "uid": d["metadata"]["uid"],
    }
    code, err = await http.delete(DEPLOYMENTS + "/web")
    assert code == 404
    await http.post(PODS, pod("p", {"a": "b"}))
    code, obj = await http.delete(PODS + "/p")
    assert code == 200 and obj["kind"] == "Pod" and obj["metadata"]["name"] == "p"
    code, err = await http.delete(DEPLOYMENTS + "/x", {"propagationPolicy": "Sometimes"})
    assert code == 400


async def test_finalizers_delay_deletion(http: Http) -> None:
    d = deployment("web")
    d["metadata"]["finalizers"] = ["example.com/keep"]
    await http.post(DEPLOYMENTS, d)
    code, obj = await http.delete(DEPLOYMENTS + "/web")
    assert code == 202 and obj["metadata"]["deletionTimestamp"]
    code, obj = await http.patch(
        DEPLOYMENTS + "/web",
        [{"op": "remove", "path": "/metadata/finalizers"}],
        "application/json-patch+json",
    )
    assert code == 200
    code, _ = await http.get(DEPLOYMENTS + "/web")
    assert code == 404


async def test_namespace_delete_removes_contents(http: Http) -> None:
    await http.post(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}}
    )
    await http.post("/apis/apps/v1/namespaces/tmp/deployments", deployment("web"))
    code, ns = await http.delete("/api/v1/namespaces/tmp")
    assert code == 200 and ns["kind"] == "Namespace"
    code, _ = await http.get("/apis/apps/v1/namespaces/tmp/deployments/web")
    assert code == 404
    code, err = await http.delete("/api/v1/namespaces/default")
    assert (code, err["message"]) == (
        403,
        'namespaces "default" is forbidden: this namespace may not be deleted',
    )


# ---- patch --------------------------------------------------------------------------------


async def test_patch_types(http: Http) -> None:
    d = deployment("web")
    d["spec"]["template"]["spec"]["containers"] = [
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
        {"name": "b", "image": "b:1"},
    ]
    await http.post(DEPLOYMENTS, d)
    # strategic merge: containers merge by name, env by name
    smp = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}
            }
        }
    }
    code, out = await http.patch(
        DEPLOYMENTS + "/web", smp, "application/strategic-merge-patch+json"
    )
    assert code == 200
    cs = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["a", "b"]
    assert cs[0]["image"] == "a:1"
    assert cs[0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    # $patch: delete removes a keyed element
    smp = {"spec": {"template": {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}}}
    code, out = await http.patch(
        DEPLOYMENTS + "/web", smp, "application/strategic-merge-patch+json"
    )
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["a"]
    # merge patch replaces lists
    mp = {
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "c:1"}]}}},
        "metadata": {"labels": {"app": None, "x": "y"}},
    }
    code, out = await http.patch(DEPLOYMENTS + "/web", mp, "application/merge-patch+json")
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["c"]
    assert out["metadata"]["labels"] == {"x": "y"}
    # JSON patch
    jp = [
        {"op": "replace", "path": "/spec/replicas", "value": 4},
        {"op": "add", "path": "/metadata/labels/z", "value": "1"},
    ]
    code, out = await http.patch(DEPLOYMENTS + "/web", jp, "application/json-patch+json")
    assert out["spec"]["replicas"] == 4 and out["metadata"]["labels"]["z"] == "1"
    code, err = await http.patch(
        DEPLOYMENTS + "/web",
        [{"op": "test", "path": "/spec/replicas", "value": 1}],
        "application/json-patch+json",
    )
    assert code == 422
    code, err = await http.patch(
        DEPLOYMENTS + "/web",
        [{"op": "remove", "path": "/spec/nope"}],
        "application/json-patch+json",
    )
    assert code == 422
    code, err = await http.patch(DEPLOYMENTS + "/web", {"a": 1}, "text/plain")
    assert code == 415 and err["reason"] == "UnsupportedMediaType"
    code, err = await http.patch(DEPLOYMENTS + "/nope", {"a": 1}, "application/merge-patch+json")
    assert code == 404
    # a patch carrying a stale resourceVersion conflicts
    code, err = await http.patch(
        DEPLOYMENTS + "/web", {"metadata": {"resourceVersion": "1"}}, "application/merge-patch+json"
    )
    assert code == 409


async def test_status_patch_conditions_merge_by_type(http: Http) -> None:
    await http.post(DEPLOYMENTS, deployment("web"))
    await http.post(HPAS, hpa_v2("web", "web"))
    cond = {
        "type": "AbleToScale",
        "status": "True",
        "reason": "ReadyForNewScale",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    code, out = await http.patch(
        HPAS + "/web/status",
        {"status": {"currentReplicas": 1, "desiredReplicas": 2, "conditions": [cond]}},
        "application/merge-patch+json",
    )
    assert code == 200 and out["status"]["desiredReplicas"] == 2
    cond2 = {
        "type": "ScalingActive",
        "status": "False",
        "reason": "FailedGetResourceMetric",
        "message": "x",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    code, out = await http.patch(
        HPAS + "/web/status",
        {"status": {"conditions": [cond2, {"type": "AbleToScale", "reason": "SucceededRescale"}]}},
        "application/strategic-merge-patch+json",
    )
    conds = {c["type"]: c for c in out["status"]["conditions"]}
    assert conds["AbleToScale"]["reason"] == "SucceededRescale"
    assert conds["AbleToScale"]["message"] == "m"
    assert conds["ScalingActive"]["status"] == "False"
    # a spec change through the status subresource is ignored
    code, out = await http.patch(
        HPAS + "/web/status", {"spec": {"maxReplicas": 50}}, "application/merge-patch+json"
    )
    assert out["spec"]["maxReplicas"] == 5


# ---- list ---------------------------------------------------------------------------------


async def test_list_pagination_is_a_consistent_snapshot(http: Http, emulator: Emulator) -> None:
    for i in range(7):
        emulator.store.create(pod(f"p{i}", {"i": str(i)}))
    code, page1 = await http.get(PODS, params={"limit": "3"})
    assert [p["metadata"]["name"] for p in page1["items"]] == ["p0", "p1", "p2"]
    assert page1["metadata"]["remainingItemCount"] == 4
    token = page1["metadata"]["continue"]
    emulator.store.create(pod("p00", {}))  # sorts into the first page: not seen
    emulator.store.delete("", "pods", "default", "p5")  # still in the snapshot
    code, page2 = await http.get(PODS, params={"limit": "3", "continue": token})
    assert [p["metadata"]["name"] for p in page2["items"]] == ["p3", "p4", "p5"]
    assert page2["metadata"]["resourceVersion"] == page1["metadata"]["resourceVersion"]
    code, page3 = await http.get(
        PODS, params={"limit": "3", "continue": page2["metadata"]["continue"]}
    )
    assert [p["metadata"]["name"] for p in page3["items"]] == ["p6"]
    assert "continue" not in page3["metadata"]
    code, _err = await http.get(PODS, params={"continue": "garbage"})
    assert code == 400
    code, _err = await http.get(PODS, params={"continue": token, "resourceVersion": "5"})
    assert code == 400


async def test_list_resource_version_semantics() -> None:
    async with Emulator(history_size=3) as emu:
        http = Http(emu)
        try:
            for i in range(3):
                emu.store.create(pod(f"p{i}", {}))
            code, lst = await http.get(PODS)
            rv = int(lst["metadata"]["resourceVersion"])
            assert rv == int(emu.store.current_resource_version())
            code, page = await http.get(PODS, params={"limit": "1"})
            token = page["metadata"]["continue"]
            code, err = await http.get(PODS, params={"resourceVersion": str(rv + 100)})
            assert (
                code == 504
                and err["message"] == f"Too large resource version: {rv + 100}, current: {rv}"
            )
            code, exact = await http.get(
                PODS, params={"resourceVersion": str(rv - 1), "resourceVersionMatch": "Exact"}
            )
            assert code == 200 and [p["metadata"]["name"] for p in exact["items"]] == ["p0", "p1"]
            for i in range(3, 7):
                emu.store.create(pod(f"p{i}", {}))
            code, err = await http.get(
                PODS, params={"resourceVersion": str(rv - 1), "resourceVersionMatch": "Exact"}
            )
            assert code == 410 and err["reason"] == "Expired"
            code, err = await http.get(PODS, params={"limit": "1", "continue": token})
            assert code == 410 and err["reason"] == "Expired"
            assert err["message"].startswith("The provided continue parameter is too old")
            code, lst = await http.get(PODS, params={"resourceVersion": "0", "limit": "2"})
            assert len(lst["items"]) == 7  # served from the "watch cache": limit ignored
            code, err = await http.get(PODS, params={"resourceVersionMatch": "Exact"})
            assert code == 400
        finally:
            await http.close()


async def test_label_and_field_selectors(http: Http, emulator: Emulator) -> None:
    emulator.store.create(pod("a", {"app": "web", "tier": "fe"}))
    emulator.store.create(pod("b", {"app": "web", "tier": "be"}))
    emulator.store.create(pod("c", {"app": "db"}))

    async def names(**params: str) -> list[str]:
        code, lst = await http.get(PODS, params=params)
        assert code == 200, lst
        return [p["metadata"]["name"] for p in lst["items"]]

    assert await names(labelSelector="app=web") == ["a", "b"]
    assert await names(labelSelector="app=web,tier!=fe") == ["b"]
    assert await names(labelSelector="tier in (fe,be)") == ["a", "b"]
    assert await names(labelSelector="!tier") == ["c"]
    assert await names(labelSelector="app notin (web)") == ["c"]
    assert await names(fieldSelector="metadata.name=b") == ["b"]
    assert await names(fieldSelector="metadata.name!=b,metadata.namespace=default") == ["a", "c"]
    code, err = await http.get(PODS, params={"fieldSelector": "spec.bogus=1"})
    assert code == 400 and err["message"] == "field label not supported: spec.bogus"
    code, err = await http.get(PODS, params={"labelSelector": "a in (b"})
    assert code == 400
    code, all_ns = await http.get(
        "/api/v1/pods", params={"fieldSelector": "metadata.namespace=default"}
    )
    assert len(all_ns["items"]) == 3


async def test_event_field_selectors_and_events_v1_view(http: Http) -> None:
    ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.1"},
        "involvedObject": {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "name": "web",
            "namespace": "default",
            "uid": "u1",
        },
        "reason": "SuccessfulRescale",
        "message": "New size: 3; reason: cpu resource utilization (percentage of request) above target",
        "type": "Normal",
        "source": {"component": "horizontal-pod-autoscaler"},
        "count": 1,
    }
    assert (await http.post(EVENTS, ev))[0] == 201
    other = copy.deepcopy(ev)
    other["metadata"]["name"] = "db.1"
    other["involvedObject"]["name"] = "db"
    await http.post(EVENTS, other)
    _code, lst = await http.get(
        EVENTS,
        params={
            "fieldSelector": "involvedObject.name=web,involvedObject.kind=HorizontalPodAutoscaler,involvedObject.uid=u1"
        },
    )
    assert [e["metadata"]["name"] for e in lst["items"]] == ["web.1"]
    _code, v1 = await http.get("/apis/events.k8s.io/v1/namespaces/default/events/web.1")
    assert v1["apiVersion"] == "events.k8s.io/v1"
    assert v1["regarding"]["name"] == "web" and v1["note"].startswith("New size: 3")
    assert v1["deprecatedCount"] == 1
    _code, lst = await http.get(
        "/apis/events.k8s.io/v1/namespaces/default/events",
        params={"fieldSelector": "regarding.name=db"},
    )
    assert [e["metadata"]["name"] for e in lst["items"]] == ["db.1"]


# ---- HPA versions ---------------------------------------------------------------------------


async def test_hpa_served_in_v1_and_v2_from_one_object(http: Http) -> None:
    metrics = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 70},
            },
        },
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"},
            },
        },
    ]
    code, created = await http.post(HPAS, hpa_v2("web", "web", metrics=metrics))
    assert code == 201
    code, v1 = await http.get(HPAS_V1 + "/web")
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 70
    assert "autoscaling.alpha.kubernetes.io/metrics" in v1["metadata"]["annotations"]
    assert v1["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    # write through v1 keeps the v2-only metric (carried in the annotation)
    v1["spec"]["maxReplicas"] = 9
    code, upd = await http.put(HPAS_V1 + "/web", v1)
    assert code == 200, upd
    code, v2 = await http.get(HPAS + "/web")
    assert v2["spec"]["maxReplicas"] == 9
    # As the real conversion does: annotation metrics first, then the v1 CPU target.
    assert [m["type"] for m in v2["spec"]["metrics"]] == ["Pods", "Resource"]
    assert "annotations" not in v2["metadata"] or not any(
        k.startswith("autoscaling.alpha") for k in v2["metadata"]["annotations"]
    )
    code, lst = await http.get(HPAS_V1)
    assert lst["kind"] == "HorizontalPodAutoscalerList" and lst["apiVersion"] == "autoscaling/v1"
    assert lst["items"][0]["spec"]["targetCPUUtilizationPercentage"] == 70
    code, err = await http.post(
        HPAS,
        {
            **hpa_v2("bad", "web"),
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 0},
        },
    )
    assert code == 422 and "spec.maxReplicas" in err["message"]


# ---- scale subresource ----------------------------------------------------------------------


async def test_scale_subresource_builtin_kinds(http: Http) -> None:
    await http.post(DEPLOYMENTS, deployment("web", replicas=2, labels={"app": "web", "tier": "fe"}))
    code, sc = await http.get(DEPLOYMENTS + "/web/scale")
    assert sc["kind"] == "Scale" and sc["apiVersion"] == "autoscaling/v1"
    assert sc["spec"] == {"replicas": 2}
    assert sc["status"] == {"replicas": 0, "selector": "app=web,tier=fe"}
    sc["spec"]["replicas"] = 5
    code, out = await http.put(DEPLOYMENTS + "/web/scale", sc)
    assert code == 200 and out["spec"]["replicas"] == 5
    code, _err = await http.put(DEPLOYMENTS + "/web/scale", sc)  # stale RV
    assert code == 409
    code, out = await http.patch(
        DEPLOYMENTS + "/web/scale", {"spec": {"replicas": 1}}, "application/merge-patch+json"
    )
    assert out["spec"]["replicas"] == 1
    code, d = await http.get(DEPLOYMENTS + "/web")
    assert d["spec"]["replicas"] == 1 and d["metadata"]["generation"] == 3
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc"},
        "spec": {
            "replicas": 2,
            "selector": {"b": "2", "a": "1"},
            "template": {
                "metadata": {"labels": {"a": "1", "b": "2"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    await http.post("/api/v1/namespaces/default/replicationcontrollers", rc)
    code, sc = await http.get("/api/v1/namespaces/default/replicationcontrollers/rc/scale")
    assert sc["status"]["selector"] == "a=1,b=2"
    code, _err = await http.get(DEPLOYMENTS + "/nope/scale")
    assert code == 404
    code, _err = await http.get(HPAS + "/web/scale")
    assert code == 404
    code, _err = await http.patch(
        DEPLOYMENTS + "/web/scale", {"spec": {"replicas": -1}}, "application/merge-patch+json"
    )
    assert code == 422


CRD = scale_crd(
    "workers",
    "Worker",
    short_names=("wk",),
    replicas_path=".spec.size",
    status_replicas_path=".status.size",
)


async def test_crd_registers_resource_with_scale(http: Http) -> None:
    code, crd = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert code == 201
    assert {c["type"] for c in crd["status"]["conditions"]} >= {"Established", "NamesAccepted"}
    code, disc = await http.get("/apis/example.com/v1")
    names = {r["name"] for r in disc["resources"]}
    assert names == {"workers", "workers/status", "workers/scale"}
    path = "/apis/example.com/v1/namespaces/default/workers"
    cr = {
        "apiVersion": "example.com/v1",
        "kind": "Worker",
        "metadata": {"name": "w"},
        "spec": {"size": 2},
    }
    code, obj = await http.post(path, cr)
    assert code == 201 and obj["metadata"]["generation"] == 1
    code, obj = await http.patch(
        path + "/w/status",
        {"status": {"size": 2, "selector": "app=w"}},
        "application/merge-patch+json",
    )
    assert obj["status"]["selector"] == "app=w"
    code, sc = await http.get(path + "/w/scale")
    assert sc["spec"] == {"replicas": 2} and sc["status"] == {"replicas": 2, "selector": "app=w"}
    code, sc = await http.patch(
        path + "/w/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json"
    )
    assert sc["spec"]["replicas"] == 4
    code, obj = await http.get(path + "/w")
    assert obj["spec"]["size"] == 4 and obj["metadata"]["generation"] == 2
    code, _err = await http.patch(
        path + "/w", {"spec": {"size": 1}}, "application/strategic-merge-patch+json"
    )
    assert code == 415
    code, _ = await http.delete(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workers.example.com"
    )
    assert code == 200
    code, _ = await http.get(path + "/w")
    assert code == 404
    code, _ = await http.get("/apis/example.com/v1")
    assert code == 404


# ---- watch ------------------------------------------------------------------------------------


async def test_watch_from_resource_version_streams_changes(http: Http, emulator: Emulator) -> None:
    _code, lst = await http.get(DEPLOYMENTS)
    rv = lst["metadata"]["resourceVersion"]

    async def writer() -> None:
        await asyncio.sleep(0.05)
        emulator.store.create(deployment("web"))
        emulator.store.apply(deployment("web", replicas=3))
        emulator.store.delete("apps", "deployments", "default", "web")

    task = asyncio.create_task(writer())
    events = await http.watch(
        DEPLOYMENTS, {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "5"}, max_events=3
    )
    await task
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)
    assert events[1]["object"]["spec"]["replicas"] == 3
    # resuming from the middle replays only what followed
    events = await http.watch(
        DEPLOYMENTS, {"watch": "1", "resourceVersion": str(rvs[0]), "timeoutSeconds": "1"}
    )
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]


async def test_watch_without_rv_sends_initial_state_and_honours_timeout(
    http: Http, emulator: Emulator
) -> None:
    emulator.store.create(pod("a", {"x": "1"}))
    emulator.store.create(pod("b", {"x": "2"}))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    events = await http.watch(PODS, {"watch": "t", "timeoutSeconds": "1", "labelSelector": "x=2"})
    assert loop.time() - t0 >= 0.9
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b")]


async def test_watch_selector_transitions(http: Http, emulator: Emulator) -> None:
    emulator.store.create(pod("a", {"x": "1"}))
    rv = emulator.store.current_resource_version()

    async def writer() -> None:
        await asyncio.sleep(0.05)
        emulator.store.apply(pod("a", {"x": "2"}))  # leaves the selection
        emulator.store.apply(pod("a", {"x": "1"}))  # comes back

    task = asyncio.create_task(writer())
    events = await http.watch(
        PODS,
        {"watch": "true", "resourceVersion": rv, "labelSelector": "x=1", "timeoutSeconds": "5"},
        max_events=2,
    )
    await task
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]
    # the DELETED event carries the object as it last matched, at the new version
    assert events[0]["object"]["metadata"]["labels"] == {"x": "1"}
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) > int(rv)


async def test_watch_bookmarks(http: Http, emulator: Emulator) -> None:
    emulator.store.create(pod("a", {}))
    rv = emulator.store.current_resource_version()
    events = await http.watch(
        PODS,
        {
            "watch": "true",
            "resourceVersion": rv,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "5",
        },
        max_events=1,
    )
    assert events[0]["type"] == "BOOKMARK"
    assert (
        events[0]["object"]["kind"] == "Pod"
        and events[0]["object"]["metadata"]["resourceVersion"] == rv
    )


async def test_watch_list_initial_events_end_bookmark(http: Http, emulator: Emulator) -> None:
    emulator.store.create(pod("a", {}))
    events = await http.watch(
        PODS,
        {
            "watch": "true",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "5",
        },
        max_events=2,
    )
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    code, _err = await http.get(PODS, params={"watch": "true", "sendInitialEvents": "true"})
    assert code == 422


async def test_watch_gone_and_bad_bool() -> None:
    async with Emulator(history_size=2) as emu:
        http = Http(emu)
        try:
            for i in range(4):
                emu.store.create(pod(f"p{i}", {}))
            events = await http.watch(
                PODS, {"watch": "true", "resourceVersion": "1", "timeoutSeconds": "5"}
            )
            assert len(events) == 1 and events[0]["type"] == "ERROR"
            status = events[0]["object"]
            assert status["code"] == 410 and status["reason"] == "Expired"
            assert status["message"].startswith("too old resource version: 1 (")
            code, err = await http.get(PODS, params={"watch": "yes"})
            assert code == 400 and "ParseBool" in err["message"]
            code, lst = await http.get(PODS, params={"watch": "false"})
            assert lst["kind"] == "PodList"
        finally:
            await http.close()


# ---- tables -----------------------------------------------------------------------------------


async def test_server_side_tables(http: Http) -> None:
    await http.post(DEPLOYMENTS, deployment("web", replicas=2))
    await http.post(HPAS, hpa_v2("web", "web"))
    await http.post(PODS, pod("p", {"app": "web"}))
    _code, t = await http.get(HPAS, accept=TABLE)
    assert t["kind"] == "Table"
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name",
        "Reference",
        "Targets",
        "MinPods",
        "MaxPods",
        "Replicas",
        "Age",
    ]
    assert t["rows"][0]["cells"][:6] == ["web", "Deployment/web", "cpu: <unknown>/60%", "1", 5, 0]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    _code, t = await http.get(DEPLOYMENTS + "/web", accept=TABLE)
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == [
        "Name",
        "Ready",
        "Up-to-date",
        "Available",
        "Age",
    ]
    assert t["rows"][0]["cells"][:4] == ["web", "0/2", 0, 0]
    _code, t = await http.get(PODS, accept=TABLE, params={"includeObject": "Object"})
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    assert t["rows"][0]["cells"][:4] == ["p", "0/1", "Pending", "0"]
    assert t["rows"][0]["object"]["kind"] == "Pod"
    _code, t = await http.get("/apis/rbac.authorization.k8s.io/v1/clusterroles", accept=TABLE)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Created At"]


async def test_create_resets_status_to_the_zero_struct(http: Http) -> None:
    body = hpa_v2("web", "web")
    body["status"] = {"currentReplicas": 9, "desiredReplicas": 9}
    _code, created = await http.post(HPAS, body)
    # autoscaling/v2 HorizontalPodAutoscalerStatus: desiredReplicas and currentMetrics
    # have no omitempty, so an empty status still shows them.
    assert created["status"] == {"currentMetrics": None, "desiredReplicas": 0}
    _code, v1 = await http.get(HPAS_V1 + "/web")
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    dep = deployment("web")
    dep["status"] = {"replicas": 3}
    _code, created = await http.post(DEPLOYMENTS, dep)
    assert created["status"] == {}


AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


async def test_aggregated_discovery_matches_the_resource_lists(
    http: Http, emulator: Emulator
) -> None:
    async with http.session.get(emulator.url + "/apis", headers={"Accept": AGGREGATED}) as resp:
        assert resp.headers["Content-Type"] == (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )
        doc = await resp.json(content_type=None)
    assert doc["kind"] == "APIGroupDiscoveryList"
    groups = {g["metadata"]["name"]: g for g in doc["items"]}
    assert [v["version"] for v in groups["autoscaling"]["versions"]] == ["v2", "v1"]
    apps = {r["resource"]: r for r in groups["apps"]["versions"][0]["resources"]}
    scale = next(s for s in apps["deployments"]["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert apps["deployments"]["scope"] == "Namespaced" and apps["deployments"]["shortNames"] == [
        "deploy"
    ]
    async with http.session.get(emulator.url + "/api", headers={"Accept": AGGREGATED}) as resp:
        core = await resp.json(content_type=None)
    names = {r["resource"] for r in core["items"][0]["versions"][0]["resources"]}
    _code, legacy = await http.get("/api/v1")
    assert names == {r["name"] for r in legacy["resources"] if "/" not in r["name"]}
    if emulator.metrics is not None:
        emulator.metrics.set_unavailable(["metrics.k8s.io"])
        async with http.session.get(emulator.url + "/apis", headers={"Accept": AGGREGATED}) as resp:
            doc = await resp.json(content_type=None)
        stale = {g["metadata"]["name"]: g for g in doc["items"]}["metrics.k8s.io"]
        assert stale["versions"] == [{"version": "v1beta1", "freshness": "Stale"}]
