# syntax=docker/dockerfile:1
# hpactl container image.
#   docker build -t hpactl:0.1.0 .
# Stage 1 builds wheels for hpactl and every dependency. Stage 2 installs them from
# a bind mount (no wheel files left in a layer), with no index, no compiler and no
# build tools; it runs as a numeric non-root user and works with a read-only root
# filesystem (bytecode is compiled at build time and never written at run time).
# tests/ship/test_image.py checks this file and repeats both stages without Docker.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY hpactl ./hpactl
RUN python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="hpactl" \
      org.opencontainers.image.description="Drop-in replacement for the Kubernetes HorizontalPodAutoscaler controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels hpactl \
 && python -m compileall -q "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["hpactl", "run"]
