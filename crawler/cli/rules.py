"""``crawler rules check [PATH ...]``, ``crawler rules try SITE URL|FILE`` (a page, feed or sitemap) and
``crawler rules new SITE URL`` (a first rule drafted from a page of the site)."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import difflib
import json
import os
import re
import shlex
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawler.cli.options import rules_folder
from crawler.cli.pages import URL_RE, Page, decode_page, encoding_reason, read_page, run_algorithm, shown
from crawler.cli.terminal import printable, tell
from crawler.commandline import command_name, counted, did_you_mean, span, suggest
from crawler.config import Config
from crawler.discover.links import followed_links, page_links
from crawler.discover.topic import Relevance, Topic
from crawler.errors import CrawlerError, HttpStatusError, InputError, NotAListingError
from crawler.published import published_date
from crawler.rules import (
    RULE_SUFFIX,
    STANDARD_FIELDS,
    YAML_SUFFIXES,
    Rule,
    RuleError,
    RuleErrors,
    is_site_id,
    load_rule,
    load_rules,
    rule_file,
    rule_sites,
)
from crawler.rules.access import global_proxies
from crawler.rules.addresses import blocked_reason
from crawler.rules.api import ApiError, ApiItemsError, ApiPage, ApiRule, json_text
from crawler.rules.draft import (
    TITLE_SAMPLES,
    Draft,
    DraftError,
    NoArticleLinks,
    draft_feed_rule,
    draft_rule,
    guess_published,
    guess_title,
    rule_text,
)
from crawler.rules.errors import files_with_errors
from crawler.rules.errors import shown as shown_value
from crawler.rules.feeds import MAX_ENTRIES, Feed, FeedError, read_feed
from crawler.rules.gzipped import GZIP_MAGIC, gunzipped_start
from crawler.rules.model import DiscoverRule, ListingKind, SearchRule
from crawler.rules.sitemaps import NotASitemapError, Sitemap, SitemapError, read_sitemap
from crawler.rules.zones import zone_name
from crawler.settings import QREAD_ALGORITHM, SCHEDULE_TICK_SECONDS
from crawler.worker.pipelines.clean import clean_line
from extractors.documents import DocumentError, document_kind, read_document
from extractors.encoding import Decoded
from extractors.htmlparse import page_title, parse_html

__all__ = ["run_rules_check", "run_rules_new", "run_rules_try", "unfetched_seeds_problem"]

EXIT_OK = 0
# `crawler rules`: a rule file has errors.
EXIT_RULE_ERRORS = RuleError.exit_code


def run_rules_check(args: argparse.Namespace) -> int:
    """``crawler rules check``: every error of every rule file, one per line, then a summary. A folder
    without rule files is an input error (a note on stderr when other paths have some)."""
    paths = [_checked_path(path) for path in args.paths] or [
        rules_folder(
            Config.from_env().rules_dir,
            f"as PATH (`{command_name()} rules check DIR`), with --rules-dir DIR or with CRAWLER_RULES_DIR",
        )
    ]
    loaded: dict[str, Rule] = {}
    errors: list[RuleError] = []
    empty: list[str] = []
    for path in paths:
        if path.is_dir():
            ruleset = load_rules(path)
            rules, found = list(ruleset), ruleset.errors
            if not rules and not found:
                empty.append(repr(str(path)))
        else:
            try:
                rules, found = [load_rule(path)], ()
            except RuleErrors as exc:
                rules, found = [], exc.errors
        errors += found
        for rule in rules:
            other = loaded.get(rule.site)
            if other is not None and other.path.resolve() != rule.path.resolve():
                problem = f"site id {shown_value(rule.site)} is also the site of {other.path}"
                errors.append(RuleError(str(rule.path), "", problem, "one rule file per site id"))
            else:
                loaded[rule.site] = rule
    if empty and not loaded and not errors:
        raise InputError(
            f"no rule files in {', '.join(empty)}: a rule is a <site>{RULE_SUFFIX} file (docs/rules.md);"
            " give the folder that has them"
        )
    for folder in empty:
        tell("note", f"no rule files in {folder}")
    warnings = [warning for rule in loaded.values() for warning in _warnings(rule)]
    for line in (*errors, *warnings):
        print(printable(str(line)))
    summary = counted(len(loaded), "rule") + " ok"
    if errors:
        bad_files = len(files_with_errors(errors))
        summary += f", {counted(bad_files, 'file')} with {counted(len(errors), 'error')}"
    if warnings:
        summary += f", {counted(len(warnings), 'warning')}"
    print(summary)
    return EXIT_RULE_ERRORS if errors else EXIT_OK


def _checked_path(given: str) -> Path:
    """The rule file or folder ``given`` to ``rules check``, or the rule file of the site it names in the
    rules folder (``rules check guardian``, as ``temp`` and ``rules try`` take a site);
    :class:`InputError` naming the sites there when it is neither."""
    path = Path(given)
    if path.exists():
        return path
    folder = Config.from_env().rules_dir
    site_rule = folder / f"{given}{RULE_SUFFIX}"
    if is_site_id(given) and site_rule.exists():
        return site_rule
    sites = rule_sites(folder) if folder.is_dir() else []
    known = f"{folder}: {', '.join(sites)}" if sites else f"{folder}, which has none"
    raise InputError(
        f"no such rule file, folder or site: {given!r}{did_you_mean(given, sites)} (expected a rule file,"
        f" a folder of *{RULE_SUFFIX} rules, or the site id of a rule in {known})"
    )


def _warnings(rule: Rule) -> list[RuleError]:
    """The warnings of ``rule`` that ``rules check`` prints (they do not fail the check)."""
    return [
        *_schedule_warnings(rule),
        *_field_warnings(rule),
        *_site_warnings(rule),
        *_seed_warnings(rule),
        *_private_warnings(rule),
    ]


def _private_warnings(rule: Rule) -> list[RuleError]:
    """A warning for each domain of ``rule`` (or of its discover crawl) that is a loopback, private or
    reserved address, or a name of this machine (``localhost``), when the rule lacks
    ``allow_private_addresses: true``: the network guard refuses every request to it (unless
    CRAWLER_ALLOW_PRIVATE_NETWORKS, tests only, turns the guard off). Not an error: the rule loads, and
    its other domains may be public."""
    if rule.allow_private or Config.from_env().allow_private_networks:
        return []
    keyed = [("domains", domain) for domain in rule.domains]
    if rule.discover is not None:
        keyed += [("discover.domains", domain) for domain in rule.discover.domains]
    warnings = []
    for key, domain in keyed:
        reason = _private_reason(domain)
        if reason is None:
            continue
        warnings.append(
            RuleError(
                str(rule.path),
                key,
                f"warning: {shown_value(domain)} is {reason}, which the crawl refuses to fetch: every request"
                " to it fails",
                f"`allow_private_addresses: true` in {rule.path} for a site on this machine or an intranet,"
                " or the site's public host name",
            )
        )
    return warnings


def _private_reason(domain: str) -> str | None:
    """Why the network guard refuses ``domain`` (an IP address, or a name of this machine) whatever it
    resolves to; None for a host name, which only its resolution tells."""
    if domain == "localhost" or domain.endswith(".localhost"):
        return "a name of this machine (a loopback address)"
    try:
        return blocked_reason(domain)
    except ValueError:
        return None


def _schedule_warnings(rule: Rule) -> list[RuleError]:
    """A warning for a ``schedule.every`` or ``schedule.min`` shorter than the scheduler's tick
    (``SCHEDULE_TICK_SECONDS``): the scheduler looks once a tick, so such a period is one tick long."""
    warnings = []
    tick = span(SCHEDULE_TICK_SECONDS)
    for key, period in (("schedule.every", rule.every), ("schedule.min", rule.every_min)):
        if period is not None and period.total_seconds() < SCHEDULE_TICK_SECONDS:
            warnings.append(
                RuleError(
                    str(rule.path),
                    key,
                    f"warning: {span(period.total_seconds())} is shorter than the scheduler's tick,"
                    f" SCHEDULE_TICK_SECONDS ({tick}): its grabs would come once a tick",
                    f"{tick} or more",
                )
            )
    return warnings


# Names a rule's author gives a standard field by habit (another crawler's, a page's), each with that field.
_STANDARD_FIELD_HABITS = {
    "date": "published",
    "pubdate": "published",
    "publish_date": "published",
    "published_at": "published",
    "publication_date": "published",
    "headline": "title",
    "content": "body",
    "text": "body",
    "byline": "author",
}


def _field_warnings(rule: Rule) -> list[RuleError]:
    """A warning for each custom field of ``article.fields`` or ``api.fields`` whose name looks like a
    standard field's (``titel``, ``Author``, ``date``) when that mapping lacks the standard field: its
    values would go to ``fields``, and the article's title, body, date or author would be left to the
    page's fallbacks, or empty."""
    sections = {"article.fields": list(rule.fields), "api.fields": list(rule.api.fields) if rule.api else []}
    warnings = []
    for section, names in sections.items():
        for name in names:
            if name in STANDARD_FIELDS:
                continue
            close = difflib.get_close_matches(name.lower(), STANDARD_FIELDS, n=1, cutoff=0.8)
            standard = _STANDARD_FIELD_HABITS.get(name.lower()) or (close[0] if close else None)
            if standard is None or standard in names:
                continue
            warnings.append(
                RuleError(
                    str(rule.path),
                    f"{section}.{name}",
                    f"warning: {shown_value(name)} is a custom field, stored under fields.{name}, and"
                    f" {section} has no {standard}; did you mean {shown_value(standard)}?",
                    f"a standard field name: {', '.join(STANDARD_FIELDS)}",
                )
            )
    return warnings


def _site_warnings(rule: Rule) -> list[RuleError]:
    """A warning (in a RuleError's form, not counted as an error) for each site of a discover rule's
    ``topic.sites`` that names no rule file in the rule's folder: its stored articles would never be
    examples."""
    if rule.discover is None or not rule.discover.example_sites:
        return []
    folder = rule.path.parent
    sites = rule_sites(folder)
    warnings = []
    for site in rule.discover.example_sites:
        if site in sites:
            continue
        warnings.append(
            RuleError(
                str(rule.path),
                "discover.topic.sites",
                f"warning: no rule for site {shown_value(site)} in {folder}"
                + did_you_mean(site, sites, quote=shown_value),
                f"a site id of a rule file there: {', '.join(sites)}"
                if sites
                else f"a rule file in {folder}",
            )
        )
    return warnings


def _seed_warnings(rule: Rule) -> list[RuleError]:
    """A warning (in a RuleError's form) when a discover rule's budget is smaller than its seeds."""
    problem = unfetched_seeds_problem(rule.discover) if rule.discover is not None else None
    if problem is None:
        return []
    assert rule.discover is not None
    return [
        RuleError(
            str(rule.path),
            "discover.budget",
            f"warning: {problem}",
            f"a budget over {len(rule.discover.seeds)}, the seeds' pages and the pages their links lead to",
        )
    ]


def unfetched_seeds_problem(discover: DiscoverRule) -> str | None:
    """What becomes of the seeds past ``discover``'s budget, which a crawl never fetches, in words; None when
    the budget covers every seed."""
    unfetched = discover.unfetched_seeds()
    if not unfetched:
        return None
    head = f"budget {discover.budget} is smaller than the {len(discover.seeds)} seeds"
    if len(unfetched) == 1:
        return f"{head}: the last seed ({unfetched[0]}) is never fetched"
    return f"{head}: the last {len(unfetched)} seeds ({', '.join(unfetched)}) are never fetched"


@dataclass(frozen=True, slots=True)
class Trial:
    """What ``crawler rules try`` found on one page."""

    rule: Rule
    page: Page
    decoded: Decoded
    url: str
    search: SearchRule | None  # the rule's search when the page is a result page (results on any host)
    links: list[str]
    next_page: str | None
    fields: dict[str, str | None]
    title_fallback: str | None  # the page's own title the crawl stores when the rule's title finds nothing
    qread_body: str | None  # None when the rule's own body is long enough

    @property
    def body_from(self) -> str:
        return "qread" if self.rule.needs_qread(self.fields["body"]) else "rule"

    @property
    def body_note(self) -> str:
        body, minimum = self.fields["body"], self.rule.min_body_chars
        if body is None:
            return f"qRead: the rule gives no body (min_body_chars {minimum})"
        if self.body_from == "qread":
            return f"qRead: the rule's body has {len(body):,} characters < min_body_chars {minimum}"
        return f"the rule: {len(body):,} characters >= min_body_chars {minimum}"


def _access(rule: Rule, source: str) -> tuple[dict[str, str], str | None]:
    """The headers and proxy a crawl of ``rule`` would send a page with: the rule's headers, its first
    session's cookies and headers, its first proxy (else the first global one). A note on stderr says
    which session and proxy (by name and URL without credentials)."""
    headers = dict(rule.headers)
    if not URL_RE.match(source):
        return headers, None
    notes = []
    if rule.sessions:
        session = rule.sessions[0]
        if session.cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in session.cookies.items())
        headers.update(session.headers)
        notes.append(f"session {session.name}")
    config = Config.from_env()
    proxies = rule.proxies or tuple(global_proxies(config.proxies, config.proxy_file))
    if proxies:
        notes.append(f"proxy {proxies[0].id}")
    if notes:
        tell("note", f"fetching with {' and '.join(notes)}, as the crawl would")
    return headers, proxies[0].url if proxies else None


def _requested(rule: Rule, source: str) -> str:
    """``source`` as a crawl of ``rule`` requests it when it reads it as a search result page (a URL of
    its ``search.url``, or one no other key names of a rule without ``start_urls``): its query in
    ``search.encoding``, as the keywords are; else as given."""
    if rule.search is None or not URL_RE.match(source):
        return source
    listing = rule.listing_key(source)
    if listing == ("search", "search.url") or (listing is None and not rule.start_urls):
        return rule.search.requested(source)
    return source


def run_rules_try(args: argparse.Namespace) -> int:
    """``crawler rules try``: the links, next page and fields SITE's rule finds on one page."""
    candidate = Path(args.site)
    directory = Config.from_env().rules_dir
    if candidate.suffix in YAML_SUFFIXES and candidate.is_file():
        path = candidate
        if candidate.suffix != RULE_SUFFIX:
            renamed = shown_value(str(candidate.with_suffix(RULE_SUFFIX)), None)
            tell(
                "note",
                f"{candidate}: rule files end in {RULE_SUFFIX}: a rules folder does not read this one (rename"
                f" {shown_value(str(candidate), None)} to {renamed} in it)",
            )
    elif candidate.name != args.site:
        # A path (a site id has no folder in it): the file it names is missing, or a folder.
        sites = ", ".join(rule_sites(directory)) or "none"
        what = "it is a folder" if candidate.is_dir() else "no such file"
        raise InputError(
            f"no rule file {args.site!r}: {what} (SITE is the path of a rule file, or the id of a site"
            f" of {directory}: {sites})"
        )
    else:
        path = rule_file(directory, args.site.removesuffix(RULE_SUFFIX))
    try:
        rule = load_rule(path)
    except RuleErrors as exc:
        for error in exc.errors:
            tell("error", printable(str(error)))
        return exc.exit_code
    if args.url is not None and not URL_RE.match(args.url):
        raise InputError(f"--url {args.url!r} is not an http(s) URL")
    source = _requested(rule, args.source)
    headers, proxy = _access(rule, source)
    try:
        page = read_page(
            source,
            max_bytes=args.max_bytes,
            timeout=args.timeout,
            obey_robots=rule.obey_robots,
            headers=headers,
            private_domains=rule.known_domains if rule.allow_private else (),
            proxy=proxy,
            robots_hint=(
                f"its crawls are refused it too; `politeness: {{obey_robots: false}}` in {rule.path} reads it"
                " anyway, or give rules try the page saved as a file"
            ),
            private_hint=rule.private_refusal,
        )
    except HttpStatusError as exc:
        fix = _try_later(exc.status) or rule.named_fix(source)
        if fix is None:
            raise
        raise HttpStatusError(f"{exc}: {fix}", url=exc.url, status=exc.status) from None
    api_urls = rule.api.urls if rule.api else ()
    feed_url = (
        page.url or args.url or (rule.feeds or rule.sitemaps or api_urls or rule.start_urls or ("",))[0]
    )
    given = source if URL_RE.match(source) else args.url
    listing = rule.listing_key(given) if given else None
    if listing is not None and listing[0] != "search":
        _show_listing(rule, page, feed_url, *listing, args.format)
        return EXIT_OK
    if document_kind(page.data):
        _show_document(rule, page, args.format)
        return EXIT_OK
    if rule.api is not None and _is_json(page.data):
        try:
            found = rule.api.read(page.data, feed_url, rule.encoding)
        except ApiItemsError as exc:
            raise RuleError(
                str(rule.path),
                "api.items",
                f"{shown_value(rule.api.items.expression)} gives {exc.gives} on {page.source}, read as a page"
                " of the rule's API, not a list of items",
                f"the JMESPath of the page's list of items: {_item_lists(page.data, rule.encoding)}",
            ) from None
        except ApiError as exc:
            raise InputError(str(exc)) from None
        _show_api(rule, page, feed_url, found, args.format)
        return EXIT_OK
    sitemap = _as_sitemap(page, feed_url, rule)
    if sitemap is not None:
        _show_sitemap(rule, page, feed_url, sitemap, args.format)
        return EXIT_OK
    feed = _as_feed(page, feed_url, rule)
    if feed is not None:
        _show_feed(rule, page, feed_url, feed, args.format)
        return EXIT_OK
    decoded = decode_page(page, rule.encoding)
    if decoded.doubt is not None and decoded.doubt.source == "given":
        where = page.url or args.url or shown(page.source)
        tell("note", rule.encoding_doubt(where, decoded.doubt))
    root = parse_html(decoded.text)
    if root is None:
        raise InputError(f"{shown(page.source)} holds no HTML element to apply the rule to")
    if rule.discover is not None and not (
        rule.start_urls or rule.feeds or rule.sitemaps or rule.api or rule.search
    ):
        title = str(root.xpath("normalize-space(//title)")) or None
        url = page.url or args.url or rule.discover.seeds[0]
        _show_discover(rule, rule.discover, page, url, decoded, title, args.format)
        return EXIT_OK
    # A URL of search.url, or any page of a rule read from keyword searches alone, is a result page.
    is_search = not rule.start_urls or (listing is not None and listing[0] == "search")
    search = rule.search if is_search else None
    search_urls = tuple(search.urls()) if search is not None else ()
    url = (
        page.url or args.url or (rule.start_urls or rule.feeds or rule.sitemaps or api_urls or search_urls)[0]
    )
    if search is None and not rule.allows_host(urlsplit(url).hostname):
        domains = ", ".join(rule.domains)
        tell("note", f"{url} is not on the rule's domains ({domains}): its links are all dropped")
    fields = rule.extract_fields(root)
    title_fallback = page_title(root) if fields["title"] is None else None
    qread_body = None
    if rule.needs_qread(fields["body"]):
        extraction = run_algorithm(
            decoded.text,
            url=url,
            title=fields["title"] or title_fallback,
            algo=QREAD_ALGORITHM,
            source=page.source,
        )
        qread_body = extraction.text or None
    trial = Trial(
        rule,
        page,
        decoded,
        url,
        search,
        (
            rule.search_results(search, url, root, encoding=decoded.encoding)
            if search is not None
            else rule.article_links(url, root, encoding=decoded.encoding)
        ),
        (
            rule.search_next_page(search, url, root)
            if search is not None
            else rule.next_page_url(url, root, encoding=decoded.encoding)
        ),
        fields,
        title_fallback,
        qread_body,
    )
    _note_unparsed_published(rule, [fields["published"]])
    if args.format == "json":
        print(json.dumps(_trial_document(trial), ensure_ascii=False, indent=2))
    else:
        _print_trial(trial)
    return EXIT_OK


def _note_unparsed_published(rule: Rule, values: list[str | None], *, api: bool = False) -> None:
    """A note naming the first of ``values`` (published as a page or the API's items give it) that is no
    date the crawl recognises, and the key to mend."""
    for value in values:
        published = clean_line(value)
        if published is not None and published_date(published) is None:
            tell("note", rule.unparsed_published(f"published {published!r}", api=api))
            return


def _stored_published(value: str, rule: Rule) -> str:
    """`` (stored as ISO-DATE)`` when the crawl stores the published ``value`` in another form, naming the
    rule's ``timezone`` when its time, without a UTC offset, is read in it; else nothing."""
    cleaned = clean_line(value)
    if not cleaned:
        return ""
    stored = published_date(cleaned, zone=rule.timezone)
    if stored in (None, cleaned):
        return ""
    zone = rule.timezone
    read_in = f", its time read in {zone_name(zone)}, the rule's timezone" if zone is not None else ""
    return f" (stored as {stored}{read_in if stored != published_date(cleaned) else ''})"


# What a listing page of each kind should be, and what the site has that its key should name.
_LISTINGS = {
    "feed": ("a feed", "feed"),
    "sitemap": ("a sitemap", "sitemap"),
    "api": ("the API's JSON", "API"),
}


def _show_listing(rule: Rule, page: Page, url: str, kind: ListingKind, key: str, output: str) -> None:
    """A page that the rule's ``key`` names, read as a crawl reads it: as the feed, sitemap or API page
    the key says it is, else :class:`NotAListingError` saying what the crawl says of it."""
    try:
        if kind == "feed":
            feed = read_feed(page.data, url, page.content_type, zone=rule.timezone)
        elif kind == "sitemap":
            sitemap = read_sitemap(page.data, url, zone=rule.timezone)
        else:
            assert rule.api is not None
            found = rule.api.read(page.data, url, rule.encoding)
    except ApiItemsError as exc:
        lists = _item_lists(page.data, rule.encoding)
        raise NotAListingError(
            f"{url} is the API's JSON, but `api.items` in {rule.path} gives no list of items: mend"
            f" `api.items` there (the JMESPath of the page's list of items: {lists}); a crawl dead-letters"
            f" it: {exc}"
        ) from None
    except (FeedError, SitemapError, ApiError) as exc:
        what, thing = _LISTINGS[kind]
        got = (page.content_type or "").split(";")[0].strip().lower()
        raise NotAListingError(
            f"{url} is not {what}{f' (got {got})' if got else ''}: `{key}` in {rule.path} names it: give the"
            f" URL of the site's {thing} there; a crawl dead-letters it: {exc}"
        ) from None
    if kind == "feed":
        _show_feed(rule, page, url, feed, output)
    elif kind == "sitemap":
        _show_sitemap(rule, page, url, sitemap, output)
    else:
        _show_api(rule, page, url, found, output)


# A name JMESPath takes unquoted.
_JMESPATH_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _item_lists(data: bytes, encoding: str | None) -> str:
    """A JMESPath giving each list of objects (or empty list) in an API page's objects, three levels deep
    at most (``data.posts``), those in a list's objects too (``sections[].posts[]``: every section's
    posts in one list), with the keys JMESPath quotes quoted (``"data-feed".posts``), for ``api.items`` to
    name; else what the page holds at its top level."""
    top = _json_page(data, encoding)
    found: list[str] = []
    # The objects at a path, and whether it projects a list (its objects' lists are then one list each).
    level: list[tuple[str, bool, list[dict[str, Any]]]] = [
        ("", False, [top] if isinstance(top, dict) else [])
    ]
    for _depth in range(3):
        deeper: list[tuple[str, bool, list[dict[str, Any]]]] = []
        for path, projected, objects in level:
            children: dict[str, list[Any]] = {}
            for each in objects:
                for name, child in each.items():
                    children.setdefault(name, []).append(child)
            for name, values in children.items():
                child_path = _jmespath_key(path, name)
                lists = [child for child in values if isinstance(child, list)]
                inside = [item for child in lists for item in child]
                if lists and all(isinstance(item, dict) for item in inside):
                    found.append(child_path + "[]" if projected else child_path)
                    deeper.append((child_path + "[]", True, inside))
                else:
                    deeper.append(
                        (child_path, projected, [child for child in values if isinstance(child, dict)])
                    )
        level = deeper
    return ", ".join(found) if found else _json_top_level(data, encoding)


def _jmespath_key(path: str, name: str) -> str:
    """``path`` and then the key ``name``, quoted where JMESPath needs it (``"data-feed"``)."""
    key = name if _JMESPATH_NAME_RE.fullmatch(name) else json.dumps(name, ensure_ascii=False)
    return f"{path}.{key}" if path else key


def _json_page(data: bytes, encoding: str | None) -> Any:
    """An API page's JSON, read as the crawl reads it (the rule's ``encoding``, or the page's own where
    that key does not read it)."""
    return json.loads(json_text(data, encoding)[0])


def _json_top_level(data: bytes, encoding: str | None) -> str:
    """What an API page's JSON (read as the crawl reads it) holds at its top level, for the ``api.items``
    to start from."""
    top = _json_page(data, encoding)
    if isinstance(top, dict):
        return f"the page's top level has the keys {', '.join(map(str, top))}" if top else "the page is {}"
    if isinstance(top, list):
        return "the page is a list: `items: '@'` takes it whole"
    return f"the page is {json.dumps(top)}"


def _as_feed(page: Page, url: str, rule: Rule) -> Feed | None:
    """The page read as a feed (its entries' times without an offset in the ``rule``'s timezone), when it
    is an RSS or Atom feed (an HTML page is not)."""
    try:
        return read_feed(page.data, url, page.content_type, zone=rule.timezone)
    except FeedError:
        return None


def _show_feed(rule: Rule, page: Page, url: str, feed: Feed, output: str) -> None:
    """The entries of a feed the crawl would follow, with what each says of its article."""
    why = Counter[str]()
    kept = rule.feed_entries(feed.entries, url, left_out=why)
    if feed.without_link:
        why["without a link"] = feed.without_link
    if feed.over_limit:
        why[f"past the first {MAX_ENTRIES:,}"] = feed.over_limit
    left_out = why.total()
    if output == "json":
        document = {
            **_source(rule, page),
            "url": url,
            "feed": feed.version,
            "entries": [
                {"url": e.url, "title": e.title, "published": e.published, "author": e.author} for e in kept
            ],
            "left_out": left_out,
        }
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return
    _print_source(rule, page, article=False)
    print(f"as a feed ({feed.version}): {counted(len(kept), 'article link')}, {left_out} left out{_why(why)}")
    for entry in kept:
        print(f"  {printable(entry.url)}")
        said = [f"{name}: {printable(value)}" for name, value in entry.hints().items()]
        if said:
            print(f"    {'; '.join(said)}")


def _show_document(rule: Rule, page: Page, output: str) -> None:
    """A PDF or DOCX article as a crawl would store it: its metadata and its text; for a discover rule,
    its relevance as a discover crawl judges it (on its text), stored or not."""
    try:
        document = read_document(page.data, page.source)
    except DocumentError as exc:
        raise InputError(str(exc)) from None
    fields = {"title": document.title, "published": document.published, "author": document.author}
    discover = rule.discover
    relevance = (
        Topic.build(discover.keywords, discover.examples).relevance(None, document.text)
        if discover is not None
        else None
    )
    if output == "json":
        found: dict[str, Any] = {
            **_source(rule, page),
            "url": page.url,
            "document": document.kind,
        }
        if discover is not None and relevance is not None:
            found.update(_judged(discover, relevance))
        print(json.dumps({**found, "fields": fields, "body": document.text}, ensure_ascii=False, indent=2))
        return
    _print_source(rule, page, article=True)
    if discover is not None and relevance is not None:
        _print_judged(discover, relevance)
    print(f"as a {document.kind.upper()} article ({counted(len(document.text), 'character')} of text):")
    for name, value in fields.items():
        print(f"  {name:<9}  {printable(value) if value else '-'}")
    print()
    print(printable(document.text) if document.text else "(no text: a scanned document?)")


def _show_discover(
    rule: Rule, discover: DiscoverRule, page: Page, url: str, decoded: Decoded, title: str | None, output: str
) -> None:
    """A page as a discover crawl would judge it (``decoded``: its text): its relevance to the topic and
    why, stored or not, and the links it would keep (those the rule allows), built as the crawl builds them
    (their query in the page's encoding)."""
    topic = Topic.build(discover.keywords, discover.examples)
    html = decoded.text
    extraction = run_algorithm(html, url=url, title=title, algo=QREAD_ALGORITHM, source=page.source)
    relevance = topic.relevance(title, extraction.text)
    links = page_links(html, url, encoding=decoded.encoding)
    from scrapy import Request  # noqa: PLC0415 - Scrapy only for a discover page, not for rules check
    from scrapy.utils.request import RequestFingerprinter  # noqa: PLC0415 - the same

    fingerprinter = RequestFingerprinter()

    def fingerprint(link: str) -> bytes:
        return fingerprinter.fingerprint(Request(link))

    # The page read as a seed (depth 0): its links are within any max_depth.
    followed = followed_links(
        discover, url, 0, links, fingerprint, frozenset(map(fingerprint, discover.seeds))
    )
    kept = [link for (link, _, _), _, _ in followed.links]
    left_out = (
        f"the stored articles of {', '.join(discover.example_sites)} are examples in a crawl, not here"
        if discover.example_sites
        else None
    )
    if output == "json":
        document = {
            **_source(rule, page),
            "url": url,
            **_judged(discover, relevance),
            "links": len(links),
            "links_kept": kept,
            "links_refused": followed.refused,
            "links_seen": followed.seen,
            "note": left_out,
        }
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return
    _print_source(rule, page, article=True)
    _print_judged(discover, relevance)
    if left_out:
        print(f"note       {left_out}")
    print(
        f"links      {len(kept)} kept of {counted(len(links), 'link')}: {followed.refused} refused (domains,"
        f" deny_domains), {followed.seen} to this page or a seed (read already)"
    )
    for link in kept[:10]:
        print(f"  {printable(link)}")
    if len(kept) > 10:
        print(f"  ... and {len(kept) - 10} more")


def _source(rule: Rule, page: Page) -> dict[str, Any]:
    """The rule and the page a JSON answer of ``rules try`` is about: the page as given (``source``), and
    the URLs its fetch was redirected from (``redirects``, first the one asked for; none for a file)."""
    return {
        "site": rule.site,
        "rule_file": str(rule.path),
        "source": page.source,
        "redirects": list(page.redirects),
    }


def _print_source(
    rule: Rule, page: Page, *, article: bool, links_as: str | None = None, encoding: str | None = None
) -> None:
    """The rule and the page a text answer of ``rules try`` is about (the URL its links are resolved as,
    ``links_as``, for a page given without one; the redirect that reached it: :func:`_print_redirect`;
    the ``encoding`` it was read in, for an index or article page), then a blank line."""
    named = "" if rule.name == rule.site else f" ({printable(rule.name)})"
    print(f"rule       {rule.site}{named}, {rule.path}")
    print(f"page       {printable(page.source)}" + (f" (links resolved as {links_as})" if links_as else ""))
    _print_redirect(rule, page, article=article)
    if encoding is not None:
        print(f"encoding   {encoding}")
    print()


def _print_redirect(rule: Rule, page: Page, *, article: bool) -> None:
    """When the fetch of ``page`` was redirected: the URL it reached, and what a crawl of ``rule`` does
    with that URL (stores the page's article under it when ``article``, else reads the listing as it), or
    that it does not follow a redirect on the way that leaves the site (:meth:`Rule.redirect_off_site`)."""
    if not page.redirects or page.url is None:
        return
    hops = (
        "a redirect"
        if len(page.redirects) == 1
        else f"{len(page.redirects)} redirects (through {', '.join(page.redirects[1:])})"
    )
    off = next(
        (
            (target, why)
            for target in (*page.redirects[1:], page.url)
            if (why := rule.redirect_off_site(page.redirects[0], target)) is not None
        ),
        None,
    )
    if off is not None:
        does = f"a crawl does not follow the redirect to {off[0]} and skips the URL: {off[1]}"
    else:
        does = f"a crawl {'stores its article under' if article else 'reads it as'} that URL"
    print(f"redirect   {printable(f'reached via {hops} to {page.url}: {does}')}")


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _show_api(rule: Rule, page: Page, url: str, found: ApiPage, output: str) -> None:
    """The items of a page of the rule's API that a crawl follows (on the rule's domains, kept by
    ``index.links``' allow and deny): each one's article URL and fields, and the next page; a note when
    the rule's encoding did not read it, as a crawl warns."""
    if found.doubt is not None:
        tell("note", rule.encoding_doubt(url, found.doubt))
    absolute = [(rule.absolute_url(item.url), item) for item in found.items]
    items = [(url if url is not None and rule.links.accepts(url) else None, item) for url, item in absolute]
    next_url = rule.absolute_url(found.next_url) if found.next_url else None
    _note_unparsed_published(rule, [item.fields.get("published") for link, item in items if link], api=True)
    if output == "json":
        document = {
            **_source(rule, page),
            "url": url,
            "items": [
                {
                    "url": link,
                    "stored_from": "json" if item.is_article else "page",
                    "fields": dict(item.fields),
                }
                for link, item in items
                if link is not None
            ],
            "left_out": found.without_url + sum(1 for link, _ in items if link is None),
            "next_page": next_url,
        }
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return
    _print_source(rule, page, article=False)
    kept = [(link, item) for link, item in items if link is not None]
    left_out = len(found.items) - len(kept) + found.without_url
    off_domains = sum(1 for absolute_url, _ in absolute if absolute_url is None)
    assert rule.api is not None
    why = _left_out_why(rule.api, found.without_url, off_domains, len(found.items) - len(kept) - off_domains)
    print(f"as an API page: {counted(len(kept), 'item')}, {left_out} left out{why}")
    for link, item in kept:
        how = "stored from the JSON" if item.is_article else "its page fetched"
        print(f"  {printable(str(link))} ({how})")
        for name, value in item.fields.items():
            if value is not None:
                stored = _stored_published(value, rule) if name == "published" else ""
                print(f"    {name}: {printable(value if len(value) <= 80 else value[:77] + '...')}{stored}")
    print(f"next page  {printable(next_url) if next_url else '- (none)'}")


def _left_out_why(api: ApiRule, without_url: int, off_domains: int, refused: int) -> str:
    """Why items of an API page were left out (``: 3 without a URL (...)``); empty when none was."""
    reasons = []
    if without_url:
        url = shown_value(api.fields["url"].expression)
        reasons.append(f"{without_url} without a URL (api.fields.url {url} gives none)")
    if off_domains:
        reasons.append(f"{off_domains} off the domains")
    if refused:
        reasons.append(f"{refused} refused by index.links")
    return ": " + ", ".join(reasons) if reasons else ""


def _why(left_out: Counter[str]) -> str:
    """Why entries of a feed or a sitemap were left out (``: 1 off the domains, 2 repeated``); empty when
    none was."""
    reasons = [f"{count} {why}" for why, count in left_out.items() if count]
    return ": " + ", ".join(reasons) if reasons else ""


def _as_sitemap(page: Page, url: str, rule: Rule) -> Sitemap | None:
    """The page read as a sitemap (its dates without an offset in the ``rule``'s timezone), when it is one
    (or a robots.txt naming sitemaps)."""
    try:
        sitemap = read_sitemap(page.data, url, zone=rule.timezone)
    except SitemapError:
        return None
    return sitemap if sitemap.kind != "robots" or sitemap.entries else None


def _show_sitemap(rule: Rule, page: Page, url: str, sitemap: Sitemap, output: str) -> None:
    """The sitemaps or pages of a sitemap a crawl would follow (a temp crawl: all of them)."""
    why = Counter[str]()
    kept = rule.sitemap_entries(sitemap.entries, url, pages=not sitemap.lists_sitemaps, left_out=why)
    what = "sitemap" if sitemap.lists_sitemaps else "article link"
    if output == "json":
        document = {
            **_source(rule, page),
            "url": url,
            "sitemap": sitemap.kind,
            "entries": [
                {
                    "url": e.url,
                    "lastmod": e.lastmod.isoformat() if e.lastmod else None,
                    **e.hints(),
                }
                for e in kept
            ],
            "left_out": len(sitemap.entries) - len(kept),
        }
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return
    _print_source(rule, page, article=False)
    left_out = len(sitemap.entries) - len(kept)
    kind = "robots.txt" if sitemap.kind == "robots" else sitemap.kind
    print(f"as a {kind}: {counted(len(kept), what)}, {left_out} left out{_why(why)}")
    for entry in kept:
        said = [f"lastmod: {entry.lastmod.isoformat()}"] if entry.lastmod else []
        said += [f"{name}: {printable(value)}" for name, value in entry.hints().items()]
        print(f"  {printable(entry.url)}" + (f"\n    {'; '.join(said)}" if said else ""))


def _trial_document(trial: Trial) -> dict[str, Any]:
    rule = trial.rule
    return {
        **_source(rule, trial.page),
        "url": trial.url,
        "encoding": trial.decoded.encoding,
        "encoding_reason": encoding_reason(trial.decoded),
        "links": trial.links,
        "next_page": trial.next_page,
        "fields": trial.fields,
        "title_fallback": trial.title_fallback,
        "min_body_chars": rule.min_body_chars,
        "body_from": trial.body_from,
        "body": trial.qread_body if trial.body_from == "qread" else trial.fields["body"],
    }


def _print_trial(trial: Trial) -> None:
    rule, page = trial.rule, trial.page
    _print_source(
        rule,
        page,
        article=True,
        links_as=None if page.url else trial.url,
        encoding=f"{trial.decoded.encoding} ({encoding_reason(trial.decoded)})",
    )
    if trial.search is None:
        print(f"as an index page: {counted(len(trial.links), 'article link')}")
        next_key, next_xpath = "index.next_page", rule.next_page
    else:
        print(f"as a search result page: {counted(len(trial.links), 'result')}")
        print(
            "  (each one of the rule's article when on its domains, else of the rule whose domains hold it,"
            " else left)"
        )
        next_key, next_xpath = "search.next_page", trial.search.next_page
    for link in trial.links:
        print(f"  {printable(link)}")
    if next_xpath is None:
        next_page = f"- (the rule has no {next_key})"
    else:
        next_page = printable(trial.next_page) if trial.next_page else "- (none found)"
    print(f"next page  {next_page}")
    print()
    print("as an article page:")
    width = max(len(name) for name in trial.fields)
    for name, value in trial.fields.items():
        lines = ["-"] if value is None else printable(value).splitlines() or [""]
        if name == "published" and value is not None:
            lines[0] += _stored_published(value, trial.rule)
        if name == "title" and trial.title_fallback is not None:
            lines = [
                f"{printable(trial.title_fallback)} (fallback: the page's own title, as the crawl stores it"
                " where the rule's title finds nothing and no feed entry gave one)"
            ]
        print(f"  {name:<{width}}  {lines[0]}".rstrip())
        for line in lines[1:]:
            print(f"  {'':<{width}}  {line}".rstrip())
    print(f"body from  {trial.body_note}")
    if trial.body_from == "qread":
        print()
        print(f"--- body from {QREAD_ALGORITHM} ---")
        print(printable(trial.qread_body) if trial.qread_body else "(qRead found no main text either)")


def _judged(discover: DiscoverRule, relevance: Relevance) -> dict[str, Any]:
    """How a discover crawl judges a page of ``relevance``, for the JSON answer."""
    return {
        "relevance": relevance.score,
        "why": relevance.why,
        "threshold": discover.threshold,
        "stored": relevance.score >= discover.threshold,
    }


def _print_judged(discover: DiscoverRule, relevance: Relevance) -> None:
    """How a discover crawl judges a page of ``relevance``, for the text answer."""
    verdict = "stored" if relevance.score >= discover.threshold else "not stored"
    print(f"relevance  {relevance.score:.3f} ({verdict}: threshold {discover.threshold:g})")
    print(f"why        {printable(relevance.why)}")


# The types a feed is served as: RSS's and Atom's own, and XML's (a feed is often served as either).
_FEED_KINDS = frozenset(
    {"application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/xml", "text/xml"}
)
# The types a gzip file is served as (sitemap.xml.gz, feed.xml.gz): read as a feed or sitemap is, gzipped or
# left plain by a gzip Content-Encoding, never as a page.
_GZIP_KINDS = frozenset({"application/gzip", "application/x-gzip"})
_GIVE_A_PAGE = ": give the URL of the site's home page or of a section page that lists its articles"
# The start of an RSS, RDF or Atom document, after the XML declaration, processing instructions, a doctype
# and comments: a feed a server sends as another type (text/html, text/plain) is read by the crawl all the
# same (feedparser goes by the document). How far it is looked for: a feed's start is in its first bytes.
_FEED_START_RE = re.compile(
    rb"\s*(?:<\?(?:[^?]|\?(?!>))*\?>\s*|<!--(?:[^-]|-(?!->))*-->\s*|<!doctype[^>\[]*>\s*)*<(?:rss|feed|rdf:rdf)[\s>/]",
    re.IGNORECASE,
)
_FEED_START_BYTES = 4096


def _feed_draft(
    site: str, page: Page, url: str, kind: str, robots: bytes | None, *, allow_private: bool, max_bytes: int
) -> Draft:
    """The draft of a rule reading the feed ``page`` fetched from ``url`` (a gzip file of one decompressed
    within ``max_bytes``, as the crawl reads it); :class:`DraftError` when it is no feed."""
    try:
        feed = read_feed(page.data, url, kind, max_bytes=max_bytes)
    except FeedError as exc:
        if page.data.startswith(GZIP_MAGIC):  # a gzip bomb, or a gzip file broken past its start
            raise DraftError(f"{exc}{_GIVE_A_PAGE}") from None
        try:
            sitemap = read_sitemap(page.data, url)
        except SitemapError:
            raise DraftError(f"{exc}, nor an HTML page (got {kind}){_GIVE_A_PAGE}") from None
        raise _no_draft_of_sitemap(url, sitemap) from None
    return draft_feed_rule(site, feed, url, robots=robots, allow_private=allow_private)


def _no_draft_of_sitemap(url: str, sitemap: Sitemap) -> DraftError:
    """That ``url`` gave ``sitemap``, no page or feed to draft from, and how a rule reads it."""
    entries = counted(len(sitemap.entries), "entry", "entries")
    return DraftError(
        f"{url} is a sitemap (<{sitemap.kind}>, {entries}), not a page or feed to draft a rule from: give"
        " the URL of the site's home page, of a section page or of its feed; a rule reads the sitemap"
        f" with `sitemaps: [{url}]` beside the `index.links.allow` that keeps its articles"
        " (docs/rules.md#sitemaps)"
    )


def _no_draft_of_gzip(url: str, page: Page, kind: str) -> DraftError:
    """Why nothing is drafted from the gzip file ``page`` (served as ``kind``), or from what a gzip
    Content-Encoding of that type gave: a sitemap named as :func:`_no_draft_of_sitemap` does, decompressed
    as the crawl does (within the protocol's size limit: a gzip bomb is said so), or no page."""
    try:
        sitemap = read_sitemap(page.data, url)
    except NotASitemapError:
        return DraftError(f"{url} is neither an HTML page nor an RSS or Atom feed (got {kind}){_GIVE_A_PAGE}")
    except SitemapError as exc:
        return DraftError(f"{exc}{_GIVE_A_PAGE}")
    return _no_draft_of_sitemap(url, sitemap)


def _writable_rule(path: Path, *, force: bool) -> None:
    """:class:`InputError` when ``rules new`` is not to write the rule file ``path``: it exists and ``force``
    is not given, or ``force`` is and it is no regular file (a write to a named pipe would wait for a
    reader)."""
    if not force:
        if os.path.lexists(path):
            raise InputError(f"{path} exists already: pass --force to replace it, or choose another site id")
        return
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot read what {path} is: {exc}") from None
    if not stat.S_ISREG(mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(mode)
            else "a named pipe (FIFO)"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "no regular file"
        )
        raise InputError(
            f"{path} is {kind}, not a rule file: --force replaces a rule file only; move it away, or choose"
            " another site id"
        )


def _put_new(temporary: str, target: Path) -> None:
    """The file ``temporary`` put at ``target``, whole, where nothing is (:class:`FileExistsError` else):
    hard-linked there; in a folder without hard links (vfat, exFAT, some network shares: the link fails with
    EPERM, ENOTSUP...) ``target`` is made by an exclusive create (O_EXCL), empty, which keeps a file made
    meanwhile as the link does, and ``temporary`` renamed onto it."""
    try:
        os.link(temporary, target)
    except FileExistsError:
        raise
    except OSError:
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        made = os.fstat(descriptor)
        os.close(descriptor)
        try:
            os.replace(temporary, target)
        except OSError:
            with contextlib.suppress(OSError):
                if os.path.samestat(made, os.stat(target)):
                    os.unlink(target)
            raise


def _write_rule(path: Path, text: str, *, force: bool) -> None:
    """``text`` written to the rule file ``path`` whole or not at all (a running crawl reading the rules
    folder never reads half a rule): to a temporary file beside it, then put at ``path`` (:func:`_put_new`),
    so that a file made there while the page was fetched is kept (:class:`InputError`); with ``force``
    renamed onto it (onto its target when it is a symbolic link)."""
    if force:
        _writable_rule(path, force=force)
    target = Path(os.path.realpath(path)) if force else path
    mask = os.umask(0)
    os.umask(mask)
    try:
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o666 & ~mask)
        if force:
            os.replace(temporary, target)
        else:
            _put_new(temporary, target)
    except FileExistsError:
        raise InputError(
            f"{path} was made while the page was fetched: pass --force to replace it, or choose another"
            " site id"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc}") from None
    finally:
        Path(temporary).unlink(missing_ok=True)


def _try_later(status: int) -> str | None:
    """What to do when a page answered the error ``status`` that says nothing of its URL: wait when the
    site is failing (5xx) or asks for fewer requests (429); None for another status."""
    if status >= 500:
        return "the site is failing (a server error, not a wrong URL): try again later"
    if status == 429:
        return "the site asks for fewer requests (not a wrong URL): try again later"
    return None


def _title_samples(site: str, page: Page, allow_private: bool) -> list[str]:
    """The article pages of the HTML ``page`` to guess the title and published fields from: the first
    :data:`TITLE_SAMPLES` links the draft's pattern keeps; none for a page no rule is drafted from."""
    kind = (page.content_type or "").split(";")[0].strip().lower()
    if kind not in ("", "text/html", "application/xhtml+xml"):
        return []
    try:
        decoded = decode_page(page)
        draft = draft_rule(
            site,
            decoded.text,
            page.url or page.source,
            encoding=decoded.encoding,
            robots=None,
            allow_private=allow_private,
        )
    except CrawlerError:
        return []
    return draft.matched[:TITLE_SAMPLES]


def run_rules_new(args: argparse.Namespace) -> int:
    """``crawler rules new``: fetch URL (with its site's robots.txt), draft SITE's rule from it, a page or
    a feed (:mod:`crawler.rules.draft`), write it to the rules folder, check it as ``rules check`` does,
    and say what was guessed and what to run next."""
    site = args.site
    if not is_site_id(site):
        raise InputError(
            f"{site!r} is no site id (expected letters, digits, '.', '_' or '-', starting with a letter or"
            " digit: the rule file's name without .yaml)"
        )
    folder = Config.from_env().rules_dir
    path = folder / f"{site}{RULE_SUFFIX}"
    if folder.exists() and not folder.is_dir():
        rules_folder(folder)
    _writable_rule(path, force=args.force)
    from crawler.worker.fetch import check_url  # noqa: PLC0415 - Scrapy only for the command that fetches

    url = check_url(args.url)
    parts = urlsplit(url)
    robots = f"{parts.scheme}://{parts.netloc}/robots.txt"
    try:
        page = read_page(
            url,
            also=(robots,),
            max_bytes=args.max_bytes,
            timeout=args.timeout,
            obey_robots=True,
            private_domains=(parts.hostname or "",) if args.allow_private else (),
            robots_hint="a crawl of the site is refused it too: give a page its robots.txt allows",
            follow=lambda got: _title_samples(site, got, args.allow_private),
            private_hint=lambda host: (
                f"{host} is the target of a redirect from {url}, another host than {parts.hostname}:"
                " --allow-private allows private addresses only on the host of the URL given; give the"
                f" target's URL to `{suggest(f'rules new {site} URL --allow-private')}` if it is the site's"
                if args.allow_private
                else f"pass --allow-private to `{suggest('rules new')}` for a site on this machine or an"
                " intranet: the rule it writes then has `allow_private_addresses: true`"
            ),
        )
    except HttpStatusError as exc:
        fix = _try_later(exc.status) or (
            "check the URL, or give the URL of the site's home page or of a section page that lists its"
            " articles"
        )
        raise HttpStatusError(f"{exc}: {fix}", url=exc.url, status=exc.status) from None
    final = page.url or url
    kind = (page.content_type or "").split(";")[0].strip().lower()
    robots_body = page.also.get(robots)
    gzipped = page.data.startswith(GZIP_MAGIC)
    head = gunzipped_start(page.data, _FEED_START_BYTES + len(codecs.BOM_UTF8)) if gzipped else page.data
    start = head.removeprefix(codecs.BOM_UTF8)[:_FEED_START_BYTES]
    if _FEED_START_RE.match(start) or (kind in _FEED_KINDS and not gzipped):
        draft = _feed_draft(
            site, page, final, kind, robots_body, allow_private=args.allow_private, max_bytes=args.max_bytes
        )
    elif gzipped or kind in _GZIP_KINDS:
        raise _no_draft_of_gzip(final, page, kind)
    elif kind and kind not in ("text/html", "application/xhtml+xml"):
        raise DraftError(
            f"{final} is neither an HTML page nor an RSS or Atom feed (got {kind}){_GIVE_A_PAGE}"
        )
    else:
        try:
            decoded = decode_page(page)
        except InputError as exc:
            raise DraftError(f"{exc}: give the URL of the site's home page or of a section page") from None
        try:
            draft = draft_rule(
                site,
                decoded.text,
                final,
                encoding=decoded.encoding,
                robots=robots_body,
                allow_private=args.allow_private,
            )
        except NoArticleLinks as exc:
            if not exc.feeds:
                raise
            # One fetch per process (Scrapy's reactor runs once): the feed is drafted from by its own run.
            again = suggest(f"rules new {site} {shlex.quote(exc.feeds[0])}")
            raise DraftError(
                f"{exc}; the page advertises the feed {exc.feeds[0]}: `{again}` drafts a rule that reads it"
            ) from None
        samples = [body.decode(decoded.encoding, "replace") for body in page.followed.values() if body]
        draft = replace(draft, title=guess_title(samples), published=guess_published(samples))
    made = not folder.is_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make the rules folder {folder}: {exc}") from None
    if made:
        print(f"made the rules folder {folder} (it did not exist)")
    today = datetime.now(UTC).date().isoformat()
    _write_rule(path, rule_text(draft, today=today, command=command_name(), path=str(path)), force=args.force)
    try:
        rule = load_rule(path)
    except RuleErrors as exc:
        for error in exc.errors:
            print(printable(str(error)))
        tell("error", f"wrote {path}, which has errors: mend them there (docs/rules.md)")
        return exc.exit_code
    warnings = _warnings(rule)
    for warning in warnings:
        print(printable(str(warning)))
    checked = "1 rule ok" + (f", {counted(len(warnings), 'warning')}" if warnings else "")
    print(f"wrote {path} ({checked}, as `{command_name()} rules check` says)")
    print(f"domains        {', '.join(draft.domains)}")
    if draft.from_feed:
        print(f"feed           {printable(draft.url)}")
    else:
        print(f"start URL      {printable(draft.url)}")
    matched = draft.matched
    source = "feed" if draft.from_feed else "page"
    if draft.pattern is None:
        print("article links  every entry of the feed (no index)")
        owners = " and ".join(draft.domains)
        print(
            f"               its {counted(len(matched), 'link')} to {owners} show no date, numeric id or long"
            f" slug to filter them by, e.g. {printable(draft.example)}"
        )
    else:
        print(f"article links  {draft.pattern.regex}")
        print(
            f"               {len(matched)} of the {source}'s {counted(len(draft.site_links), 'link')} to"
            f" {' and '.join(draft.domains)}, e.g. {printable(draft.example)}"
        )
    if draft.deny:
        denied = draft.denied
        print(f"denied         {', '.join(draft.deny)}")
        print(
            f"               {counted(len(denied), 'AMP copy', 'AMP copies')} of the articles, each fetched"
            f" once, e.g. {printable(denied[0])}"
        )
    if draft.title is not None:
        carried = f", its <title> carries {draft.title.site_name!r}" if draft.title.site_name else ""
        print(f"title          {draft.title.xpath}")
        print(
            f"               the {draft.title.name} of {draft.title.samples} sample articles{carried},"
            f" e.g. {printable(draft.title.example)}"
        )
    elif not draft.from_feed:
        print(f"title          - (no og:title or h1 that {len(page.followed)} sample articles agree on)")
    if draft.published is not None:
        regex = f" regex {draft.published.regex}" if draft.published.regex is not None else ""
        print(f"published      {draft.published.xpath}{regex}")
        print(
            f"               the {draft.published.name} of {draft.published.samples} sample articles, e.g."
            f" {printable(draft.published.example)} (stored as {draft.published.stored})"
        )
    elif not draft.from_feed:
        agreed = f"no date meta, JSON-LD datePublished or <time> that {len(page.followed)} sample articles"
        print(
            f"published      - ({agreed} agree on: an article is stored without one unless a feed's or news"
            " sitemap's entry gives it)"
        )
    if draft.next_page is not None:
        print(f"next page      {draft.next_page.xpath}")
        print(f"               the link {printable(draft.next_page.text)}: {printable(draft.next_page.url)}")
    elif not draft.from_feed:
        print("next page      - (no link rel=next, next, 下一页 or › found)")
    if not draft.from_feed:
        print(f"feeds          {', '.join(draft.feeds) or '- (none advertised by the page)'}")
    if draft.unfiltered_sitemaps:
        named = ", ".join(draft.unfiltered_sitemaps)
        print(
            f"sitemaps       - (left out: {named}, named by robots.txt; with no index.links.allow to filter"
            " them, a crawl would read every page they list)"
        )
    else:
        print(f"sitemaps       {', '.join(draft.sitemaps) or '- (none named by robots.txt)'}")
    print()
    print("next:")
    article = shlex.quote(draft.example)
    print(f"  {suggest(f'rules try {site} {article}')}    # what the rule reads on an article")
    print(f"  {suggest(f'temp {site}')}    # crawl the site once, now")
    return EXIT_OK
