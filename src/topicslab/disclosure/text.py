"""Advert text preprocessing: tokenise, drop stop words, stem (Mac Aonghusa & Leith §4.3).

The paper tokenises advert text "using white-spaces and punctuation as token separators",
removes stop words and stems with a Porter-style stemmer (it used scikit-learn, whose default
tokens are runs of two or more word characters). Here stemming uses the maintained Snowball
stemmers (``snowballstemmer``), English by default, and the stop-word list ships with the package
(``data/stopwords_en.txt``).

Public names:
    Preprocessor          the filter map f of §4.3 (options: stop words, language, min length,
                          exceptions applied before stemming)
    preprocess(text)      the default English preprocessing
    tokenize(text)        lower-case tokens split on white space and punctuation
    load_stop_words()     the shipped English stop-word list
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from topicslab._checks import flag, integer, is_collection, value_shown
from topicslab.errors import InputError, ParameterError

# Runs of letters/digits (any script): apostrophes, hyphens and all other punctuation separate
# tokens, as in the paper.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def tokenize(text: str, *, lowercase: bool = True) -> list[str]:
    """Split on white space and punctuation; lower-case unless told otherwise."""
    if not isinstance(text, str):
        raise InputError(f"advert text must be a string, got {type(text).__name__}")
    # (an array was NumPy's "truth value of an array is ambiguous", "no" taken as true)
    lowercase = flag(lowercase, "lowercase", error=ParameterError)
    return _TOKEN.findall(text.lower() if lowercase else text)


@functools.cache
def load_stop_words() -> frozenset[str]:
    """The shipped English stop-word list (``data/stopwords_en.txt``)."""
    src = resources.files("topicslab.disclosure").joinpath("data/stopwords_en.txt")
    words = []
    for line in src.read_text(encoding="utf-8").splitlines():
        word = line.strip()
        if word and not word.startswith("#"):
            words.append(word.lower())
    return frozenset(words)


@functools.cache
def _stemmer(language: str) -> Callable[[str], str]:
    import snowballstemmer

    try:
        stem = snowballstemmer.stemmer(language)
    except KeyError:
        raise InputError(f"no Snowball stemmer for language {language!r}; available: "
                         f"{', '.join(snowballstemmer.algorithms())}", field="language") from None
    # Advert vocabularies are small and repetitive: memoise the stems.
    return functools.lru_cache(maxsize=1 << 16)(stem.stemWord)


@dataclass(frozen=True)
class Preprocessor:
    """The filter map f of §4.3: text -> sequence of content-bearing terms.

    Attributes:
        stop_words: words removed (compared after lower-casing, before stemming); default the
            shipped English list.
        language: Snowball stemmer language (``"english"``; ``"porter"`` for the original Porter
            algorithm); ``None`` keeps tokens unstemmed.
        min_length: shorter tokens are dropped (2, as scikit-learn's default token pattern).
        exceptions: token -> term replacements applied before stemming, like the exception
            list of a Snowball stemmer (e.g. ``{"treatment": "treat"}``, which the paper's worked
            example needs; Snowball English keeps "treatment").
        lowercase: lower-case the text first.
    """

    stop_words: frozenset[str] = field(default_factory=load_stop_words)
    language: str | None = "english"
    min_length: int = 2
    exceptions: Mapping[str, str] = field(default_factory=dict)
    lowercase: bool = True

    def __post_init__(self) -> None:
        # (text was a TypeError, a fraction taken: 1.5 kept tokens of two letters)
        integer(self.min_length, "min_length", at_least=1)
        # stop_words="the" was taken letter by letter (the stop words t, h and e, without a
        # word), a number or True was "'bool' object is not iterable" and bytes "'int' object
        # has no attribute 'lower'"; language=True an AttributeError and exceptions="ab"
        # dict()'s "dictionary update sequence element #0 has length 1"
        words: Any = self.stop_words
        if not is_collection(words):
            raise InputError(f"stop_words must be a collection of words (a set or list of "
                             f"text), got {words!r:.60}", field="stop_words")
        words = list(words)
        if not all(isinstance(w, str) for w in words):
            bad = next(w for w in words if not isinstance(w, str))
            raise InputError(f"stop_words must hold text, got {bad!r:.60}", field="stop_words")
        if self.language is not None and not isinstance(self.language, str):
            raise InputError(f"language must be a Snowball language name (text) or None, got "
                             f"{value_shown(self.language, 60)}", field="language")
        if self.language is not None:
            _stemmer(self.language)  # fail early on an unknown language
        if not isinstance(self.exceptions, Mapping) or not all(
                isinstance(a, str) and isinstance(b, str) for a, b in self.exceptions.items()):
            raise InputError(f"exceptions must map words to words (a dict of text), got "
                             f"{self.exceptions!r:.60}", field="exceptions")
        # (lowercase="no" was taken as true, by its truth value)
        object.__setattr__(self, "lowercase", flag(self.lowercase, "lowercase",
                                                   error=ParameterError))
        object.__setattr__(self, "stop_words", frozenset(w.lower() for w in words))
        object.__setattr__(self, "exceptions", dict(self.exceptions))

    @classmethod
    def identity(cls, exceptions: Mapping[str, str] | None = None) -> Preprocessor:
        """No stop words, no stemming, no length filter: for text that is already filtered."""
        return cls(stop_words=frozenset(), language=None, min_length=1,
                   exceptions=exceptions or {})

    def __call__(self, text: str | Iterable[str]) -> list[str]:
        """Terms of a text (a string is tokenised; a sequence is taken as its tokens)."""
        if isinstance(text, str):
            tokens = tokenize(text, lowercase=self.lowercase)
        else:
            # None was "'NoneType' object is not iterable", bytes an AttributeError ('int'
            # object has no attribute 'lower'), a number a TypeError; a 0-d array "iteration
            # over a 0-d array"
            given = list(text) if is_collection(text) else None
            if given is None or not all(isinstance(t, str) for t in given):
                raise InputError("advert text must be a string or a sequence of tokens "
                                 f"(strings), got {type(text).__name__}"
                                 + ("" if given is None else " of " + ", ".join(sorted(
                                     {type(t).__name__ for t in given if not isinstance(t, str)}
                                 ))), field="text")
            tokens = [t.lower() if self.lowercase else t for t in given]
        stem = _stemmer(self.language) if self.language is not None else None
        out = []
        for tok in tokens:
            if len(tok) < self.min_length or tok in self.stop_words:
                continue
            tok = self.exceptions.get(tok, tok)
            out.append(stem(tok) if stem is not None else tok)
        return out

    def many(self, texts: Iterable[str | Iterable[str]]) -> list[list[str]]:
        """Apply to each text."""
        return [self(t) for t in texts]

    def to_dict(self) -> dict[str, Any]:
        return {"language": self.language, "min_length": self.min_length,
                "stop_words": len(self.stop_words), "exceptions": dict(self.exceptions)}


def preprocess(text: str) -> list[str]:
    """Default preprocessing: English stop words removed, Snowball English stems."""
    return _default()(text)


@functools.cache
def _default() -> Preprocessor:
    return Preprocessor()


__all__ = ["Preprocessor", "load_stop_words", "preprocess", "tokenize"]
