"""Advert text preprocessing: tokenisation, stop words, Snowball stems."""

from __future__ import annotations

import pytest

from topicslab.disclosure import Preprocessor, load_stop_words, preprocess, tokenize
from topicslab.errors import InputError


def test_tokenize_splits_on_white_space_and_punctuation() -> None:
    assert tokenize("Don't miss: Cheap-Loans, 24/7!") == ["don", "t", "miss", "cheap", "loans",
                                                          "24", "7"]
    assert tokenize("ÉTÉ Ünïcode") == ["été", "ünïcode"]
    assert tokenize("Keep", lowercase=False) == ["Keep"]


def test_preprocess_removes_stop_words_and_stems() -> None:
    # the paper's own example of stemming (§4.3)
    assert preprocess("clicking, clicks, clicked") == ["click", "click", "click"]
    assert preprocess("The prostate cancer treatments that you need") == [
        "prostat", "cancer", "treatment", "need"]
    # single characters are dropped like scikit-learn's default token pattern
    assert preprocess("a b c diabetes") == ["diabet"]


def test_stop_word_list() -> None:
    words = load_stop_words()
    assert {"the", "and", "of", "you", "here", "don", "t"} <= words
    assert not {"cancer", "loan", "help", "advice", "job"} & words
    assert all(w == w.lower() and w.strip() == w and w for w in words)
    assert 150 <= len(words) <= 400


def test_options() -> None:
    pre = Preprocessor(exceptions={"treatment": "treat"})
    assert pre("treatment treatments") == ["treat", "treatment"]
    assert Preprocessor(language=None)("Clicking clicks") == ["clicking", "clicks"]
    assert Preprocessor(language="porter")("clicking") == ["click"]
    assert Preprocessor(stop_words=frozenset({"CHEAP"}))("cheap loans") == ["loan"]
    assert Preprocessor(min_length=5)("debt loans") == ["loan"]
    ident = Preprocessor.identity({"treatment": "treat"})
    assert ident(["revers", "treatment", "here"]) == ["revers", "treat", "here"]
    assert pre.many(["clicks", "loans"]) == [["click"], ["loan"]]
    assert pre.to_dict()["language"] == "english"


def test_bad_input() -> None:
    with pytest.raises(InputError, match="language"):
        Preprocessor(language="klingon")
    with pytest.raises(InputError, match="min_length"):
        Preprocessor(min_length=0)
    with pytest.raises(InputError, match="string"):
        tokenize(42)  # type: ignore[arg-type]
