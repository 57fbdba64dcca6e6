"""`crawler temp SITE --again`: a temp crawl that follows its index pages' article links even when their
URLs were seen before, for its own job only (each URL once in the job, a stored article updated in its own
week); other jobs keep the seen filter. The embedded Redis, the local test server's pages."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis
from conftest import SiteServer
from crawlsite import RULE, Site, unique
from scrapy import Request

from crawler.keys import Keys
from crawler.redisio.bloom import RedisBloom
from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis
from crawler.requests import article_request, end_again, mark_temp_job, queue_new
from crawler.rules import load_rule
from crawler.store import open_store
from crawler.store.document import week_of

BODY = "A story first stored three weeks ago, whose page is still there. " * 20


def test_again_fetches_every_seen_article_once_and_updates_it_in_place(
    tmp_path: Path, site_server: SiteServer
) -> None:
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/again-one", "/a/again-two")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    assert set(site.stored()) == {"/a/again-one", "/a/again-two"}
    plain = site.temp()
    assert plain.returncode == 0, plain.stdout + plain.stderr[-3000:]
    assert plain.stdout.splitlines()[0].startswith("fetched 1 page, stored 0 articles, skipped 2"), (
        plain.stdout
    )
    # An article first stored three weeks ago, that the index page links to now.
    fetched = datetime.now(UTC) - timedelta(weeks=3)
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        store.upsert(
            {
                "site": "news",
                "url": site_server.url("/a/again-old"),
                "fetched_at": fetched.isoformat(),
                "title": "Old",
                "body": BODY,
            }
        )
    site.rule("/a/again-one", "/a/again-two", "/a/again-old")

    again = site.temp("--again")

    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    lines = again.stdout.splitlines()
    assert lines[0] == "fetched 4 pages, stored 0 articles, updated 3 stored before, skipped 0, errors 0", (
        again.stdout
    )
    assert lines[1] == (
        "queued 2 article pages seen before again (--again: this job only; the counts above say how they"
        " ended): their URLs stay seen for every other crawl"
    ), again.stdout
    with EmbeddedRedis(site.data) as embedded:
        server = connect(embedded.ensure())
        assert list(server.scan_iter("*:again")) == [], "the job's set is deleted at its end"
        server.close()
    stored = site.stored()
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        urls = sorted(d["url"] for d in store.iter_articles())
    assert urls == sorted(site_server.url(p) for p in ("/a/again-one", "/a/again-two", "/a/again-old")), (
        "no second copy"
    )
    assert stored["/a/again-old"]["week"] == week_of(fetched), "updated in the week of its first fetch"
    assert stored["/a/again-old"]["title"] == "Article again-old"

    after = site.temp()
    assert after.returncode == 0, after.stdout + after.stderr[-3000:]
    assert after.stdout.splitlines()[0] == (
        "fetched 1 page, stored 0 articles, skipped 3 (links seen already: 3), errors 0"
    ), "the next crawl keeps the seen filter: " + after.stdout


def test_again_fetches_an_article_two_index_pages_link_once(tmp_path: Path, site_server: SiteServer) -> None:
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/twice-one", "/a/twice-two")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    starts = (
        site_server.url("/links?to=/a/twice-one,/a/twice-two"),
        site_server.url("/links?to=/a/twice-two"),
    )
    rule = RULE.format(start=starts[0]).replace(f'["{starts[0]}"]', json.dumps(starts))
    (site.rules / "news.yaml").write_text(rule, encoding="utf-8")

    again = site.temp("--again")

    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert again.stdout.splitlines()[0] == (
        "fetched 4 pages, stored 0 articles, updated 2 stored before,"
        " skipped 1 (links seen already: 1), errors 0"
    ), again.stdout


def test_links_two_listings_give_are_counted_as_links_met_not_as_articles(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """A new site whose index page, feed and sitemap list the same 8 articles said 'skipped 16 (seen
    already: 16)' on its first crawl, and 'its 24 article links were seen before' after forget, as if 16
    or 24 articles were there."""
    site = Site(site_server, tmp_path, name="news")
    site.rule()
    starts = (
        site_server.url("/links?to=/a/listed-one,/a/listed-two"),
        site_server.url("/links?to=/a/listed-two,/a/listed-one"),
    )
    rule = RULE.format(start=starts[0]).replace(f'["{starts[0]}"]', json.dumps(starts))
    (site.rules / "news.yaml").write_text(rule, encoding="utf-8")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    assert first.stdout.splitlines()[0] == (
        "fetched 4 pages, stored 2 articles, skipped 2 (links seen already: 2), errors 0"
    ), first.stdout
    forgot = site.crawler("sites", "forget", "news", "--articles", "--yes")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr[-3000:]
    plain = site.temp()
    assert plain.stdout.splitlines()[:2] == [
        "fetched 2 pages, stored 0 articles, skipped 4 (links seen already: 4), errors 0",
        "the 4 article links its listings gave (a URL once for each listing that gave it) were seen before,"
        " by earlier crawls (`crawler sites forget` keeps URLs seen: the seen filter cannot forget one):"
        " `crawler temp news --again` fetches them again",
    ], plain.stdout


def _links(tmp_path: Path, job: str, *, again: bool) -> list[Request]:
    (tmp_path / "news.yaml").write_text(RULE.format(start="http://127.0.0.1/"), encoding="utf-8")
    rule = load_rule(tmp_path / "news.yaml")
    return [
        article_request(rule, f"http://127.0.0.1/a/{n}", job=job, job_kind="temp", again=again)
        for n in range(3)
    ]


def test_only_the_again_job_queues_seen_links_each_once_even_when_resumed(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    keys = Keys("crawler")
    bloom = RedisBloom(redis_client, keys.bloom, 1000, 0.001)
    seen = [b"fp0", b"fp1", b"fp2"]
    assert queue_new(bloom, keys, _links(tmp_path, "grab1", again=False), seen) == [True] * 3

    plain = queue_new(bloom, keys, _links(tmp_path, "plain", again=False), seen)
    redis_client.hset(keys.job("again"), "pending", 1)  # the index page whose links these are, leased
    again = queue_new(bloom, keys, _links(tmp_path, "again", again=True), seen)
    # Another worker (or the next `crawler temp SITE --again`, resuming the job) finds the links again.
    resumed = queue_new(bloom, keys, _links(tmp_path, "again", again=True), seen)
    beside = queue_new(bloom, keys, _links(tmp_path, "plain", again=False), seen)

    assert (plain, again, resumed, beside) == ([False] * 3, [True] * 3, [False] * 3, [False] * 3)
    assert redis_client.hget(keys.job("again"), "again") == b"3"
    assert redis_client.hget(keys.job("plain"), "again") is None
    assert redis_client.scard(keys.again("again")) == 3
    assert redis_client.ttl(keys.again("again")) > 0
    assert not redis_client.exists(keys.again("plain"))
    assert bloom.count() == 3, "the seen filter is the same filter, marked as usual"

    end_again(redis_client, keys, "again")

    assert not redis_client.exists(keys.again("again"))


def test_links_of_an_again_job_that_ended_are_not_queued_again_nor_its_set_made_anew(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """A worker that parsed an index page of a `temp --again` job after the job had ended (its lease had
    expired meanwhile, the page fetched again by another worker, the job's end seen by its crawl) queued its
    seen links again into the ended job: its set of the pages it queued, deleted at its end, made anew (for
    SCHEDULE_TEMP_AGAIN_SECONDS), its pending counted again though its crawl had ended (the next temp crawl
    then 'continued' it). A job that ended fetches seen URLs again no more: the seen filter decides, as for
    any job."""
    keys = Keys("crawler")
    bloom = RedisBloom(redis_client, keys.bloom, 1000, 0.001)
    seen = [b"fp0", b"fp1", b"fp2"]
    assert queue_new(bloom, keys, _links(tmp_path, "grab1", again=False), seen) == [True] * 3
    redis_client.hset(keys.job("again"), "pending", 1)  # the index page whose links these are, leased
    assert queue_new(bloom, keys, _links(tmp_path, "again", again=True), seen) == [True] * 3
    redis_client.hset(keys.job("again"), "pending", 0)  # its pages fetched
    mark_temp_job(redis_client, keys, "again", ended=True)
    end_again(redis_client, keys, "again")

    late = queue_new(bloom, keys, _links(tmp_path, "again", again=True), seen)

    assert late == [False] * 3
    assert not redis_client.exists(keys.again("again"))
    assert redis_client.hget(keys.job("again"), "pending") == b"0"
    assert redis_client.hget(keys.job("again"), "again") == b"3"


def test_again_with_pages_given_is_a_usage_error(tmp_path: Path, site_server: SiteServer) -> None:
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/given-one")

    both = site.temp("--again", "--url", site_server.url("/a/given-one"))

    assert both.returncode == 2, both.stdout + both.stderr
    assert "--again follows news's index pages' links even when they were seen; the pages of --url" in (
        both.stderr
    )
    assert both.stdout == ""


def test_again_says_it_queued_the_seen_pages_again_not_that_it_fetched_them(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """The line after an --again crawl's summary said 'fetched N article pages seen before again', N the
    links the job queued again (its `again`), however their fetch ended: a page seen before that answers
    404 now was among them ('fetched 2 ...' beside 'fetched 2 pages', the index page one of those, 'errors
    1'); so would a page the crawl never reached (max_pages, Ctrl-C)."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/again-one", "/status/404")
    first = site.temp()
    assert "stored 1 article" in first.stdout, first.stdout + first.stderr[-3000:]

    again = site.temp("--again")

    lines = again.stdout.splitlines()
    assert lines[0].startswith(
        "fetched 2 pages, stored 0 articles, updated 1 stored before, skipped 0, errors 1"
    ), again.stdout + again.stderr[-3000:]
    assert (
        "queued 2 article pages seen before again (--again: this job only; the counts above say how they"
        " ended): their URLs stay seen for every other crawl"
    ) in lines, again.stdout


def test_again_fetches_an_article_behind_a_redirect_once(tmp_path: Path, site_server: SiteServer) -> None:
    """An article link that redirects to a URL seen already (its target, marked seen as the first crawl
    followed the redirect) was skipped by --again, 'it redirects to ..., seen already': every article of a
    site whose links redirect (http to https, a short link, a trailing slash) stayed unfetched. The target
    is fetched once in the job however many links redirect to it."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/r/again-moved", "/r/again-moved?again")
    first = site.temp()
    assert "stored 1 article" in first.stdout, first.stdout + first.stderr[-3000:]

    again = site.temp("--again")

    assert again.stdout.splitlines()[0] == (
        "fetched 2 pages, stored 0 articles, updated 1 stored before,"
        " skipped 1 (links seen already: 1), errors 0"
    ), again.stdout + again.stderr[-3000:]
    assert list(site.stored()) == ["/a/again-moved"]
    # A direct link and the redirects to it: one fetch in the job (the job's set holds one fingerprint).
    site.rule("/a/again-moved", "/r/again-moved", "/r/again-moved?again")
    both = site.temp("--again")
    assert both.stdout.splitlines()[0] == (
        "fetched 2 pages, stored 0 articles, updated 1 stored before,"
        " skipped 2 (links seen already: 2), errors 0"
    ), both.stdout + both.stderr[-3000:]


def test_what_goes_on_with_an_again_crawl_is_a_temp_crawl_with_again(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """A plain `crawler temp S` does not go on with the job of `crawler temp S --again` (it starts a new
    one, which keeps the seen filter): what the --again crawl says goes on with its job names --again."""
    site = Site(site_server, tmp_path, name="news")
    page = f"again-wait-{tmp_path.name}"
    site.rule(f"/flaky/{page}?fail=1&retry_after=3")
    done = site.temp("--again")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "asked every worker to wait" in line]
    assert len(said) == 1 and "(`crawler temp news --again` goes on with job " in said[0], done.stderr[-3000:]


def test_a_temp_crawl_after_forget_that_finds_every_article_seen_names_the_command_that_fetches_them(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """`crawler sites forget SITE --articles` deletes the site's articles and keeps its URLs seen (the seen
    filter, shared by every site, cannot remove one): the temp crawl of the site a user runs next to start
    it afresh said "fetched 1 page, stored 0 articles, skipped 2 (seen already: 2), errors 0" and exit 0,
    nothing about how to fetch them. It names the command that does, and why they were skipped."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/forgot-one", "/a/forgot-two")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    forgot = site.crawler("sites", "forget", "news", "--articles", "--yes")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr[-3000:]
    assert site.stored() == {}
    plain = site.temp()
    assert plain.returncode == 0, plain.stdout + plain.stderr[-3000:]
    assert plain.stdout.splitlines()[:2] == [
        "fetched 1 page, stored 0 articles, skipped 2 (links seen already: 2), errors 0",
        "the 2 article links its listings gave (a URL once for each listing that gave it) were seen before,"
        " by earlier crawls (`crawler sites forget` keeps URLs seen: the seen filter cannot forget one):"
        " `crawler temp news --again` fetches them again",
    ], plain.stdout
    again = site.temp("--again")
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert set(site.stored()) == {"/a/forgot-one", "/a/forgot-two"}


def test_the_job_hash_of_every_temp_crawl_that_ended_expires(tmp_path: Path, site_server: SiteServer) -> None:
    """Every temp crawl (of the whole site, --again, --url) left its job hash (crawler:job:<id>) with no
    time-to-live: an operator's cron of temp crawls added one a run, for ever. A job that ended is kept
    SCHEDULE_JOB_KEEP_HOURS, then expires."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/kept-one", "/a/kept-two")
    hours = ("-s", "SCHEDULE_JOB_KEEP_HOURS=2")
    for run in (
        site.temp(*hours),
        site.temp("--again", *hours),
        site.temp("--url", site_server.url("/a/kept-three"), *hours),
    ):
        assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    with EmbeddedRedis(site.data) as embedded:
        server = connect(embedded.ensure())
        jobs = [key for key in server.scan_iter("crawler:job:*") if server.type(key) == b"hash"]
        ttls = sorted(server.ttl(key) for key in jobs)
        server.close()
    assert len(ttls) == 3 and all(0 < ttl <= 2 * 3600 for ttl in ttls), ttls


def test_a_dead_letter_goes_once_its_page_is_fetched_by_a_later_crawl(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """An article page dead-lettered (503 at each of its tries), fetched and stored by the next
    `crawler temp SITE --again`, stayed listed by `crawler dead list` and counted by `crawler status`, as
    did an index page that failed at one crawl and was read at the next: a dead letter of a page that
    works now, which `crawler dead requeue` would fetch once more. A page fetched again whose request ends
    well takes its dead letter with it."""
    site = Site(site_server, tmp_path, name="news")
    article = f"/flaky/{unique('dead-article')}?fail=3"
    site.rule(article)
    first = site.temp()
    assert "errors 1" in first.stdout, first.stdout + first.stderr[-3000:]
    assert [letter["url"] for letter in site.dead()] == [site_server.url(article)]

    again = site.temp("--again")

    assert "stored 1 article" in again.stdout, again.stdout + again.stderr[-3000:]
    assert site.dead() == [], "the article stored, its dead letter goes"
    assert site.status()["queue"]["dead_letters"] == 0

    index = site_server.url(f"/flaky/{unique('dead-index')}?fail=3")
    (site.rules / "news.yaml").write_text(RULE.format(start=index), encoding="utf-8")
    down = site.temp()
    assert [letter["url"] for letter in site.dead()] == [index], down.stdout + down.stderr[-3000:]

    up = site.temp()

    assert "errors 0" in up.stdout, up.stdout + up.stderr[-3000:]
    assert site.dead() == [], "the index page read, its dead letter goes"


def test_a_dead_letter_written_before_letters_were_named_goes_once_again_fetches_its_page(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """An article's dead letter written before every letter was named in crawler:dead-superseded (an
    older worker's, an older data folder's) stayed listed after `crawler temp SITE --again` stored its
    page: the ack found no letter named. A crawl that fetches pages again names such letters first."""
    site = Site(site_server, tmp_path, name="news")
    article = f"/flaky/{unique('old-letter')}?fail=3"
    site.rule(article)
    first = site.temp()
    assert "errors 1" in first.stdout, first.stdout + first.stderr[-3000:]
    with EmbeddedRedis(site.data) as embedded:
        server = connect(embedded.ensure())
        assert server.delete(Keys("crawler").dead_superseded) == 1
        server.close()

    again = site.temp("--again")

    assert "stored 1 article" in again.stdout, again.stdout + again.stderr[-3000:]
    assert site.dead() == [], "the article stored, its letter of an older crawler goes"


def test_a_temp_crawl_that_finds_every_article_seen_names_the_sites_dead_letters_and_their_requeue(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """After an outage of a site (its article pages dead-lettered), the next temp crawl found every link
    seen and named `crawler temp SITE --again` alone, which fetches every article again, stored ones too;
    not the dead letters, which `crawler dead requeue --site SITE` fetches again, they alone."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/outage-one", f"/flaky/{unique('outage')}?fail=99")
    first = site.temp()
    assert "stored 1 article" in first.stdout and "errors 1" in first.stdout, first.stdout + first.stderr

    plain = site.temp()

    assert plain.stdout.splitlines()[:2] == [
        "fetched 1 page, stored 0 articles, skipped 2 (links seen already: 2), errors 0",
        "the 2 article links its listings gave (a URL once for each listing that gave it) were seen before,"
        " by earlier crawls (`crawler sites forget` keeps URLs seen: the seen filter cannot forget one):"
        " `crawler temp news --again` fetches them again; 1 page of news is a dead letter, failed before"
        " (`crawler dead list --site news` says why): `crawler dead requeue --site news` fetches just that"
        " one again",
    ], plain.stdout + plain.stderr[-3000:]


def test_a_requeued_dead_letter_its_worker_failed_again_is_not_said_to_have_failed_before(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """A dead letter of an older job, requeued (`crawler dead requeue`), is taken by the next temp crawl's
    worker from the shared queue and fails again in it: the crawl said "1 page of news is a dead letter,
    failed before" of the page it had just failed itself. Its own line says so (its worker also handled
    it, dead-lettered); only the dead letters from before the crawl are said to have failed before."""
    site = Site(site_server, tmp_path, name="news")
    page = site_server.url(f"/flaky/{unique('down')}?fail=99")
    site.rule("/a/down-one", page)
    first = site.temp()
    assert "errors 1" in first.stdout, first.stdout + first.stderr[-3000:]
    plain = site.temp()  # a job of its own: the requeue goes back to the first, not the last temp crawl
    assert "1 page of news is a dead letter, failed before" in plain.stdout, plain.stdout
    assert site.crawler("dead", "requeue", "--all").returncode == 0
    # A slow listing holds this crawl's job open while its worker fails the requeued page again.
    index = site_server.url("/links?to=/a/down-one," + page.split("/", 3)[3])
    site.write_rule(RULE.format(start=index).replace('"]', f'", "{site_server.url("/slow?seconds=4")}"]', 1))

    again = site.temp()

    assert [letter["url"] for letter in site.dead()] == [page], again.stdout
    assert re.fullmatch(  # the request and its retries
        r"its worker also handled \d+ requests of other jobs from the shared queue \(site news\), 1 of them"
        r" dead-lettered: `crawler dead list` shows them",
        again.stdout.splitlines()[-1],
    ), again.stdout + again.stderr[-3000:]
    assert "failed before" not in again.stdout, again.stdout


def test_a_temp_crawl_that_finds_every_article_seen_does_not_call_its_own_errors_failed_before(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """A crawl whose links were all seen but one, a page that answered 404 in this very crawl, said '1 page
    of news is a dead letter, failed before (...)' of that page, beside its own line for this crawl's
    errors: only the dead letters of earlier crawls are named so."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/seen-one")
    first = site.temp()
    assert "stored 1 article" in first.stdout, first.stdout + first.stderr[-3000:]
    site.rule("/a/seen-one", "/status/404")

    second = site.temp()

    assert second.stdout.splitlines()[0].endswith("errors 1 (HTTP 404: 1)"), second.stdout
    seen = [line for line in second.stdout.splitlines() if "seen before" in line]
    assert seen == [
        "the article link its listings gave was seen before, by earlier crawls (`crawler sites forget` keeps"
        " URLs seen: the seen filter cannot forget one): `crawler temp news --again` fetches it again"
    ], second.stdout
