"""Reading rule files: a folder (:func:`load_rules`, every valid rule and every error of the others), one
file (:func:`load_rule`) or a YAML text (:func:`parse_rule`). The YAML is read with PyYAML's safe loader,
duplicate keys are errors, and :mod:`crawler.rules.schema` checks and compiles what it holds."""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from types import MappingProxyType
from typing import Final, NamedTuple, TypeAlias

import yaml  # type: ignore[import-untyped, unused-ignore]

from crawler.commandline import did_you_mean
from crawler.errors import InputError
from crawler.rules.errors import YAML_UNREADABLE_VALUE, RuleError, RuleErrors
from crawler.rules.errors import shown as _shown
from crawler.rules.expressions import REGEX_TIMEOUT
from crawler.rules.files import read_regular
from crawler.rules.model import Rule, RuleSet
from crawler.rules.schema import EXPECTED_RULE, Checker, build_rule
from crawler.settings import QREAD_MIN_BODY_CHARS

__all__ = [
    "MAX_RULE_BYTES",
    "MAX_RULE_NESTING",
    "RULE_SUFFIX",
    "YAML_SUFFIXES",
    "RuleFiles",
    "RulesStamp",
    "is_site_id",
    "load_rule",
    "load_rules",
    "parse_rule",
    "rule_file",
    "rule_sites",
    "rules_stamp",
]

# Rule files are small; anything larger is a mistake (or an attack on the YAML parser).
MAX_RULE_BYTES: Final = 1024 * 1024
RULE_SUFFIX: Final = ".yaml"
# The suffixes of a YAML file: rule files have the first; a file name with either is no site id.
YAML_SUFFIXES: Final = (RULE_SUFFIX, ".yml")
# How many earlier values of a repeated key are checked (each one builds the whole rule again): a key
# repeated more often is a paste gone wrong, and a 1 MB file of it would take hours.
HIDDEN_VALUES_CHECKED: Final = 3
# How deep brackets may nest in a rule file: far beyond any rule (a few levels), below the depth where
# PyYAML's parser gives up (300 to 600), and cheap to scan: its scanner keeps a possible key for each
# open bracket and looks at all of them at every token, 0.3 to 0.5 s for a file 2,000 levels deep.
MAX_RULE_NESTING: Final = 200
# The depth each bracket adds, for the scan of MAX_RULE_NESTING.
_BRACKET_DEPTH: Final = {"[": 1, "{": 1, "]": -1, "}": -1}
_NOT_BRACKETS_RE = re.compile(r"[^\[\]{}]+")
_BRACKETS_RE = re.compile(r"[\[\]{}]")
# How many tokens libyaml's scanner reads once brackets nest deeper than MAX_RULE_NESTING (the file is
# refused), for the depth the error names, before it counts the rest wherever it is (:func:`_bracket_depth`):
# 50 times a large rule's (the demo's have up to 185, in 1.5 KB). A token costs up to its depth (the scanner
# looks at a possible key per level): 1 MB of tokens 999 levels deep took 1.1 s (CPU) to scan whole, 22 ms
# with this bound.
MAX_NESTING_TOKENS: Final = 10_000
# libyaml's scanner, which reads the brackets that open and close lists and mappings as YAML does; None
# when PyYAML was built without it.
_LIBYAML_SCANNER = getattr(yaml, "CBaseLoader", None)
# libyaml's safe loader, which reads a rule ten times as fast as PyYAML's own (500 rules: 0.07 s against
# 0.69 s, bench/many_rules.py --yaml); None when PyYAML was built without it.
_LIBYAML_LOADER = getattr(yaml, "CSafeLoader", None)
# Characters libyaml reads where PyYAML's loader refuses them: a tab between the parts of a line
# (`domains:\t[a]`), a byte order mark past the first character.
_LIBYAML_MORE: Final = ("\t", "\ufeff")
_STR_TAG: Final = "tag:yaml.org,2002:str"
# What the tags of the values PyYAML may fail to read (YAML_UNREADABLE_VALUE) read, in words.
_SCALAR_KINDS: Final = {
    "timestamp": "a date",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
}
_FLOW_STARTS: Final = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
_FLOW_ENDS: Final = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)
_LIBYAML_TOO_DEEP: Final = "exceeded maximum nesting depth"
# A file modified this close (ns) to the moment it was looked at may be written again within the file
# system's time resolution (2 s on FAT, 1 s on ext3 and HFS+) with the same stamp: its rule is not kept
# for the next read, which parses it again (git's "racily clean" entries).
RACY_NS: Final = 2_000_000_000
_SITE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# What YAML expects where a tab indents a line (PyYAML says only that a tab "cannot start any token"),
# and where one stands between the parts of a line.
_TABS_EXPECTED = "spaces: YAML indents with spaces, never tabs"
_INLINE_TAB_EXPECTED = (
    "spaces: YAML takes no tab between the parts of a line, after a key's colon or before a # comment;"
    " write a space there"
)
# ...and where a value starts with *, a regular expression has a backslash in double quotes, or a value
# starts with @ or `.
_ALIAS_EXPECTED = (
    'quotes around a value that starts with *, as in cron: "*/20 * * * *": YAML reads an unquoted * as an'
    " alias"
)
_ESCAPE_EXPECTED = (
    r"single quotes around a regular expression, as in '\d+': in double quotes YAML reads a backslash as an"
    " escape"
)
_RESERVED_EXPECTED = 'quotes around a value that starts with @ or `, as in "@href": YAML reserves them'
_COLON_EXPECTED = (
    "quotes around a value that holds a colon and a space, as in title: 'Re: news': YAML reads an unquoted"
    " ': ' as the colon of a key"
)


class FileStamp(NamedTuple):
    """What a file or folder was at one look (``stat``): a file saved by renaming has a new inode, one
    written in place new times (one rewritten with its size and modification time kept, by ``cp -p`` or
    ``touch -r``, a new change time)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileStamp:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class RulesStamp(NamedTuple):
    """What a rules folder was at one look (:func:`rules_stamp`): the folder's own stamp, and each entry's
    name and stamp (None when it could not be looked at: a symbolic link to nothing, an entry removed since
    the folder was listed), by name."""

    folder: FileStamp
    entries: tuple[tuple[str, FileStamp | None], ...]


# What RuleFiles keeps of a rule file: its stamp (None when it could not be looked at), the files its rule
# read besides (each with its stamp), its rule or its errors, and its bytes as parsed when its stamp was
# racy (None when not).
_Read: TypeAlias = tuple[
    FileStamp | None, tuple[tuple[Path, FileStamp | None], ...], Rule | RuleErrors, bytes | None
]


class RuleFiles:
    """What :func:`load_rules` read of each rule file of one folder, for its next read of the folder: a file
    is parsed again only when it, or a file its rule read (sessions, proxies, examples), changed since
    (:class:`FileStamp`); the rule or the errors of the others are taken as they were, and a file removed is
    forgotten. A worker of 1,000 rules read the folder again after an edit of one in 24 ms of its crawl
    thread, against 1.9 s for parsing every file."""

    def __init__(self) -> None:
        # Per file name: what was read of it.
        self._read: dict[str, _Read] = {}
        # The load_rules arguments the rules were read with: others read every file again.
        self._options: tuple[int, float] | None = None
        # The files read too soon after a change (RACY_NS) to be kept by their stamps alone: those kept by
        # their bytes too (their rule's other files settled), and the others, parsed again at the next read.
        self._racy: set[str] = set()

    def rule(self, path: Path, *, min_body_chars: int, regex_timeout: float) -> Rule:
        """The rule of the file ``path``, as :func:`load_rule` gives it: read again only when it changed."""
        if self._options != (min_body_chars, regex_timeout):
            self._read.clear()
            self._options = (min_body_chars, regex_timeout)
            self._racy.clear()
        looked = time.time_ns()
        stamp = _file_stamp(path)
        known = self._read.get(path.name)
        if (
            known is not None
            and known[0] == stamp
            and all(_file_stamp(file) == was for file, was in known[1])
            and (known[3] is None or _bytes_of(path) == known[3])
        ):
            if known[3] is not None and not _racy(stamp, looked):
                self._read[path.name] = (stamp, known[1], known[2], None)
                self._racy.discard(path.name)
            return _rule_of(known[2])
        parsed = _bytes_of(path) if _racy(stamp, looked) else None
        reads: list[Path] = []
        try:
            found: Rule | RuleErrors = load_rule(
                path, min_body_chars=min_body_chars, regex_timeout=regex_timeout, reads=reads
            )
        except RuleErrors as exc:
            found = exc
        read = tuple((file, _file_stamp(file)) for file in dict.fromkeys(reads))
        if any(_racy(was, looked) for _file, was in read):
            self._read.pop(path.name, None)
            self._racy.add(path.name)
        elif not _racy(stamp, looked):
            self._read[path.name] = (stamp, read, found, None)
            self._racy.discard(path.name)
        elif parsed is not None and _bytes_of(path) == parsed:
            # Kept by its bytes as well, as they were before and after the parse: a read of the same bytes
            # gives the rule kept, not another (which a worker would log as an edit).
            self._read[path.name] = (stamp, read, found, parsed)
            self._racy.add(path.name)
        else:
            self._read.pop(path.name, None)
            self._racy.add(path.name)
        return _rule_of(found)

    def keep(self, names: set[str]) -> None:
        """Forget the files not named in ``names`` (removed from the folder)."""
        for name in set(self._read) - names:
            del self._read[name]
        self._racy &= names

    def outdated(self) -> bool:
        """Whether the next read may find a rule changed that :func:`rules_stamp` (the folder's own
        entries) cannot tell: a file a rule read besides its own changed since (a session file of a
        subfolder written in place changes no entry of the folder), or a rule file was read too soon after
        its change to be kept (written again within the file system's time resolution, its stamp may be
        the same)."""
        return bool(self._racy) or any(
            _file_stamp(file) != was
            for _stamp, read, _found, _parsed in self._read.values()
            for file, was in read
        )


def _rule_of(found: Rule | RuleErrors) -> Rule:
    if isinstance(found, RuleErrors):
        raise RuleErrors(found.file, found.errors)
    return found


def _bytes_of(path: Path) -> bytes | None:
    """The bytes of the rule file ``path`` (as :func:`load_rule` reads them); None when it cannot be read."""
    try:
        return read_regular(path, MAX_RULE_BYTES + 1)[0]
    except OSError:
        return None


def _file_stamp(path: Path) -> FileStamp | None:
    try:
        return FileStamp.of(os.stat(path))
    except OSError:
        return None


def _racy(stamp: FileStamp | None, looked: int) -> bool:
    """Whether a file of ``stamp``, looked at at ``looked`` (epoch ns), may be written again with the same
    stamp (within the file system's time resolution, keeping its size): one of its times is within
    RACY_NS of the look. A time further ahead (a file copied with its date from a machine whose clock is
    ahead, ``touch -d tomorrow``) is none: a write would date the file by the clock, another stamp; taken
    as racy, the file was parsed again at every look until that time, a worker logging its rule changed."""
    return stamp is not None and any(
        -RACY_NS < looked - dated < RACY_NS for dated in (stamp.mtime_ns, stamp.ctime_ns)
    )


def load_rules(
    directory: str | Path,
    *,
    min_body_chars: int = QREAD_MIN_BODY_CHARS,
    regex_timeout: float = REGEX_TIMEOUT,
    files: RuleFiles | None = None,
) -> RuleSet:
    """Every ``*.yaml`` rule of ``directory``: the valid ones, and the errors and sites of all the others.

    ``min_body_chars`` is the default of ``article.min_body_chars`` (the QREAD_MIN_BODY_CHARS setting);
    ``regex_timeout`` the time limit of one regex search. A folder that cannot be read is a RuleError.
    With ``files`` (the same for each read of the folder), only the files changed since its last read
    are parsed.
    """
    folder = Path(directory)
    try:
        entries = sorted(entry for entry in folder.iterdir() if not entry.name.startswith("."))
    except OSError as exc:
        raise RuleError(
            str(folder),
            "",
            f"cannot read the rules folder: {exc.strerror or exc}",
            "a folder of *.yaml rules",
        ) from None
    rules: dict[str, Rule] = {}
    errors: list[RuleError] = []
    broken: dict[str, str] = {}
    for entry in entries:
        if entry.suffix == ".yml":
            errors.append(_not_read(entry))
            broken.setdefault(entry.stem, str(entry))
            continue
        if entry.suffix != RULE_SUFFIX or entry.is_dir():
            continue
        try:
            if files is None:
                rule = load_rule(entry, min_body_chars=min_body_chars, regex_timeout=regex_timeout)
            else:
                rule = files.rule(entry, min_body_chars=min_body_chars, regex_timeout=regex_timeout)
        except RuleErrors as exc:
            errors.extend(exc.errors)
            broken.setdefault(entry.stem, str(entry))
            continue
        rules[rule.site] = rule
    if files is not None:
        files.keep({entry.name for entry in entries})
    sites = {site: file for site, file in broken.items() if site not in rules and _SITE_ID_RE.fullmatch(site)}
    return RuleSet(folder, MappingProxyType(rules), tuple(errors), MappingProxyType(sites))


def rules_stamp(directory: str | Path) -> RulesStamp | None:
    """What changes when the rules :func:`load_rules` reads in ``directory`` may have changed: the folder's
    stamp, and the name and stamp of each entry it does not skip as hidden (the rule files, and what lies
    beside them: the session or proxies files a rule names, their folders), from one ``scandir`` and no
    file read; None when the folder cannot be read (:func:`load_rules` says why). A file written in place
    keeps the folder's time: its own times tell."""
    try:
        folder = FileStamp.of(os.stat(directory))
        with os.scandir(directory) as entries:
            seen = sorted(
                ((entry.name, _entry_stamp(entry)) for entry in entries if not entry.name.startswith(".")),
                key=lambda named: named[0],
            )
    except OSError:
        return None
    return RulesStamp(folder, tuple(seen))


def _entry_stamp(entry: os.DirEntry[str]) -> FileStamp | None:
    try:
        return FileStamp.of(entry.stat())
    except OSError:  # a symbolic link to nothing, or an entry removed since the scandir
        return None


def rule_sites(directory: Path) -> list[str]:
    """The site ids of the rule files in ``directory`` (valid or not), sorted; none when it is no folder."""
    if not directory.is_dir():
        return []
    return sorted(
        entry.stem
        for entry in directory.glob(f"*{RULE_SUFFIX}")
        if not entry.name.startswith(".") and entry.is_file()
    )


def is_site_id(site: str) -> bool:
    """Whether ``site`` may name a rule file: letters, digits, ``.``, ``_`` or ``-``, starting with a letter
    or digit."""
    return _SITE_ID_RE.fullmatch(site) is not None


def _known(directory: Path, sites: Sequence[str]) -> str:
    """The sites of the rules folder ``directory`` (``sites``) as an error names them."""
    return f"sites: {', '.join(sites)}" if sites else f"the folder {str(directory)!r} holds no rule file"


def rule_file(directory: Path, site: str) -> Path:
    """The rule file of ``site`` in ``directory``; :class:`InputError` naming the sites there (and the
    one meant, if one is close) when there is none. A path or a file name (``wire.yaml``, ``wire.yml``) is
    no site id: the error gives the site id of its name (``wire``) when that site has a rule file, unless
    a site id with a dot has that name (``rules/wire.yml.yaml``, the rule of site ``wire.yml``)."""
    name = Path(site).name
    stem = _yaml_stem(name)
    if name != site or (stem != site and not (directory / f"{site}{RULE_SUFFIX}").is_file()):
        raise InputError(_no_site_id(directory, site, stem))
    path = directory / f"{site}{RULE_SUFFIX}"
    if path.is_file():
        return path
    other = directory / f"{site}{YAML_SUFFIXES[1]}"
    if other.is_file():
        raise InputError(f"no rule for site {site!r}: {str(path)!r} does not exist; {_not_read(other)}")
    sites = rule_sites(directory)
    known = _known(directory, sites)
    raise InputError(f"no rule for site {site!r}: {str(path)!r} {_no_file(path, site, sites)} ({known})")


def _yaml_stem(name: str) -> str:
    """``name`` without its YAML suffix (``.yaml``, or ``.yml``, which rule files do not have)."""
    for suffix in YAML_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def _no_site_id(directory: Path, site: str, stem: str) -> str:
    """Why ``site``, a path or a file name whose site id would be ``stem``, names no rule of
    ``directory``: the site id to give when ``stem`` has a rule file, else what is missing there."""
    named = directory / f"{stem}{RULE_SUFFIX}"
    sites = rule_sites(directory)
    known = _known(directory, sites)
    if site.endswith(RULE_SUFFIX):
        what = "a rule file"
    else:
        what = "a file name" if Path(site).name == site else "a path"
    if stem in sites:
        return (
            f"{site!r} is {what}, not a site id: give the site id, the rule file's name without"
            f" {RULE_SUFFIX}, {stem!r} for {named} ({known})"
        )
    unread = directory / f"{stem}{YAML_SUFFIXES[1]}"
    if stem and unread.is_file():
        return f"{site!r} is {what}, not a site id, and {str(named)!r} does not exist; {_not_read(unread)}"
    missing = f", and {str(named)!r} does not exist{did_you_mean(stem, sites)}" if stem else ""
    return (
        f"{site!r} is no site id (a site id is a rule file's name without {RULE_SUFFIX}){missing} ({known})"
    )


def _no_file(path: Path, site: str, sites: list[str]) -> str:
    """What stands at the rule file's ``path`` of ``site``, which is no file: nothing (with the site of
    ``sites`` meant, if one is close), a folder, a symbolic link that cannot be followed (a loop, or to a
    folder that cannot be searched), or another kind of file."""
    if not os.path.lexists(path):
        return f"does not exist{did_you_mean(site, sites)}"
    try:
        found = path.stat()
    except OSError as exc:
        return (
            f"is a symbolic link that cannot be followed ({exc.strerror}): point it at the site's rule file,"
            " or put the file in its place"
        )
    if stat.S_ISDIR(found.st_mode):
        return (
            "is a folder, not a rule file: move it away and put the site's rule, a YAML file (docs/rules.md),"
            " in its place"
        )
    return (
        "is no regular file (a pipe or a device): put the site's rule, a YAML file (docs/rules.md), in its"
        " place"
    )


def _not_read(path: Path) -> RuleError:
    """The error of a ``.yml`` file, which is not read: it says to rename it, naming the new path in the
    same folder (a bare name, given to ``mv``, would move the rule out of it); when the site's ``.yaml``
    file is there already, a rename would overwrite it: it says to merge the two instead."""
    renamed = str(path.with_suffix(RULE_SUFFIX))
    if os.path.lexists(renamed):
        old, new = _shown(str(path), None), _shown(renamed, None)
        return RuleError(
            str(path),
            "",
            f"rule files end in {RULE_SUFFIX}: this one is not read, and the site's rule file {new} is"
            " beside it",
            f"one rule file per site: move what {old} has that {new} lacks into {new}, then delete {old}",
        )
    return RuleError(
        str(path),
        "",
        f"rule files end in {RULE_SUFFIX}: this one is not read",
        f"a {RULE_SUFFIX} file: rename {_shown(str(path), None)} to {_shown(renamed, None)}",
    )


def load_rule(
    path: str | Path,
    *,
    min_body_chars: int = QREAD_MIN_BODY_CHARS,
    regex_timeout: float = REGEX_TIMEOUT,
    reads: list[Path] | None = None,
) -> Rule:
    """The rule of one file (its name without ``.yaml``, or ``.yml``, is the site id); :class:`RuleErrors`
    lists every error of the file otherwise. The other files it read are added to ``reads``
    (:func:`parse_rule`)."""
    path = Path(path)
    file = str(path)
    try:
        data, size = read_regular(path, MAX_RULE_BYTES + 1)
    except OSError as exc:
        expected = "a regular file" if exc.errno == errno.EINVAL else None
        raise RuleErrors(
            file, [RuleError(file, "", f"cannot read the file: {exc.strerror or exc}", expected)]
        ) from None
    if len(data) > MAX_RULE_BYTES:
        problem = f"the file is too large: {size:,} bytes"
        expected = f"a rule file of at most {MAX_RULE_BYTES:,} bytes"
        raise RuleErrors(file, [RuleError(file, "", problem, expected)])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start}"
        raise RuleErrors(file, [RuleError(file, "", problem, "a UTF-8 YAML file")]) from None
    return parse_rule(
        text,
        site=_yaml_stem(path.name),
        file=file,
        min_body_chars=min_body_chars,
        regex_timeout=regex_timeout,
        reads=reads,
    )


def parse_rule(
    text: str,
    *,
    site: str,
    file: str | None = None,
    min_body_chars: int = QREAD_MIN_BODY_CHARS,
    regex_timeout: float = REGEX_TIMEOUT,
    reads: list[Path] | None = None,
) -> Rule:
    """The rule of site ``site`` from the YAML ``text`` (``file`` names it in errors, default
    ``rules/<site>.yaml``); :class:`RuleErrors` lists every error otherwise. The other files it read
    (sessions, proxies, examples) are added to ``reads``, valid or not."""
    file = file if file is not None else f"rules/{site}{RULE_SUFFIX}"
    check = Checker(file, regex_timeout)
    if reads is not None:
        check.reads = reads
    documents = _read_yaml(text, check)
    if not _SITE_ID_RE.fullmatch(site):
        check.fail(
            "",
            f"site id {_shown(site)} (the file name) is not allowed",
            "letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    if documents:
        rule = build_rule(documents[0], site, Path(file), check, min_body_chars)
        if rule is not None and not check.errors:
            return rule
        reported = set(map(str, check.errors))
        for hidden in documents[1:]:
            hidden_check = Checker(file, regex_timeout)
            hidden_check.reads = check.reads
            build_rule(hidden, site, Path(file), hidden_check, min_body_chars)
            for error in hidden_check.errors:
                if str(error) not in reported:
                    reported.add(str(error))
                    check.errors.append(error)
    raise RuleErrors(file, check.errors)


# --- reading the YAML ---------------------------------------------------------------------------------------


def _read_yaml(text: str, check: Checker) -> list[object]:
    """The YAML document of ``text`` (PyYAML's safe loader), none when there is none; syntax errors and
    duplicate keys are reported. A document with duplicate keys is still checked further: it comes first
    as YAML reads it (each key's last value), then once for each earlier value of a repeated key (the
    first values, then the second..., at most ``HIDDEN_VALUES_CHECKED``), whose errors would show only once
    the later ones are removed."""
    depth, past = _bracket_depth(text)
    if depth > MAX_RULE_NESTING:
        check.fail(
            _line_column(text, past),
            f"invalid YAML: brackets nested {depth:,} levels deep (at most {MAX_RULE_NESTING} are read)",
            "lists and mappings a few levels deep",
        )
        return []
    read = _read_by_libyaml(text)
    if read is not None:
        return read
    loader: yaml.SafeLoader | None = None
    try:
        loader = yaml.SafeLoader(text)  # reads the whole text: a character YAML forbids fails here
        node = loader.get_single_node()
        if node is None:
            check.fail("", "the file is empty", EXPECTED_RULE)
            return []
        duplicates = _duplicate_keys(node)
        for key_node in duplicates:
            mark = key_node.start_mark
            check.fail(
                f"line {mark.line + 1}, column {mark.column + 1}",
                f"duplicate key {_shown(key_node.value)}",
                "each key once in a mapping: YAML would keep only the last one",
            )
        # A key's values but the last, at most: as many as the times the most repeated key name repeats.
        repeats = max(Counter((key_node.tag, key_node.value) for key_node in duplicates).values(), default=0)
        repeats = min(repeats, HIDDEN_VALUES_CHECKED)
        hidden = [_with_earlier_values(node, occurrence, {}) for occurrence in range(repeats)]
        try:
            return [loader.construct_document(document) for document in (node, *hidden)]
        except YAML_UNREADABLE_VALUE:
            unreadable = _unreadable_scalar(loader, node, text)
            if unreadable is None:
                raise
            check.fail(*unreadable)
            return []
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = ", ".join(part for part in (exc.context, exc.problem) if part)
        check.fail(where, f"invalid YAML: {problem}", _yaml_fix(exc, text))
        return []
    except yaml.reader.ReaderError as exc:
        character = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        check.fail(
            _line_column(text, exc.position), f"invalid YAML: the character {character} ({exc.reason})"
        )
        return []
    except yaml.YAMLError as exc:
        check.fail("", f"invalid YAML: {' '.join(str(exc).split())}")
        return []
    except RecursionError:
        check.fail(
            "", "invalid YAML: nested too deeply for the parser", "lists and mappings a few levels deep"
        )
        return []
    finally:
        if loader is not None:
            loader.dispose()


def _read_by_libyaml(text: str) -> list[object] | None:
    """The document of ``text`` read by libyaml (:data:`_LIBYAML_LOADER`), when it is one PyYAML's own
    loader reads the same: not empty, no error, no duplicate key, none of what libyaml reads and PyYAML
    refuses (:data:`_LIBYAML_MORE`, :func:`_read_otherwise`); None otherwise, and PyYAML's loader reads
    the text, so that its errors are worded and placed the same whether PyYAML has libyaml or not."""
    if _LIBYAML_LOADER is None or any(character in text for character in _LIBYAML_MORE):
        return None
    loader = None
    try:
        loader = _LIBYAML_LOADER(text)
        node = loader.get_single_node()
        if node is None or _duplicate_keys(node) or _read_otherwise(node):
            return None
        return [loader.construct_document(node)]
    except (yaml.YAMLError, RecursionError, *YAML_UNREADABLE_VALUE):
        return None
    finally:
        if loader is not None:
            loader.dispose()


def _unreadable_scalar(loader: yaml.SafeLoader, root: yaml.Node, text: str) -> tuple[str, str, str] | None:
    """Where the first scalar under ``root`` (read from ``text``) is, in the order of the text, that its
    tag's constructor cannot read (an unquoted 2026-02-30, which YAML takes for a date; ``!!int ten``),
    what is wrong and the fix, as :meth:`Checker.fail` takes them; None when every scalar reads."""
    for node in _nodes(root):
        if isinstance(node, yaml.CollectionNode):
            continue
        construct = loader.yaml_constructors.get(node.tag)
        try:
            if construct is not None:
                construct(loader, node)
        except YAML_UNREADABLE_VALUE as exc:
            mark = node.start_mark
            tag = node.tag.rpartition(":")[2]
            kind = _SCALAR_KINDS.get(tag, tag)
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            if text.startswith("!", mark.index):
                return (
                    where,
                    f"invalid YAML: the tag !!{tag} reads {kind}, and {_shown(node.value)} is none",
                    (f"a value that is {kind}, or no tag !!{tag}"),
                )
            reason = f": {exc}" if isinstance(exc, ValueError) else ""
            return (
                where,
                f"invalid YAML: {node.value} reads as {kind} in YAML, and is none{reason}",
                (f'quotes around a value that is text, as in "{node.value}"'),
            )
    return None


def _read_otherwise(root: yaml.Node) -> bool:
    """Whether PyYAML's own loader reads the document libyaml read as ``root`` otherwise: an unquoted scalar
    of a flow list or mapping holds a '?' (libyaml reads ``[a?b]`` whole, where PyYAML ends the scalar at
    the '?' and refuses it), or a tag '!' has no value (``a: !``: libyaml reads '', PyYAML null). The nodes
    are visited in the order of the text: an anchored node is judged where it is written, not where an
    alias repeats it."""
    visited: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, in_flow = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            # libyaml gives an unquoted scalar the style '', PyYAML None.
            questioned = in_flow and "?" in node.value
            if not node.style and (questioned or (node.value == "" and node.tag == _STR_TAG)):
                return True
        elif isinstance(node, yaml.CollectionNode):
            in_flow = in_flow or bool(node.flow_style)
            pairs = node.value if isinstance(node, yaml.MappingNode) else [(child,) for child in node.value]
            stack += [(child, in_flow) for pair in reversed(pairs) for child in reversed(pair)]
    return False


def _bracket_depth(text: str) -> tuple[int, int]:
    """How deep the flow lists and mappings of ``text`` (YAML's ``[...]`` and ``{...}``) nest at most, and
    where the bracket that opens one deeper than ``MAX_RULE_NESTING`` is (its index; 0 when none does):

    1. every ``[`` and ``{`` of the text counted (``str.count``): 0 when they are ``MAX_RULE_NESTING`` or
       fewer, as in any rule;
    2. else the depth of the brackets that libyaml's scanner (PyYAML's C one) reads as lists and mappings:
       not those of a quoted or block scalar (a regular expression's ``\\[``), nor those of a comment. It
       reads the whole text while they nest ``MAX_RULE_NESTING`` deep or less, as a count of every
       bracket past a point would let quoted closing ones cancel lists nested deeper. A token costs up to
       its depth (the scanner looks at a possible key per level): 1 MB of tokens 200 levels deep took
       0.94 s (CPU), a ninth of PyYAML's reading of the file it lets through (0.33 s for 40 KB of them);
    3. deeper (the file is refused), ``MAX_NESTING_TOKENS`` more tokens at most, for the depth the error
       names (1 ms for 2,000 levels, where PyYAML's own scanner takes 0.3 to 0.5 s); where it stops,
       there or at its own limit of 1,000 levels (which its look-ahead for a key may reach before it
       gives 200 tokens), the rest is counted by :func:`_depth_of_all`;
    4. when libyaml's scanner stops at an error before, or PyYAML was built without it, PyYAML's own
       scanner, the parser's, reads the text the same way up to one level past ``MAX_RULE_NESTING`` (its
       cost at 201 levels, not 2,000's): the two scanners differ (libyaml refuses a directive PyYAML
       ignores, ``%FOO bar``), and a count past the error would let quoted closing brackets cancel lists."""
    if text.count("[") + text.count("{") <= MAX_RULE_NESTING:
        return 0, 0
    if _LIBYAML_SCANNER is not None:
        found = _scanned_depth(text, _LIBYAML_SCANNER(text), MAX_NESTING_TOKENS)
        if found is not None:
            return found
    try:
        scanner = yaml.SafeLoader(text)
    except yaml.YAMLError:  # a character YAML forbids, which the parser is refused at as well
        return 0, 0
    return _scanned_depth(text, scanner, 0) or (0, 0)


def _scanned_depth(
    text: str, scanner: yaml.SafeLoader | yaml.CBaseLoader, tokens_past: int
) -> tuple[int, int] | None:
    """:func:`_bracket_depth` of ``text`` by ``scanner``'s tokens, read whole while they nest at most
    ``MAX_RULE_NESTING`` deep, then ``tokens_past`` more before the rest is counted wherever it is; None
    when the scanner stops at an error before that (the nesting seen so far, when it is PyYAML's own, which
    the parser stops at too)."""
    deepest = depth = end = past = 0
    try:
        while deepest <= MAX_RULE_NESTING or tokens_past:
            if deepest > MAX_RULE_NESTING:
                tokens_past -= 1
            token = scanner.get_token()
            if token is None:
                return deepest, past
            if isinstance(token, _FLOW_STARTS):
                depth += 1
                if depth > MAX_RULE_NESTING >= deepest:
                    past = token.start_mark.index
                deepest = max(deepest, depth)
            elif isinstance(token, _FLOW_ENDS):
                depth -= 1
            end = token.end_mark.index
    except yaml.YAMLError as exc:
        # libyaml's own limit of 1,000 levels, which its look-ahead for keys reaches before the tokens.
        if deepest <= MAX_RULE_NESTING and getattr(exc, "problem", None) != _LIBYAML_TOO_DEEP:
            return (deepest, past) if isinstance(scanner, yaml.SafeLoader) else None
    finally:
        scanner.dispose()
    return max(deepest, _depth_of_all(text[end:], depth)), past or _past_limit(text, end, depth)


def _past_limit(text: str, start: int, depth: int) -> int:
    """The index of the first bracket of ``text`` from ``start`` (at ``depth``), counting them wherever
    they are, that opens deeper than ``MAX_RULE_NESTING``; 0 when none does."""
    for bracket in _BRACKETS_RE.finditer(text, start):
        depth += _BRACKET_DEPTH[bracket.group()]
        if depth > MAX_RULE_NESTING:
            return bracket.start()
    return 0


def _depth_of_all(text: str, depth: int = 0) -> int:
    """How deep the brackets of ``text`` nest at most, from ``depth``, counting them wherever they are."""
    brackets = _NOT_BRACKETS_RE.sub("", text)
    return max(accumulate(map(_BRACKET_DEPTH.__getitem__, brackets), initial=depth))


def _line_column(text: str, index: int) -> str:
    """Where the character at ``index`` of ``text`` is, as a rule file's errors say it."""
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def _yaml_fix(exc: yaml.MarkedYAMLError, text: str) -> str | None:
    """What to write instead, for the YAML mistakes a rule's author makes most: a tab (indenting the line
    of ``text`` where it stands, or inside it), an unquoted cron expression, a second document (a ``---``),
    a regular expression in double quotes, an unquoted @href, an unquoted ': ' in a value or a key indented
    under a value, a bracket not closed."""
    problem = exc.problem or ""
    if "'\\t'" in problem:
        mark = exc.problem_mark
        if mark is None:
            return _TABS_EXPECTED
        before = text.splitlines()[mark.line][: mark.column]
        return _TABS_EXPECTED if not before.strip(" \t") else _INLINE_TAB_EXPECTED
    if exc.context == "while scanning an alias":
        return _ALIAS_EXPECTED
    if problem == "but found another document" and exc.problem_mark is not None:
        return (
            f"one rule in a rule file: the --- on line {exc.problem_mark.line + 1} starts a second YAML"
            " document; delete it, and give another site's rule a file of its own, SITE.yaml beside this one"
        )
    if exc.context == "while scanning a double-quoted scalar" and problem.startswith("found unknown escape"):
        return _ESCAPE_EXPECTED
    if problem in (
        "found character '@' that cannot start any token",
        "found character '`' that cannot start any token",
    ):
        return _RESERVED_EXPECTED
    if problem == "mapping values are not allowed here":
        mark = exc.problem_mark
        lines = text.splitlines()
        if mark is None or mark.line >= len(lines):
            return _COLON_EXPECTED
        before = lines[mark.line][: mark.column]
        key = before.strip(" ")
        if ": " in before or not before.startswith(" ") or not key:
            return _COLON_EXPECTED
        # A key indented deeper than the key before it, whose value it continues (name: news, then
        # "  delay: 1"): its colon is the first of its line.
        return (
            f"the key {key} on line {mark.line + 1} at the indentation of the keys beside it: indented"
            " deeper, YAML reads it as more of the value on the line before; or quotes around that value"
            " if ': ' is part of it"
        )
    flow = exc.context in ("while parsing a flow sequence", "while parsing a flow mapping")
    if flow and exc.context is not None and problem.startswith("expected ','"):
        opened, closing = ("[", "]") if exc.context.endswith("sequence") else ("{", "}")
        start = exc.context_mark
        at = f" at line {start.line + 1}, column {start.column + 1}" if start is not None else ""
        return (
            f"a {closing} that closes the {opened}{at}, on its line, or quotes around a value in it that"
            " holds ', ' or ': '"
        )
    return None


def _nodes(root: yaml.Node) -> Iterator[yaml.Node]:
    """The nodes under ``root``, itself first, in the order of the text, each once (an alias's node is
    visited where it is first met)."""
    visited: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        yield node
        if isinstance(node, yaml.CollectionNode):
            pairs = node.value if isinstance(node, yaml.MappingNode) else [(child,) for child in node.value]
            stack += [child for pair in reversed(pairs) for child in reversed(pair)]


def _duplicate_keys(root: yaml.Node) -> list[yaml.ScalarNode]:
    """The key nodes that repeat an earlier key of the same mapping (each node visited once: aliases)."""
    duplicates: list[yaml.ScalarNode] = []
    for node in _nodes(root):
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, _value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                    identity = (key_node.tag, key_node.value)
                    if identity in seen:
                        duplicates.append(key_node)
                    seen.add(identity)
    return sorted(duplicates, key=lambda key_node: (key_node.start_mark.line, key_node.start_mark.column))


def _with_earlier_values(node: yaml.Node, occurrence: int, copies: dict[int, yaml.Node]) -> yaml.Node:
    """``node`` where each repeated key of a mapping keeps its value number ``occurrence`` (from 0; its
    last value when it has fewer) instead of its last one; ``copies`` holds the nodes copied (aliases)."""
    if id(node) in copies:
        return copies[id(node)]
    if isinstance(node, yaml.MappingNode):
        mapping = yaml.MappingNode(node.tag, [], node.start_mark, node.end_mark, node.flow_style)
        copies[id(node)] = mapping
        occurrences: dict[tuple[str, str], list[int]] = {}
        for position, (key_node, _value_node) in enumerate(node.value):
            if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                occurrences.setdefault((key_node.tag, key_node.value), []).append(position)
        dropped = {
            position
            for positions in occurrences.values()
            for position in positions
            if position != positions[min(occurrence, len(positions) - 1)]
        }
        mapping.value = [
            (_with_earlier_values(key, occurrence, copies), _with_earlier_values(value, occurrence, copies))
            for position, (key, value) in enumerate(node.value)
            if position not in dropped
        ]
        return mapping
    if isinstance(node, yaml.SequenceNode):
        sequence = yaml.SequenceNode(node.tag, [], node.start_mark, node.end_mark, node.flow_style)
        copies[id(node)] = sequence
        sequence.value = [_with_earlier_values(item, occurrence, copies) for item in node.value]
        return sequence
    return node
