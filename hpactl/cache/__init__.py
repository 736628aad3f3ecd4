"""Informers: list+watch caches of HPAs, pods and workloads (client-go concepts, asyncio).

Public entry points are re-exported here; see each module for details.
"""

from hpactl.cache.factory import SharedInformers
from hpactl.cache.informer import Informer, InformerStopped
from hpactl.cache.listers import HPALister, PodLister, WorkloadLister, target_key
from hpactl.cache.projections import WORKLOAD_KINDS, WorkloadScale
from hpactl.cache.reflector import Backoff, ListerWatcher, ListPage
from hpactl.cache.store import ProjectionError, Store, object_key

__all__ = [
    "WORKLOAD_KINDS",
    "Backoff",
    "HPALister",
    "Informer",
    "InformerStopped",
    "ListPage",
    "ListerWatcher",
    "PodLister",
    "ProjectionError",
    "SharedInformers",
    "Store",
    "WorkloadLister",
    "WorkloadScale",
    "object_key",
    "target_key",
]
