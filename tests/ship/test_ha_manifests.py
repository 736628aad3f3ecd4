"""`manifests/ha/`: schema-valid, rendered by kubectl, and exactly enough for two or more
replicas sharing the shards with persisted history.

* every object of the overlay (its Role and RoleBinding, the patched Deployment)
  validates against the Kubernetes schemas (strict); `kubectl kustomize` renders the
  base plus those, the Deployment patched as the overlay says;
* the rendered arguments are valid `hpactl run` flags: 12 shards, HPAHistoryPersistence
  on, leader election on; no flag is given twice except those the patch overrides;
* applied to the emulator (authentication and RBAC enforced), two `hpactl run` with the
  ServiceAccount's token and the rendered flags split the shards, decide every HPA in
  every namespace, persist each shard's history, are ready and stop cleanly on SIGTERM;
  no request is denied, and every verb the roles grant is used (the exceptions, each
  used only on a rare path, are listed in ONLY_ON_A_RARE_PATH with the reason and
  exercised by a test of their own);
* without any single permission of the hpactl-ha Role hpactl fails visibly: the 403
  for exactly that permission in its log, and the effect HA_SURFACES says.

Syncs every 1 s, 2 s leases and 4 shards keep each test to a few seconds.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from hpactl.cli.run_cmd import parse_run_config
from hpactl.core.sharding import shard_of
from hpactl.emulator import Emulator
from hpactl.model import featuregates as fg

from .support import (
    HPACTL_NAMESPACE,
    HPACTL_SA,
    K8S_VERSION,
    MANIFESTS_ROOT,
    SA_USER,
    Cluster,
    HpactlProcess,
    RecordingAuthorizer,
    apply_json_patch,
    assert_kustomize_renders,
    events,
    hpactl_argv,
    kubectl,
    load_docs,
    manifest_objects,
    needs_kubectl,
    obj_id,
    obj_key,
    poll,
    rbac_files,
    run_flags,
    seed_cluster,
    unmet,
)
from .support import (
    uses_verb as _uses,
)
from .test_manifests import _log_texts, _permissions, _scrape, _scraper_token

Obj = dict[str, Any]
HA = MANIFESTS_ROOT / "ha"
LOCK = "hpactl"  # --leader-elect-resource-name in the base Deployment
SHARDS = 4  # in the emulator runs: the rendered 12, overridden by a later flag


def _kustomization() -> Obj:
    kust: Obj = yaml.safe_load((HA / "kustomization.yaml").read_text())
    return kust


def _own_objects() -> list[Obj]:
    """The objects the overlay adds (its resources other than ../base)."""
    return [
        obj
        for name in _kustomization()["resources"]
        if not str(name).startswith("..")
        for obj in load_docs(HA / str(name))
    ]


def _ha_role() -> Obj:
    (role,) = [o for o in _own_objects() if o["kind"] == "Role"]
    return role


def _patch_ops() -> list[Obj]:
    (patch,) = _kustomization()["patches"]
    assert patch["target"] == {"kind": "Deployment", "name": "hpactl"}
    ops: list[Obj] = yaml.safe_load((HA / str(patch["path"])).read_text())
    return ops


def _expected_render() -> list[Obj]:
    """The base's objects, the Deployment patched, and the overlay's own objects."""
    base = [
        apply_json_patch(o, _patch_ops()) if obj_key(o)[::2] == ("Deployment", "hpactl") else o
        for o in manifest_objects()
    ]
    return base + _own_objects()


def _deployment() -> Obj:
    (dep,) = [o for o in _expected_render() if o["kind"] == "Deployment"]
    return dep


def _args(dep: Obj) -> list[str]:
    args: list[str] = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def _base_args() -> list[str]:
    (dep,) = [o for o in manifest_objects() if o["kind"] == "Deployment"]
    return _args(dep)


# --------------------------------------------------------------------------- static checks


def test_kustomization_lists_every_file() -> None:
    kust = _kustomization()
    assert kust["resources"][0] == "../base"
    used = {str(r) for r in kust["resources"][1:]} | {str(p["path"]) for p in kust["patches"]}
    assert used == {p.name for p in HA.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize(
    "obj",
    [*_own_objects(), _deployment()],
    ids=lambda o: obj_id(o) + ("(patched)" * (o["kind"] == "Deployment")),
)
def test_object_is_valid_against_the_kubernetes_schema(obj: Obj) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# A flag given twice: pflag, and parse_run_config, keep the last value. The patch appends
# its flags to the base's, so these (and only these) are given twice, the patch's last.
OVERRIDDEN = {"--shards": "12"}


def test_the_rendered_flags_run_twelve_shards_with_persisted_history() -> None:
    dep = _deployment()
    assert dep["spec"]["replicas"] == 3
    args = _args(dep)
    assert args[: len(_base_args())] == _base_args()  # appended, nothing else changed
    config = parse_run_config(args, {})  # raises ConfigError on any bad flag
    assert config.shards == 12
    assert config.feature_gates.enabled(fg.HPA_HISTORY_PERSISTENCE)
    assert config.leader_election.leader_elect
    assert config.leader_election.resource_namespace == HPACTL_NAMESPACE
    assert config.leader_election.resource_name == LOCK
    assert not config.shadow
    # More shards than replicas, so that a replica down leaves the load even.
    assert config.shards > dep["spec"]["replicas"]
    values: dict[str, list[str]] = {}
    for a in args:
        flag, _, value = a.partition("=")
        values.setdefault(flag, []).append(value)
    twice = {f: v for f, v in values.items() if len(set(v)) > 1 or len(v) > 1}
    assert {f: v[-1] for f, v in twice.items()} == OVERRIDDEN, twice
    # The last value is the one taken: the base's --shards=1 put back at the end wins.
    assert parse_run_config([*args, "--shards=1"], {}).shards == 1
    assert parse_run_config(["--shards=3", "--shards=5"], {}).shards == 5


def test_the_ha_role_is_bound_to_hpactl_in_the_lease_namespace() -> None:
    role = _ha_role()
    (binding,) = [o for o in _own_objects() if o["kind"] == "RoleBinding"]
    namespace = parse_run_config(_args(_deployment()), {}).leader_election.resource_namespace
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == namespace
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": HPACTL_SA, "namespace": HPACTL_NAMESPACE}
    ]
    # Nothing cluster-wide: what sharding and history add stays in hpactl's namespace.
    assert {o["kind"] for o in _own_objects()} == {"Role", "RoleBinding"}
    # No name collides with the base's.
    assert not {obj_key(o) for o in _own_objects()} & {obj_key(o) for o in manifest_objects()}


@needs_kubectl
async def test_kubectl_kustomize_renders_the_base_the_role_and_the_patched_deployment(
    tmp_path: Path,
) -> None:
    await assert_kustomize_renders(tmp_path, HA, _expected_render())


# --------------------------------------------------------------------------- the cluster


def _team_namespaces() -> list[str]:
    """One namespace for each shard `default` (seed_cluster's) is not in."""
    covered = {shard_of("default", SHARDS)}
    out: list[str] = []
    for i in range(1000):
        ns = f"team-{i}"
        if shard_of(ns, SHARDS) not in covered:
            covered.add(shard_of(ns, SHARDS))
            out.append(ns)
        if len(covered) == SHARDS:
            return out
    raise AssertionError("no namespace for every shard")


TEAMS = _team_namespaces()
STARTED = "2020-01-01T00:00:00Z"  # long ago: past every readiness / initialization window


def _seed_teams(emu: Emulator) -> None:
    """In each team namespace, Deployment `api` (1 pod at 150m of 100m) and a 50 % CPU
    HPA capped at 3: scaled 1 → 3 (ceil(1 x 150 / 50) = 3)."""
    labels = {"app": "api"}
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m"}},
    }
    for ns in TEAMS:
        emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        emu.store.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "api", "namespace": ns, "labels": labels},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [container]},
                    },
                },
            }
        )
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "api-0", "namespace": ns, "labels": labels},
                "spec": {"containers": [container]},
                "status": {
                    "phase": "Running",
                    "startTime": STARTED,
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": STARTED}
                    ],
                },
            }
        )
        emu.metrics.put_pod_metrics(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "PodMetrics",
                "metadata": {"name": "api-0", "namespace": ns},
                "window": "30s",
                "containers": [{"name": "app", "usage": {"cpu": "150m"}}],
            }
        )
        emu.store.create(
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "api", "namespace": ns},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "api",
                    },
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {
                                "name": "cpu",
                                "target": {"type": "Utilization", "averageUtilization": 50},
                            },
                        }
                    ],
                },
            }
        )


def _unmet(emu: Emulator) -> list[str]:
    """What is missing from "every HPA decided": seed_cluster's expectations in
    `default` (no single leader Lease with shards) and `api` scaled to 3 in each team."""
    missing = unmet(emu, leader_elect=False)
    for ns in TEAMS:
        dep = emu.store.get("apps", "deployments", ns, "api") or {}
        if (dep.get("spec") or {}).get("replicas") != 3:
            missing.append(f"deployment {ns}/api scaled to 3")
        h = emu.store.get("autoscaling", "horizontalpodautoscalers", ns, "api") or {}
        if (h.get("status") or {}).get("desiredReplicas") != 3:
            missing.append(f"hpa {ns}/api status.desiredReplicas=3")
        if not any(e.get("reason") == "SuccessfulRescale" for e in events(emu, ns)):
            missing.append(f"event SuccessfulRescale in {ns}")
    return missing


def _decided_nothing(emu: Emulator) -> bool:
    hpas = emu.store.list("autoscaling", "horizontalpodautoscalers")
    return all(not (h.get("status") or {}).get("desiredReplicas") for h in hpas)


def _holders(emu: Emulator) -> dict[int, str]:
    out: dict[int, str] = {}
    for i in range(SHARDS):
        lease = emu.store.get(
            "coordination.k8s.io", "leases", HPACTL_NAMESPACE, f"{LOCK}-shard-{i}"
        )
        holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
        if holder:
            out[i] = holder
    return out


def _member_leases(emu: Emulator) -> list[str]:
    return [
        o["metadata"]["name"]
        for o in emu.store.list("coordination.k8s.io", "leases", HPACTL_NAMESPACE)
        if o["metadata"]["name"].startswith(f"{LOCK}-member-")
    ]


def _history(emu: Emulator, shard: int) -> Obj | None:
    return emu.store.get("", "configmaps", HPACTL_NAMESPACE, f"{LOCK}-history-{shard}")


async def _apply_rbac(cluster: Cluster, drop: tuple[int, str] | None = None) -> None:
    """kubectl apply the base's RBAC and the overlay's Role and RoleBinding; without verb
    ``drop[1]`` of rule ``drop[0]`` of the hpactl-ha Role, if given (a rule left with
    no verb goes)."""
    docs = load_docs(HA / "ha-role.yaml")
    if drop is not None:
        for doc in docs:
            if doc["kind"] == "Role":
                rule = doc["rules"][drop[0]]
                rule["verbs"].remove(drop[1])
                if not rule["verbs"]:
                    del doc["rules"][drop[0]]
    ha = cluster.tmp / "ha-role.yaml"
    ha.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    files = [*rbac_files(), ha]
    code, out, err = await kubectl(cluster.admin_kubeconfig, "apply", *(f"-f={f}" for f in files))
    assert code == 0, f"{out}\n{err}"


def _argv(cluster: Cluster) -> list[str]:
    """The rendered Deployment's flags, then the test's: the SA's kubeconfig, loopback
    ports, 1 s syncs, 2 s leases, 4 shards (the last value of a flag wins)."""
    token = cluster.emu.token_for_service_account(HPACTL_NAMESPACE, HPACTL_SA)
    kubeconfig = cluster.emu.write_kubeconfig(cluster.tmp / "hpactl.kubeconfig", token=token)
    return [
        *hpactl_argv(),
        *_args(_deployment()),
        *run_flags(kubeconfig, leader_elect=True),
        f"--shards={SHARDS}",
    ]


async def _verbose_readyz(proc: HpactlProcess) -> tuple[int, str]:
    serving = proc.find("hpactl.serving")
    assert serving is not None, proc.output()
    url = f"http://127.0.0.1:{serving['health_port']}/readyz?verbose"
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as resp:
            return resp.status, await resp.text()
    except aiohttp.ClientError as exc:
        return 0, str(exc)


def _identity(proc: HpactlProcess) -> str:
    record = proc.find("hpactl.sharding")
    assert record is not None, proc.output()
    return str(record["identity"])


def _grants() -> Iterator[tuple[str, str, str, str]]:
    """(role, verb, group pattern, resource pattern) of every role bound to hpactl."""
    bound = {
        (o["roleRef"]["kind"], o["roleRef"]["name"])
        for o in [*manifest_objects(), *_own_objects()]
        if o["kind"].endswith("Binding")
    }
    for obj in [*manifest_objects(), *_own_objects()]:
        if (obj["kind"], obj["metadata"]["name"]) in bound:
            for rule in obj["rules"]:
                for verb, group, resource in _permissions(rule):
                    yield obj["metadata"]["name"], verb, group, resource


# Granted, needed, yet not used by a run that goes well: (role, verb, resource) and why.
# Each has a test of its own below that takes the rare path.
ONLY_ON_A_RARE_PATH = {
    # HistoryStore writes with the resourceVersion it last saw and reads the object
    # again only when that write conflicts (409: someone else changed it).
    ("hpactl-ha", "get", "configmaps"): "read after a conflicting history write only",
}


async def _touch_history(cluster: Cluster, shard: int) -> str:
    """Change a history ConfigMap behind hpactl's back (as an operator might): hpactl's
    next write of it conflicts. The marker annotation it leaves."""
    obj = _history(cluster.emu, shard)
    assert obj is not None
    obj["metadata"].setdefault("annotations", {})["example.com/touched"] = "yes"
    cluster.emu.store.apply(obj)
    return "example.com/touched"


def _touched(emu: Emulator, shard: int) -> bool:
    ann = ((_history(emu, shard) or {}).get("metadata") or {}).get("annotations") or {}
    return "example.com/touched" in ann


async def _ha_cluster(cluster: Cluster) -> RecordingAuthorizer:
    """The ha RBAC applied, the apps and the team namespaces seeded; what the
    ServiceAccount asks is recorded from here on."""
    emu = cluster.emu
    recorder = RecordingAuthorizer(emu.server.hooks.authorizer, SA_USER)
    emu.server.hooks.authorizer = recorder
    await _apply_rbac(cluster)
    seed_cluster(emu)
    _seed_teams(emu)
    return recorder


@needs_kubectl
async def test_two_replicas_share_the_shards_under_the_ha_rbac(cluster: Cluster) -> None:
    emu = cluster.emu
    recorder = await _ha_cluster(cluster)
    scraper = _scraper_token(cluster)
    async with HpactlProcess(_argv(cluster)) as a, HpactlProcess(_argv(cluster)) as b:
        await a.wait_for_record("hpactl.sharding", 20)
        await b.wait_for_record("hpactl.sharding", 20)
        ids = {_identity(a), _identity(b)}

        def split() -> bool:
            held = list(_holders(emu).values())
            return len(held) == SHARDS and sorted(held.count(i) for i in ids) == [2, 2]

        assert await poll(split, 30), f"{_holders(emu)}\n{a.output()}\n{b.output()}"
        assert await poll(lambda: not _unmet(emu), 30), (
            f"unmet: {_unmet(emu)}\n{events(emu)}\n{_holders(emu)}\nA:\n{a.output(200)}\nB:\n{b.output(200)}"
        )

        # Each shard's history persisted by its holder (every shard has an HPA).
        def persisted() -> bool:
            return all(
                ((_history(emu, s) or {}).get("metadata") or {})
                .get("annotations", {})
                .get("hpactl.dev/history-writer")
                == holder
                for s, holder in _holders(emu).items()
            )

        assert await poll(persisted, 10), [_history(emu, s) for s in range(SHARDS)]
        for proc in (a, b):
            code, text = await _verbose_readyz(proc)
            assert code == 200, text
            held = ",".join(
                str(s) for s, h in sorted(_holders(emu).items()) if h == _identity(proc)
            )
            assert f"holding {held} of {SHARDS}" in text, text
        serving = await a.wait_for_record("hpactl.serving", 5)
        code, text = await _scrape(serving["metrics_port"], scraper)
        assert code == 200 and "hpactl_shards_held" in text, text
        await poll(lambda: False, 2.5)  # a few more syncs, history writes, renewals
        codes = list(await asyncio.gather(a.terminate(), b.terminate()))
    assert codes == [0, 0], f"{a.output()}\n{b.output()}"
    # A clean stop: every shard lease released, both member leases deleted.
    assert _holders(emu) == {}
    assert _member_leases(emu) == []
    denied = [r for r in recorder.seen if not r[-1]]
    assert denied == [], f"requests denied with the ha overlay's RBAC: {denied}"
    unused = {
        (role, verb, resource)
        for role, verb, group, resource in _grants()
        if not any(
            _uses(v, verb) and re.fullmatch(group, g) and re.fullmatch(resource, r)
            for v, g, r, _ns, _ in recorder.seen
        )
    }
    assert {(role, verb, re.sub(r"\\", "", res)) for role, verb, res in unused} <= set(
        ONLY_ON_A_RARE_PATH
    ), f"granted but never used: {unused}"
    # What the ha Role grants is used in hpactl's namespace only.
    ha_resources = {"leases", "configmaps"}
    elsewhere = [r for r in recorder.seen if r[2] in ha_resources and r[3] != HPACTL_NAMESPACE]
    assert elsewhere == []


@needs_kubectl
async def test_a_conflicting_history_write_is_read_again_and_retried(cluster: Cluster) -> None:
    """configmaps get: used when a history write conflicts (ONLY_ON_A_RARE_PATH)."""
    emu = cluster.emu
    recorder = await _ha_cluster(cluster)
    shard = shard_of("default", SHARDS)
    async with HpactlProcess(_argv(cluster)) as proc:
        assert await poll(lambda: _history(emu, shard) is not None, 30), proc.output()
        await _touch_history(cluster, shard)
        # hpactl's next write conflicts, reads the object and writes it over.
        assert await poll(lambda: not _touched(emu, shard), 10), proc.output()
        assert await proc.terminate() == 0, proc.output()
    gets = [r for r in recorder.seen if r[:3] == ("get", "", "configmaps")]
    assert gets and all(r[3] == HPACTL_NAMESPACE and r[4] for r in gets), gets


# What losing each permission of the hpactl-ha Role does, besides the 403 for exactly
# that permission in hpactl's log:
#   no-shard      never holds a shard: no shard Lease held, no HPA decided. /readyz
#                 says "holding none of N" but answers 200, as for a spare replica
#                 with nothing to hold: the shards check asks only that the shard
#                 manager runs, not that its LIST succeeds.
#   member-left   SIGTERM leaves the member Lease behind (GC'd by another replica
#                 after 10 lease durations, if that one may delete)
#   autoscales    every HPA is still decided; only the history suffers:
#   unread        the persisted history is never read (a shard starts empty)
#   unwritten     no history ConfigMap is ever written
#   stale         the history ConfigMap is written once, never updated
#   conflict      (needs a conflicting write, provoked) the history stays as the other
#                 writer left it
HA_SURFACES: dict[tuple[str, str], set[str]] = {
    ("leases", "list"): {"no-shard"},
    ("leases", "delete"): {"autoscales", "member-left"},
    ("configmaps", "get"): {"autoscales", "conflict"},
    ("configmaps", "list"): {"autoscales", "unread"},
    ("configmaps", "create"): {"autoscales", "unwritten"},
    ("configmaps", "update"): {"autoscales", "stale"},
}


def _ha_permissions() -> list[tuple[int, str, str, str]]:
    return [
        (i, verb, group, resource)
        for i, rule in enumerate(_ha_role()["rules"])
        for verb in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    ]


def test_every_permission_of_the_ha_role_has_an_expected_effect() -> None:
    assert {(r, v) for _, v, _, r in _ha_permissions()} == set(HA_SURFACES)


#: Bound on what a fresh ``hpactl run`` shows within its first periods (the 403, the
#: first history write): the process's start-up counts, which a loaded host stretches.
START_UP = 30.0


@needs_kubectl
@pytest.mark.parametrize("case", _ha_permissions(), ids=lambda c: f"{c[3]}:{c[1]}")
async def test_hpactl_fails_visibly_without_any_single_permission(
    cluster: Cluster, case: tuple[int, str, str, str]
) -> None:
    index, verb, group, resource = case
    surfaces = HA_SURFACES[(resource, verb)]
    forbidden = re.compile(
        rf'User "{re.escape(SA_USER)}" cannot {verb} resource "{resource}" '
        rf'in API group "{re.escape(group)}" in the namespace "{HPACTL_NAMESPACE}"'
    )
    emu = cluster.emu
    await _apply_rbac(cluster, drop=(index, verb))
    seed_cluster(emu)
    _seed_teams(emu)
    shard = shard_of("default", SHARDS)

    def logged() -> bool:
        return any(forbidden.search(t) for t in _log_texts(proc))

    async with HpactlProcess(_argv(cluster)) as proc:
        if "no-shard" in surfaces:
            assert await poll(logged, 20), f"no 403 for {case}:\n{proc.output()}"
            await poll(lambda: False, 4)  # two lease durations: nothing taken
            assert _holders(emu) == {} and _decided_nothing(emu), proc.output()
            code, text = await _verbose_readyz(proc)
            assert f"holding none of {SHARDS}" in text, text
        if "autoscales" in surfaces:
            assert await poll(lambda: not _unmet(emu), 30), (
                f"unmet: {_unmet(emu)}\n{proc.output(400)}"
            )
            holders = _holders(emu)
            assert len(set(holders.values())) == 1 and len(holders) == SHARDS, holders
        if "unread" in surfaces:
            assert await poll(logged, START_UP), proc.output()
            assert proc.find("hpactl.history_unreadable") is not None, proc.output()
            assert proc.find("hpactl.history_loaded") is None, proc.output()
            # Written all the same (create, then update): only the next owner loses it.
            assert await poll(lambda: _history(emu, shard) is not None, START_UP), proc.output()
        if "unwritten" in surfaces:
            assert await poll(logged, START_UP), proc.output()
            assert proc.find("hpactl.history_write_failed") is not None, proc.output()
            assert emu.store.list("", "configmaps", HPACTL_NAMESPACE) == [], proc.output()
        if "stale" in surfaces:
            assert await poll(logged, START_UP), proc.output()
            assert proc.find("hpactl.history_write_failed") is not None, proc.output()
            first = _history(emu, shard)
            assert first is not None
            await poll(lambda: False, 2.5)  # more periods: no write gets through
            assert _history(emu, shard) == first, proc.output()
        if "conflict" in surfaces:
            assert await poll(lambda: _history(emu, shard) is not None, START_UP), proc.output()
            await _touch_history(cluster, shard)
            assert await poll(logged, START_UP), proc.output()
            assert proc.find("hpactl.history_write_failed") is not None, proc.output()
            await poll(lambda: False, 2.5)
            assert _touched(emu, shard), "the conflicting write was overwritten"
        code = await proc.terminate()
    assert code == 0, proc.output()
    if "member-left" in surfaces:
        assert await poll(logged, 1), proc.output()
        assert len(_member_leases(emu)) == 1, proc.output()
    else:
        assert _member_leases(emu) == [], proc.output()
