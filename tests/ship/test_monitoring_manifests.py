"""`manifests/monitoring/`: Prometheus Operator objects and a Grafana dashboard for hpactl.

The kubernetes_validate schemas do not include the operator's CRDs, so the
ServiceMonitors and the PrometheusRule are checked against a light copy of their
shape (the fields of monitoring.coreos.com/v1 they may use, enums and durations);
the ConfigMap against the Kubernetes schema. They scrape what manifests/base
serves (Service labels, port name, HTTPS with a bearer token, the certificate the
Deployment makes) and the shadow overlay's Service; the default install renders
none of them. Whether their queries read served series: tests/obs/test_kcm_metrics.py.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from support.promql import grafana_expand, references

from hpactl.emulator import Emulator

from .support import MANIFESTS_ROOT, kubectl

Obj = dict[str, Any]
K8S_VERSION = "1.37"
MONITORING = MANIFESTS_ROOT / "monitoring"

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")

# The Prometheus Operator's Duration pattern (monitoring.coreos.com/v1).
DURATION = re.compile(
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)

# A light copy of the CRDs' structure: allowed keys (a dict), "str", "bool",
# "duration", a set of allowed strings, a list of one shape, or None (anything).
_SELECTOR = {"matchLabels": None, "matchExpressions": None}
_SECRET_KEY = {"name": "str", "key": "str", "optional": "bool"}
_SECRET_OR_CM = {"secret": _SECRET_KEY, "configMap": _SECRET_KEY}
_TLS = {
    "ca": _SECRET_OR_CM,
    "cert": _SECRET_OR_CM,
    "keySecret": _SECRET_KEY,
    "caFile": "str",
    "certFile": "str",
    "keyFile": "str",
    "serverName": "str",
    "insecureSkipVerify": "bool",
    "minVersion": "str",
    "maxVersion": "str",
}
_ENDPOINT = {
    "port": "str",
    "targetPort": None,
    "path": "str",
    "scheme": {"http", "https", "HTTP", "HTTPS"},
    "params": None,
    "interval": "duration",
    "scrapeTimeout": "duration",
    "tlsConfig": _TLS,
    "bearerTokenFile": "str",
    "bearerTokenSecret": _SECRET_KEY,
    "authorization": {"type": "str", "credentials": _SECRET_KEY},
    "basicAuth": None,
    "oauth2": None,
    "honorLabels": "bool",
    "honorTimestamps": "bool",
    "trackTimestampsStaleness": "bool",
    "metricRelabelings": None,
    "relabelings": None,
    "proxyUrl": "str",
    "noProxy": "str",
    "proxyFromEnvironment": "bool",
    "proxyConnectHeader": None,
    "followRedirects": "bool",
    "enableHttp2": "bool",
    "filterRunning": "bool",
}
_META = {"name": "str", "namespace": "str", "labels": None, "annotations": None}
SERVICE_MONITOR = {
    "apiVersion": {"monitoring.coreos.com/v1"},
    "kind": {"ServiceMonitor"},
    "metadata": _META,
    "spec": {
        "jobLabel": "str",
        "targetLabels": ["str"],
        "podTargetLabels": ["str"],
        "endpoints": [_ENDPOINT],
        "selector": _SELECTOR,
        "selectorMechanism": {"RelabelConfig", "RoleSelector"},
        "namespaceSelector": {"any": "bool", "matchNames": ["str"]},
        "sampleLimit": None,
        "targetLimit": None,
        "labelLimit": None,
        "labelNameLengthLimit": None,
        "labelValueLengthLimit": None,
        "keepDroppedTargets": None,
        "attachMetadata": None,
        "scrapeClass": "str",
        "scrapeProtocols": None,
        "fallbackScrapeProtocol": "str",
        "bodySizeLimit": "str",
    },
}
_RULE = {
    "alert": "str",
    "record": "str",
    "expr": "str",
    "for": "duration",
    "keep_firing_for": "duration",
    "labels": None,
    "annotations": None,
}
PROMETHEUS_RULE = {
    "apiVersion": {"monitoring.coreos.com/v1"},
    "kind": {"PrometheusRule"},
    "metadata": _META,
    "spec": {
        "groups": [
            {
                "name": "str",
                "interval": "duration",
                "query_offset": "duration",
                "limit": None,
                "labels": None,
                "partial_response_strategy": "str",
                "rules": [_RULE],
            }
        ]
    },
}


def shape_errors(value: Any, shape: Any, path: str = "") -> list[str]:
    """Where ``value`` does not fit ``shape`` (see above)."""
    if shape is None:
        return []
    if shape == "str":
        return [] if isinstance(value, str) else [f"{path}: not a string"]
    if shape == "bool":
        return [] if isinstance(value, bool) else [f"{path}: not a boolean"]
    if shape == "duration":
        ok = isinstance(value, str) and DURATION.match(value)
        return [] if ok else [f"{path}: not a duration: {value!r}"]
    if isinstance(shape, set):
        return [] if value in shape else [f"{path}: {value!r} not one of {sorted(shape)}"]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [e for i, v in enumerate(value) for e in shape_errors(v, shape[0], f"{path}[{i}]")]
    assert isinstance(shape, dict)
    if not isinstance(value, dict):
        return [f"{path}: not an object"]
    errors = [f"{path}.{k}: unknown field" for k in value if k not in shape]
    for k, v in value.items():
        if k in shape:
            errors += shape_errors(v, shape[k], f"{path}.{k}")
    return errors


def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _kustomization() -> Obj:
    kust: Obj = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    return kust


def monitoring_objects() -> list[Obj]:
    return [o for name in _kustomization()["resources"] for o in _docs(MONITORING / name)]


def _service_monitors() -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in monitoring_objects() if o["kind"] == "ServiceMonitor"}


def _rule() -> Obj:
    (rule,) = [o for o in monitoring_objects() if o["kind"] == "PrometheusRule"]
    return rule


def _dashboard() -> Obj:
    dash: Obj = json.loads((MONITORING / "hpactl-dashboard.json").read_text())
    return dash


def _container_args(path: Path) -> list[str]:
    (dep,) = [d for d in _docs(path) if d["kind"] == "Deployment"]
    args: list[str] = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


# --------------------------------------------------------------------------- shapes


def test_every_file_is_listed_and_every_object_has_the_operators_shape() -> None:
    listed = set(_kustomization()["resources"])
    listed |= {f for g in _kustomization()["configMapGenerator"] for f in g["files"]}
    present = {p.name for p in MONITORING.iterdir()} - {"kustomization.yaml"}
    assert listed == present
    shapes = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}
    objs = monitoring_objects()
    assert sorted(o["kind"] for o in objs) == ["PrometheusRule", "ServiceMonitor", "ServiceMonitor"]
    for obj in objs:
        assert shape_errors(obj, shapes[obj["kind"]]) == [], obj["metadata"]["name"]


def test_the_shape_check_catches_a_misspelt_field_and_a_bad_duration() -> None:
    sm = copy.deepcopy(_service_monitors()["hpactl"])
    sm["spec"]["endpoints"][0]["tlsconfig"] = sm["spec"]["endpoints"][0].pop("tlsConfig")
    assert shape_errors(sm, SERVICE_MONITOR) == [".spec.endpoints[0].tlsconfig: unknown field"]
    rule = copy.deepcopy(_rule())
    rule["spec"]["groups"][0]["rules"][0]["for"] = "15 minutes"
    assert shape_errors(rule, PROMETHEUS_RULE) == [
        ".spec.groups[0].rules[0].for: not a duration: '15 minutes'"
    ]


# --------------------------------------------------------------------------- scraping


def test_the_service_monitor_scrapes_the_base_service_as_the_deployment_serves_it() -> None:
    (svc,) = _docs(MANIFESTS_ROOT / "base" / "service.yaml")
    sm = _service_monitors()["hpactl"]["spec"]
    assert sm["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert sm["namespaceSelector"]["matchNames"] == [svc["metadata"]["namespace"]]
    # job = the Service's app.kubernetes.io/name label: "hpactl", as the rules expect.
    assert svc["metadata"]["labels"][sm["jobLabel"]] == "hpactl"
    (ep,) = sm["endpoints"]
    assert ep["port"] in {p["name"] for p in svc["spec"]["ports"]}
    args = _container_args(MANIFESTS_ROOT / "base" / "deployment.yaml")
    # --metrics-secure: HTTPS, a token the API server reviews, and (no --tls-cert-file)
    # a self-signed certificate, accepted as kube-prometheus accepts the controller
    # manager's.
    assert "--metrics-secure=true" in args
    assert ep["scheme"] == "https"
    assert ep["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert not any(a.startswith("--tls-cert-file") for a in args)
    assert ep["tlsConfig"] == {"insecureSkipVerify": True}
    assert ep["path"] == "/metrics"
    assert ep["honorLabels"] is True  # hpactl's namespace label names the HPA's namespace


def test_the_shadow_service_monitor_scrapes_the_shadow_overlay() -> None:
    (svc,) = _docs(MANIFESTS_ROOT / "shadow" / "service.yaml")
    sm = _service_monitors()["hpactl-shadow"]["spec"]
    assert sm["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert sm["namespaceSelector"]["matchNames"] == [svc["metadata"]["namespace"]]
    assert svc["metadata"]["labels"][sm["jobLabel"]] == "hpactl-shadow"
    (ep,) = sm["endpoints"]
    assert ep["port"] in {p["name"] for p in svc["spec"]["ports"]}
    args = _container_args(MANIFESTS_ROOT / "shadow" / "deployment.yaml")
    assert not any(a.startswith("--metrics-secure=true") for a in args)
    assert ep["scheme"] == "http"


# --------------------------------------------------------------------------- rules


def test_rules_cover_the_alerts_operators_expect() -> None:
    rules = [r for g in _rule()["spec"]["groups"] for r in g["rules"]]
    alerts = {r["alert"]: r for r in rules}
    assert len(alerts) == len(rules)
    reads = {name: references(r["expr"]).metrics for name, r in alerts.items()}
    assert reads["HpactlDown"] == {"up"}
    assert reads["HpactlNotLeading"] == {"leader_election_master_status"}
    assert reads["HpactlShardsNotHeld"] == {"hpactl_shards_held", "leader_election_master_status"}
    assert reads["HpactlSyncsLate"] == {"hpactl_sync_schedule_lag_seconds_bucket"}
    assert reads["HpactlMetricsAPIFailing"] == {
        "horizontal_pod_autoscaler_controller_metric_computation_total"
    }
    assert reads["HpactlAPIErrors"] == {"rest_client_requests_total"}
    assert reads["HpactlShadowDivergence"] == {"hpactl_shadow_divergences_total"}
    jobs = {"hpactl", "hpactl-shadow"}
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        assert rule["annotations"]["summary"], name
        named = set(re.findall(r'job=~?"([^"]+)"', rule["expr"]))
        assert named, f"{name} does not select the job"
        for job in named:
            assert set(job.split("|")) <= jobs, name


# --------------------------------------------------------------------------- dashboard


def test_the_dashboard_is_a_grafana_dashboard_of_valid_queries() -> None:
    dash = _dashboard()
    assert dash["uid"] == "hpactl"
    names = {v["name"] for v in dash["templating"]["list"]}
    assert names == {"datasource", "job"}
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    queries = 0
    for panel in dash["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and refs, panel["title"]
        for target in panel["targets"]:
            assert 'job="$job"' in target["expr"]
            assert references(grafana_expand(target["expr"], {"job": "hpactl"})).metrics
            queries += 1
    assert queries >= 25
    # Panels for what an operator looks at first.
    titles = " ".join(p["title"] for p in dash["panels"]).lower()
    for word in ("syncs", "duration", "depth", "queue", "requests by code", "lease", "shards"):
        assert word in titles, word
    assert "divergences" in titles


# --------------------------------------------------------------------------- kustomize


@needs_kubectl
async def test_kustomize_renders_the_monitoring_objects_and_the_base_install_has_none(
    tmp_path: Path,
) -> None:
    async with Emulator() as emu:  # kustomize needs no server; kubectl wants a kubeconfig
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(kubeconfig, "kustomize", str(MONITORING))
        assert code == 0, err
        base_code, base_out, base_err = await kubectl(kubeconfig, "kustomize", str(MANIFESTS_ROOT))
        assert base_code == 0, base_err
    rendered = [d for d in yaml.safe_load_all(out) if d]
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in rendered)
    assert kinds == [
        ("ConfigMap", "hpactl-dashboard"),
        ("PrometheusRule", "hpactl"),
        ("ServiceMonitor", "hpactl"),
        ("ServiceMonitor", "hpactl-shadow"),
    ]
    (cm,) = [d for d in rendered if d["kind"] == "ConfigMap"]
    kubernetes_validate.validate(cm, K8S_VERSION, strict=True)
    assert cm["metadata"]["namespace"] == "hpactl-system"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"  # Grafana's sidecar label
    assert json.loads(cm["data"]["hpactl-dashboard.json"]) == _dashboard()
    # Applied on purpose only: the default install needs no Prometheus Operator CRDs.
    base = [d for d in yaml.safe_load_all(base_out) if d]
    assert not [d for d in base if d["apiVersion"].startswith("monitoring.coreos.com/")]
    assert (
        "monitoring"
        not in yaml.safe_load((MANIFESTS_ROOT / "kustomization.yaml").read_text())["resources"]
    )
