"""metav1.Status errors with the reasons, codes and messages kube-apiserver uses."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the API answers with a `Status` body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(name: str, group: str, plural: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        d["group"] = group
    return d


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(group, plural)} "{name}" not found',
        _details(name, group, plural),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        _details(name, group, plural),
    )


def conflict(group: str, plural: str, name: str) -> ApiError:
    # The text the registry store uses for a stale resourceVersion (OptimisticLockErrorMsg).
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": '
        "the object has been modified; please apply your changes to the latest version "
        "and try again",
        _details(name, group, plural),
    )


def precondition_failed(
    group: str, plural: str, name: str, field: str, wanted: object, actual: object
) -> ApiError:
    """409 for a delete whose UID / ResourceVersion precondition does not hold."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": '
        f"Precondition failed: {field} in precondition: {wanted}, "
        f"{field} in object meta: {actual}",
        _details(name, group, plural),
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid. causes: (field, reason type e.g. FieldValueRequired, message)."""
    gk = f"{kind}.{group}" if group else kind
    parts = [f"{f}: {m}" for f, _, m in causes]
    if len(parts) == 1:
        msg = f'{gk} "{name}" is invalid: {parts[0]}'
    else:
        msg = f'{gk} "{name}" is invalid: [{", ".join(parts)}]'
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
    }
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", msg, details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def parse_resource_version(text: str) -> int:
    """A list's or watch's resourceVersion parameter; 400 like the API when not a number."""
    try:
        return int(text)
    except ValueError:
        raise bad_request(
            f'resourceVersion: Invalid value: "{text}": must be a valid resource version'
        ) from None


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, {})


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(
    user: str, verb: str, group: str, resource: str, sub: str, namespace: str, name: str
) -> ApiError:
    res = f"{resource}/{sub}" if sub else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    reason = f'User "{user}" cannot {verb} resource "{res}" in API group "{group}" {scope}'
    qualified = _qualified(group, resource)
    what = f'{qualified} "{name}"' if name else qualified
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return ApiError(403, "Forbidden", f"{what} is forbidden: {reason}", details)
