# syntax=docker/dockerfile:1
# The seglog sidecar's image: `seglog compactor run --config /etc/seglog/compactor.yaml`.
# Built from the repository root:  docker build -t seglog .
FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A virtualenv that the runtime stage copies whole: no compilers or build files in the final image.
RUN python -m venv /opt/seglog
WORKDIR /src
COPY pyproject.toml README.md ./
COPY seglog/ seglog/
COPY indexer/ indexer/
COPY sink/ sink/
COPY source/ source/
COPY compactor/ compactor/
COPY conf/ conf/
# The sidecar's extra: the storage core and the scheduler, not Spark (pyspark is ~400 MB).
RUN /opt/seglog/bin/pip install --no-compile ".[sidecar]" \
 && /opt/seglog/bin/python -c "import seglog.compactor.service, seglog.indexer.log, seglog.conf"

FROM python:3.11-slim

# The user the Helm chart runs as (podSecurityContext.runAsUser / runAsGroup in helm/values.yaml).
RUN groupadd --system --gid 10001 seglog \
 && useradd --system --uid 10001 --gid seglog --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin seglog \
 && mkdir -p /etc/seglog /data \
 && chown seglog:seglog /data

COPY --from=build /opt/seglog /opt/seglog
COPY conf/compactor.yaml /etc/seglog/compactor.yaml

# Read-only root filesystem in the pod: no .pyc writes; /tmp is the chart's emptyDir.
ENV PATH=/opt/seglog/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

USER 10001:10001
WORKDIR /data
EXPOSE 9400
ENTRYPOINT ["seglog", "compactor", "run"]
CMD ["--config", "/etc/seglog/compactor.yaml"]
