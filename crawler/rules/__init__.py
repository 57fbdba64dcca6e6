"""Site rules: ``rules/<site>.yaml`` read, validated and compiled once (the reference is docs/rules.md).

A rule file is data, never code: it is read with PyYAML's safe loader, checked against a schema that
rejects unknown keys at every level, and every regular expression and XPath in it is compiled at load time.
Regular expressions use the ``regex`` module and run with a time limit (:class:`RuleRegex`); XPath are
compiled by lxml with EXSLT regular expressions off (:class:`RuleXPath`).

Every problem is a :class:`RuleError` naming the file, the key path, the bad value and what was expected::

    rules/citynews.yaml: article.fields.title.xpath: invalid XPath "//h1[": Invalid expression
    (expected an XPath 1.0 expression)

:func:`load_rules` reads a whole folder and returns every valid rule *and* every error of every file (one
broken file never stops the others); :func:`load_rule` reads one file and raises :class:`RuleErrors`, which
lists every error of that file.

The modules: :mod:`~crawler.rules.load` reads files and YAML, :mod:`~crawler.rules.schema` checks and
compiles every key, :mod:`~crawler.rules.expressions` holds the bounded regex and checked XPath,
:mod:`~crawler.rules.periods` the schedule's periods, :mod:`~crawler.rules.model` the compiled rule and
what it reads from a page (:meth:`Rule.article_links`, :meth:`Rule.next_page_url`,
:meth:`Rule.extract_fields`), :mod:`~crawler.rules.errors` the errors.
"""

from __future__ import annotations

from crawler.rules.errors import RuleError, RuleErrors
from crawler.rules.expressions import REGEX_TIMEOUT, RegexBudget, RuleRegex, RuleXPath
from crawler.rules.load import (
    RULE_SUFFIX,
    YAML_SUFFIXES,
    RuleFiles,
    RulesStamp,
    is_site_id,
    load_rule,
    load_rules,
    parse_rule,
    rule_file,
    rule_sites,
    rules_stamp,
)
from crawler.rules.model import (
    LISTING_PAGES,
    PUBLISHED_FIX,
    STANDARD_FIELDS,
    FieldRule,
    LinkRule,
    Rule,
    RuleSet,
)
from crawler.rules.periods import check_cron, parse_every

__all__ = [
    "LISTING_PAGES",
    "PUBLISHED_FIX",
    "REGEX_TIMEOUT",
    "RULE_SUFFIX",
    "STANDARD_FIELDS",
    "YAML_SUFFIXES",
    "FieldRule",
    "LinkRule",
    "RegexBudget",
    "Rule",
    "RuleError",
    "RuleErrors",
    "RuleFiles",
    "RuleRegex",
    "RuleSet",
    "RuleXPath",
    "RulesStamp",
    "check_cron",
    "is_site_id",
    "load_rule",
    "load_rules",
    "parse_every",
    "parse_rule",
    "rule_file",
    "rule_sites",
    "rules_stamp",
]
