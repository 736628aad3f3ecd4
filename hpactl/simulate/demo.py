"""The built-in scenario `hpactl demo` runs when given no `--scenario`."""

from __future__ import annotations

__all__ = ["DEMO_SCENARIO"]

# A web Deployment with a CPU HPA; demand rises, spikes past what maxReplicas can
# absorb, and falls. 30 virtual minutes at the default 15 s sync period. The
# Deployment's first two pods are listed warmed up (started before the scenario)
# so the demo opens on a steady state rather than on the CPU-initialization rules.
DEMO_SCENARIO = """\
name: demo
description: >-
  A web Deployment (250m CPU requested per pod) with an HPA targeting 60% CPU,
  2 to 20 replicas. Demand rises, spikes beyond what 20 pods can absorb, and falls
  back; new pods take 30s to turn Ready. The two pods running at the start have
  been up for ten minutes.
objects:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: default, labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
            - name: web
              image: registry.k8s.io/nginx-slim:0.27
              resources: {requests: {cpu: 250m}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: web-warm-0, namespace: default, labels: {app: web}}
    spec:
      containers:
        - name: web
          image: registry.k8s.io/nginx-slim:0.27
          resources: {requests: {cpu: 250m}}
    status:
      phase: Running
      startTime: "2025-12-31T23:50:00Z"
      conditions:
        - {type: Ready, status: "True", lastTransitionTime: "2025-12-31T23:50:30Z"}
  - apiVersion: v1
    kind: Pod
    metadata: {name: web-warm-1, namespace: default, labels: {app: web}}
    spec:
      containers:
        - name: web
          image: registry.k8s.io/nginx-slim:0.27
          resources: {requests: {cpu: 250m}}
    status:
      phase: Running
      startTime: "2025-12-31T23:50:00Z"
      conditions:
        - {type: Ready, status: "True", lastTransitionTime: "2025-12-31T23:50:30Z"}
  - apiVersion: autoscaling/v2
    kind: HorizontalPodAutoscaler
    metadata: {name: web, namespace: default}
    spec:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
      minReplicas: 2
      maxReplicas: 20
      metrics:
        - type: Resource
          resource:
            name: cpu
            target: {type: Utilization, averageUtilization: 60}
workload:
  - target: {kind: Deployment, namespace: default, name: web}
    podReadyAfter: 30s
    demand:
      cpu:
        - {at: 0s, value: 300m}
        - {at: 3m, value: 400m}
        - {at: 8m, value: "1.5"}
        - {at: 10m, value: "1.8"}
        - {at: 11m, value: "3.6"}
        - {at: 14m, value: "3.6"}
        - {at: 15m, value: "1.5"}
        - {at: 20m, value: "1.2"}
        - {at: 24m, value: 400m}
        - {at: 30m, value: 300m}
steps:
  - {}
  - repeat: 120
"""
