"""A generated web to measure discover crawls on: a few hundred hosts, a topic planted in some of them.

Every host is its own port on 127.0.0.1 (so its own politeness slot, robots.txt and connection pool). The
web is a pure function of its seed; pages are made when asked. Its shape is a real web's:

- a **directory** host (host 0, the seeds) lists every other host's home page under its name;
- **topic hubs** (``HUB_SHARE`` of the hosts) write mostly on the topic; **mixed** hosts
  (``MIXED_SHARE``) keep one topic section among others; **plain** hosts never write on it, though some of
  their pages name a topic word in passing; **traps** (``TRAP_SHARE``) serve an endless calendar;
- a host has a home page, section index pages (hubs: they list every page of their section) and
  article pages, most with a URL made of their headline's words, some with a bare number;
- an article links within its text to pages of its own theme more often than not (``SAME_THEME``),
  under the target's headline or a vague "read more"; every page has the host's section menu, a
  "trending" box of the web's popular pages and links to a few other hosts.

Ground truth: a page is relevant when it is an article of the topic's theme (:meth:`SimWeb.relevant`).

As a process (``bench/focus.py`` and the tests start it with :func:`served`)::

    python -m crawler.demo.web --seed 1 [--hosts 200] [--request-log FILE]

prints ``{"ports": [...]}`` (host i is ``http://127.0.0.1:<ports[i]>``) on its first stdout line, and
stops on SIGTERM or when its standard input (a pipe) ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import html
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = ["TOPIC", "TOPIC_KEYWORDS", "SimWeb", "main", "served"]

# Shares of the hosts that are topic hubs, mixed hosts and traps (the rest are plain).
HUB_SHARE = 0.07
MIXED_SHARE = 0.25
TRAP_SHARE = 0.04
# Pages of the directory host, each listing a share of the hosts.
DIRECTORY_PAGES = 4
# Chance that a link in an article's text goes to a page of the same theme.
SAME_THEME = 0.7
# Chance that a link's anchor says nothing of its target ("read more").
VAGUE_ANCHOR = 0.3
# Chance that an article's URL is a bare number, not its headline's words.
BARE_URL = 0.25
# Chance that a page off the topic names a topic word or two in passing.
PASSING_MENTION = 0.15

TOPIC = "energy"
THEMES: dict[str, tuple[str, ...]] = {
    "energy": tuple(
        """solar wind turbine battery grid photovoltaic renewable hydrogen emissions carbon electricity
        megawatt storage inverter offshore geothermal hydropower utility decarbonisation charging
        electrolyser transmission substation kilowatt biomass efficiency heatpump panel lithium""".split()
    ),
    "football": tuple(
        """match goal striker midfielder league coach penalty stadium referee keeper transfer season
        defender fixture supporters trophy derby corner tackle squad captain""".split()
    ),
    "cooking": tuple(
        """recipe oven garlic butter simmer flour dough sauce roast onion pepper spoon dessert pastry
        skillet herbs marinade bake whisk broth""".split()
    ),
    "travel": tuple(
        """flight hotel beach itinerary passport museum island luggage hostel cruise resort airport
        backpacking sightseeing guidebook visa ferry souvenir tour""".split()
    ),
    "finance": tuple(
        """shares investors dividend bond inflation earnings portfolio stock broker interest quarterly
        revenue valuation hedge mortgage equity liquidity merger""".split()
    ),
    "film": tuple(
        """director actor screenplay premiere cinema sequel trailer studio festival cast audience
        documentary soundtrack scene thriller comedy animation""".split()
    ),
    "health": tuple(
        """patients doctor vaccine clinic symptoms therapy nurse hospital diet sleep diagnosis
        treatment medicine fitness allergy surgery wellbeing""".split()
    ),
    "gardening": tuple(
        """seeds compost tomato soil pruning greenhouse bulbs lawn roses watering hedge shrubs mulch
        orchard harvest weeds seedlings""".split()
    ),
}
# The words the bench's discover rule gives for the topic: a user knows some of its words, not all.
TOPIC_KEYWORDS = (
    "solar",
    "wind turbine",
    "battery storage",
    "renewable",
    "grid",
    "photovoltaic",
    "hydrogen",
    "emissions",
    "electricity",
    "offshore",
)
_FILLER = tuple(
    """the a of and to in that for on with as at by from this it was were is be are said people new
    year week report local plans city council group company part first last many more about after
    over under while since during early later today recent several other same local public high
    long small large good better best make made take taken give given show shown use used work""".split()
)
_SECTION_NAMES = {
    "energy": ("Energy", "Green Power", "Clean Tech", "Climate"),
    "football": ("Football", "Sport"),
    "cooking": ("Food", "Recipes"),
    "travel": ("Travel", "Trips"),
    "finance": ("Markets", "Money"),
    "film": ("Film", "Cinema"),
    "health": ("Health", "Wellbeing"),
    "gardening": ("Garden", "Outdoors"),
}
_HOST_WORDS = tuple(
    "daily weekly herald courier gazette post times journal review digest record chronicle".split()
)
_PLACES = tuple("north south east west river valley harbour bay hill lake forest coast meadow".split())
_VAGUE = ("read more", "more here", "this report", "click here", "see also", "continued")
_POPULAR = 30


@dataclass(frozen=True, slots=True)
class Section:
    slug: str
    name: str
    theme: str
    pages: int


@dataclass(frozen=True, slots=True)
class Host:
    index: int
    name: str
    kind: str  # directory, hub, mixed, plain, trap
    sections: tuple[Section, ...]


class SimWeb:
    """The web of ``seed`` with ``hosts`` hosts (see the module docstring)."""

    def __init__(self, seed: int, hosts: int = 200) -> None:
        self.seed = seed
        rng = random.Random(seed)
        kinds = ["directory"]
        for _ in range(1, hosts):
            roll = rng.random()
            kinds.append(
                "hub"
                if roll < HUB_SHARE
                else "mixed"
                if roll < HUB_SHARE + MIXED_SHARE
                else "trap"
                if roll < HUB_SHARE + MIXED_SHARE + TRAP_SHARE
                else "plain"
            )
        others = [theme for theme in THEMES if theme != TOPIC]
        self.hosts: list[Host] = []
        for index, kind in enumerate(kinds):
            words = rng.sample(_PLACES, 1) + rng.sample(_HOST_WORDS, 1)
            if kind == "hub" and rng.random() < 0.5:
                words = [rng.choice(("green", "clean", "power", "grid")), words[1]]
            name = " ".join(word.capitalize() for word in words)
            themes: list[str] = []
            if kind == "hub":
                themes = [TOPIC, TOPIC, rng.choice(others)]
            elif kind == "mixed":
                themes = [TOPIC, *rng.sample(others, 3)]
            elif kind in ("plain", "trap"):
                themes = rng.sample(others, 3)
            sections = []
            for number, theme in enumerate(themes):
                label = rng.choice(_SECTION_NAMES[theme])
                sections.append(
                    Section(f"{label.lower().replace(' ', '-')}-{number}", label, theme, rng.randint(8, 24))
                )
            self.hosts.append(Host(index, name, kind, tuple(sections)))
        self.by_theme: dict[str, list[tuple[int, int, int]]] = {theme: [] for theme in THEMES}
        for host in self.hosts:
            for number, section in enumerate(host.sections):
                self.by_theme[section.theme].extend(
                    (host.index, number, page) for page in range(section.pages)
                )
        every = [page for pages in self.by_theme.values() for page in pages]
        self.popular = random.Random(seed * 7 + 1).sample(every, min(_POPULAR, len(every)))

    # --- what is where -------------------------------------------------------------------------------

    def article_path(self, host: int, section: int, page: int) -> str:
        """The path of an article (its headline's words, or a bare number)."""
        rng = self._rng("path", host, section, page)
        if rng.random() < BARE_URL:
            return f"/p/{host * 10007 + section * 101 + page}.html"
        slug = "-".join(self._headline(host, section, page).lower().split()[:5])
        return f"/{self.hosts[host].sections[section].slug}/{slug}-{page}.html"

    def relevant(self, host: int, path: str) -> bool:
        """Ground truth: the page at ``path`` of ``host`` is an article of the topic."""
        located = self._locate(host, path)
        return located is not None and self.hosts[host].sections[located[0]].theme == TOPIC

    def about_topic(self, host: int, path: str) -> bool:
        """A page that is about the topic, article or not: an article of the topic, the index of a topic
        section (its headlines), or the home page of a host whose sections are mostly the topic's."""
        sections = self.hosts[host].sections if 0 <= host < len(self.hosts) else ()
        on_topic = [section for section in sections if section.theme == TOPIC]
        if path == "/":
            return len(on_topic) * 2 > len(sections)
        return self.relevant(host, path) or any(path == f"/{section.slug}/" for section in on_topic)

    def relevant_pages(self) -> int:
        """How many relevant pages the web holds."""
        return len(self.by_theme[TOPIC])

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one web per process, its paths asked again and again
    def _paths(self, host: int) -> dict[str, tuple[int, int]]:
        return {
            self.article_path(host, number, page): (number, page)
            for number, section in enumerate(self.hosts[host].sections)
            for page in range(section.pages)
        }

    def _locate(self, host: int, path: str) -> tuple[int, int] | None:
        if not 0 <= host < len(self.hosts):
            return None
        return self._paths(host).get(path)

    def _rng(self, *parts: object) -> random.Random:
        return random.Random(f"{self.seed}/" + "/".join(str(part) for part in parts))

    def _headline(self, host: int, section: int, page: int) -> str:
        rng = self._rng("headline", host, section, page)
        theme = THEMES[self.hosts[host].sections[section].theme]
        words = [*rng.sample(theme, 3), *rng.sample(_FILLER[20:], 3)]
        rng.shuffle(words)
        return " ".join(words).capitalize()

    # --- pages ---------------------------------------------------------------------------------------

    def page(self, host: int, path: str, origin: list[str]) -> str | None:
        """The HTML of ``path`` on ``host`` (``origin[i]``: host i's origin), None when there is none."""
        if not 0 <= host < len(self.hosts):
            return None
        kind = self.hosts[host].kind
        if kind == "directory":
            return self._directory(path, origin)
        if path == "/":
            return self._home(host, origin)
        if kind == "trap" and path.startswith("/calendar/"):
            return self._calendar(host, path, origin)
        for number, section in enumerate(self.hosts[host].sections):
            if path == f"/{section.slug}/":
                return self._section(host, number, origin)
        located = self._locate(host, path)
        if located is None:
            return None
        return self._article(host, *located, origin)

    def _link(self, origin: list[str], host: int, section: int, page: int, anchor: str | None = None) -> str:
        url = origin[host] + self.article_path(host, section, page)
        return f'<a href="{url}">{html.escape(anchor or self._headline(host, section, page))}</a>'

    def _frame(self, host: int, title: str, main: str, origin: list[str], rng: random.Random) -> str:
        site = self.hosts[host]
        menu = "".join(
            f'<li><a href="/{section.slug}/">{html.escape(section.name)}</a></li>'
            for section in site.sections
        )
        if site.kind == "trap":
            menu += '<li><a href="/calendar/2026/11/26.html">Events</a></li>'
        trending = "".join(f"<li>{self._link(origin, *where)}</li>" for where in rng.sample(self.popular, 3))
        friends = "".join(
            f'<li><a href="{origin[other]}/">{html.escape(self.hosts[other].name)}</a></li>'
            for other in rng.sample(range(1, len(self.hosts)), 3)
        )
        return (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)} | {site.name}"
            f"</title></head><body><header><a href='/'>{site.name}</a><nav><ul>{menu}</ul></nav></header>"
            f"<main>{main}</main><aside><h3>Trending</h3><ul>{trending}</ul></aside>"
            f"<footer><h3>Around the web</h3><ul>{friends}</ul></footer></body></html>"
        )

    def _article(self, host: int, section: int, page: int, origin: list[str]) -> str:
        rng = self._rng("article", host, section, page)
        theme = self.hosts[host].sections[section].theme
        words = THEMES[theme]
        paragraphs = []
        for _ in range(rng.randint(4, 6)):
            sentence = [
                rng.choice(words) if rng.random() < 0.22 else rng.choice(_FILLER)
                for _ in range(rng.randint(40, 70))
            ]
            if theme != TOPIC and rng.random() < PASSING_MENTION:
                sentence[rng.randrange(len(sentence))] = rng.choice(THEMES[TOPIC])
            text = html.escape(" ".join(sentence).capitalize()) + "."
            if rng.random() < 0.9:
                target = self._target(theme, host, rng)
                anchor = rng.choice(_VAGUE) if rng.random() < VAGUE_ANCHOR else None
                text += f" {self._link(origin, *target, anchor)}."
            paragraphs.append(f"<p>{text}</p>")
        title = self._headline(host, section, page)
        main = f"<article><h1>{html.escape(title)}</h1>{''.join(paragraphs)}</article>"
        return self._frame(host, title, main, origin, rng)

    def _target(self, theme: str, host: int, rng: random.Random) -> tuple[int, int, int]:
        if rng.random() < SAME_THEME:
            same = self.by_theme[theme]
            local = [where for where in same if where[0] == host]
            return rng.choice(local if local and rng.random() < 0.6 else same)
        return rng.choice(self.popular if rng.random() < 0.3 else self.by_theme[rng.choice(list(THEMES))])

    def _section(self, host: int, section: int, origin: list[str]) -> str:
        rng = self._rng("section", host, section)
        name = self.hosts[host].sections[section].name
        items = "".join(
            f"<li>{self._link(origin, host, section, page)}</li>"
            for page in range(self.hosts[host].sections[section].pages)
        )
        return self._frame(host, name, f"<h1>{html.escape(name)}</h1><ul>{items}</ul>", origin, rng)

    def _home(self, host: int, origin: list[str]) -> str:
        rng = self._rng("home", host)
        blocks = []
        for number, section in enumerate(self.hosts[host].sections):
            latest = "".join(
                f"<li>{self._link(origin, host, number, page)}</li>" for page in range(min(4, section.pages))
            )
            blocks.append(
                f'<h2><a href="/{section.slug}/">{html.escape(section.name)}</a></h2><ul>{latest}</ul>'
            )
        return self._frame(host, "Home", "".join(blocks), origin, rng)

    def _calendar(self, host: int, path: str, origin: list[str]) -> str | None:
        parts = path.removeprefix("/calendar/").removesuffix(".html").split("/")
        try:
            day = time.strptime("/".join(parts), "%Y/%m/%d")
        except ValueError:
            return None
        moment = time.mktime(day)
        rng = self._rng("calendar", host, path)
        steps = ((-1, "Previous day"), (1, "Next day"), (7, "Next week"), (30, "Next month"))
        days = [
            (time.strftime("%Y/%m/%d", time.localtime(moment + step * 86400)), label) for step, label in steps
        ]
        links = "".join(f'<li><a href="/calendar/{day}.html">{label}</a></li>' for day, label in days)
        text = " ".join(rng.choice(_FILLER) for _ in range(60))
        main = f"<h1>Events on {'/'.join(parts)}</h1><p>{text}</p><ul>{links}</ul>"
        return self._frame(host, "Events", main, origin, rng)

    def _directory(self, path: str, origin: list[str]) -> str | None:
        pages = DIRECTORY_PAGES
        if path == "/":
            items = "".join(f'<li><a href="/dir/{n}.html">Page {n}</a></li>' for n in range(1, pages + 1))
            return f"<!DOCTYPE html><html><head><title>Directory</title></head><body><ul>{items}</ul></body>"
        for n in range(1, pages + 1):
            if path == f"/dir/{n}.html":
                listed = [host for host in self.hosts[1:] if host.index % pages == n - 1]
                items = "".join(
                    f'<li><a href="{origin[host.index]}/">{html.escape(host.name)}</a></li>'
                    for host in listed
                )
                return (
                    f"<!DOCTYPE html><html><head><title>Directory page {n}</title></head><body>"
                    f"<h1>Sites</h1><ul>{items}</ul></body></html>"
                )
        return None

    def seeds(self, origin: list[str]) -> list[str]:
        """The directory's pages: where a crawl of the web starts."""
        return [f"{origin[0]}/dir/{n}.html" for n in range(1, DIRECTORY_PAGES + 1)]

    def rule(
        self,
        origin: list[str],
        *,
        budget: int,
        max_depth: int,
        delay: float = 0.0,
        concurrency: int = 2,
        strategy: str | None = None,
        seeds: list[str] | None = None,
        every: str | None = None,
    ) -> str:
        """A discover rule (YAML) for the topic on this web served at ``origin``: the topic's keywords, the
        directory's pages as seeds (or ``seeds``), and the given budget, depth, politeness, ``strategy``
        and ``schedule.every`` (the rule's defaults when None)."""
        listed = "\n".join(f"    - {url}" for url in seeds or self.seeds(origin))
        text = (
            "allow_private_addresses: true\n"
            "discover:\n"
            f"  topic:\n    keywords: [{', '.join(TOPIC_KEYWORDS)}]\n"
            f"  seeds:\n{listed}\n"
            f"  budget: {budget}\n  max_depth: {max_depth}\n  domains: [127.0.0.1]\n"
        )
        if strategy is not None:
            text += f"  strategy: {strategy}\n"
        text += f"politeness: {{delay: {delay}, concurrency: {concurrency}}}\n"
        if every is not None:
            text += f"schedule: {{every: {every}}}\n"
        return text


@contextlib.contextmanager
def served(seed: int, hosts: int, log: Path) -> Iterator[list[str]]:
    """The web of ``seed`` with ``hosts`` hosts, served by ``python -m crawler.demo.web`` in a process of its
    own (every request logged to ``log``) until the block ends; its hosts' origins."""
    command = [sys.executable, "-m", "crawler.demo.web", "--seed", str(seed), "--hosts", str(hosts)]
    process = subprocess.Popen(
        [*command, "--request-log", str(log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        ports = json.loads(process.stdout.readline())["ports"]
        yield [f"http://127.0.0.1:{port}" for port in ports]
    finally:
        process.terminate()
        process.communicate(timeout=30)


# --- serving -------------------------------------------------------------------------------------------


_ROBOTS = b"User-agent: *\nAllow: /\n"


async def _serve_connection(
    web: SimWeb,
    host: int,
    origin: list[str],
    log: TextIO | None,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            path = line[1] if len(line) >= 2 else "/"
            if path == "/robots.txt":
                body, status, kind = _ROBOTS, "200 OK", "text/plain"
            else:
                page = web.page(host, path.split("?", 1)[0], origin)
                body = (page or "<html><body>Not found</body></html>").encode()
                status, kind = ("200 OK", "text/html") if page is not None else ("404 Not Found", "text/html")
            if log is not None:
                log.write(f"{time.time():.4f} {host} {path}\n")
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve(web: SimWeb, log_path: str | None) -> None:
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    for sign in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sign, _stop, stopped)
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(open(log_path, "a", encoding="utf-8", buffering=1)) if log_path else None
        origin: list[str] = []
        servers = []
        for host in range(len(web.hosts)):
            server = await asyncio.start_server(
                functools.partial(_serve_connection, web, host, origin, log), "127.0.0.1", 0
            )
            servers.append(server)
            origin.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        sys.stdout.write(json.dumps({"ports": [int(o.rsplit(":", 1)[1]) for o in origin]}) + "\n")
        sys.stdout.flush()
        if stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode):
            # A parent that dies closes the pipe: stop with it.
            loop.add_reader(sys.stdin.fileno(), lambda: _stdin_read(stopped))
        await stopped
        for server in servers:
            server.close()


def _stop(stopped: asyncio.Future[None]) -> None:
    if not stopped.done():
        stopped.set_result(None)


def _stdin_read(stopped: asyncio.Future[None]) -> None:
    if not os.read(sys.stdin.fileno(), 4096):
        _stop(stopped)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawler.demo.web", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--request-log", default=None)
    args = parser.parse_args(argv)
    asyncio.run(_serve(SimWeb(args.seed, args.hosts), args.request_log))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
