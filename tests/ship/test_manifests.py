"""`manifests/`: schema-valid, consistent, applied by kubectl, and exactly enough.

* every object validates against the Kubernetes 1.37 OpenAPI schemas
  (kubernetes-validate, strict: unknown fields are errors);
* `kubectl kustomize` renders them and `kubectl apply -k` applies them to the
  emulator (authenticated, RBAC enforced);
* the Deployment's arguments are valid `hpactl run` flags, spelled out with their
  defaults, and the objects agree with each other (names, ports, labels, namespace);
* hpactl run with the ServiceAccount's token, under RBAC enforcement, leads, scales,
  writes status and records events — and every permission granted is used;
* without any single rule of the ClusterRole or the leader-election Role it fails,
  and the 403 for exactly that permission shows where an operator looks (events,
  conditions, a failed scrape or hpactl's log);
* /metrics is HTTPS for clients the API server authenticates and authorizes
  (--metrics-secure): a scraper bound to the hpactl-metrics-reader ClusterRole gets
  the metrics, others 401 / 403; the NetworkPolicy admits only the metrics port.

Syncs every 1 s and 2 s leases keep each test to a few seconds.
"""

from __future__ import annotations

import copy
import json
import re
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from hpactl.cli.run_cmd import parse_run_config
from hpactl.config import SETTINGS, format_default
from hpactl.emulator import Emulator

from .support import (
    DENIED,
    HPACTL_NAMESPACE,
    HPACTL_SA,
    K8S_VERSION,
    MANIFESTS,
    SA_USER,
    Cluster,
    HpactlProcess,
    RecordingAuthorizer,
    events,
    hpa,
    hpactl_argv,
    http_status,
    kubectl,
    kustomization_files,
    load_docs,
    manifest_objects,
    needs_kubectl,
    obj_id,
    poll,
    rbac_files,
    run_flags,
    seed_cluster,
    unmet,
)
from .support import (
    uses_verb as _uses,
)

Obj = dict[str, Any]


def _by_kind(kind: str) -> Obj:
    (obj,) = [o for o in manifest_objects() if o["kind"] == kind]
    return obj


# --------------------------------------------------------------------------- static checks


def test_kustomization_lists_every_manifest_file() -> None:
    listed = {p.name for p in kustomization_files()}
    present = {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


@pytest.mark.parametrize("obj", manifest_objects(), ids=obj_id)
def test_manifest_is_valid_against_the_kubernetes_schema(obj: Obj) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_schema_validation_catches_a_misspelt_field() -> None:
    # The check above can fail: strict mode rejects a field the schema does not know.
    broken = copy.deepcopy(_by_kind("Deployment"))
    broken["spec"]["replica"] = broken["spec"].pop("replicas")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def _flag_args() -> list[str]:
    container = _by_kind("Deployment")["spec"]["template"]["spec"]["containers"][0]
    args: list[str] = container["args"]
    return args


# Flags the Deployment sets away from hpactl's default, and why.
OVERRIDES = {
    # The Lease lives in hpactl's own namespace, where the Role grants it.
    "--leader-elect-resource-namespace": HPACTL_NAMESPACE,
    # Metrics over HTTPS with delegated authentication, on the usual HTTPS port.
    "--metrics-secure": "true",
    "--metrics-bind-address": ":8443",
    # JSON for log pipelines (component-base's fields); the flag's default is text.
    "--logging-format": "json",
}


def test_deployment_flags_are_valid_and_spelled_out_with_their_defaults() -> None:
    args = _flag_args()
    config = parse_run_config(args, {})  # raises ConfigError on any bad flag
    given = {a.partition("=")[0]: a.partition("=")[2] for a in args}
    assert all(a.startswith("--") and "=" in a for a in args)
    for setting in SETTINGS:
        if setting.deprecated or setting.kind == "gates":
            continue
        default = format_default(setting)
        if default is None:
            continue  # --kubeconfig, --master, --config: in-cluster config is the default
        flag = next((f for f in setting.flags if f in given), None)
        assert flag is not None, f"{setting.flag} is not spelled out"
        expected = OVERRIDES.get(setting.flag)
        if expected is None:
            expected = json.loads(default) if default.startswith('"') else default
            if setting.kind == "strings":  # pflag shows a list's default as [a,b]
                expected = default.strip("[]")
        assert given[flag] == expected, f"{flag}={given[flag]}, expected {expected}"
    le = config.leader_election
    assert le.leader_elect and le.resource_namespace == HPACTL_NAMESPACE
    assert le.resource_lock == "leases"


def test_manifests_agree_with_each_other() -> None:
    dep = _by_kind("Deployment")
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    spec = pod["spec"]
    container = spec["containers"][0]
    config = parse_run_config(_flag_args(), {})
    # Two replicas need leader election; one may be evicted at a time.
    assert dep["spec"]["replicas"] == 2 and config.leader_election.leader_elect
    pdb = _by_kind("PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    for selector in (
        dep["spec"]["selector"]["matchLabels"],
        pdb["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= labels.items()
    # Probes and the Service point at the ports hpactl listens on; metrics are HTTPS.
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert config.health_probe_listen is not None and config.metrics_listen is not None
    assert ports == {"health": config.health_probe_listen[1], "https": config.metrics_listen[1]}
    assert config.metrics_auth.secure
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    svc = _by_kind("Service")
    assert svc["spec"]["selector"].items() <= labels.items()
    assert [(p["name"], p["targetPort"]) for p in svc["spec"]["ports"]] == [("https", "https")]
    # The NetworkPolicy selects hpactl's pods, admits only the metrics port (from
    # namespaces labelled for monitoring) and lets them reach the API server only.
    policy = _by_kind("NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["ports"] == [{"protocol": "TCP", "port": "https"}]
    assert ingress["from"] == [{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}]
    (egress,) = policy["spec"]["egress"]
    assert {p["port"] for p in egress["ports"]} == {443, 6443}
    # The scrapers' role: get on /metrics, bound by the operator (no binding shipped).
    reader = next(o for o in manifest_objects() if o["metadata"]["name"] == "hpactl-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    # Requests and limits; the restricted Pod Security profile.
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    # Everything namespaced lives in hpactl-system; bindings name the ServiceAccount.
    assert spec["serviceAccountName"] == HPACTL_SA
    for obj in manifest_objects():
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == HPACTL_NAMESPACE, obj_id(obj)
        if obj["kind"].endswith("Binding"):
            assert obj["subjects"] == [
                {"kind": "ServiceAccount", "name": HPACTL_SA, "namespace": HPACTL_NAMESPACE}
            ]
            target = next(
                o
                for o in manifest_objects()
                if o["kind"] == obj["roleRef"]["kind"]
                and o["metadata"]["name"] == obj["roleRef"]["name"]
            )
            assert target["kind"] in ("Role", "ClusterRole")
    role = _by_kind("Role")
    assert role["metadata"]["namespace"] == config.leader_election.resource_namespace


@needs_kubectl
async def test_kubectl_kustomize_renders_every_manifest(tmp_path: Path) -> None:
    async with Emulator() as emu:  # kustomize needs no server; kubectl wants a kubeconfig
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(kubeconfig, "kustomize", str(MANIFESTS))
    assert code == 0, err
    rendered = [d for d in yaml.safe_load_all(out) if d]
    assert sorted(map(_key, rendered)) == sorted(map(_key, manifest_objects()))


def _key(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


# --------------------------------------------------------------------------- against the emulator


def _stored(emu: Emulator, obj: Obj) -> Obj | None:
    group, _, _ = obj["apiVersion"].rpartition("/")
    plural = {
        "Namespace": "namespaces",
        "ServiceAccount": "serviceaccounts",
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "Role": "roles",
        "RoleBinding": "rolebindings",
        "Deployment": "deployments",
        "PodDisruptionBudget": "poddisruptionbudgets",
        "Service": "services",
        "NetworkPolicy": "networkpolicies",
    }[obj["kind"]]
    meta = obj["metadata"]
    stored: Obj | None = emu.store.get(group, plural, meta.get("namespace", ""), meta["name"])
    return stored


@needs_kubectl
async def test_kubectl_applies_the_kustomization(cluster: Cluster) -> None:
    kc = cluster.admin_kubeconfig
    code, out, err = await kubectl(kc, "apply", "-k", str(MANIFESTS))
    assert code == 0, f"{out}\n{err}"
    for obj in manifest_objects():
        assert _stored(cluster.emu, obj) is not None, f"{obj_id(obj)} was not created"
    # Applying again changes nothing (kubectl's last-applied annotation round-trips).
    before = [_stored(cluster.emu, obj) for obj in manifest_objects()]
    code, out, err = await kubectl(kc, "apply", "-k", str(MANIFESTS))
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == len(manifest_objects())
    for line in lines:
        # A PDB's selector has patch strategy "replace", so kubectl always sends it
        # again and says "configured" (also against a real API server); the object
        # stays the same, as checked below.
        assert line.endswith(" unchanged") or line.startswith("poddisruptionbudget"), out
    assert [_stored(cluster.emu, obj) for obj in manifest_objects()] == before


async def _apply_rbac(cluster: Cluster, drop: tuple[str, int] | None = None) -> None:
    """kubectl apply the RBAC manifests, without rule `drop` = (kind, index) of the role
    of that kind bound to hpactl, if given."""
    files: list[Path] = []
    for path in rbac_files():
        docs = load_docs(path)
        if drop is not None and any(d["kind"] == drop[0] for d in docs):
            for doc in docs:
                if doc["kind"] == drop[0] and _key_of(doc) in _hpactl_roles():
                    del doc["rules"][drop[1]]
            path = cluster.tmp / f"without-rule-{path.name}"
            path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        files.append(path)
    code, out, err = await kubectl(cluster.admin_kubeconfig, "apply", *(f"-f={f}" for f in files))
    assert code == 0, f"{out}\n{err}"


def _service_account_kubeconfig(cluster: Cluster) -> Path:
    token = cluster.emu.token_for_service_account(HPACTL_NAMESPACE, HPACTL_SA)
    return cluster.emu.write_kubeconfig(cluster.tmp / "hpactl.kubeconfig", token=token)


def _resource_pattern(resource: str) -> str:
    if resource == "*":
        return r"[^\"]+"
    if resource.startswith("*/"):
        return r"[^\"/]+/" + re.escape(resource[2:])
    return re.escape(resource)


def _group_pattern(group: str) -> str:
    return r"[^\"]*" if group == "*" else re.escape(group)


def _permissions(rule: Obj) -> list[tuple[str, str, str]]:
    return [
        (verb, _group_pattern(g), _resource_pattern(r))
        for verb in rule["verbs"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    ]


def _rbac_rules() -> list[tuple[str, int, Obj]]:
    """The rules of the roles bound to hpactl's ServiceAccount (not the scrapers' role)."""
    out: list[tuple[str, int, Obj]] = []
    for path in rbac_files():
        for doc in load_docs(path):
            if _key_of(doc) in _hpactl_roles():
                out.extend((doc["kind"], i, rule) for i, rule in enumerate(doc["rules"]))
    return out


def _key_of(obj: Obj) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def _hpactl_roles() -> set[tuple[str, str]]:
    """(kind, name) of the roles the manifests bind (all to hpactl's ServiceAccount)."""
    return {
        (o["roleRef"]["kind"], o["roleRef"]["name"])
        for o in manifest_objects()
        if o["kind"].endswith("Binding")
    }


def _rule_id(case: tuple[str, int, Obj]) -> str:
    kind, _, rule = case
    groups = ",".join(g or "core" for g in rule["apiGroups"])
    return f"{kind}:{groups}:{','.join(rule['resources'])}"


SCRAPER = ("monitoring", "prometheus")


def _scraper_token(cluster: Cluster, *, bound: bool = True) -> str:
    """A Prometheus ServiceAccount's token, bound to hpactl-metrics-reader as the
    manifest's comment says (or another account, bound to nothing)."""
    emu = cluster.emu
    namespace, name = SCRAPER if bound else ("monitoring", "nobody")
    if emu.store.get("", "namespaces", "", namespace) is None:
        emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    if bound:
        emu.store.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "hpactl-metrics-reader"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "hpactl-metrics-reader",
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
        )
    return emu.token_for_service_account(namespace, name)


async def _scrape(port: int, token: str | None, path: str = "/metrics") -> tuple[int, str]:
    """GET over HTTPS without verifying the self-signed certificate, as a Prometheus
    job with insecure_skip_verify does; (0, error) when nothing answers."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as http,
            http.get(f"https://127.0.0.1:{port}{path}", headers=headers) as resp,
        ):
            return resp.status, await resp.text()
    except aiohttp.ClientError as exc:
        return 0, str(exc)


@needs_kubectl
async def test_hpactl_works_with_the_service_account(cluster: Cluster) -> None:
    emu = cluster.emu
    recorder = RecordingAuthorizer(emu.server.hooks.authorizer, SA_USER)
    emu.server.hooks.authorizer = recorder
    await _apply_rbac(cluster)
    seed_cluster(emu)
    scraper, stranger = _scraper_token(cluster), _scraper_token(cluster, bound=False)
    argv = hpactl_argv() + run_flags(_service_account_kubeconfig(cluster), leader_elect=True)
    async with HpactlProcess([*argv, "--metrics-secure"]) as proc:
        done = await poll(lambda: not unmet(emu), 30)
        assert done, f"unmet: {unmet(emu)}\n{proc.output()}"
        serving = proc.find("hpactl.serving")
        assert serving is not None and serving["metrics_scheme"] == "https"
        assert await http_status(f"http://127.0.0.1:{serving['health_port']}/readyz") == 200
        # The scraper bound to hpactl-metrics-reader gets the metrics; others do not.
        port = serving["metrics_port"]
        code, text = await _scrape(port, scraper)
        assert code == 200 and "hpactl_leader 1.0" in text, text
        assert await _scrape(port, None) == (401, "Unauthorized\n")
        code, text = await _scrape(port, stranger)
        assert code == 403 and "cannot get path" in text
        assert (await _scrape(port, None, "/readyz"))[0] == 200
        code = await proc.terminate()
    assert code == 0, proc.output()
    denied = [r for r in recorder.seen if not r[-1]]
    assert denied == [], f"requests denied with the manifests' RBAC: {denied}"
    # Exactly enough: every verb on every resource the roles grant was used.
    unused = []
    for kind, _, rule in _rbac_rules():
        for verb, group, resource in _permissions(rule):
            if not any(
                _uses(v, verb)
                and re.fullmatch(group, g)
                and re.fullmatch(resource, r)
                and (kind == "ClusterRole" or ns == HPACTL_NAMESPACE)
                for v, g, r, ns, _ in recorder.seen
            ):
                unused.append((kind, verb, group, resource))
    assert unused == [], f"granted but never used: {unused}"
    # A clean stop hands the Lease over at once.
    lease = emu.store.get("coordination.k8s.io", "leases", HPACTL_NAMESPACE, "hpactl")
    assert lease is not None and not lease["spec"].get("holderIdentity")


# Where a missing permission must show, besides hpactl's log: in the HPAs' events and
# conditions, or (for what the watch caches need) as a controller that never turns ready.
SURFACES: dict[tuple[str, str], set[str]] = {
    ("autoscaling", "horizontalpodautoscalers"): {"unready"},
    ("", "pods"): {"unready"},
    # Only the topology skew report reads nodes: hpactl autoscales without them.
    ("", "nodes"): {"log"},
    ("", "replicationcontrollers"): {"unready"},
    ("apps", "deployments"): {"unready"},
    ("autoscaling", "horizontalpodautoscalers/status"): {"event"},
    ("*", "*/scale"): {"event", "condition"},
    ("metrics.k8s.io", "pods"): {"event", "condition"},
    ("custom.metrics.k8s.io", "*"): {"event", "condition"},
    ("external.metrics.k8s.io", "*"): {"event", "condition"},
    ("", "events"): set(),
    ("coordination.k8s.io", "leases"): set(),
    # Secure metrics: the scrape fails (500, the 403 in its message).
    ("authentication.k8s.io", "tokenreviews"): {"scrape"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"scrape"},
}


def _messages(emu: Emulator) -> dict[str, list[str]]:
    evs = [str(e.get("message", "")) for e in events(emu)]
    conds = [
        str(c.get("message", ""))
        for name in ("web", "worker", "front", "ghost")
        for c in ((hpa(emu, name) or {}).get("status") or {}).get("conditions") or ()
    ]
    return {"event": evs, "condition": conds}


def _log_texts(proc: HpactlProcess) -> list[str]:
    texts: list[str] = []
    for line in proc.lines:
        try:
            record = json.loads(line)
        except ValueError:
            texts.append(line)
            continue
        if isinstance(record, dict):
            texts.extend(str(v) for v in record.values())
        else:
            texts.append(line)
    return texts


@needs_kubectl
@pytest.mark.parametrize("case", _rbac_rules(), ids=_rule_id)
async def test_hpactl_fails_without_any_single_rule(
    cluster: Cluster, case: tuple[str, int, Obj]
) -> None:
    kind, index, rule = case
    surfaces = SURFACES.get((rule["apiGroups"][0], rule["resources"][0]))
    assert surfaces is not None, f"say in SURFACES where losing {rule} shows"
    forbidden = re.compile(
        "|".join(
            rf'User "{re.escape(SA_USER)}" cannot {verb} resource "{resource}" in API group "{group}"'
            for verb, group, resource in _permissions(rule)
        )
    )
    emu = cluster.emu
    await _apply_rbac(cluster, drop=(kind, index))
    seed_cluster(emu)
    scraper = _scraper_token(cluster)
    argv = hpactl_argv() + run_flags(_service_account_kubeconfig(cluster), leader_elect=True)
    async with HpactlProcess([*argv, "--metrics-secure"]) as proc:
        if "scrape" in surfaces:
            # The scrape fails visibly: a 500 naming the 403, and in hpactl's log.
            record = await proc.wait_for_record("hpactl.serving", 20)
            code, text = await _scrape(record["metrics_port"], scraper)
            assert code == 500 and forbidden.search(text), (code, text)
            assert text.startswith("Internal Server Error: ") and text.count("\n") == 1
            assert await poll(lambda: any(forbidden.search(t) for t in _log_texts(proc)), 5)
            # Everything else still works: only the scrape needs the rule.
            assert await poll(lambda: not unmet(emu), 30), unmet(emu)
            assert await proc.terminate() == 0, proc.output()
            return
        # The 403 for exactly this permission reaches hpactl's log...
        logged = await poll(lambda: any(forbidden.search(t) for t in _log_texts(proc)), 20)
        assert logged, f"no 403 for {rule} in hpactl's output:\n{proc.output()}"
        if surfaces == {"log"}:
            # ...and nothing else: an optional feature's rule never stops autoscaling.
            assert await poll(lambda: not unmet(emu), 30), unmet(emu)
            assert await proc.terminate() == 0, proc.output()
            return
        # ...and hpactl does not get its job done.
        assert not await poll(lambda: not unmet(emu), 4), "hpactl works without the rule"
        found = _messages(emu)
        for place in surfaces - {"unready"}:
            assert any(forbidden.search(m) for m in found[place]), (
                f"no 403 in any HPA {place}: {found[place]}"
            )
        if "unready" in surfaces:
            serving = proc.find("hpactl.serving")
            assert serving is not None, proc.output()
            url = f"http://127.0.0.1:{serving['health_port']}/readyz"
            assert await http_status(url) not in (0, 200), "/readyz reports ready"
        code = await proc.terminate()
    assert code == 0, proc.output()


# A 403 anywhere in the output: a status code, a Status reason or message, an event.
@needs_kubectl
async def test_a_normal_run_under_the_manifests_rbac_logs_no_403(cluster: Cluster) -> None:
    """At the most verbose level (-v=10: every retry, every list), a run that leads,
    scales, writes status and events and serves a scrape meets no 403 at all."""
    emu = cluster.emu
    await _apply_rbac(cluster)
    seed_cluster(emu)
    scraper = _scraper_token(cluster)
    argv = hpactl_argv() + run_flags(_service_account_kubeconfig(cluster), leader_elect=True)
    async with HpactlProcess([*argv, "--metrics-secure", "-v=10"]) as proc:
        assert await poll(lambda: not unmet(emu), 30), f"unmet: {unmet(emu)}\n{proc.output()}"
        serving = await proc.wait_for_record("hpactl.serving", 5)
        code, text = await _scrape(serving["metrics_port"], scraper)
        assert code == 200, text
        await poll(lambda: False, 2.5)  # a few more syncs and lease renewals
        assert await proc.terminate() == 0, proc.output()
    assert any('"v":4' in line for line in proc.lines), "not at debug level"
    found = [line for line in proc.lines if DENIED.search(line)]
    assert found == [], "\n".join(found)
    messages = _messages(emu)
    assert [m for m in messages["event"] + messages["condition"] if DENIED.search(m)] == []
