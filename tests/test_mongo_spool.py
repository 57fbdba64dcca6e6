"""MongoDB unreachable: articles go to the local spool, in order, and are replayed when it is back.

The first test spools through the real pymongo driver against a port where nothing listens. Replays run
into the pymongo-shaped fake (tests/mongofake.py, NOT MongoDB: no MongoDB server can run here), which
can be switched down and up again.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import resource
import socket
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from mongofake import FakeClient
from pymongo.errors import (
    AutoReconnect,
    BulkWriteError,
    DocumentTooLarge,
    InvalidName,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    ServerSelectionTimeoutError,
    WTimeoutError,
)
from test_store_contract import DISCLAIMER, FLOOD, FLOOD_REPOST, article, made_up

from crawler.store import StoreError, Written
from crawler.store.base import lasting_failure
from crawler.store.document import make_document
from crawler.store.mongo import MongoStore
from crawler.store.spool import Spool
from crawler.worker.pipelines.store import _write as write_batch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fake_store(tmp_path: Path, client: FakeClient, clock: Clock, **options: Any) -> MongoStore:
    return MongoStore(
        "mongodb://fake",
        spool_dir=tmp_path,
        prefix="news",
        client=client,  # type: ignore[arg-type]
        clock=clock,
        retry_seconds=10,
        **options,
    )


def spooled_urls(path: Path) -> list[str]:
    return [json.loads(line)["url"] for line in path.read_text(encoding="utf-8").splitlines()]


def stored(client: FakeClient, week: str = "2026w47") -> dict[str, dict[str, Any]]:
    return {d["url"]: d for d in client[f"news_{week}"]["articles"].find({})}


def test_an_unreachable_server_spools_in_order_and_a_later_store_replays_it(tmp_path: Path) -> None:
    uri = f"mongodb://127.0.0.1:{closed_port()}/"
    down = MongoStore(uri, spool_dir=tmp_path, prefix="news", retry_seconds=3600, timeout_ms=200)
    first = down.upsert_many(
        [
            article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD),
            article("http://news.test/a", "2026-11-17T11:00:00Z", title="first fetch"),
        ]
    )
    assert [w.outcome for w in first] == ["spooled", "spooled"]
    # While the spool holds articles, later ones join it without trying the server (order is kept).
    later = down.upsert_many(
        [
            article("http://other.test/repost", "2026-11-17T12:00:00Z", body=FLOOD_REPOST),
            article("http://news.test/a", "2026-11-17T13:00:00Z", title="second fetch"),
        ]
    )
    assert [w.outcome for w in later] == ["spooled", "spooled"]
    spool_file = down.spool.path
    down.close()
    assert spooled_urls(spool_file) == [
        "http://news.test/flood",
        "http://news.test/a",
        "http://other.test/repost",
        "http://news.test/a",
    ]
    # The worker is gone; its spool is an orphan that the next store on this folder takes over.
    client = FakeClient()
    with fake_store(tmp_path, client, Clock()) as back:
        assert back.upsert(article("http://news.test/b", "2026-11-18T09:00:00Z")).new
    documents = stored(client)
    assert set(documents) == {"http://news.test/flood", "http://news.test/a", "http://news.test/b"}
    assert documents["http://news.test/a"]["title"] == "second fetch", (
        "replayed in order: the newer fetch won"
    )
    assert [r["url"] for r in documents["http://news.test/flood"]["reposts"]] == ["http://other.test/repost"]
    assert not spool_file.exists()
    assert not list((tmp_path / "spool").iterdir())


def test_writes_spool_while_down_and_replay_when_the_retry_is_due(tmp_path: Path) -> None:
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock, batch_size=2) as store:
        assert store.upsert(article("http://news.test/0", "2026-11-17T10:00:00Z")).new
        client.down = True
        results = store.upsert_many(
            article(f"http://news.test/{n}", "2026-11-17T11:00:00Z") for n in range(1, 6)
        )
        assert [w.outcome for w in results] == ["spooled"] * 5
        client.down = False
        clock.now += 5  # not due yet: still spooled, in order
        assert store.upsert(article("http://news.test/6", "2026-11-17T12:00:00Z")).outcome == "spooled"
        assert len(stored(client)) == 1
        clock.now += 10
        assert store.upsert(article("http://news.test/7", "2026-11-17T13:00:00Z")) == Written(
            "new", "http://news.test/7"
        )
        assert set(stored(client)) == {f"http://news.test/{n}" for n in range(8)}
        assert not store.spool.pending


def test_a_long_outage_is_said_still_unreachable_once_a_minute_not_at_each_retry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """MongoDB down for ten minutes under a worker that stores an article every 10 s: each try of the spool's
    replay (every retry_seconds, 10 s) logged "MongoDB still unreachable (...); 0 spooled articles written
    so far", 59 lines of the same outage. It is said at most once a minute (and whenever a try wrote some),
    then that MongoDB is back."""
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store, caplog.at_level("INFO", logger="crawler.store.mongo"):
        client.down = True
        for number in range(60):
            assert store.upsert(article(f"http://news.test/{number}", "2026-11-17T10:00:00Z")).outcome == (
                "spooled"
            )
            clock.now += 10
        client.down = False
        assert store.upsert(article("http://news.test/back", "2026-11-17T11:00:00Z")).new
    said = [record.getMessage() for record in caplog.records]
    still = [line for line in said if line.startswith("MongoDB still unreachable")]
    assert 9 <= len(still) <= 10, said
    assert said[-1] == "MongoDB is back: 60 spooled articles written", said


def test_a_replay_cut_short_resumes_where_it_stopped(tmp_path: Path) -> None:
    client, clock = FakeClient(), Clock()
    store = fake_store(tmp_path, client, clock, batch_size=2)
    client.down = True
    store.upsert_many(article(f"http://news.test/{n}", "2026-11-17T11:00:00Z") for n in range(6))
    client.down = False
    written: list[str] = []
    original = store._write

    def failing_after_one_batch(batch: Sequence[dict[str, Any]]) -> list[Written]:
        if written:
            client.down = True
        written.extend(document["url"] for document in batch)
        return original(batch)

    store._write = failing_after_one_batch  # type: ignore[method-assign,assignment]
    clock.now += 60
    assert store.upsert(article("http://news.test/x", "2026-11-17T12:00:00Z")).outcome == "spooled"
    client.down = False
    assert set(stored(client)) == {"http://news.test/0", "http://news.test/1"}
    offset = Path(str(store.spool.path) + ".offset")
    assert offset.exists(), "the replayed batch is remembered"
    store._write = original  # type: ignore[method-assign]
    clock.now += 60
    store.flush()
    assert set(stored(client)) == {f"http://news.test/{n}" for n in range(6)} | {"http://news.test/x"}
    assert not offset.exists() and not store.spool.pending
    store.close()


def carriers(count: int) -> list[dict[str, Any]]:
    """Articles of their own text that all end with the disclaimer."""
    return [
        article(
            f"http://legal.test/{n}",
            f"2026-11-17T1{n}:00:00Z",
            body="\n\n".join([*made_up(500 + n, 3), DISCLAIMER]),
        )
        for n in range(count)
    ]


PAGE = f"Opening hours change next week.\n\n{DISCLAIMER}"


def lost() -> AutoReconnect:
    return AutoReconnect("connection lost (by the test)")


def written_state(
    client: FakeClient,
) -> tuple[set[str], dict[str, list[str]], set[tuple[int, frozenset[str]]]]:
    """What the week holds: its articles, the reposts recorded against each, and its paragraphs' URLs."""
    articles = stored(client)
    reposts = {url: sorted(r["url"] for r in d.get("reposts", [])) for url, d in articles.items()}
    paragraphs = {(d["_id"], frozenset(d["urls"])) for d in client["news_2026w47"]["paragraphs"].find({})}
    return set(articles), reposts, paragraphs


def a_batch_after_a_carrier(
    store: MongoStore, before_batch: Callable[[], None] = lambda: None
) -> list[Written]:
    """A carrier of the disclaimer, then (after ``before_batch``) one batch: a second carrier, a page of the
    disclaimer and five words of its own, an article and its repost."""
    first, second = carriers(2)
    assert store.upsert(first).new
    before_batch()
    return store.upsert_many(
        [
            second,
            article("http://other.test/page", "2026-11-18T10:00:00Z", body=PAGE),
            article("http://news.test/flood", "2026-11-18T11:00:00Z", body=FLOOD),
            article("http://other.test/repost", "2026-11-18T12:00:00Z", body=FLOOD_REPOST),
        ]
    )


@pytest.mark.parametrize(
    ("collection", "operation", "after"),
    [
        ("articles", "find", 0),  # the batch's URLs
        ("articles", "find", 1),  # the duplicate candidates
        ("paragraphs", "find", 0),  # the paragraph counts
        ("paragraphs", "bulk_write", 0),
        ("articles", "bulk_write", 0),
    ],
)
def test_a_connection_lost_at_any_step_of_a_batch_spools_it_and_the_replay_writes_what_it_would_have(
    tmp_path: Path, collection: str, operation: str, after: int
) -> None:
    """Wherever the connection drops while a batch is written (reading its URLs, its candidates or its
    paragraph counts; writing the counts or the articles), the batch is spooled whole, and its replay leaves
    the articles, reposts and paragraph counts a write never cut leaves."""
    uncut = FakeClient()
    with fake_store(tmp_path / "uncut", uncut, Clock()) as store:
        expected = a_batch_after_a_carrier(store)
    assert [w.outcome for w in expected] == ["new", "new", "new", "repost"]
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path / "cut", client, clock) as store:
        cut = a_batch_after_a_carrier(
            store, lambda: client.fail_next(collection, operation, lost(), after=after)
        )
        assert [w.outcome for w in cut] == ["spooled"] * 4
        clock.now += 60
        store.flush()
        assert not store.spool.pending
    assert written_state(client) == written_state(uncut)


def test_a_refused_paragraph_count_fails_the_batch_before_any_article_is_written(tmp_path: Path) -> None:
    """A paragraph count MongoDB refuses (not a duplicate key) fails the whole batch with a StoreError that
    names the database, and no article of it is stored: nothing is acknowledged that was not counted.
    Written again, the batch stores what it would have."""
    refused = BulkWriteError(
        {"writeErrors": [{"index": 0, "code": 121, "errmsg": "Document failed validation"}]}
    )
    client, clock = FakeClient(), Clock()
    batch = carriers(2)
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("paragraphs", "bulk_write", refused)
        with pytest.raises(StoreError, match=r"paragraph count in news_2026w47: Document failed validation"):
            store.upsert_many(batch)
        assert stored(client) == {}
        assert [w.outcome for w in store.upsert_many(batch)] == ["new", "new"]
        page = store.upsert(article("http://other.test/page", "2026-11-18T10:00:00Z", body=PAGE))
        assert page == Written("new", "http://other.test/page")


def test_a_batch_cut_short_while_counting_its_paragraphs_counts_them_when_replayed(tmp_path: Path) -> None:
    """Two carriers of the disclaimer, written while the connection drops at the paragraph counts, then
    replayed: the disclaimer is common, and a page of it and five words of its own is no part of them (it
    was one of the first carrier when the replay found the carriers stored and counted nothing)."""
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("paragraphs", "bulk_write", lost())
        assert [w.outcome for w in store.upsert_many(carriers(2))] == ["spooled"] * 2
        clock.now += 60
        page = store.upsert(article("http://other.test/page", "2026-11-18T10:00:00Z", body=PAGE))
        assert set(stored(client)) == {f"http://legal.test/{n}" for n in range(2)} | {
            "http://other.test/page"
        }
        assert page == Written("new", "http://other.test/page")


def test_a_batch_whose_paragraphs_were_counted_is_not_counted_again_when_replayed(tmp_path: Path) -> None:
    """A carrier of the disclaimer and a page of it and five words of its own, in one batch whose article
    write drops the connection after the carrier's paragraphs were counted. Replayed, the page is what it
    would have been: a part of the carrier (the disclaimer is in one document before it, not in two: the
    count the cut write left is the carrier's, which the batch counts itself)."""
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", lost())
        page = article("http://other.test/page", "2026-11-18T10:00:00Z", body=PAGE)
        assert [w.outcome for w in store.upsert_many([*carriers(1), page])] == ["spooled", "spooled"]
        clock.now += 60
        store.flush()
        assert not store.spool.pending
        assert set(stored(client)) == {"http://legal.test/0"}
        original = store.original_of("http://other.test/page")
        assert original is not None and original["url"] == "http://legal.test/0"


def test_a_line_cut_short_by_a_crash_is_skipped(tmp_path: Path) -> None:
    spool = Spool(tmp_path, "mongo_news")
    spool.append([{"url": "a"}, {"url": "b"}])
    spool.close()
    with spool.path.open("a", encoding="utf-8") as handle:
        handle.write('{"url": "c", "bo')
    assert [[d["url"] for d in batch] for batch in spool.replay(1)] == [["a"], ["b"]]
    assert not spool.path.exists()


def _append_past_a_file_size_limit(directory: str) -> str:
    """In a process of its own: an article spooled, a batch spooled while the file may not grow past a
    few bytes more (``RLIMIT_FSIZE``: as on a full disk), then one more once it may; the error."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    spool = Spool(Path(directory), "mongo_news")
    spool.append([{"url": "first"}])
    resource.setrlimit(resource.RLIMIT_FSIZE, (spool.path.stat().st_size + 100, hard))
    try:
        spool.append([{"url": "refused", "body": "x" * 20_000}, {"url": "refused too"}])
    except StoreError as exc:
        error = str(exc)
    else:
        error = ""
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    spool.append([{"url": "after"}])
    spool.close()
    return error


def test_a_batch_the_disk_refused_leaves_nothing_in_the_spool_and_later_ones_replay(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        error = pool.apply(_append_past_a_file_size_limit, (str(tmp_path),))
    assert error.startswith("cannot spool 2 articles to "), error
    spool = Spool(tmp_path, "mongo_news")
    [path] = tmp_path.glob("mongo_news@*.jsonl")
    assert spool.waiting() == f"2 articles wait in the spool {path}"
    spool.path = path
    assert [[d["url"] for d in batch] for batch in spool.replay(10)] == [["first", "after"]]


def _first_append_past_a_file_size_limit(directory: str) -> tuple[str, list[str], bool, list[str]]:
    """In a process of its own: the first batch spooled while no file may grow past 10 bytes
    (``RLIMIT_FSIZE``: as on a full disk); the error, the files left, whether the spool says documents wait,
    then the files once a batch could be spooled."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    folder = Path(directory)
    spool = Spool(folder, "mongo_news")
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))
    try:
        spool.append([{"url": "refused", "body": "x" * 2_000}])
    except StoreError as exc:
        error = str(exc)
    else:
        error = ""
    left = sorted(path.name for path in folder.iterdir())
    pending = spool.pending
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    spool.append([{"url": "after"}])
    spool.close()
    return error, left, pending, sorted(path.name for path in folder.iterdir())


def test_a_first_batch_the_disk_refused_leaves_no_empty_spool_file(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        error, left, pending, after = pool.apply(_first_append_past_a_file_size_limit, (str(tmp_path),))
    assert error.startswith("cannot spool 1 article to "), error
    assert (left, pending) == ([], False)
    assert len(after) == 1 and after[0].startswith("mongo_news@"), after


def test_a_line_that_is_no_document_stops_the_replay_there_naming_it_and_what_to_do(tmp_path: Path) -> None:
    spool = Spool(tmp_path, "mongo_news")
    spool.append([{"url": "a"}, {"url": "b"}])
    spool.close()
    with spool.path.open("a", encoding="utf-8") as handle:  # a write an earlier version cut short, then one
        handle.write('{"url": "c", "bo{"url": "d"}\n{"url": "e"}\n')
    replayed: list[str] = []
    with pytest.raises(StoreError) as raised:
        for batch in spool.replay(2):
            replayed.extend(d["url"] for d in batch)
    assert replayed == ["a", "b"]
    assert str(raised.value) == (
        f"cannot replay the spool {spool.path}: its line 3 is no JSON document (Expecting ':' delimiter:"
        " line 1 column 19 (char 18)), as a write cut short by a full disk leaves: with every crawler on"
        f" the folder stopped, see it with `sed -n 3p {spool.path}`, put what it holds of whole documents on"
        f" lines of their own or take it out (`sed -i 3d {spool.path}`); the lines after it are replayed then"
    )
    with pytest.raises(StoreError):  # the offset kept: it resumes at that line
        next(iter(spool.replay(2)))


def test_a_spool_folder_that_cannot_be_made_says_what_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "spool").write_text("not a folder", encoding="utf-8")
    spool = Spool(tmp_path / "spool", "mongo_news")
    with pytest.raises(StoreError) as raised:
        spool.append([{"url": "a"}])
    assert str(raised.value) == (
        f"cannot open the spool file {spool.path}, where the articles MongoDB could not take wait: [Errno 17]"
        f" File exists: '{tmp_path / 'spool'}'; {tmp_path / 'spool'} is a file, not a folder: move it away,"
        " or give another data folder"
    )


def _replay_unable_to_save_its_place(directory: str) -> tuple[list[str], str]:
    """In a process of its own: a spool of three documents replayed a document at a time while no file may
    grow past a byte (``RLIMIT_FSIZE``: as on a full disk), so its place cannot be saved; what was
    replayed, and the error."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    spool = Spool(Path(directory), "mongo_news")
    spool.append([{"url": "a"}, {"url": "b"}, {"url": "c"}])
    spool.close()
    replayed: list[str] = []
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, hard))
    try:
        for batch in spool.replay(1):
            replayed.extend(d["url"] for d in batch)
    except StoreError as exc:
        return replayed, str(exc)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    return replayed, ""


def test_a_replay_that_cannot_save_its_place_past_a_file_size_limit_says_so(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        replayed, error = pool.apply(_replay_unable_to_save_its_place, (str(tmp_path),))
    [path] = tmp_path.glob("mongo_news@*.jsonl")
    assert replayed == ["a"]
    assert error == (
        f"cannot save how far the spool {path} was written into MongoDB in {path}.offset: [Errno 27] File"
        f" too large; a file in {tmp_path} may grow no larger (`ulimit -f`, or its file system's limit):"
        " raise the limit, or give another data folder: the replay goes on from its last saved place then"
        " (what it writes again is written once)"
    ), error


def test_a_replay_that_cannot_save_its_place_on_a_full_disk_says_to_free_space(tmp_path: Path) -> None:
    spool = Spool(tmp_path, "mongo_news")
    spool.append([{"url": "a"}, {"url": "b"}])
    spool.close()
    batches = spool.replay(1)
    assert [document["url"] for document in next(batches)] == ["a"]
    # Made once the replay read it (there was none): /dev/full reads as endless zeros, and takes no write.
    offset = Path(f"{spool.path}.offset")
    offset.symlink_to("/dev/full")
    with pytest.raises(StoreError) as raised:
        next(batches)
    assert str(raised.value) == (
        f"cannot save how far the spool {spool.path} was written into MongoDB in {offset}: [Errno 28] No"
        f" space left on device; free space on the disk of {tmp_path}: the replay goes on from its last"
        " saved place then (what it writes again is written once)"
    )


def test_replay_holds_one_batch_in_memory(tmp_path: Path) -> None:
    spool = Spool(tmp_path, "mongo_news")
    body = "x" * 2000
    for start in range(0, 5000, 500):
        spool.append([{"url": f"u{n}", "body": body} for n in range(start, start + 500)])
    spool.close()
    tracemalloc.start()
    count = 0
    for batch in spool.replay(100):
        count += len(batch)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 5000
    assert peak < 2_000_000, f"peak {peak} bytes: replay must not read the whole spool ({5000 * 2000} bytes)"


def test_a_spool_held_by_a_live_process_is_no_orphan(tmp_path: Path) -> None:
    mine = Spool(tmp_path, "mongo_news")
    theirs = Spool(tmp_path, "mongo_news")
    theirs.path = tmp_path / "mongo_news-otherhost-1.jsonl"
    theirs.append([{"url": "held"}])
    assert mine.orphans() == []
    theirs.close()
    assert mine.orphans() == [theirs.path]


def test_a_spool_file_that_cannot_be_opened_is_warned_of_once_not_at_each_scan(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A spool file of the store's name that cannot be opened (a folder by that name here; a file of
    another user's elsewhere) was warned of at each scan for orphans, every retry_seconds (10 s) while
    articles come: 60 lines in the test's ten minutes. Once while it stays so, again once it opened and
    failed again."""
    unopenable = tmp_path / "spool" / "mongo_news@otherhost-1.jsonl"
    unopenable.mkdir(parents=True)
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store, caplog.at_level("WARNING", logger="crawler.store"):
        for number in range(60):
            assert store.upsert(article(f"http://news.test/{number}", "2026-11-17T10:00:00Z")).new
            clock.now += 10
        unopenable.rmdir()
        unopenable.touch()
        store.upsert(article("http://news.test/opened", "2026-11-17T10:00:00Z"))
        clock.now += 10
        assert not unopenable.exists(), "opened: taken over as an orphan, empty, removed"
        unopenable.mkdir()
        store.upsert(article("http://news.test/again", "2026-11-17T10:00:00Z"))
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2 and said[0] == said[1], said
    assert said[0].startswith(f"cannot look at the spool file {unopenable}: [Errno 21] Is a directory"), said


def test_a_read_of_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    port = closed_port()
    store = MongoStore(f"mongodb://crawler:s3cret@127.0.0.1:{port}/", spool_dir=tmp_path, timeout_ms=200)
    with pytest.raises(StoreError) as raised:
        store.stats()
    store.close()
    assert str(raised.value) == (
        f"cannot reach MongoDB at 127.0.0.1:{port} (MONGO_URI) within 200 ms (MONGO_TIMEOUT_MS):"
        f" 127.0.0.1:{port}: [Errno 111] Connection refused"
    )


def test_a_read_that_found_the_server_unreachable_names_the_spool_and_closing_does_not_try_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer_client = FakeClient()
    writer_client.down = True
    writer = fake_store(tmp_path, writer_client, Clock())
    writer.upsert_many(article(f"http://news.test/{n}", "2026-11-17T11:00:00Z") for n in range(3))
    writer.close()  # a worker stopped while MongoDB was down: its spool is left for the next store
    client = FakeClient()
    client.down = True
    calls: list[str] = []
    check = client.check

    def counted() -> None:
        calls.append("call")
        check()

    monkeypatch.setattr(client, "check", counted)
    reader = fake_store(tmp_path, client, Clock())
    with pytest.raises(StoreError) as raised:
        reader.stats()
    assert str(raised.value) == (
        "cannot reach MongoDB at fake (MONGO_URI) within 5000 ms (MONGO_TIMEOUT_MS): connection refused (the"
        f" fake server is down); 3 articles wait in the spool {writer.spool.path}, written into MongoDB when"
        " it is back"
    )
    tried = len(calls)
    reader.close()
    assert len(calls) == tried, "closing did not try the server again right after it was found unreachable"
    assert writer.spool.path.exists()


def test_a_spool_file_is_taken_over_only_by_a_store_of_exactly_its_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as stopped:
        stopped.setattr(os, "getpid", lambda: 4242)  # workers that stopped while MongoDB was down
        for name in ("mongo_news", "mongo_news-a"):
            left = Spool(tmp_path, name)
            left.append([{"url": name}])
            left.close()
    host = socket.gethostname()
    for name in ("mongo_news", "mongo_news-a"):
        spool = Spool(tmp_path, name)
        (orphan,) = spool.orphans()
        assert orphan.name == f"{name}@{host}-4242.jsonl"
        assert [[document["url"] for document in batch] for batch in spool.adopt(orphan, 10)] == [[name]]
    assert not list(tmp_path.iterdir())


def test_spool_files_named_by_an_earlier_version_are_taken_over_only_when_their_name_is_clear(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = socket.gethostname()
    clear = {"mongo_news": "mongo_news-otherhost-7.jsonl", "mongo_news-a": f"mongo_news-a-{host}-8.jsonl"}
    unclear = "mongo_news-a-otherhost-9.jsonl"  # prefix news on host a-otherhost, or news-a on otherhost
    for file_name in [*clear.values(), unclear]:
        (tmp_path / file_name).write_text('{"url": "a"}\n', encoding="utf-8")
    for name, file_name in clear.items():
        assert [path.name for path in Spool(tmp_path, name).orphans()] == [file_name]
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert len(warnings) == 2 and all(str(tmp_path / unclear) in warning for warning in warnings)
    assert "rename it mongo_news@a-otherhost-9.jsonl" in warnings[0]
    assert "rename it mongo_news-a@otherhost-9.jsonl" in warnings[1]


def test_a_store_replays_no_spool_of_another_prefix_into_its_databases(tmp_path: Path) -> None:
    down = FakeClient()
    down.down = True
    other = MongoStore("mongodb://fake", spool_dir=tmp_path, prefix="news-a", client=down)  # type: ignore[arg-type]
    assert other.upsert(article("http://news-a.test/1", "2026-11-17T10:00:00Z")).outcome == "spooled"
    other.close()
    client = FakeClient()
    with fake_store(tmp_path, client, Clock()) as news:
        assert news.upsert(article("http://news.test/1", "2026-11-17T11:00:00Z")).new
    assert set(stored(client)) == {"http://news.test/1"}
    assert other.spool.path.exists()


def test_the_export_bench_with_mongodb_unreachable_says_so_in_one_line(tmp_path: Path) -> None:
    uri = f"mongodb://127.0.0.1:{closed_port()}"
    done = subprocess.run(
        [sys.executable, "bench/export.py", "--articles", "20", "--data", str(tmp_path)],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "MONGO_URI": uri, "MONGO_TIMEOUT_MS": "200"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] + "\n" == (
        f"bench/export.py: MONGO_URI is set, and cannot reach MongoDB at {uri.removeprefix('mongodb://')}"
        f" (MONGO_URI) within 200 ms (MONGO_TIMEOUT_MS): {uri.removeprefix('mongodb://')}: [Errno 111]"
        " Connection refused: unset MONGO_URI to measure SQLite alone\n"
    ), done.stderr


@pytest.mark.parametrize("value", ["0", "none", "-1"])
def test_unacknowledged_write_concerns_are_refused(value: str) -> None:
    from crawler.store import StoreError
    from crawler.store.mongo import parse_write_concern

    with pytest.raises(StoreError, match="MONGO_WRITE_CONCERN"):
        parse_write_concern(value)


@pytest.mark.parametrize("command", [["articles", "stats"], ["articles", "list"]])
def test_mongo_timeout_ms_from_the_environment_is_the_one_a_read_command_waits(
    tmp_path: Path, command: list[str]
) -> None:
    # `crawler articles` has no -s: MONGO_TIMEOUT_MS is an environment variable as MONGO_URI is.
    port = closed_port()

    def run(timeout_ms: str) -> subprocess.CompletedProcess[str]:
        env = {
            name: value for name, value in os.environ.items() if not name.startswith(("CRAWLER_", "MONGO_"))
        }
        env.update(
            MONGO_URI=f"mongodb://127.0.0.1:{port}/",
            MONGO_TIMEOUT_MS=timeout_ms,
            CRAWLER_DATA_DIR=str(tmp_path),
        )
        return subprocess.run(
            [sys.executable, "-m", "crawler.cli", *command],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    waited = run("300")
    assert waited.returncode == 1, waited.stderr
    assert (
        f"cannot reach MongoDB at 127.0.0.1:{port} (MONGO_URI) within 300 ms (MONGO_TIMEOUT_MS)"
        in waited.stderr
    )
    wrong = run("soon")
    assert wrong.returncode == 2 and "MONGO_TIMEOUT_MS" in wrong.stderr and "'soon'" in wrong.stderr, (
        wrong.stderr
    )


# --- errors no wait mends, and errors that pass ------------------------------------------------------------


def _too_large_write() -> BulkWriteError:
    return BulkWriteError(
        {"writeErrors": [{"index": 0, "code": 10334, "errmsg": "BSONObj size: 16793600 is invalid"}]}
    )


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OperationFailure("not authorized on news_2026w47 to execute command", code=13), "not authorized"),
        (OperationFailure("Authentication failed.", code=18), "Authentication failed"),
        (
            OperationFailure("Invalid namespace specified 'news_2026w47.articles'", code=73),
            "Invalid namespace",
        ),
        (InvalidName("database names cannot contain the character ' '"), "database names cannot contain"),
        (DocumentTooLarge("BSON document too large (16793600 bytes)"), "BSON document too large"),
        (_too_large_write(), "BSONObj size"),
    ],
    ids=["unauthorized", "authentication", "namespace", "database-name", "too-large", "too-large-on-server"],
)
def test_a_mongodb_error_no_wait_mends_is_a_lasting_store_error(
    tmp_path: Path, error: Exception, said: str
) -> None:
    """The pymongo-shaped fake (NOT MongoDB) raises pymongo's own exception classes."""
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", error)
        with pytest.raises(StoreError, match=re.escape(said)) as info:
            store.upsert(article("http://news.test/a", "2026-11-17T10:00:00Z"))
        assert lasting_failure(info.value), "dead-lettered at once, as SQLite's errors no wait mends"
        assert not store.spool.pending


@pytest.mark.parametrize(
    "error",
    [
        OperationFailure("interrupted at shutdown", code=11600),
        WTimeoutError("waiting for replication timed out", code=64),
    ],
    ids=["shutdown", "write-concern-timeout"],
)
def test_a_mongodb_error_that_may_pass_is_tried_again_later(tmp_path: Path, error: Exception) -> None:
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", error)
        with pytest.raises(StoreError) as info:
            store.upsert(article("http://news.test/a", "2026-11-17T10:00:00Z"))
        assert not lasting_failure(info.value), "deferred: fetched and stored again later"


@pytest.mark.parametrize(
    "error",
    [
        AutoReconnect("connection reset"),
        NotPrimaryError("not primary"),
        ServerSelectionTimeoutError("No servers found yet"),
        NetworkTimeout("timed out"),
    ],
    ids=["reconnect", "not-primary", "server-selection", "network-timeout"],
)
def test_a_mongodb_server_away_spools_the_batch(tmp_path: Path, error: Exception) -> None:
    client, clock = FakeClient(), Clock()
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", error)
        written = store.upsert(article("http://news.test/a", "2026-11-17T10:00:00Z"))
        assert written.outcome == "spooled" and store.spool.pending
        assert not lasting_failure(error)
        clock.now += 60
        store.flush()
        assert set(stored(client)) == {"http://news.test/a"}


def test_a_document_mongodb_refuses_for_good_fails_alone_and_the_rest_of_its_batch_is_stored(
    tmp_path: Path,
) -> None:
    """The store pipeline's write of a batch (on the fake, NOT MongoDB): the batch is refused for one
    document too large, which no wait mends; each of its documents is then written alone, and only that
    one fails."""
    client, clock = FakeClient(), Clock()
    documents = [make_document(article(f"http://news.test/{n}", "2026-11-17T10:00:00Z")) for n in range(3)]
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", _too_large_write())  # the batch
        client.fail_next("articles", "bulk_write", _too_large_write(), after=1)  # news.test/1 alone
        results = write_batch(store, [(document, True, False) for document in documents], None, {})
    assert [getattr(result, "outcome", None) for result in results] == ["new", None, "new"]
    assert isinstance(results[1], StoreError) and lasting_failure(results[1])
    assert set(stored(client)) == {"http://news.test/0", "http://news.test/2"}


def test_a_batch_stored_in_part_before_mongodb_refused_it_says_its_own_job_stored_them_when_written_again(
    tmp_path: Path,
) -> None:
    """On the fake (NOT MongoDB): a batch's week 47 bulk write stores its document, then its week 46 one is
    refused for good; written again one document at a time, the week 47 document is found stored by its
    own job (``same_job``), which the store pipeline counts as new, not updated."""
    client, clock = FakeClient(), Clock()
    documents = [
        make_document(article("http://news.test/47", "2026-11-17T10:00:00Z")),
        make_document(article("http://news.test/46", "2026-11-10T10:00:00Z")),
    ]
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", _too_large_write(), after=1)  # the batch's second week
        results = write_batch(store, [(document, True, False) for document in documents], None, {})
    assert results == [
        Written("updated", "http://news.test/47", same_job=True),
        Written("new", "http://news.test/46"),
    ]


def test_an_article_write_the_write_concern_did_not_confirm_is_not_acknowledged(tmp_path: Path) -> None:
    """MongoDB answers a bulk write with a write concern error alone (the primary wrote it, the members the
    write concern asks for did not confirm it in time): the batch fails with a StoreError that says so and
    that waiting may mend, so the pipeline tries it again, and nothing is taken as stored meanwhile. Written
    again, the batch stores what it would have."""
    unconfirmed = BulkWriteError(
        {
            "writeErrors": [],
            "writeConcernErrors": [{"code": 64, "errmsg": "waiting for replication timed out"}],
        }
    )
    client, clock = FakeClient(), Clock()
    batch = carriers(2)
    with fake_store(tmp_path, client, clock) as store:
        client.fail_next("articles", "bulk_write", unconfirmed)
        with pytest.raises(StoreError, match=r"write concern.*waiting for replication timed out") as failed:
            store.upsert_many(batch)
        assert not lasting_failure(failed.value)
        assert stored(client) == {}
        assert [w.outcome for w in store.upsert_many(batch)] == ["new", "new"]


def test_an_again_articles_lookup_that_cannot_reach_mongodb_fails_it_alone_and_the_batch_spools(
    tmp_path: Path,
) -> None:
    """The store pipeline's write of a batch (on the fake, NOT MongoDB) with MongoDB away: the look-up of
    the week of a `crawler temp SITE --again` article (store.get) raised before the write, so the whole
    batch failed, the other jobs' articles with it, where a batch spools while MongoDB is away. The article
    whose week cannot be found fails alone (tried again, then dead-lettered: written without its week it
    would be a second copy); the others are spooled."""
    client, clock = FakeClient(), Clock()
    documents = [make_document(article(f"http://news.test/{n}", "2026-11-17T10:00:00Z")) for n in range(3)]
    with fake_store(tmp_path, client, clock) as store:
        client.down = True
        results = write_batch(
            store, [(document, True, n == 1) for n, document in enumerate(documents)], None, {}
        )
    assert [getattr(result, "outcome", None) for result in results] == ["spooled", None, "spooled"]
    assert isinstance(results[1], StoreError) and not lasting_failure(results[1])
    assert "cannot reach MongoDB" in str(results[1])


def test_an_again_batch_whose_first_lookup_cannot_reach_mongodb_waits_once_not_once_an_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of `crawler temp SITE --again` articles with MongoDB away (on the fake, NOT MongoDB): each
    look-up of an article's week waits MONGO_TIMEOUT_MS before it fails, so a look-up made for every
    article held the store's thread that long per article (100 s for a batch of 20 at 5000 ms). The first
    failure fails the batch's other articles whose week is to be found with it, without a look-up each;
    the rest is spooled."""
    client, clock = FakeClient(), Clock()
    documents = [make_document(article(f"http://news.test/{n}", "2026-11-17T10:00:00Z")) for n in range(4)]
    with fake_store(tmp_path, client, clock) as store:
        looked: list[str] = []
        get = store.get

        def counted_get(url: str) -> dict[str, Any] | None:
            looked.append(url)
            return get(url)

        monkeypatch.setattr(store, "get", counted_get)
        client.down = True
        results = write_batch(
            store, [(document, True, n != 2) for n, document in enumerate(documents)], None, {}
        )
    assert looked == ["http://news.test/0"]
    assert [getattr(result, "outcome", None) for result in results] == [None, None, "spooled", None]
    assert all("cannot reach MongoDB" in str(results[n]) for n in (0, 1, 3))
