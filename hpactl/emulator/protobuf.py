"""Decoding of the Kubernetes protobuf request bodies kubectl sends.

kubectl's typed clients (`kubectl autoscale`, `kubectl create deployment|namespace|
serviceaccount|role|clusterrole|rolebinding|clusterrolebinding`, `kubectl run`) send
`application/vnd.kubernetes.protobuf` bodies and do not fall back to JSON.  The
emulator answers in JSON (clients accept it) and decodes request bodies of the
kinds below into the same JSON a JSON client would have sent.  Field numbers are
those of k8s.io/api's generated.proto; an unknown field number is an error rather
than silently dropped data.
"""

from __future__ import annotations

from typing import Any

from hpactl.emulator import errors

MAGIC = b"k8s\x00"

# A schema maps field number -> (json name, kind, sub-schema or None).
# kinds: "str", "int" (zero omitted), "pint" (pointer: zero kept), "bool", "msg", "rstr" (repeated string), "rmsg" (repeated
# message), "map" (map<string,string>), "qmap" (map<string,Quantity>), "time",
# "intstr" (IntOrString), "quantity".
Schema = dict[int, tuple[str, str, Any]]

TIME: Schema = {}
OWNER_REF: Schema = {
    1: ("kind", "str", None),
    3: ("name", "str", None),
    4: ("uid", "str", None),
    5: ("apiVersion", "str", None),
    6: ("controller", "bool", None),
    7: ("blockOwnerDeletion", "bool", None),
}
OBJECT_META: Schema = {
    1: ("name", "str", None),
    2: ("generateName", "str", None),
    3: ("namespace", "str", None),
    4: ("selfLink", "str", None),
    5: ("uid", "str", None),
    6: ("resourceVersion", "str", None),
    7: ("generation", "int", None),
    8: ("creationTimestamp", "time", None),
    9: ("deletionTimestamp", "time", None),
    10: ("deletionGracePeriodSeconds", "pint", None),
    11: ("labels", "map", None),
    12: ("annotations", "map", None),
    13: ("ownerReferences", "rmsg", OWNER_REF),
    14: ("finalizers", "rstr", None),
    17: ("managedFields", "skip", None),
}
CROSS_REF: Schema = {
    1: ("kind", "str", None),
    2: ("name", "str", None),
    3: ("apiVersion", "str", None),
}
HPA_V1: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: (
        "spec",
        "msg",
        {
            1: ("scaleTargetRef", "msg", CROSS_REF),
            2: ("minReplicas", "pint", None),
            3: ("maxReplicas", "pint", None),
            4: ("targetCPUUtilizationPercentage", "pint", None),
        },
    ),
    3: (
        "status",
        "msg",
        {
            1: ("observedGeneration", "pint", None),
            2: ("lastScaleTime", "time", None),
            3: ("currentReplicas", "pint", None),
            4: ("desiredReplicas", "pint", None),
            5: ("currentCPUUtilizationPercentage", "pint", None),
        },
    ),
}
SCALE: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: ("spec", "msg", {1: ("replicas", "int", None)}),
    3: ("status", "msg", {1: ("replicas", "int", None), 2: ("selector", "str", None)}),
}
LABEL_SELECTOR: Schema = {
    1: ("matchLabels", "map", None),
    2: (
        "matchExpressions",
        "rmsg",
        {1: ("key", "str", None), 2: ("operator", "str", None), 3: ("values", "rstr", None)},
    ),
}
CONTAINER_PORT: Schema = {
    1: ("name", "str", None),
    2: ("hostPort", "int", None),
    3: ("containerPort", "pint", None),
    4: ("protocol", "str", None),
    5: ("hostIP", "str", None),
}
ENV_VAR: Schema = {1: ("name", "str", None), 2: ("value", "str", None)}
CONTAINER: Schema = {
    1: ("name", "str", None),
    2: ("image", "str", None),
    3: ("command", "rstr", None),
    4: ("args", "rstr", None),
    5: ("workingDir", "str", None),
    6: ("ports", "rmsg", CONTAINER_PORT),
    7: ("env", "rmsg", ENV_VAR),
    8: (
        "resources",
        "msg",
        {1: ("limits", "qmap", None), 2: ("requests", "qmap", None)},
    ),
    13: ("terminationMessagePath", "str", None),
    14: ("imagePullPolicy", "str", None),
    16: ("stdin", "bool", None),
    17: ("stdinOnce", "bool", None),
    18: ("tty", "bool", None),
    20: ("terminationMessagePolicy", "str", None),
}
POD_SPEC: Schema = {
    2: ("containers", "rmsg", CONTAINER),
    3: ("restartPolicy", "str", None),
    4: ("terminationGracePeriodSeconds", "pint", None),
    6: ("dnsPolicy", "str", None),
    7: ("nodeSelector", "map", None),
    8: ("serviceAccountName", "str", None),
    10: ("nodeName", "str", None),
    11: ("hostNetwork", "bool", None),
    12: ("hostPID", "bool", None),
    13: ("hostIPC", "bool", None),
    16: ("hostname", "str", None),
    17: ("subdomain", "str", None),
    19: ("schedulerName", "str", None),
    20: ("initContainers", "rmsg", CONTAINER),
    24: ("priorityClassName", "str", None),
    30: ("enableServiceLinks", "bool", None),
}
POD_TEMPLATE: Schema = {1: ("metadata", "msg", OBJECT_META), 2: ("spec", "msg", POD_SPEC)}
DEPLOYMENT: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: (
        "spec",
        "msg",
        {
            1: ("replicas", "pint", None),
            2: ("selector", "msg", LABEL_SELECTOR),
            3: ("template", "msg", POD_TEMPLATE),
            4: (
                "strategy",
                "msg",
                {
                    1: ("type", "str", None),
                    2: (
                        "rollingUpdate",
                        "msg",
                        {1: ("maxUnavailable", "intstr", None), 2: ("maxSurge", "intstr", None)},
                    ),
                },
            ),
            5: ("minReadySeconds", "int", None),
            6: ("revisionHistoryLimit", "pint", None),
            7: ("paused", "bool", None),
            9: ("progressDeadlineSeconds", "pint", None),
        },
    ),
    3: ("status", "skip", None),
}

POD: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: ("spec", "msg", POD_SPEC),
    3: ("status", "skip", None),
}
NAMESPACE: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: ("spec", "msg", {1: ("finalizers", "rstr", None)}),
    3: ("status", "skip", None),
}
OBJECT_REF: Schema = {
    1: ("kind", "str", None),
    2: ("namespace", "str", None),
    3: ("name", "str", None),
    4: ("uid", "str", None),
    5: ("apiVersion", "str", None),
    6: ("resourceVersion", "str", None),
    7: ("fieldPath", "str", None),
}
SERVICE_ACCOUNT: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: ("secrets", "rmsg", OBJECT_REF),
    3: ("imagePullSecrets", "rmsg", {1: ("name", "str", None)}),
    4: ("automountServiceAccountToken", "bool", None),
}
POLICY_RULE: Schema = {
    1: ("verbs", "rstr", None),
    2: ("apiGroups", "rstr", None),
    3: ("resources", "rstr", None),
    4: ("resourceNames", "rstr", None),
    5: ("nonResourceURLs", "rstr", None),
}
ROLE: Schema = {1: ("metadata", "msg", OBJECT_META), 2: ("rules", "rmsg", POLICY_RULE)}
CLUSTER_ROLE: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: ("rules", "rmsg", POLICY_RULE),
    3: (
        "aggregationRule",
        "msg",
        {1: ("clusterRoleSelectors", "rmsg", LABEL_SELECTOR)},
    ),
}
BINDING: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: (
        "subjects",
        "rmsg",
        {
            1: ("kind", "str", None),
            2: ("apiGroup", "str", None),
            3: ("name", "str", None),
            4: ("namespace", "str", None),
        },
    ),
    3: (
        "roleRef",
        "msg",
        {1: ("apiGroup", "str", None), 2: ("kind", "str", None), 3: ("name", "str", None)},
    ),
}

SSAR: Schema = {
    1: ("metadata", "msg", OBJECT_META),
    2: (
        "spec",
        "msg",
        {
            1: (
                "resourceAttributes",
                "msg",
                {
                    1: ("namespace", "str", None),
                    2: ("verb", "str", None),
                    3: ("group", "str", None),
                    4: ("version", "str", None),
                    5: ("resource", "str", None),
                    6: ("subresource", "str", None),
                    7: ("name", "str", None),
                },
            ),
            2: (
                "nonResourceAttributes",
                "msg",
                {1: ("path", "str", None), 2: ("verb", "str", None)},
            ),
        },
    ),
    3: ("status", "skip", None),
}

SCHEMAS: dict[tuple[str, str], Schema] = {
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SSAR,
    ("v1", "Pod"): POD,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): BINDING,
    ("autoscaling/v1", "HorizontalPodAutoscaler"): HPA_V1,
    ("autoscaling/v1", "Scale"): SCALE,
    ("apps/v1", "Deployment"): DEPLOYMENT,
}


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def varint(self) -> int:
        shift = 0
        out = 0
        while True:
            if self.pos >= len(self.data):
                raise errors.bad_request("protobuf: truncated varint")
            b = self.data[self.pos]
            self.pos += 1
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7

    def fields(self) -> list[tuple[int, int, Any]]:
        out: list[tuple[int, int, Any]] = []
        while self.pos < len(self.data):
            key = self.varint()
            num, wire = key >> 3, key & 7
            if wire == 0:
                out.append((num, wire, self.varint()))
            elif wire == 2:
                n = self.varint()
                out.append((num, wire, self.data[self.pos : self.pos + n]))
                self.pos += n
            elif wire == 1:
                out.append((num, wire, self.data[self.pos : self.pos + 8]))
                self.pos += 8
            elif wire == 5:
                out.append((num, wire, self.data[self.pos : self.pos + 4]))
                self.pos += 4
            else:
                raise errors.bad_request(f"protobuf: unsupported wire type {wire}")
        return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _time(data: bytes) -> str:
    from datetime import UTC, datetime

    secs = 0
    for num, _, v in _Reader(data).fields():
        if num == 1:
            secs = _signed(v)
    return datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _map_entry(data: bytes) -> tuple[str, bytes]:
    k, v = "", b""
    for num, _, val in _Reader(data).fields():
        if num == 1:
            k = val.decode()
        elif num == 2:
            v = val
    return k, v


def _quantity(data: bytes) -> str:
    for num, _, val in _Reader(data).fields():
        if num == 1:
            return str(val.decode())
    return "0"


def _intstr(data: bytes) -> int | str:
    typ, ival, sval = 0, 0, ""
    for num, _, val in _Reader(data).fields():
        if num == 1:
            typ = val
        elif num == 2:
            ival = _signed(val)
        elif num == 3:
            sval = val.decode()
    return sval if typ == 1 else ival


def decode_message(data: bytes, schema: Schema, where: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for num, _wire, val in _Reader(data).fields():
        spec = schema.get(num)
        if spec is None and val in (0, b""):
            continue  # a zero value gogo-protobuf always writes: nothing to keep
        if spec is None:
            raise errors.ApiError(
                415,
                "UnsupportedMediaType",
                f"the emulator cannot decode protobuf field {where or '.'}#{num}; "
                "send application/json",
            )
        name, kind, sub = spec
        if kind == "skip":
            continue
        if kind == "str":
            if val:  # Go's JSON omits empty strings (omitempty)
                out[name] = val.decode()
        elif kind == "int":
            if val:  # non-pointer integer: omitempty
                out[name] = _signed(val)
        elif kind == "pint":
            out[name] = _signed(val)
        elif kind == "bool":
            if val:
                out[name] = True
        elif kind == "time":
            if val:  # the zero Time is an empty message (JSON null: omitted)
                out[name] = _time(val)
        elif kind == "msg":
            out[name] = decode_message(val, sub, f"{where}.{name}")
        elif kind == "rmsg":
            out.setdefault(name, []).append(decode_message(val, sub, f"{where}.{name}"))
        elif kind == "rstr":
            out.setdefault(name, []).append(val.decode())
        elif kind == "map":
            k, v = _map_entry(val)
            out.setdefault(name, {})[k] = v.decode()
        elif kind == "qmap":
            k, v = _map_entry(val)
            out.setdefault(name, {})[k] = _quantity(v)
        elif kind == "intstr":
            out[name] = _intstr(val)
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object (runtime.Unknown envelope) as its JSON form."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("protobuf: missing the k8s magic prefix")
    api_version, kind, raw = "", "", b""
    for num, _, val in _Reader(body[len(MAGIC) :]).fields():
        if num == 1:
            for n2, _, v2 in _Reader(val).fields():
                if n2 == 1:
                    api_version = v2.decode()
                elif n2 == 2:
                    kind = v2.decode()
        elif num == 2:
            raw = val
    schema = SCHEMAS.get((api_version, kind))
    if schema is None:
        raise errors.unsupported_media_type(
            "application/vnd.kubernetes.protobuf", ["application/json", "application/yaml"]
        )
    obj = decode_message(raw, schema)
    return {"apiVersion": api_version, "kind": kind, **obj}
