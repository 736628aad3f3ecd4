"""Resource registry: what the emulator serves, used by discovery and routing.

One `ResourceType` per served (group, version, plural).  Several versions of one
resource share a storage key (group, plural); the `storage_version` says in which
shape the store keeps the object (autoscaling/v2 for HPAs, v1 for core Events).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
READ_VERBS: tuple[str, ...] = ("get", "list")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where the scale subresource reads and writes (CRD `subresources.scale`)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    # None: the selector comes from `.spec.selector` (a LabelSelector) as for built-ins.
    label_selector: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    verbs: tuple[str, ...] = ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False
    scale: ScalePaths | None = None
    # Bumps metadata.generation on changes outside metadata/status.
    generation: bool = False
    # DELETE answers with the object (pods, namespaces, custom resources) instead of a Status.
    delete_returns_object: bool = False
    # Version the store keeps objects in; other versions are converted on the wire.
    storage_version: str = ""
    # Served by another module (metrics APIs): discovery only, no generic routes.
    external: bool = False
    # Custom resource (from a CRD): no strategic merge patch, apiVersion on list items.
    custom: bool = False
    # Create keeps the given status (Nodes: "Nodes allow *all* fields, including
    # status, to be set on create"); other kinds with a status reset it on create.
    status_on_create: bool = False
    # Columns from the CRD's additionalPrinterColumns (name, type, jsonPath, priority).
    printer_columns: tuple[tuple[str, str, str, int], ...] = ()
    # The CRD version's openAPIV3Schema (custom resources; hpactl.emulator.schema) and a
    # digest of it that keys caches of objects defaulted on read.
    schema: Any = field(default=None, compare=False)
    schema_key: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    # Group under which the objects are stored (events.k8s.io Events live with core's).
    storage_group: str | None = None

    @property
    def storage_key(self) -> tuple[str, str]:
        group = self.group if self.storage_group is None else self.storage_group
        return (group, self.plural)

    @property
    def stored_version(self) -> str:
        return self.storage_version or self.version

    @property
    def group_resource(self) -> str:
        """`deployments.apps`, `pods`: how error messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


# Groups whose preferred version is not the first one registered.
PREFERRED: dict[str, str] = {"autoscaling": "v2"}


@dataclass
class Registry:
    """All served resources, mutable: CRDs add and remove entries at run time."""

    _by_gvr: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    # Order of groups as discovery lists them.
    _group_order: list[str] = field(default_factory=list)
    _version_order: dict[str, list[str]] = field(default_factory=dict)

    def add(self, rt: ResourceType) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        if rt.group not in self._version_order:
            self._group_order.append(rt.group)
            self._version_order[rt.group] = []
        if rt.version not in self._version_order[rt.group]:
            self._version_order[rt.group].append(rt.version)

    def remove_group_resource(self, group: str, plural: str) -> None:
        for key in [k for k in self._by_gvr if k[0] == group and k[2] == plural]:
            del self._by_gvr[key]
        versions = {k[1] for k in self._by_gvr if k[0] == group}
        if group in self._version_order:
            self._version_order[group] = [v for v in self._version_order[group] if v in versions]
            if not self._version_order[group]:
                del self._version_order[group]
                self._group_order.remove(group)

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def groups(self) -> list[str]:
        return list(self._group_order)

    def versions(self, group: str) -> list[str]:
        return list(self._version_order.get(group, []))

    def preferred_version(self, group: str) -> str:
        versions = self.versions(group)
        pref = PREFERRED.get(group)
        if pref in versions:
            return pref
        return versions[0]

    def resources(self, group: str, version: str) -> list[ResourceType]:
        return [rt for (g, v, _), rt in self._by_gvr.items() if g == group and v == version]

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_gvr.values()))

    def by_kind(self, group: str, kind: str) -> ResourceType | None:
        """Storage-version entry for a kind (used by the in-process store API)."""
        found: ResourceType | None = None
        for rt in self._by_gvr.values():
            if rt.group == group and rt.kind == kind and not rt.external:
                if rt.version == rt.stored_version:
                    return rt
                found = found or rt
        return found

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        found: ResourceType | None = None
        for rt in self._by_gvr.values():
            if rt.group == group and rt.plural == plural and not rt.external:
                if rt.version == rt.stored_version:
                    return rt
                found = found or rt
        return found


def _rt(
    group: str, version: str, kind: str, plural: str, namespaced: bool = True, **kw: object
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        **kw,  # type: ignore[arg-type]
    )


BUILTIN_SCALE = ScalePaths()


def builtin_registry() -> Registry:
    reg = Registry()
    add = reg.add
    add(
        _rt(
            "",
            "v1",
            "Namespace",
            "namespaces",
            False,
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            short_names=("ns",),
            status=True,
            delete_returns_object=True,
        )
    )
    add(
        _rt(
            "",
            "v1",
            "Pod",
            "pods",
            short_names=("po",),
            categories=("all",),
            status=True,
            delete_returns_object=True,
        )
    )
    add(_rt("", "v1", "Event", "events", short_names=("ev",)))
    add(
        _rt(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            short_names=("rc",),
            categories=("all",),
            status=True,
            scale=BUILTIN_SCALE,
            generation=True,
        )
    )
    add(_rt("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)))
    add(
        _rt(
            "",
            "v1",
            "Service",
            "services",
            short_names=("svc",),
            categories=("all",),
            status=True,
        )
    )
    add(_rt("", "v1", "ConfigMap", "configmaps", short_names=("cm",)))
    add(_rt("", "v1", "Secret", "secrets"))
    add(_rt("", "v1", "Endpoints", "endpoints", short_names=("ep",)))
    add(
        _rt(
            "",
            "v1",
            "Node",
            "nodes",
            False,
            short_names=("no",),
            status=True,
            status_on_create=True,
        )
    )
    add(
        _rt(
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            False,
            short_names=("pv",),
            status=True,
        )
    )
    add(
        _rt(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short_names=("pvc",),
            status=True,
        )
    )
    for kind, plural, short in (
        ("Deployment", "deployments", ("deploy",)),
        ("ReplicaSet", "replicasets", ("rs",)),
        ("StatefulSet", "statefulsets", ("sts",)),
    ):
        add(
            _rt(
                "apps",
                "v1",
                kind,
                plural,
                short_names=short,
                categories=("all",),
                status=True,
                scale=BUILTIN_SCALE,
                generation=True,
            )
        )
    # No scale subresource: GET .../daemonsets/<name>/scale is a 404, as on a real server.
    add(
        _rt(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            short_names=("ds",),
            categories=("all",),
            status=True,
            generation=True,
        )
    )
    for version in ("v2", "v1"):
        add(
            _rt(
                "autoscaling",
                version,
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
                short_names=("hpa",),
                categories=("all",),
                status=True,
                generation=True,
                storage_version="v2",
            )
        )
    add(_rt("batch", "v1", "Job", "jobs", categories=("all",), status=True, generation=True))
    add(
        _rt(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            short_names=("cj",),
            categories=("all",),
            status=True,
            generation=True,
        )
    )
    add(
        _rt(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            short_names=("pdb",),
            status=True,
            generation=True,
        )
    )
    add(
        _rt(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
        )
    )
    add(
        _rt(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            short_names=("ev",),
            storage_version="v1",
            storage_group="",
        )
    )
    for kind, plural, namespaced in (
        ("ClusterRoleBinding", "clusterrolebindings", False),
        ("ClusterRole", "clusterroles", False),
        ("RoleBinding", "rolebindings", True),
        ("Role", "roles", True),
    ):
        add(_rt("rbac.authorization.k8s.io", "v1", kind, plural, namespaced))
    add(
        _rt(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            False,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            status=True,
            generation=True,
            delete_returns_object=True,
        )
    )
    add(
        _rt(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            False,
            verbs=("create",),
        )
    )
    # Delegated authentication and authorization (what kube-controller-manager's and
    # hpactl's secure metrics servers ask the API server).
    add(
        _rt(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            False,
            verbs=("create",),
        )
    )
    add(
        _rt(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            False,
            verbs=("create",),
        )
    )
    add(
        _rt(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            short_names=("netpol",),
            generation=True,
        )
    )
    add(
        _rt(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            short_names=("ing",),
            status=True,
            generation=True,
        )
    )
    add(_rt("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False, generation=True))
    add(_rt("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", generation=True))
    # Metrics APIs: served by hpactl.emulator.metrics_api; writable in the emulator only.
    metrics_verbs = ("create", "delete", "get", "list", "patch", "update")
    add(
        _rt(
            "metrics.k8s.io",
            "v1beta1",
            "PodMetrics",
            "pods",
            verbs=metrics_verbs,
            external=True,
        )
    )
    add(
        _rt(
            "metrics.k8s.io",
            "v1beta1",
            "NodeMetrics",
            "nodes",
            False,
            verbs=READ_VERBS,
            external=True,
        )
    )
    add(
        _rt(
            "custom.metrics.k8s.io",
            "v1beta2",
            "MetricValueList",
            "*",
            verbs=metrics_verbs,
            external=True,
        )
    )
    # Emulator-only writable kinds of hpactl.emulator.metrics_api (for kubectl apply).
    add(
        _rt(
            "custom.metrics.k8s.io",
            "v1beta2",
            "MetricValue",
            "metricvalues",
            verbs=metrics_verbs,
            external=True,
        )
    )
    add(
        _rt(
            "external.metrics.k8s.io",
            "v1beta1",
            "ExternalMetricValue",
            "externalmetricvalues",
            verbs=metrics_verbs,
            external=True,
        )
    )
    add(
        _rt(
            "external.metrics.k8s.io",
            "v1beta1",
            "ExternalMetricValueList",
            "*",
            verbs=metrics_verbs,
            external=True,
        )
    )
    return reg


def crd_resource_types(crd: dict[str, object]) -> list[ResourceType]:
    """The ResourceTypes a CustomResourceDefinition (apiextensions.k8s.io/v1) serves."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return []
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served")]
    storage = next((str(v["name"]) for v in versions if v.get("storage")), "")
    out: list[ResourceType] = []
    for v in versions:
        sub = v.get("subresources") or {}
        scale: ScalePaths | None = None
        if isinstance(sub.get("scale"), dict):
            s = sub["scale"]
            scale = ScalePaths(
                spec_replicas=str(s.get("specReplicasPath", ".spec.replicas")),
                status_replicas=str(s.get("statusReplicasPath", ".status.replicas")),
                label_selector=str(s["labelSelectorPath"]) if s.get("labelSelectorPath") else "",
            )
        columns = tuple(
            (
                str(c.get("name", "")),
                str(c.get("type", "string")),
                str(c.get("jsonPath", "")),
                int(c.get("priority", 0)),
            )
            for c in v.get("additionalPrinterColumns") or []
            if isinstance(c, dict)
        )
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            schema = None
        digest = (
            hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]
            if schema is not None
            else ""
        )
        out.append(
            ResourceType(
                group=group,
                version=str(v.get("name")),
                kind=str(names.get("kind", "")),
                plural=str(names.get("plural", "")),
                singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
                namespaced=namespaced,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in sub,
                scale=scale,
                generation=True,
                delete_returns_object=True,
                storage_version=storage,
                custom=True,
                printer_columns=columns,
                schema=schema,
                schema_key=digest,
            )
        )
    return out
