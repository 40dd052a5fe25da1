"""The content rubric: what a comment's own words say about its priority.

Issue 29's table lets content decide a comment with no decisive marker (Gemini's
``![medium]``, Claude's ``⚠️``, Codex's and Greptile's P2, Bugbot's Medium, and every
comment with no label): a **correctness, security, breaking-change, data-loss or
error-handling** problem blocks (``P2``, ``P1`` when the text also says it reaches the
normal case), anything else is ``P3``. This module reads those categories from the text
(docs/priorities.md, "Rubric"); it returns None when the text names neither kind, which
the caller turns into the first-round default (``P2``) or the triage reviewer leg.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")", re.IGNORECASE)


# The blocking categories, in the order they are named when several match.
SECURITY = _words(
    r"security (?:vulnerabilit|hole|issue|flaw|risk|concern)",
    r"vulnerab",
    r"(?:sql|command|shell|code|header|script|prompt) injection",
    r"xss\b",
    r"csrf\b",
    r"ssrf\b",
    r"path traversal",
    r"remote code execution",
    r"exponential backtracking",
    r"redos\b",
    r"(?:leaks?|exposes?|logs?) (?:the |a |an )?(?:secret|token|credential|password|api key)",
    r"auth(?:entication|orization)? bypass",
    r"privilege escalation",
    r"(?:can|could) inject",
    r"bypass(?:es|ed|ing)?\b",
    r"(?:can|could) (?:still )?pass (?:the |this |its )?(?:\w+ )?(?:approval|verification|"
    r"validation|integrity|signature|security) (?:step|check|gate)",
)
DATA_LOSS = _words(
    r"data loss",
    r"los(?:e|es|t|ing) (?:the |all |user |their )?(?:data|work|changes)",
    r"corrupt",
    r"overwrit",
    r"clobber",
    r"silently (?:truncat|drop|discard|rewrit|overwrit)",
    r"deletes? (?:the wrong|every|all)",
    r"(?:can|could|will|would|may|might) delete (?:unrelated|other|the wrong)",
)
BREAKING = _words(
    r"breaking change",
    r"break(?:s|ing)? (?:the |a |all |every |existing )?(?:build|ci\b|api|compatib|callers?|"
    r"users?|existing|clients?|the ui|sidebar|route|contract)",
    r"will break",
    r"no longer (?:work|behave|match|compile|build|load|render|run)",
    r"regression",
    r"backwards? compat",
)
CORRECTNESS = _words(
    r"crash",
    r"panics?\b",
    r"(?:raises?|throws?) (?:an? )?(?:unhandled )?(?:`?\w*(?:error|exception)`?)",
    r"(?:type|attribute|key|value|index|runtime|reference|syntax)error",
    r"syntax errors?",
    r"runtime error",
    r"unhandled (?:exception|error|promise)",
    r"wrong (?:result|value|answer|output|directory|path|file|shape|type)",
    r"incorrect(?:ly)? ",
    r"(?:will|would|can|could|may) (?:always |now |still )?fail",
    r"fails? (?:at runtime|on the first|on|before|when|with|to (?:load|launch|parse|run|start))\b",
    r"not available by default",
    r"race condition",
    r"races? (?:with|between)",
    r"concurrent",
    r"deadlock",
    r"infinite loop",
    r"memory leak",
    r"off-by-one",
    r"null pointer",
    r"segfault",
    r"division[- ]by[- ]zero",
    r"nans?\b",
    r"overflow",
    r"not (?:json )?serializable",
    r"(?:is|are|was|were) (?:ignored|skipped|dropped|rejected)",
    r"(?:can|could|will|would|may|might) silently \w+",
    r"silently (?:ignor|fail|drop|swallow|accept|skip|fall|becom|corrupt|leak|disabl)",
    r"mismatch",
    r"does not (?:work|render|load|match)",
    r"doesn't (?:work|render|load|match)",
    r"never (?:be )?(?:loaded|called|rendered|matched|runs?|reached)",
    r"undefined behaviou?r",
    r"not enforced",
    r"(?:is|are) unsafe",
    r"false positives?",
    r"does not exist",
    r"non-existent",
    r"leads? to (?:another|a) failure",
    r"silently (?:select|collaps|return|us)",
    r"correctness(?:/\w+)? (?:issue|problem|bug)s?",
    r"(?:should|must) be (?:addressed|fixed) before merg",
)
ERROR_HANDLING = _words(
    r"error handling",
    r"swallow",
    r"suppress\((?:importerror|exception)",
    r"fail(?:s)? silently",
    r"without (?:a |any )?(?:log|error|exception)",
    r"not reported",
    r"misleading (?:error|message)",
    r"fail (?:fast|closed)",
)
BLOCKING: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("security", SECURITY),
    ("data-loss", DATA_LOSS),
    ("breaking", BREAKING),
    ("correctness", CORRECTNESS),
    ("error-handling", ERROR_HANDLING),
)

# A reply in which the reviewer withdraws its own finding asks for nothing.
WITHDRAWN = _words(
    r"withdraw(?:ing|n)? (?:this|my|the) (?:finding|comment|concern|suggestion)",
    r"no (?:code )?change is (?:needed|required)",
    r"consider this (?:comment |thread |finding )?resolved",
    r"(?:that|this) (?:context )?resolves (?:the|my) concern",
)
# A text that calls itself minor is not raised by its keywords.
SOFTENED = _words(
    r"nit(?:pick)?s?\b",
    r"optional(?:ly)?\b",
    r"nice to have",
    r"non-blocking",
    r"minor\b",
    r"false sense of security",
)
# The subject is test code: a bug in a test helper or a test guard is a test cleanup.
TEST_SUBJECT = _words(
    r"mock",
    r"test (?:helper|file|suite|case names?|double)s?",
    r"subtests?",
    r"t\.Run",
    r"(?:in|of) (?:the |these )?(?:unit[- ]marked )?(?:unit )?tests\b",
    r"(?:isn't|is not|not) (?:currently )?covered by tests",
    r"add(?:ing)? (?:a )?(?:small |new )?(?:unit |regression )?tests?\b",
    r"add(?:ing)? (?:a )?test case",
)
# The P3 categories: style and structure, tests, performance, documents, questions.
OPTIONAL: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "style",
        _words(
            r"naming",
            r"name (?:this|it|the) ",
            r"renam",
            r"readab",
            r"consisten",
            r"convention",
            r"style",
            r"format",
            r"typo",
            r"typograph",
            r"grammat",
            r"spelling",
            r"docstring",
            r"simplif",
            r"concise",
            r"refactor",
            r"redundant",
            r"unused",
            r"dead code",
            r"duplicat",
            r"idiomatic",
            r"cleaner",
            r"maintainab",
            r"type safety",
            r"type (?:hint|annotation)",
            r"magic number",
            r"coupl",
            r"modular",
        ),
    ),
    (
        "tests",
        _words(
            r"tests?\b",
            r"test cases?",
            r"test coverage",
            r"coverage",
            r"untested",
            r"not exercised",
            r"assertions?",
        ),
    ),
    (
        "performance",
        _words(r"performan", r"n\+1", r"inefficient", r"more efficient", r"optimi[sz]"),
    ),
    ("docs", _words(r"documentation", r"readme", r"guide\b", r"comment says")),
    ("suggestion", _words(r"consider (?:a|an|adding|using|extracting|splitting|moving)\b")),
    ("verify", _words(r"should be verified", r"should verify", r"reviewer should")),
    (
        "praise",
        _words(r"lgtm", r"looks good", r"nice work", r"well done", r"safe to merge", r"thanks"),
    ),
)

# The normal case: a blocking finding that says it reaches everyone is P1.
REACH = _words(
    r"every(?:one| user| run| pr| call)?\b",
    r"always",
    r"all users",
    r"any user",
    r"at startup",
    r"on startup",
    r"by default",
    r"with (?:the )?default",
    r"default (?:options|solver|path|run)",
    r"normal (?:run|use|case)",
    r"common case",
    r"break ci",
    r"ci (?:will )?(?:fail|break)",
    r"build (?:will )?fail",
    r"unusable",
)


@dataclass(frozen=True)
class ContentVerdict:
    """What the rubric reads: ``priority`` (None: the text names neither kind) and the
    category (``security``, ``style`` ...) or ``ambiguous``."""

    priority: str | None
    category: str


def read_content(text: str) -> ContentVerdict:
    """The rubric's reading of ``text`` (module docstring). Pure."""
    if not text.strip():
        return ContentVerdict("P3", "empty")
    if WITHDRAWN.search(text) is not None:
        return ContentVerdict("P3", "withdrawn")
    if SOFTENED.search(text) is not None:
        return ContentVerdict("P3", "softened")
    blocking = next((name for name, pattern in BLOCKING if pattern.search(text)), None)
    optional = next((name for name, pattern in OPTIONAL if pattern.search(text)), None)
    if blocking is not None and TEST_SUBJECT.search(text) is not None:
        return ContentVerdict("P3", "tests")
    if blocking is not None:
        reach = blocking != "error-handling" and REACH.search(text) is not None
        return ContentVerdict("P1" if reach else "P2", blocking)
    if optional is not None:
        return ContentVerdict("P3", optional)
    return ContentVerdict(None, "ambiguous")
