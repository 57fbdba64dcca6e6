# The one image of the crawler: `crawler schedule` and `crawler worker` (docker-compose.yml), and any other
# `crawler` command (`docker compose run --rm crawler ...`). docs/operations.md says how to run it.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The project, installed as a package (the `crawler` console script of pyproject.toml), every dependency
# at the version constraints.txt pins (a build is reproducible); each has a manylinux wheel for CPython
# 3.11, so no compiler is needed. The sources go once installed.
COPY pyproject.toml README.md constraints.txt /tmp/src/
COPY crawler /tmp/src/crawler
COPY extractors /tmp/src/extractors
RUN pip install --constraint /tmp/src/constraints.txt /tmp/src && rm -rf /tmp/src

# A non-root user owns the data folder only: the code and the rules are read-only to it.
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/crawler crawler \
    && mkdir -p /app/data /app/rules \
    && chown crawler:crawler /app/data

WORKDIR /app
# `scrapy crawl sites` and `scrapy list` work from /app; the repository's rules (an example for a real
# news site) are a default that the compose file replaces by mounting ./rules on /app/rules, read-only.
COPY scrapy.cfg ./
COPY rules/ ./rules/

# Where the CLI looks (crawler/config.py): the rules folder, and the worker's
# own data (the spool used while MongoDB is unreachable; the embedded Redis and SQLite stores when
# REDIS_URL and MONGO_URI are unset). Named volumes mounted on /app/data take its owner from the image.
ENV CRAWLER_RULES_DIR=/app/rules \
    CRAWLER_DATA_DIR=/app/data

USER crawler

# No HEALTHCHECK: `crawler status` reports the service as a whole (workers by their heartbeats in Redis),
# not one container.
CMD ["crawler", "worker"]
