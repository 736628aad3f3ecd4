"""In-process Kubernetes API server for hpactl's tests, `simulate` and `demo`.

Imports only the standard library, aiohttp, yaml and hpactl.model leaf utilities.
"""

from hpactl.emulator.emulator import Emulator
from hpactl.emulator.rbac import RequestAttributes
from hpactl.emulator.server import request_attributes
from hpactl.emulator.store import Store

__all__ = ["Emulator", "RequestAttributes", "Store", "request_attributes"]
