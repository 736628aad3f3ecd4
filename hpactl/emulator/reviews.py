"""The review APIs: who a token is, and what a user may do, as the API server answers.

* ``self_subject_access_review(spec, user, groups, authorizer)``: the
  SelfSubjectAccessReview of ``kubectl auth can-i`` (authorization.k8s.io/v1);
* ``token_review(spec, tokens, service_account_uid)``: TokenReview
  (authentication.k8s.io/v1), answered from the token table the authentication
  middleware uses;
* ``subject_access_review(spec, authorizer)``: SubjectAccessReview, for delegated
  authorization (hpactl's ``--metrics-secure`` asks it about ``get /metrics``).

Each takes the request body's ``spec`` (``review_spec`` reads it) and returns the
object the server answers with 201. ``authorizer`` is the RBAC authorizer (None:
everything is allowed, as without an authorizer). The URL checks stay with the router.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hpactl.emulator import errors
from hpactl.emulator.rbac import RequestAttributes

__all__ = [
    "API_AUDIENCE",
    "review_spec",
    "self_subject_access_review",
    "subject_access_review",
    "token_review",
]

Obj = dict[str, Any]

#: The audience the emulator's tokens are issued for (kube-apiserver's default
#: --api-audiences: its service account issuer).
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"


def review_spec(body: Any, *, check_namespace: bool = True) -> Obj:
    """The ``spec`` of a review body (400 for a body that is not an object, or, when
    checked, a namespace on these cluster-scoped reviews)."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    namespace = (body.get("metadata") or {}).get("namespace")
    if namespace and check_namespace:
        raise errors.bad_request(f"namespace is not allowed on this type: {namespace}")
    spec = body.get("spec")
    return spec if isinstance(spec, dict) else {}


def _answer(kind: str, api_version: str, spec: Obj, status: Obj) -> Obj:
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def _attributes(res: Any, non_res: Any, kind: str) -> RequestAttributes:
    if isinstance(res, dict):
        return RequestAttributes(
            resource_request=True,
            verb=str(res.get("verb", "")),
            path="",
            api_group=str(res.get("group", "")),
            api_version=str(res.get("version", "")),
            resource=str(res.get("resource", "")),
            subresource=str(res.get("subresource", "")),
            namespace=str(res.get("namespace", "")),
            name=str(res.get("name", "")),
        )
    if isinstance(non_res, dict):
        return RequestAttributes(
            resource_request=False,
            verb=str(non_res.get("verb", "")),
            path=str(non_res.get("path", "")),
        )
    raise errors.bad_request(f"the attributes of a {kind} must be objects")


def _decide(
    authorizer: Any, user: str, groups: Sequence[str], wanted: RequestAttributes
) -> tuple[bool, str]:
    """(allowed, reason) from the authorizer; everything is allowed without one."""
    if authorizer is None:
        return True, ""
    check = getattr(authorizer, "check", None)
    if check is not None:
        allowed, reason = check(user, list(groups), wanted)
        return bool(allowed), str(reason or "")
    if wanted.resource_request:
        return (
            bool(
                authorizer.authorize(
                    user,
                    list(groups),
                    wanted.verb,
                    wanted.api_group,
                    wanted.resource,
                    wanted.subresource,
                    wanted.namespace,
                    wanted.name,
                )
            ),
            "",
        )
    return bool(authorizer.authorize_path(user, list(groups), wanted.verb, wanted.path)), ""


def self_subject_access_review(spec: Obj, user: str, groups: Sequence[str], authorizer: Any) -> Obj:
    res = spec.get("resourceAttributes")
    non_res = spec.get("nonResourceAttributes")
    if (res is None) == (non_res is None):
        raise errors.invalid(
            "SelfSubjectAccessReview",
            "authorization.k8s.io",
            "",
            [
                (
                    "spec.resourceAttributes",
                    "FieldValueRequired",
                    "Required value: exactly one of nonResourceAttributes or "
                    "resourceAttributes must be specified",
                )
            ],
        )
    allowed = True
    if "system:masters" not in groups:
        wanted = _attributes(res, non_res, "SelfSubjectAccessReview")
        allowed, _reason = _decide(authorizer, user, groups, wanted)
    return _answer("SelfSubjectAccessReview", "authorization.k8s.io/v1", spec, {"allowed": allowed})


def token_review(
    spec: Obj,
    tokens: Mapping[str, tuple[str, list[str]]] | None,
    service_account_uid: Callable[[str], str],
) -> Obj:
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    wanted = [str(a) for a in spec.get("audiences") or ()]
    # Without authentication configured nothing authenticates (as an API server
    # without token authenticators answers).
    who = tokens.get(token) if tokens is not None else None
    status: Obj = {"user": {}}
    if who is not None:
        if wanted and API_AUDIENCE not in wanted:
            status["error"] = (
                f'[invalid bearer token, token audiences ["{API_AUDIENCE}"] is invalid '
                f"for the target audiences {json.dumps(wanted)}]"
            )
        else:
            user, groups = who
            info: Obj = {"username": user}
            uid = service_account_uid(user)
            if uid:
                info["uid"] = uid
            info["groups"] = list(groups)
            status = {"authenticated": True, "user": info, "audiences": [API_AUDIENCE]}
    return _answer("TokenReview", "authentication.k8s.io/v1", spec, status)


def subject_access_review(spec: Obj, authorizer: Any) -> Obj:
    res = spec.get("resourceAttributes")
    non_res = spec.get("nonResourceAttributes")
    user = str(spec.get("user") or "")
    groups = [str(g) for g in spec.get("groups") or ()]
    causes: list[tuple[str, str, str]] = []
    if res is not None and non_res is not None:
        causes.append(
            (
                "spec.nonResourceAttributes",
                "FieldValueInvalid",
                'Invalid value: "object": cannot be specified in combination with '
                "resourceAttributes",
            )
        )
    elif res is None and non_res is None:
        causes.append(
            (
                "spec.resourceAttributes",
                "FieldValueInvalid",
                'Invalid value: "null": exactly one of nonResourceAttributes or '
                "resourceAttributes must be specified",
            )
        )
    if not user and not groups:
        causes.append(
            (
                "spec.user",
                "FieldValueInvalid",
                'Invalid value: "": at least one of user or group must be specified',
            )
        )
    if causes:
        raise errors.invalid("SubjectAccessReview", "authorization.k8s.io", "", causes)
    wanted = _attributes(res, non_res, "SubjectAccessReview")
    allowed, reason = _decide(authorizer, user, groups, wanted)
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return _answer("SubjectAccessReview", "authorization.k8s.io/v1", spec, status)
