# Lahar's image: one image for every component (`lahar serve`, `lahar controller`, `lahar webhook`).
# Built in two stages: the first installs Lahar into a virtual environment at /opt/lahar, the
# second copies only that environment, so the runtime image carries the installed package and no
# build tooling. It runs as a fixed non-root user, so it works under runAsNonRoot and a read-only
# root filesystem (the webhook writes its serving key under /tmp: mount an emptyDir there).
#
# BASE is any Debian-based image with Python 3.11 and its venv module at `python3`. The default is
# the public image of the Python the test suite runs on (3.11.7, Debian bookworm). Where no
# registry is reachable, `make image` builds an
# equivalent base from Debian's packages (python3 and python3-venv of bookworm) and passes it here:
#   buildah bud --build-arg BASE=localhost/lahar-base:bookworm -t lahar:0.1.0 .
# To pin the public base by digest, pass it the same way:
#   --build-arg BASE=python:3.11.7-slim-bookworm@sha256:<digest your registry reports>
ARG BASE=python:3.11.7-slim-bookworm

FROM ${BASE} AS build
RUN python3 -m venv /opt/lahar
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
# Behind a TLS-intercepting proxy, pass its CA bundle as the build secret `ca` (only this step
# sees it; it is not stored in the image): `--secret id=ca,src=/etc/ssl/certs/ca-certificates.crt`.
# The installers leave the environment once Lahar is in it: nothing installs packages at run time.
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && /opt/lahar/bin/pip install --no-cache-dir --disable-pip-version-check . \
    && /opt/lahar/bin/python -m pip uninstall --yes --no-cache-dir pip setuptools wheel

FROM ${BASE}
ENV PATH=/opt/lahar/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/lahar /opt/lahar
# The base's own installer goes too, where it has one (the public image's pip).
RUN if python3 -m pip --version >/dev/null 2>&1; then \
        python3 -m pip uninstall --yes --no-cache-dir pip setuptools wheel; \
    fi
# The default policy (manifests mount their ConfigMap over it); `policy/` links to this folder.
COPY manifests/base/policy /etc/lahar/policy
USER 65532:65532
ENTRYPOINT ["lahar"]
CMD ["--help"]
