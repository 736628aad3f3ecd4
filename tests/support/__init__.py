"""Builders shared by several test packages (``from support.objects import ...``)."""
