"""URLs in messages (``MONGO_URI``, ``REDIS_URL``, proxies, start URLs, URLs to fetch): one shape from one
function, ``crawler.errors.redacted``, and never a password."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from crawlsite import COMMAND_TIMEOUT

from crawler.errors import InputError, StoreSettingError, redacted
from crawler.redisio.connection import RedisUnavailableError, resolve_redis_url
from crawler.rules.access import AccessError, parse_proxy
from crawler.store.mongo import check_uri
from crawler.worker.fetch import check_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://user:s3cret@db.test:6379/0", "redis://***@db.test:6379/0"),
        ("redis://:s3cret@db.test/0", "redis://***@db.test/0"),
        (
            "mongodb://crawler:s3cret@h1:27017,h2/news?replicaSet=rs0",
            "mongodb://***@h1:27017,h2/news?replicaSet=rs0",
        ),
        ("http://s3cret-api-key:@proxy.test:8011", "http://***@proxy.test:8011"),
        ("https://s3cret-token@git.test/a/b", "https://***@git.test/a/b"),
        ("http://user:s3c@ret@site.test/a", "http://***@site.test/a"),
        ("http://user:s3c/ret@site.test/a", "http://***@site.test/a"),
        ("http:/user:s3cret@site.test/a", "***@site.test/a"),
        ("redis://user:s3c?ret@db.test:6379/0", "redis://***@db.test:6379/0"),
        ("redis://:s3c#ret@db.test", "redis://***@db.test"),
        ("redis://user:s3c?r#e@t@db.test/0?db=1", "redis://***@db.test/0?db=1"),
        ("redis://user:s3c/r?et@db.test/0", "redis://***@db.test/0"),
        ("redis://user:s3c?a=b@db.test/0", "redis://***@db.test/0"),
        ("redis://user:1234?s3c@db.test/0", "redis://***@db.test/0"),
        ("https://site.test:8080?next=a@b.test&page=1", "https://site.test:8080?next=a@b.test&page=1"),
        ("unix://user:s3c?ret@/run/redis.sock", "unix://***@/run/redis.sock"),
        ("mongodb://crawler:s3c?ret@h1:27017,h2/news", "mongodb://***@h1:27017,h2/news"),
        ("mongodb://h1:27017,h2/news?note=a@b", "mongodb://h1:27017,h2/news?note=a@b"),
        ("user:s3cret@proxy.test:3128", "***@proxy.test:3128"),
        ("redis://db.test/0?password=s3cret&db=1", "redis://db.test/0?password=***&db=1"),
        (
            "https://site.test/a?page=2&api_key=s3cret#token=s3cret",
            "https://site.test/a?page=2&api_key=***#token=***",
        ),
        ("https://site.test/@someone/post?page=2", "https://site.test/@someone/post?page=2"),
        (
            "https://site.test/s?author=bob&design=x&keyword=solar&passage=2&tokens=5&keys=a&sidebar=1",
            "https://site.test/s?author=bob&design=x&keyword=solar&passage=2&tokens=5&keys=a&sidebar=1",
        ),
        (
            "https://site.test/a?Password=s3c&PWD=s3c&Pass=s3c&Key=s3c&SID=s3c&sig=s3c&auth=s3c&page=2",
            "https://site.test/a?Password=***&PWD=***&Pass=***&Key=***&SID=***&sig=***&auth=***&page=2",
        ),
        (
            "https://site.test/a?refresh_token=s3c&x-api-key=s3c&aws_secret=s3c&X-Amz-Signature=s3c&q=1",
            "https://site.test/a?refresh_token=***&x-api-key=***&aws_secret=***&X-Amz-Signature=***&q=1",
        ),
        (
            "https://site.test/a;jsessionid=s3c?sessionid=s3c&client_secret=s3c&apikey=s3c#access_token=s3c",
            "https://site.test/a;jsessionid=***?sessionid=***&client_secret=***&apikey=***#access_token=***",
        ),
        (
            "https://site.test/login?next=http://u:s3cret@evil.test/a&q=1",
            "https://site.test/login?next=http://***@evil.test/a&q=1",
        ),
        (
            "https://site.test/login?next=https%3A%2F%2Fu%3As3c%40ret%40evil.test%2Fa&q=1#to=ftp://s3c@f.test",
            "https://site.test/login?next=https%3A%2F%2F***%40evil.test%2Fa&q=1#to=ftp://***@f.test",
        ),
        (
            "https://site.test/next?to=http://evil.test/a@b&go=https%3A%2F%2Fevil.test%2Fa%40b",
            "https://site.test/next?to=http://evil.test/a@b&go=https%3A%2F%2Fevil.test%2Fa%40b",
        ),
        (
            "https://site.test/cb?code=s3c&state=xyz&id_token=s3c&auth_code=s3c&Code=s3c",
            "https://site.test/cb?code=***&state=xyz&id_token=***&auth_code=***&Code=***",
        ),
        ("http://[::1]:8080/a@b", "http://[::1]:8080/a@b"),
        ("localhost", "localhost"),
        ("", ""),
    ],
)
def test_a_url_is_shown_with_its_host_and_path_and_without_its_credentials(url: str, shown: str) -> None:
    assert redacted(url) == shown
    assert "s3c" not in redacted(url)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_every_caller_shows_a_url_with_credentials_the_same_way() -> None:
    port = _closed_port()
    messages = []
    with pytest.raises(RedisUnavailableError) as redis_error:
        resolve_redis_url(f"redis://alice:s3cret@127.0.0.1:{port}/0", Path("unused"))
    messages.append(str(redis_error.value))
    assert f"cannot reach Redis at redis://***@127.0.0.1:{port}/0 (REDIS_URL)" in messages[-1]
    with pytest.raises(StoreSettingError) as store_error:
        check_uri("http://alice:s3cret@db.test/news")
    messages.append(str(store_error.value))
    assert messages[-1].startswith("MONGO_URI is 'http://***@db.test/news': expected mongodb://")
    with pytest.raises(AccessError) as proxy_error:
        parse_proxy("socks5://alice:s3cret@10.0.0.1:1080")
    messages.append(str(proxy_error.value))
    assert messages[-1].startswith('"socks5://***@10.0.0.1:1080": SOCKS proxies are not supported')
    with pytest.raises(InputError) as fetch_error:
        check_url("https://alice:s3cret@site.test/a?page=2")
    messages.append(str(fetch_error.value))
    assert messages[-1].startswith("invalid URL 'https://***@site.test/a?page=2': credentials in the URL")
    assert not any("alice" in message or "s3cret" in message for message in messages), messages


@pytest.mark.parametrize(
    "url",
    [
        "redis://alice:s3c?ret@127.0.0.1:{port}/0",
        "redis://alice:s3c?a=b@127.0.0.1:{port}/0",
        "redis://alice:s3c#ret@127.0.0.1:{port}/0",
        "redis://alice:s3c@ret@127.0.0.1:{port}/0",
        "unix://alice:s3c?ret@/run/redis.sock",
        "redis://alice:1234?s3cret@127.0.0.1:{port}/0",
    ],
)
def test_a_redis_url_whose_password_holds_a_question_mark_a_hash_or_an_at_shows_none_of_it(url: str) -> None:
    """A password with an unencoded "?" or "#" makes an invalid URL for urlparse, which reads the rest as a
    query or a fragment: the URL was shown with its password, and redis-py's error ("Port could not be
    cast to integer value as 's3c'") or the query parameters refused showed pieces of it."""
    url = url.format(port=_closed_port())
    with pytest.raises(RedisUnavailableError) as error:
        resolve_redis_url(url, Path("unused"))
    said = str(error.value)
    assert "***@" in said and "REDIS_URL" in said, said
    assert not any(piece in said for piece in ("alice", "s3c", "ret", "a=b")), said
    if "@ret" not in url:
        assert "percent-encoded (? as %3F, # as %23, / as %2F)" in said, said


def test_a_worker_given_a_redis_url_whose_password_holds_a_question_mark_shows_none_of_it(
    tmp_path: Path,
) -> None:
    """`crawler worker` with such a REDIS_URL said "REDIS_URL 'redis://alice:s3c?ret@...' is not a Redis
    URL (Port could not be cast to integer value as 's3c')": the password twice."""
    env = {key: value for key, value in os.environ.items() if key not in ("MONGO_URI", "CRAWLER_COMMAND")}
    env.update(REDIS_URL="redis://alice:s3c?ret@127.0.0.1:6379/0", CRAWLER_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "REDIS_URL 'redis://***@127.0.0.1:6379/0' is not a Redis URL" in done.stderr, done.stderr
    assert "s3c" not in done.stderr + done.stdout and "alice" not in done.stderr + done.stdout, done.stderr


def test_a_workers_log_lines_show_urls_masked_and_a_line_whose_arguments_do_not_fit_raises_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The handler filter of a worker's log (crawler.worker.process) masks the secrets of the URLs a line
    names; a line whose arguments do not fit its format is left to the handler, which reports it as
    logging does, rather than raising where it was logged."""
    import logging

    from crawler.worker.process import _REDACTED

    handler = logging.StreamHandler()
    handler.addFilter(_REDACTED)
    logger = logging.getLogger("tests.redaction.worker")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("Gave up retrying <GET %s>", "https://site.test/feed?token=s3cret&page=2")
        logger.warning("bad %d", "not a number")
    finally:
        logger.removeHandler(handler)
    said = capsys.readouterr().err
    assert "Gave up retrying <GET https://site.test/feed?token=***&page=2>\n" in said, said
    assert "s3cret" not in said and "--- Logging error ---" in said, said


class _Unprintable:
    """An argument whose text cannot be made (a broken ``__str__``)."""

    def __str__(self) -> str:
        raise AttributeError("no name yet")


def test_a_workers_log_line_that_cannot_be_formatted_for_any_reason_raises_nothing_where_it_is_logged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The filter caught TypeError and ValueError only: a mapping without the key a line names
    (``%(site)s``: KeyError) or an argument whose ``__str__`` fails (AttributeError) raised out of the
    logging call (a handler's filter runs outside the handler's own error handling), where logging itself
    reports '--- Logging error ---' and goes on, and the lines after it are shown."""
    import logging

    from crawler.worker.process import _REDACTED

    handler = logging.StreamHandler()
    handler.addFilter(_REDACTED)
    logger = logging.getLogger("tests.redaction.worker.unformattable")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("site %(site)s", {"other": "news"})
        logger.warning("site %s", _Unprintable())
        logger.warning("then %s", "https://site.test/feed?token=s3cret")
    finally:
        logger.removeHandler(handler)
    said = capsys.readouterr().err
    assert said.count("--- Logging error ---") == 2, said
    assert "then https://site.test/feed?token=***\n" in said and "s3cret" not in said, said


def test_the_traceback_a_workers_log_line_shows_has_its_urls_masked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A line logged with its exception (Scrapy's 'Spider error processing <GET ...>', logger.exception)
    showed the message masked and the traceback after it as raised: an exception naming the URL
    requested gave its token away ('ValueError: no page at https://site.test/feed?token=s3cret')."""
    import logging

    from crawler.worker.process import _REDACTED

    handler = logging.StreamHandler()
    handler.addFilter(_REDACTED)
    logger = logging.getLogger("tests.redaction.worker.traceback")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise ValueError("no page at https://site.test/feed?token=s3cret")
        except ValueError:
            logger.exception("Spider error processing <GET %s>", "https://site.test/feed?token=s3cret")
    finally:
        logger.removeHandler(handler)
    said = capsys.readouterr().err
    assert "Spider error processing <GET https://site.test/feed?token=***>\nTraceback" in said, said
    assert "ValueError: no page at https://site.test/feed?token=***\n" in said, said
    assert "s3cret" not in said, said
