"""`hpactl convert`: built-in HPA manifests to hpactl's resource and back.

For ``kubectl apply`` pipelines and GitOps repositories moving a workload between the
built-in controller and hpactl (docs/managed-clusters.md)::

    hpactl convert -f hpa.yaml > hhpa.yaml             # autoscaling/v1 or v2 -> hpactl
    kubectl get hhpa web -o yaml | hpactl convert -f - --to=v2

Reads every YAML (or JSON) document of the input, lists included (``List``,
``HorizontalPodAutoscalerList``). What the cluster wrote (``status``, ``uid``,
``resourceVersion``, ``managedFields``, kubectl's last-applied annotation ...) is
left out: the output is a manifest to apply, not a copy of a live object. An
extension annotation becomes its field; one that is malformed, or a field that
``autoscaling/v2`` cannot hold, is said on stderr. Any other problem (unreadable
input, a document that is no HorizontalPodAutoscaler) is one line and exit status 2,
with nothing on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from hpactl.model import crd
from hpactl.model.conversion import hpa_v1_to_v2

PROG = "hpactl convert"
TARGETS = {"hpactl": crd.API_VERSION, "v2": crd.V2_API_VERSION}
LIST_KINDS = ("List", "HorizontalPodAutoscalerList")
#: Written by the API server or kubectl, meaningless in a manifest of another kind.
SERVER_FIELDS = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

Obj = dict[str, Any]


class ConvertError(Exception):
    """One line for the user; exit status 2."""


def _describe(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name", "?") if isinstance(meta, dict) else "?"
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return f"{namespace}/{name}" if namespace else str(name)


def _clean(obj: Obj) -> Obj:
    obj.pop("status", None)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in SERVER_FIELDS:
            meta.pop(key, None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            if not annotations:
                del meta["annotations"]
    return obj


def convert_object(obj: Obj, to: str, where: str, notes: list[str]) -> Obj:
    """One HorizontalPodAutoscaler (any of the three API versions) as ``to``."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if kind != "HorizontalPodAutoscaler" or api_version not in (
        "autoscaling/v1",
        crd.V2_API_VERSION,
        crd.API_VERSION,
    ):
        raise ConvertError(
            f"{where}: {api_version or '<no apiVersion>'} {kind or '<no kind>'} is not a "
            "HorizontalPodAutoscaler of autoscaling/v1, autoscaling/v2 or "
            f"{crd.API_VERSION}"
        )
    if not isinstance(obj.get("spec"), dict):
        raise ConvertError(f"{where}: {kind} {_describe(obj)}: spec must be an object")
    label = f"{where}: {_describe(obj)}"
    if api_version == "autoscaling/v1":
        try:
            obj = hpa_v1_to_v2(obj)
        except (ValueError, TypeError, KeyError) as exc:
            raise ConvertError(f"{label}: cannot convert from autoscaling/v1: {exc}") from None
        api_version = crd.V2_API_VERSION
    if to == crd.API_VERSION and api_version == crd.V2_API_VERSION:
        done = crd.convert_v2_to_cr(obj)
    elif to == crd.V2_API_VERSION and api_version == crd.API_VERSION:
        done = crd.convert_cr_to_v2(obj)
    else:
        done = crd.Converted(obj)
    notes.extend(f"{label}: {note}" for note in done.notes)
    return _clean(done.obj)


def _documents(text: str, source: str) -> Iterator[tuple[str, Any]]:
    try:
        for i, doc in enumerate(yaml.safe_load_all(text), start=1):
            if doc is not None:
                yield f"{source}: document {i}", doc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConvertError(f"{source}: not valid YAML{at}: {problem}") from None


def convert_text(text: str, source: str, to: str) -> tuple[list[Obj], list[str]]:
    """Every document of ``text`` converted (lists keep their shape), and the notes."""
    out: list[Obj] = []
    notes: list[str] = []
    for where, doc in _documents(text, source):
        if not isinstance(doc, dict):
            raise ConvertError(f"{where}: not an object")
        if doc.get("kind") in LIST_KINDS and isinstance(doc.get("items"), list):
            items = []
            for j, item in enumerate(doc["items"]):
                if not isinstance(item, dict):
                    raise ConvertError(f"{where} item {j}: not an object")
                items.append(convert_object(item, to, f"{where} item {j}", notes))
            listed = {k: v for k, v in doc.items() if k not in ("items", "metadata")}
            if doc.get("kind") == "HorizontalPodAutoscalerList":
                listed["apiVersion"] = to
            out.append({**listed, "metadata": {}, "items": items})
        else:
            out.append(convert_object(doc, to, where, notes))
    if not out:
        raise ConvertError(f"{source}: no document to convert")
    return out, notes


def render(objs: list[Obj], output: str) -> str:
    if output == "json":
        whole = objs[0] if len(objs) == 1 else {"apiVersion": "v1", "kind": "List", "items": objs}
        return json.dumps(whole, indent=2) + "\n"
    return "---\n".join(yaml.safe_dump(o, sort_keys=False, allow_unicode=True) for o in objs)


def _read(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None


def run(args: argparse.Namespace) -> int:
    try:
        text, source = _read(args.filename)
        objs, notes = convert_text(text, source, TARGETS[args.to])
    except ConvertError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"{PROG}: {note}", file=sys.stderr)
    sys.stdout.write(render(objs, args.output))
    return 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="turn autoscaling/v1 or v2 HPA manifests into hpactl's resource, and back",
        description=(
            "Convert HorizontalPodAutoscaler manifests between autoscaling/v1 or "
            f"autoscaling/v2 and hpactl's own resource ({crd.API_VERSION}, short name "
            "hhpa), e.g. to move a workload from the built-in controller to hpactl on a "
            "managed cluster (docs/managed-clusters.md). Extension annotations become "
            "fields and back; status and server-written metadata are left out."
        ),
    )
    parser.add_argument(
        "-f",
        "--filename",
        required=True,
        metavar="FILE",
        help="the manifest (YAML or JSON, several documents and lists allowed); - for stdin",
    )
    parser.add_argument(
        "--to",
        choices=sorted(TARGETS),
        default="hpactl",
        help=f"hpactl ({crd.API_VERSION}, the default) or v2 (autoscaling/v2)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        default="yaml",
        help="yaml (documents separated by ---, the default) or json (several: a List)",
    )
    parser.set_defaults(func=run)
