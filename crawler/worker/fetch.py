"""One page fetched through Scrapy's own downloader and middlewares, for ``crawler extract URL`` and
``crawler rules try SITE URL`` (as ``scrapy fetch`` does): the page a command shows is the page the crawl
would get.

What the fetch goes through, as a crawl does: the network guard (:mod:`crawler.worker.netguard`: no
loopback, private or link-local address unless the host is one of ``private_domains``), robots.txt read
by Scrapy's parser (Protego) unless asked not to, redirects (at most ``REDIRECT_MAX_TIMES``, each one
through the guard and robots.txt again), the size limit after decompression (``DOWNLOAD_MAXSIZE``), one
timeout per request; with the rule's headers when a rule is given. No retries: a command reports what
failed, at once.

Scrapy's reactor runs once per process, so :func:`fetch` is called at most once per process (each
command is a process).
"""

from __future__ import annotations

import dataclasses
import http.client
import ipaddress
import logging
import signal
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.http import Response as ScrapyResponse
from scrapy.settings import BaseSettings
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.defer import CancelledError
from twisted.internet.error import ConnectError, ConnectionRefusedError, DNSLookupError, TimeoutError
from twisted.python.failure import Failure

from crawler import settings as defaults
from crawler.commandline import suggest, url_meant
from crawler.config import Config
from crawler.errors import (
    BlockedAddressError,
    FetchError,
    HttpStatusError,
    HungUp,
    InputError,
    Terminated,
    redacted,
)
from crawler.threads import STOP_SIGNALS, leave_the_terminal
from crawler.worker.download import STOP_DOWNLOADS, connection_lost, undecompressed, what_to_check
from crawler.worker.netguard import (
    BlockedRequest,
    UnfollowedRedirect,
    blocked_by_guard,
    redirect_target,
    unfollowed_redirect,
)
from crawler.worker.robots import ROBOTS_REFUSAL, robots_agent

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "ROBOTS_HINT",
    "Response",
    "SignalledProcess",
    "check_url",
    "fetch",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = float(defaults.DOWNLOAD_TIMEOUT)
DEFAULT_MAX_BYTES = defaults.DOWNLOAD_MAXSIZE
# How the error of a page robots.txt disallows ends when the caller says nothing else (`crawler extract`).
ROBOTS_HINT = "pass --ignore-robots to fetch it anyway"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Loggers held back while a command fetches: their errors are reported as one line by the command instead.
_QUIET_LOGGERS = ("scrapy", "twisted", "py.warnings", "protego", "crawler.worker.robots")


@dataclass(frozen=True, slots=True)
class Response:
    """A fetched page: the final URL after redirects, its status, Content-Type and decompressed body."""

    url: str
    status: int
    content_type: str | None
    body: bytes
    redirects: tuple[str, ...] = ()
    also: Mapping[str, Response | None] = dataclasses.field(default_factory=dict)
    followed: Mapping[str, Response | None] = dataclasses.field(default_factory=dict)


def check_url(url: str) -> str:
    """``url`` without surrounding white space when it is an http(s) URL that can be fetched;
    :class:`InputError` saying what is wrong with it otherwise (its credentials, if any, never shown)."""
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError when out of range
    except ValueError as exc:
        raise InputError(f"invalid URL {redacted(url)!r}: {exc}") from None
    problem = None
    scheme = parts.scheme.lower()
    meant = url_meant(url)
    if meant is not None:
        problem = (
            f"no scheme: only http:// and https:// URLs can be fetched; did you mean {redacted(meant)!r}?"
        )
    elif scheme not in _DEFAULT_PORTS:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        problem = f"{shown}: only http:// and https:// URLs can be fetched"
    elif not parts.hostname:
        problem = "no host name"
    elif parts.username is not None or parts.password is not None:
        problem = "credentials in the URL are not supported (they would be sent in clear)"
    elif port == 0:
        problem = "port 0"
    if problem is not None:
        raise InputError(f"invalid URL {redacted(url)!r}: {problem}")
    return url


class SignalledProcess(CrawlerProcess):
    """Scrapy's process, remembering whether a shutdown signal (Ctrl-C, SIGTERM, SIGHUP) stopped it, and
    which: one that comes while the crawl opens finds the engine not running yet, so the reactor stops without
    the spider's close and its "shutdown" finish reason. The signal cancels the downloads under way
    (:data:`~crawler.worker.download.STOP_DOWNLOADS`): Scrapy's clean stop would wait for them, up to
    their timeout; then :meth:`stopping` is told how many were cancelled."""

    interrupted = False
    signum: int | None = None

    def _signal_shutdown(self, signum: int, _: Any) -> None:
        from twisted.internet import reactor  # noqa: PLC0415 - the reactor Scrapy installed

        self.interrupted = True
        self.signum = signum
        if signum == signal.SIGHUP:
            leave_the_terminal()
        super()._signal_shutdown(signum, _)
        # A closing terminal's hangup comes twice (from the kernel and from its shell): it is no second
        # stop signal, which forces an unclean stop.
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        reactor.callFromThread(self._stop_downloads)

    @staticmethod
    def _log_shutdown(signum: int) -> None:
        """Scrapy's line, without the space its template ends with; SIGHUP named as the terminal closing."""
        if signum != signal.SIGHUP:
            logger.info(
                "Received %s, shutting down gracefully; send it again to force an unclean shutdown",
                signal.Signals(signum).name,
            )
            return
        logger.info("Received SIGHUP (the terminal closed), shutting down gracefully as on SIGTERM")

    def _setup_reactor(self, install_signal_handlers: bool) -> None:
        """Scrapy's, and SIGHUP taken as its shutdown signals are, once the reactor runs."""
        from twisted.internet import reactor  # noqa: PLC0415 - the reactor Scrapy installed

        def take_hangup() -> None:
            signal.signal(signal.SIGHUP, self._signal_shutdown)

        super()._setup_reactor(install_signal_handlers)
        if install_signal_handlers:
            reactor.callWhenRunning(take_hangup)

    def start(self, stop_after_crawl: bool = True, install_signal_handlers: bool = True) -> None:
        """Scrapy's start, the handlers of the stop signals it replaces put back once it returns: Scrapy's
        own, left in place, asks its stopped reactor to stop, and a Ctrl-C or SIGTERM after the crawl (the
        command's summary, Redis stopping) was dropped."""
        handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
        try:
            super().start(stop_after_crawl=stop_after_crawl, install_signal_handlers=install_signal_handlers)
        finally:
            for signum, handler in handlers.items():
                if handler is not None:
                    signal.signal(signum, handler)

    def _stop_downloads(self) -> None:
        cancelled = 0
        for crawler in self.crawlers:
            for _, answer in crawler.signals.send_catch_log(STOP_DOWNLOADS):
                if isinstance(answer, int):
                    cancelled += answer
        self.stopping(cancelled)

    def stopping(self, cancelled: int) -> None:
        """Called as a stop signal came, with the number of downloads it cancelled: a one-page fetch says
        nothing (its command says it was interrupted)."""

    def stopped(self) -> KeyboardInterrupt:
        """What to raise once stopped: :class:`Terminated` for SIGTERM, :class:`HungUp` for SIGHUP, else
        KeyboardInterrupt."""
        if self.signum == signal.SIGHUP:
            return HungUp()
        return Terminated() if self.signum == signal.SIGTERM else KeyboardInterrupt()


def fetch(
    url: str,
    *,
    also: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    obey_robots: bool = True,
    headers: Mapping[str, str] | None = None,
    private_domains: Sequence[str] = (),
    proxy: str | None = None,
    config: Config | None = None,
    robots_hint: str | None = None,
    private_hint: Callable[[str], str] | None = None,
    follow: Callable[[Response], Sequence[str]] | None = None,
) -> Response:
    """GET ``url`` through Scrapy (see the module docstring); :class:`InputError` for a bad URL,
    :class:`FetchError` (:class:`BlockedAddressError` for a refused address) when it cannot be fetched.
    Hosts of ``private_domains`` may resolve to private addresses (a rule's ``allow_private_addresses``);
    ``proxy`` (a URL, credentials and all) is the proxy to go through; ``robots_hint`` ends the error of
    a page robots.txt disallows (what the command's user can do; :data:`ROBOTS_HINT` when None),
    ``private_hint(host)`` that of a host refused on a private address (else the keys of a rule and of
    ``crawler extract``). The URLs of ``also`` (a site's robots.txt, say) are fetched after the page, in
    the same process, without robots.txt's say: each one's :class:`Response` is in the page's ``also``
    (None when it failed or answered an error status). The URLs ``follow`` names on the page's response
    are fetched too, robots.txt obeyed, each one's :class:`Response` (or None) in the page's
    ``followed``."""
    url = check_url(url)
    config = config or Config.from_env()
    settings = config.settings(
        {
            # Scrapy's own scheduler, no pipelines, none of the worker's Redis plug-ins: one page, here.
            "SCHEDULER": "scrapy.core.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter",
            "STATS_CLASS": "scrapy.statscollectors.MemoryStatsCollector",
            "ITEM_PIPELINES": {},
            "EXTENSIONS": {"scrapy.extensions.logstats.LogStats": None},
            "SPIDER_MIDDLEWARES": {"crawler.worker.leaseack.LeaseAckMiddleware": None},
            "DOWNLOADER_MIDDLEWARES": {
                "crawler.worker.netguard.NetworkGuardMiddleware": 50,
                "crawler.worker.netguard.UnfollowedRedirectMiddleware": 610,
                "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware": None,
                "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
                "crawler.worker.robots.AgentRobotsTxtMiddleware": 100,
                "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
                "crawler.worker.compression.WholeDecompressionMiddleware": 590,
            },
            "NETGUARD_PRIVATE_DOMAINS": [domain.lower() for domain in private_domains],
            "ROBOTSTXT_OBEY": obey_robots,
            "RETRY_ENABLED": False,
            "AUTOTHROTTLE_ENABLED": False,
            "DOWNLOAD_TIMEOUT": timeout,
            "DOWNLOAD_MAXSIZE": max_bytes,
            "DOWNLOAD_WARNSIZE": 0,
            "LOG_ENABLED": False,
            "LOG_INSTALL_ROOT_HANDLER": False,
        }
    )
    outcome: dict[str, Any] = {}
    # A stop (Ctrl-C, SIGTERM) while the crawl opens, before Scrapy's handlers take the signals, fails it.
    failures: list[Failure] = []
    with _quiet():
        process = SignalledProcess(settings)
        process.crawl(
            _OnePage,
            url=url,
            also=tuple(also),
            headers=dict(headers or {}),
            proxy=proxy,
            outcome=outcome,
            follow=follow,
        ).addErrback(failures.append)
        process.start()
    if process.interrupted:
        raise process.stopped()  # the fetch it cut short is no failure of the page
    if failures and isinstance(failures[0].value, KeyboardInterrupt):
        failures[0].raiseException()
    if "response" in outcome:
        response: Response = outcome["response"]
        return dataclasses.replace(
            response, also={extra: outcome.get(extra) for extra in also}, followed=outcome.get("followed", {})
        )
    failure = outcome.get("failure")
    if failure is None:
        why = f": {failures[0].getErrorMessage()}" if failures else ""
        raise FetchError(f"fetching {url} gave no response (the crawl stopped early{why})", url=url)
    raise _error(
        url,
        failure,
        timeout=timeout,
        max_bytes=max_bytes,
        settings=settings,
        robots_hint=robots_hint or ROBOTS_HINT,
        private_hint=private_hint,
        proxy=proxy,
    )


class _OnePage(Spider):
    """Fetches its one URL and keeps the response, or the failure, in ``outcome``."""

    name = "fetch"

    def __init__(
        self,
        *,
        url: str,
        also: tuple[str, ...],
        headers: dict[str, str],
        proxy: str | None,
        outcome: dict[str, Any],
        follow: Callable[[Response], Sequence[str]] | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.follow = follow
        self.url = url
        self.also = also
        self.request_headers = headers
        self.proxy = proxy
        self.outcome = outcome

    async def start(self) -> AsyncIterator[Request]:
        yield Request(
            self.url,
            headers=self.request_headers or None,
            callback=self.keep,
            errback=self.failed,
            dont_filter=True,
            meta={"proxy": self.proxy} if self.proxy else {},
        )

    def keep(self, response: ScrapyResponse) -> Iterator[Any]:
        kept = self.outcome["response"] = _kept(response)
        followed: dict[str, Response | None] = self.outcome.setdefault("followed", {})
        for link in self.follow(kept) if self.follow is not None else ():
            followed[link] = None
            yield Request(
                link,
                headers=self.request_headers or None,
                callback=self.keep_followed,
                dont_filter=True,
                meta={"followed": link, **({"proxy": self.proxy} if self.proxy else {})},
            )
        for extra in self.also:
            yield Request(
                extra,
                headers=self.request_headers or None,
                callback=self.keep_also,
                errback=self.failed_also,
                dont_filter=True,
                meta={
                    "dont_obey_robotstxt": True,
                    "also": extra,
                    **({"proxy": self.proxy} if self.proxy else {}),
                },
            )

    def keep_followed(self, response: ScrapyResponse) -> Iterator[Any]:
        self.outcome["followed"][response.meta["followed"]] = _kept(response)
        yield from ()

    def keep_also(self, response: ScrapyResponse) -> Iterator[Any]:
        self.outcome[response.meta["also"]] = _kept(response)
        yield from ()

    def failed(self, failure: Failure) -> None:
        self.outcome["failure"] = failure

    def failed_also(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        if isinstance(request, Request):
            self.outcome[request.meta["also"]] = None


def _kept(response: ScrapyResponse) -> Response:
    """What a command keeps of a Scrapy response."""
    content_type = response.headers.get(b"Content-Type")
    return Response(
        url=response.url,
        status=response.status,
        content_type=content_type.decode("latin-1") if content_type else None,
        body=response.body,
        redirects=tuple(response.meta.get("redirect_urls", ())),
    )


def _error(
    url: str,
    failure: Failure,
    *,
    timeout: float,
    max_bytes: int,
    settings: BaseSettings,
    robots_hint: str,
    private_hint: Callable[[str], str] | None,
    proxy: str | None,
) -> FetchError:
    """The one-line error of a fetch that failed (through ``proxy``, when given), saying what to check."""
    error = failure.value
    shown_proxy = None if proxy is None else redacted(proxy)
    refusal = _refusal(failure, url)
    if refusal is not None:
        refused, reason = refusal
        how = (
            private_hint(urllib.parse.urlsplit(refused).hostname or "")
            if private_hint is not None
            else "loopback, private and link-local addresses are fetched only when asked:"
            " `allow_private_addresses: true` in the site's rule (crawls and"
            f" `{suggest('rules try')}`), --allow-private for `{suggest('extract')}`"
        )
        return BlockedAddressError(f"refusing to fetch {refused}: {reason}; {how}", url=refused)
    if isinstance(error, HttpError):
        response = error.response
        redirected = redirect_target(response)
        unfollowed = unfollowed_redirect(response, settings.getint("URLLENGTH_LIMIT"))
        if redirected is not None or unfollowed is not None:
            shown = redirected if unfollowed is None else unfollowed.target
            problem = _url_problem(redirected, unfollowed)
            return FetchError(
                f"{response.url} redirected to {shown!r}, which cannot be fetched: {problem}",
                url=response.url,
            )
        origin = response.meta.get("redirect_urls", [url])[0]
        after = f" (redirected from {origin})" if origin != response.url else ""
        reason = http.client.responses.get(response.status, "")
        return HttpStatusError(
            f"HTTP {response.status} {reason} for {response.url}{after}",
            url=response.url,
            status=response.status,
        )
    if isinstance(error, IgnoreRequest):
        message = str(error)
        if message.startswith(ROBOTS_REFUSAL):
            target = getattr(failure, "request", None)
            refused = target.url if isinstance(target, Request) else url
            origin = _origin(refused)
            agent = robots_agent(target if isinstance(target, Request) else Request(url), settings)
            return FetchError(
                f"robots.txt of {origin} disallows {refused} for user agent {agent!r}; {robots_hint}",
                url=refused,
            )
        if message.startswith("max redirections reached"):
            redirects = settings.getint("REDIRECT_MAX_TIMES")
            return FetchError(f"too many redirects: more than {redirects}, starting at {url}", url=url)
        if "DOWNLOAD_MAXSIZE" in message:
            return FetchError(
                f"response of {url} is larger than the limit of {max_bytes:,} bytes (after decompression);"
                " raise the limit with --max-bytes if the page is wanted",
                url=url,
            )
        return FetchError(f"fetching {url} was refused: {message}", url=url)
    if isinstance(error, CancelledError | DownloadCancelledError):
        return FetchError(
            f"response of {url} is larger than the limit of {max_bytes:,} bytes;"
            " raise the limit with --max-bytes if the page is wanted",
            url=url,
        )
    if isinstance(error, TimeoutError | DownloadTimeoutError):
        via, running = (
            ("", "the server runs and this machine reaches it")
            if shown_proxy is None
            else (
                f" through the proxy {shown_proxy}",
                "the proxy and the server run and this machine reaches the proxy",
            )
        )
        return FetchError(
            f"timed out after {timeout:g} s fetching {url}{via}: no answer in that time; check that"
            f" {running}, or give a slow server more time with --timeout",
            url=url,
        )
    if isinstance(error, DNSLookupError | CannotResolveHostError):
        host = urllib.parse.urlsplit(url).hostname
        said = str(error).rstrip(".")
        return FetchError(
            f"cannot resolve host {host!r} of {url}: {said}; check the host name in the URL, and that this"
            " machine reaches its DNS server",
            url=url,
        )
    if isinstance(error, ConnectError | DownloadConnectionRefusedError):
        parts = urllib.parse.urlsplit(url if proxy is None else proxy)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 80)
        where = parts.hostname if proxy is None else f"the proxy {parts.hostname}"
        said = (
            "connection refused"
            if isinstance(error, DownloadConnectionRefusedError | ConnectionRefusedError)
            else str(error).rstrip(".")
        )
        return FetchError(
            f"cannot connect to {where} port {port} for {url}: {said}: {what_to_check(error, shown_proxy)}",
            url=url,
        )
    said = connection_lost(error) or undecompressed(error) or failure.getErrorMessage()
    check = what_to_check(error, shown_proxy)
    return FetchError(
        f"fetching {url} failed: " + (f"{said.rstrip('.')}; {check}" if check else said), url=url
    )


def _refusal(failure: Failure, url: str) -> tuple[str, str] | None:
    """The URL the network guard refused and why, when it did (an IP literal, or a name resolved to one)."""
    error = failure.value
    if isinstance(error, BlockedRequest):
        return error.url, error.reason
    blocked = blocked_by_guard(failure)
    if blocked is None:
        return None
    request = getattr(failure, "request", None)
    return (request.url if isinstance(request, Request) else url), blocked.reason


def _url_problem(url: str | None, unfollowed: UnfollowedRedirect | None) -> str:
    try:
        if url is not None:
            check_url(url)
    except InputError as exc:
        return str(exc).split(": ", 1)[-1]
    return "Scrapy did not follow it" if unfollowed is None else unfollowed.why


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    port = "" if parts.port in (None, _DEFAULT_PORTS.get(parts.scheme)) else f":{parts.port}"
    return f"{parts.scheme}://{host}{port}"


@contextmanager
def _quiet() -> Iterator[None]:
    """Scrapy's and Twisted's log held back unless the command runs with --verbose (root at DEBUG): what
    failed is reported as one line by the command instead."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        yield
        return
    quiet = _QuietFilter()
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


class _QuietFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(_QUIET_LOGGERS)
