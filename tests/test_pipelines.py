"""The item pipelines built by Scrapy from settings (deprecation warnings are errors): clean, qRead, store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.pipelines import ItemPipelineManager
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler import settings as project_settings
from crawler.errors import InputError
from crawler.pipelines import CleanPipeline, QreadFallbackPipeline, StorePipeline, normalize_published
from crawler.store import SqliteStore

STORY = [
    "The harbour bridge reopened to traffic on Monday morning after six weeks of repairs to its deck and its"
    " expansion joints, the city's transport office said.",
    "Engineers replaced the worn road surface and renewed the lighting along the whole span, work that had"
    " been planned for two years and was brought forward after a storm damaged the joints in the spring.",
    "Drivers are asked to keep to the lower speed limit for the first weeks while the new surface settles,"
    " and buses return to their usual routes from Tuesday.",
]
PAGE = f"""<!doctype html><html><head><title>Bridge reopens after repairs | City News</title></head><body>
<ul class="nav"><li><a href="/">Home</a></li><li><a href="/city/">City</a></li>
<li><a href="/sport/">Sport</a></li><li><a href="/weather/">Weather</a></li></ul>
<h1>Bridge reopens after repairs</h1>
<div class="story">{"".join(f"<p>{paragraph}</p>" for paragraph in STORY)}</div>
<div class="footer"><a href="/about">About</a> <a href="/privacy">Privacy</a></div>
</body></html>"""
LONG_RULE_BODY = "A body the rule read in full. " * 10


def make_crawler(data_dir: Path, **overrides: Any) -> Crawler:
    """A crawler with the project's settings (and so its ITEM_PIPELINES), storing under ``data_dir``."""
    settings = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    settings.update(CRAWLER_DATA_DIR=str(data_dir), MONGO_URI=None, **overrides)
    return get_crawler(settings_dict=settings)


def item(**values: Any) -> dict[str, Any]:
    return {
        "site": "citynews",
        "url": "http://127.0.0.1:8631/citynews/2026/bridge.html",
        "fetched_at": "2026-11-20T10:31:00Z",
        "title": "Bridge reopens after repairs",
        "body": LONG_RULE_BODY,
        "published": "2026-11-20",
        "author": "A. Writer",
        "fields": {},
        "job": None,
        "_html": PAGE,
        **values,
    }


@pytest.fixture
def crawler(tmp_path: Path) -> Crawler:
    return make_crawler(tmp_path)


@pytest.fixture
def store_pipeline(crawler: Crawler) -> Iterator[StorePipeline]:
    pipeline = build_from_crawler(StorePipeline, crawler)
    pipeline.open_spider()
    yield pipeline
    pipeline.close_spider()


def stats(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return crawler.stats.get_stats()


# --- CleanPipeline -----------------------------------------------------------------------------------


def test_clean_normalises_text_fields_and_drops_the_fragment(crawler: Crawler) -> None:
    pipeline = build_from_crawler(CleanPipeline, crawler)
    cleaned = pipeline.process_item(
        item(
            url=" http://127.0.0.1:8631/citynews/2026/bridge.html#comments ",
            title="\n  Bridge\u00a0reopens \t after   repairs\u200b ",
            author="   ",
            published=" Published: 20 November 2026 ",
            body="  First\nparagraph,  wrapped. \n \n\n\x07 \n\n Second\tparagraph.\r\n\r\n   ",
            fields={"section": "  City  ", "tags": ""},
        )
    )
    assert cleaned["url"] == "http://127.0.0.1:8631/citynews/2026/bridge.html"
    assert cleaned["title"] == "Bridge reopens after repairs"
    assert cleaned["author"] is None
    assert cleaned["published"] == "2026-11-20"
    assert cleaned["body"] == "First paragraph, wrapped.\n\nSecond paragraph."
    assert cleaned["fields"] == {"section": "City", "tags": None}


def test_clean_turns_an_empty_body_into_none(crawler: Crawler) -> None:
    pipeline = build_from_crawler(CleanPipeline, crawler)
    assert pipeline.process_item(item(body=" \n\n \t "))["body"] is None


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2026-11-20", "2026-11-20"),
        ("2026-11-20T10:31:00+08:00", "2026-11-20T10:31:00+08:00"),
        ("2026-11-20 10:31", "2026-11-20T10:31:00"),
        ("Fri, 20 Nov 2026 10:31:00 GMT", "2026-11-20T10:31:00+00:00"),
        ("2026/11/20", "2026-11-20"),
        ("Updated 2026.11.20 10:31", "2026-11-20T10:31:00"),
        ("2026年11月20日", "2026-11-20"),
        ("2026年11月20日 10:31", "2026-11-20T10:31:00"),
        ("November 20, 2026", "2026-11-20"),
        ("Sept. 3rd 2026", "2026-09-03"),
        ("20 Nov. 2026", "2026-11-20"),
        # Unparsed: kept as the page gave it (day/month order unknown, or no date at all, or no such day).
        ("11/20/2026", "11/20/2026"),
        ("yesterday", "yesterday"),
        ("2026-02-30", "2026-02-30"),
    ],
)
def test_published_dates_become_iso(text: str, iso: str) -> None:
    assert normalize_published(text) == iso


# --- QreadFallbackPipeline ---------------------------------------------------------------------------


def test_qread_supplies_the_body_when_the_rules_is_short(crawler: Crawler) -> None:
    pipeline = build_from_crawler(QreadFallbackPipeline, crawler)
    result = pipeline.process_item(item(body="Bridge reopens."))
    assert result["body"] == "\n\n".join(STORY)
    assert result["extraction"] == {
        "body_from": "qread",
        "algorithm": "qread",
        "body_chars": len(result["body"]),
    }
    assert stats(crawler)["extract/qread_fallback/citynews"] == 1
    assert stats(crawler)["extract/short_body/citynews"] == 1
    assert "extract/rule_body/citynews" not in stats(crawler)


def test_qread_supplies_a_missing_body(crawler: Crawler) -> None:
    pipeline = build_from_crawler(QreadFallbackPipeline, crawler)
    assert pipeline.process_item(item(body=None))["body"] == "\n\n".join(STORY)
    assert stats(crawler)["extract/qread_fallback/citynews"] == 1


def test_the_rules_body_is_kept_when_long_enough(crawler: Crawler) -> None:
    pipeline = build_from_crawler(QreadFallbackPipeline, crawler)
    result = pipeline.process_item(item())
    assert result["body"] == LONG_RULE_BODY
    assert result["extraction"] == {"body_from": "rule", "algorithm": None, "body_chars": len(LONG_RULE_BODY)}
    assert stats(crawler) == {"extract/rule_body/citynews": 1}


def test_the_rules_own_minimum_wins_over_the_setting(crawler: Crawler) -> None:
    pipeline = build_from_crawler(QreadFallbackPipeline, crawler)
    assert (
        pipeline.process_item(item(body="Bridge reopens.", _min_body_chars=10))["body"] == "Bridge reopens."
    )
    assert pipeline.process_item(item(_min_body_chars=10_000))["body"] == "\n\n".join(STORY)
    assert stats(crawler)["extract/rule_body/citynews"] == 1
    assert stats(crawler)["extract/qread_fallback/citynews"] == 1


def test_a_short_rule_body_stays_when_qread_finds_less(crawler: Crawler) -> None:
    pipeline = build_from_crawler(QreadFallbackPipeline, crawler)
    result = pipeline.process_item(item(body="Bridge reopens.", _html="<html><body><p>Hi</p></body></html>"))
    assert result["body"] == "Bridge reopens."
    assert result["extraction"]["body_from"] == "rule"
    assert stats(crawler)["extract/short_body/citynews"] == 1
    assert stats(crawler)["extract/rule_body/citynews"] == 1


def test_an_unknown_algorithm_setting_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="setting QREAD_ALGORITHM is 'magic': expected one of qread"):
        build_from_crawler(QreadFallbackPipeline, make_crawler(tmp_path, QREAD_ALGORITHM="magic"))


# --- StorePipeline -----------------------------------------------------------------------------------


def test_store_upserts_without_private_keys_and_counts(tmp_path: Path, crawler: Crawler) -> None:
    pipeline = build_from_crawler(StorePipeline, crawler)
    pipeline.open_spider()
    stored = pipeline.process_item(item(_min_body_chars=100))
    assert not [key for key in stored if key.startswith("_")]
    pipeline.process_item(item(fetched_at="2026-11-21T08:00:00Z", title="Bridge reopens at last"))
    pipeline.close_spider()
    assert stats(crawler) == {"store/new/citynews": 1, "store/updated/citynews": 1}
    assert sorted(path.name for path in (tmp_path / "articles").iterdir() if path.suffix == ".sqlite") == [
        "articles_2026w47.sqlite"
    ]
    with SqliteStore(tmp_path) as store:
        document = store.get(item()["url"])
    assert document is not None
    assert (document["title"], document["first_seen"]) == (
        "Bridge reopens at last",
        "2026-11-20T10:31:00.000000Z",
    )
    assert not [key for key in document if key.startswith("_")]


def test_an_item_without_a_body_is_dropped_and_counted(
    store_pipeline: StorePipeline, crawler: Crawler
) -> None:
    dropped = item(body=None)
    with pytest.raises(DropItem, match=r"no body in http://127\.0\.0\.1:8631/citynews/2026/bridge\.html"):
        store_pipeline.process_item(dropped)
    assert "_html" not in dropped  # Scrapy logs a dropped item: never with the whole page
    assert stats(crawler) == {"store/dropped_empty/citynews": 1}
    assert store_pipeline.store is not None and store_pipeline.store.count() == 0


def test_the_pipelines_run_in_order_through_scrapys_manager(tmp_path: Path, crawler: Crawler) -> None:
    manager = ItemPipelineManager.from_crawler(crawler)

    async def run() -> list[dict[str, Any]]:
        await manager.open_spider_async()
        try:
            outputs = [
                await manager.process_item_async(
                    item(url=f"http://127.0.0.1:8631/citynews/{n}.html#top", body=body)
                )
                for n, body in enumerate(["  Too   short. ", LONG_RULE_BODY])
            ]
            with pytest.raises(DropItem):
                await manager.process_item_async(item(body=None, _html="<html></html>"))
        finally:
            await manager.close_spider_async()
        return outputs

    outputs = asyncio.run(run())
    assert [output["extraction"]["body_from"] for output in outputs] == ["qread", "rule"]
    assert stats(crawler) == {
        "extract/short_body/citynews": 2,
        "extract/qread_fallback/citynews": 1,
        "extract/rule_body/citynews": 1,
        "store/new/citynews": 2,
        "store/dropped_empty/citynews": 1,
    }
    with SqliteStore(tmp_path) as store:
        documents = {document["url"]: document for document in store.iter_articles()}
    assert set(documents) == {
        "http://127.0.0.1:8631/citynews/0.html",
        "http://127.0.0.1:8631/citynews/1.html",
    }
    assert documents["http://127.0.0.1:8631/citynews/0.html"]["body"] == "\n\n".join(STORY)
