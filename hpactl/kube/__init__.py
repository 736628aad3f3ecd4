"""Kubernetes API access: the only writers to the API server.

Raw JSON at the wire (no kubernetes_asyncio models): `session` builds one client and
rate-limits it, `requests` has the verbs, `errors` maps failures, and the other
modules (scale, status, events, leader election, discovery) sit on top.
"""
