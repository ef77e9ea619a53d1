# Lahar's image: one image for every component (`lahar serve`, `lahar controller`, `lahar webhook`).
# Built in two stages so the runtime image carries the installed package and no build tooling;
# runs as a fixed non-root user so it works under runAsNonRoot and a read-only root filesystem.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
COPY policy /etc/lahar/policy
USER 65532:65532
ENTRYPOINT ["lahar"]
CMD ["--help"]
