# syntax=docker/dockerfile:1
# hpactl container image.
#   docker build -t hpactl:0.1.0 .
# Stage 1 builds wheels for hpactl and every dependency; stage 2 installs them
# with no compiler and no network, runs as a numeric non-root user, and works
# with a read-only root filesystem (bytecode is compiled at build time).

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
RUN python -m pip install --no-cache-dir --upgrade pip build
COPY pyproject.toml README.md ./
COPY hpactl ./hpactl
RUN python -m build --wheel --outdir /dist . \
 && python -m pip wheel --no-cache-dir --wheel-dir /wheels /dist/*.whl

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="hpactl" \
      org.opencontainers.image.description="Drop-in replacement for the Kubernetes HorizontalPodAutoscaler controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1
COPY --from=build /wheels /wheels
RUN python -m pip install --no-index --find-links=/wheels hpactl \
 && rm -rf /wheels \
 && python -m compileall -q "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["hpactl", "run"]
