"""Pure decision core of hpactl: upstream-exact HPA replica math, normalization, status.

No I/O, no asyncio, no clock reads: every function that needs time takes ``now``.
"""
