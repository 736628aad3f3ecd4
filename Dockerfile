# syntax=docker/dockerfile:1
# hpactl container image.
#   docker build -t ghcr.io/hpactl/hpactl:0.1.0 .   (the name manifests/image/ sets)
# Stage 1 fetches every dependency as pinned in requirements/image.lock (one version
# each, checked against the lock's sha256 hashes, wheels only) and builds hpactl's own
# wheel with the build tools pinned in requirements/build.lock. Stage 2 installs them
# from a bind mount (no wheel files left in a layer), again hash-checked, with no index,
# no compiler and no build tools, and checks that the locked set satisfies hpactl's
# requirements; it runs as a numeric non-root user and works with a read-only root
# filesystem (bytecode is compiled at build time and never written at run time).
# Regenerate the locks with scripts/lock-image-deps (docs/install.md).
# tests/ship/test_image.py checks this file and repeats both stages without Docker.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY requirements/image.lock requirements/build.lock ./requirements/
RUN python -m pip download --no-cache-dir --require-hashes --no-deps --only-binary=:all: \
        --dest /wheels -r requirements/image.lock \
 && python -m pip install --no-cache-dir --require-hashes --no-deps -r requirements/build.lock
COPY pyproject.toml README.md ./
COPY hpactl ./hpactl
RUN python -m pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

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
    --mount=type=bind,from=build,source=/src/requirements,target=/requirements \
    python -m pip install --no-index --find-links=/wheels --require-hashes --no-deps -r /requirements/image.lock \
 && python -m pip install --no-index --find-links=/wheels --no-deps hpactl \
 && python -m pip check \
 && python -m compileall -q "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
USER 65532:65532
EXPOSE 8081 8443
ENTRYPOINT ["hpactl", "run"]
