# syntax=docker/dockerfile:1
# The rocketkube image: one image for `rocketkube namesrv`, `rocketkube broker` and
# `rocketkube operator` (`make image`; tests/image/ checks the rules below).
#
# - builder: compiles the wheel, compiled modules included (hatch_build.py), and fetches the
#   wheels of its dependencies (the operator extra; not spark). The build fails if the wheel
#   lacks a compiled module for any .pyx source.
# - final: the same slim Python, the wheels installed into /opt/rocketkube from the builder
#   (bind-mounted, so no layer keeps them), no source tree, no compiler. VERSION must be the
#   package's version (pyproject.toml; `make image` passes it): the install pins it.
# - runs as the non-root user 10001 (the operator's pods ask for it: runAsUser, fsGroup) on
#   a read-only root filesystem: everything written goes under /var/lib/rocketkube (HOME:
#   a broker's default store, a name server's default kvConfig.json; the volume a pod
#   mounts there) or /tmp (TMPDIR); logs go to stderr. Both are volumes, so
#   `docker run --read-only` works as it is.
# - PID 1 is tini, which forwards SIGTERM and reaps children. A pod whose `command` is
#   `rocketkube` (as the operator renders them) runs rocketkube itself as PID 1: its
#   servers and the operator handle SIGTERM themselves and stop cleanly.
#
#   docker run --read-only rocketkube/rocketkube:0.1.0 namesrv
#   docker run --read-only rocketkube/rocketkube:0.1.0 broker -n namesrv:9876
#   docker run rocketkube/rocketkube:0.1.0 operator --print-crds

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml hatch_build.py README.md ./
COPY common/ common/
COPY namesrv/ namesrv/
COPY broker/ broker/
COPY client/ client/
COPY bench/ bench/
COPY operator/ operator/
COPY spark/ spark/
COPY launcher/ launcher/
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[operator]" \
    && python -c "import glob, sys, zipfile; \
names = zipfile.ZipFile(glob.glob('/wheels/rocketkube-*.whl')[0]).namelist(); \
compiled = sum(n.endswith('.so') for n in names); sources = sum(n.endswith('.pyx') for n in names); \
sys.exit(0 if compiled == sources else f'{compiled} of {sources} compiled modules built')"

FROM ${PYTHON_IMAGE}
ARG PYTHON_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="rocketkube" \
      org.opencontainers.image.description="A RocketMQ-compatible messaging system in Python: name server, broker and Kubernetes operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 rocketkube \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/rocketkube \
        --no-create-home --shell /usr/sbin/nologin rocketkube \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/rocketkube
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m venv --without-pip /opt/rocketkube \
    && pip --python /opt/rocketkube/bin/python install --no-cache-dir --no-index \
        --find-links /wheels "rocketkube[operator]==${VERSION}"
ENV PATH=/opt/rocketkube/bin:$PATH \
    HOME=/var/lib/rocketkube \
    TMPDIR=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /var/lib/rocketkube
VOLUME ["/var/lib/rocketkube", "/tmp"]
# name server 9876 (http 9877); broker 10911, replication 10912, http 10914
EXPOSE 9876 9877 10911 10912 10914
ENTRYPOINT ["/usr/bin/tini", "--", "rocketkube"]
CMD ["--help"]
