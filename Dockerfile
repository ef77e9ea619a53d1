# Lahar's image: one image for every component (`lahar serve`, `lahar controller`, `lahar webhook`).
# Built in two stages so the runtime image carries the installed package and no build tooling;
# runs as a fixed non-root user so it works under runAsNonRoot and a read-only root filesystem
# (the webhook writes its serving key under /tmp: mount an emptyDir there).
# The base is pinned to the Python the test suite runs on (3.11.7, Debian bookworm); moving the pin
# is a deliberate change, tested like any other. No registry is reachable from the build machines,
# so the pin is by tag, not digest.
FROM python:3.11.7-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11.7-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
# Nothing installs packages at run time: the installers leave the final image.
RUN python -m pip uninstall --yes --no-cache-dir pip setuptools wheel
# The default policy (manifests mount their ConfigMap over it); `policy/` links to this folder.
COPY manifests/base/policy /etc/lahar/policy
USER 65532:65532
ENTRYPOINT ["lahar"]
CMD ["--help"]
