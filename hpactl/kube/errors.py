"""API errors as client-go reports them.

``str(err)`` and ``err.message`` read exactly like Go's ``err.Error()``, because
upstream's events and conditions quote it (``deployments.apps "web" not found``).

Hierarchy::

    KubeError                      base; .message
      TransportError               no HTTP response (connection refused, reset, ...)
        RequestTimeout             the client-side deadline passed
      ApiError                     an HTTP error status; .code .reason .status (raw dict|None)
        BadRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
        MethodNotAllowed 405, Conflict 409 (reason Conflict),
        AlreadyExists 409 (reason AlreadyExists; NOT a Conflict, as in Go),
        Gone 410 (reasons Gone and Expired), Invalid 422, TooManyRequests 429,
        Timeout 504 / reason Timeout,
        ServerError 5xx: InternalError 500, ServiceUnavailable 503

Construction:

``error_from_response(code, body, content_type, method, info, retry_after=None)``
    client-go ``transformResponse``: a ``Status`` body with ``status: Failure`` is taken
    as-is (its message verbatim); anything else becomes
    ``errors.NewGenericServerResponse`` text, e.g. for a 503 from an aggregated API
    ``the server is currently unable to handle the request (get pods.metrics.k8s.io)``.

``error_from_status(status_dict, code=None)``
    For ``ERROR`` watch events (a Status object): Go's ``errors.FromObject``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hpactl.kube.paths import RequestInfo

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "ConnectFailed",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "KubeError",
    "MethodNotAllowed",
    "NotFound",
    "NotLeader",
    "RequestTimeout",
    "ServerError",
    "ServiceUnavailable",
    "Timeout",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "error_from_response",
    "error_from_status",
    "generic_server_message",
]


class KubeError(Exception):
    """Any failure talking to the API server."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class TransportError(KubeError):
    """No HTTP response at all."""


class ConnectFailed(TransportError):
    """No connection could be made at all (refused, unreachable, name not resolved):
    the server may be another one when it answers again (restarted, restored)."""


class CertificateError(TransportError):
    """The server's TLS certificate did not verify against the kubeconfig's CA (never
    retried without verification: only the kubeconfig may turn verification off)."""


class RequestTimeout(TransportError):
    """The client-side deadline passed before a (complete) response."""


class NotLeader(KubeError):
    """A write refused before it was sent: this replica cannot prove it holds the lease."""


class ApiError(KubeError):
    """An HTTP error status from the server."""

    default_code = 0

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        reason: str = "",
        status: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code if code is not None else self.default_code
        self.reason = reason
        self.status = status
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, reason={self.reason!r}, message={self.message!r})"


class BadRequest(ApiError):
    default_code = 400


class Unauthorized(ApiError):
    default_code = 401


class Forbidden(ApiError):
    default_code = 403


class NotFound(ApiError):
    default_code = 404


class MethodNotAllowed(ApiError):
    default_code = 405


class Conflict(ApiError):
    default_code = 409


class AlreadyExists(ApiError):
    default_code = 409


class Gone(ApiError):
    default_code = 410


class Invalid(ApiError):
    default_code = 422


class TooManyRequests(ApiError):
    default_code = 429


class Timeout(ApiError):
    default_code = 504


class ServerError(ApiError):
    default_code = 500


class InternalError(ServerError):
    default_code = 500


class ServiceUnavailable(ServerError):
    default_code = 503


# metav1.StatusReason → class; the reason wins over the code, as Go's Is* helpers do.
_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "Conflict": Conflict,
    "AlreadyExists": AlreadyExists,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "Timeout": Timeout,
    "ServerTimeout": ServerError,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


def _class_for(code: int, reason: str) -> type[ApiError]:
    cls = _BY_REASON.get(reason)
    if cls is not None:
        return cls
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    return ServerError if code >= 500 else ApiError


def error_from_status(status: Mapping[str, Any], code: int | None = None) -> ApiError:
    """Go ``errors.FromObject`` for a metav1.Status."""
    reason = str(status.get("reason") or "")
    st_code = status.get("code")
    eff_code = int(st_code) if isinstance(st_code, int) and st_code else (code or 0)
    message = str(status.get("message") or "")
    details = status.get("details")
    retry: int | None = None
    if isinstance(details, Mapping) and isinstance(details.get("retryAfterSeconds"), int):
        retry = int(details["retryAfterSeconds"])
    cls = _class_for(eff_code, reason)
    return cls(message, code=eff_code, reason=reason, status=dict(status), retry_after=retry)


_GENERIC: dict[int, tuple[str, str]] = {
    409: ("Conflict", "the server reported a conflict"),
    404: ("NotFound", "the server could not find the requested resource"),
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be processing the request",
    ),
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
}


def generic_server_message(
    code: int, method: str, info: RequestInfo, server_message: str
) -> tuple[str, str]:
    """(reason, message) as apimachinery ``NewGenericServerResponse`` builds them."""
    reason = "Unknown"
    message = (
        f"the server responded with the status code {code} but did not return more information"
    )
    if code in _GENERIC:
        reason, message = _GENERIC[code]
        if code == 409 and method.upper() == "POST":
            reason = "AlreadyExists"
    elif code == 403:
        reason, message = "Forbidden", server_message
    elif code == 406:
        reason = "NotAcceptable"
        message = (
            "the server was unable to respond with a content type that the client supports"
            if server_message in ("", "unknown")
            else server_message
        )
    elif code == 415:
        reason, message = "UnsupportedMediaType", server_message
    elif code >= 500:
        reason = "InternalError"
        message = f"an error on the server ({_go_quote(server_message)}) has prevented the request from succeeding"
    qr = info.qualified_resource
    if qr and info.name:
        message = f"{message} ({method.lower()} {qr} {info.name})"
    elif qr:
        message = f"{message} ({method.lower()} {qr})"
    return reason, message


def _go_quote(s: str) -> str:
    # Go's %q for the printable ASCII a server message normally holds.
    return json.dumps(s, ensure_ascii=False)


def _is_text(content_type: str) -> bool:
    if not content_type:
        return True
    return content_type.split(";", 1)[0].strip().lower().startswith("text/")


def error_from_response(
    code: int,
    body: bytes,
    content_type: str,
    method: str,
    info: RequestInfo,
    retry_after: int | None = None,
) -> ApiError:
    """client-go ``transformResponse`` + ``Result.Error()`` for a non-2xx response."""
    if body:
        try:
            decoded = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            decoded = None
        if (
            isinstance(decoded, dict)
            and decoded.get("kind") == "Status"
            and decoded.get("status") == "Failure"
        ):
            err = error_from_status(decoded, code)
            if err.retry_after is None:
                err.retry_after = retry_after
            return err
    server_message = "unknown"
    if _is_text(content_type):
        server_message = body[:2048].decode("utf-8", "replace").strip()
    reason, message = generic_server_message(code, method, info, server_message)
    cls = _class_for(code, reason)
    return cls(message, code=code, reason=reason, status=None, retry_after=retry_after)
