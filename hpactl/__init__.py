"""hpactl: a drop-in HorizontalPodAutoscaler controller for Kubernetes."""

__version__ = "0.1.0"
