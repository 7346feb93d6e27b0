"""Training the claim-worthiness model: its examples, its choices, and the shipped file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dreaming.engine import worth_train
from dreaming.engine.worth import WEIGHTS_PATH
from dreaming.engine.worth_train import Data, _regularisation, examples


def test_a_unit_whose_first_words_wrap_a_line_is_located_by_its_last_words(tmp_path):
    # The harness locates a candidate by its first, else its last, eight words; a sentence
    # wrapped in its note is labelled the same way, not dropped from the training.
    (tmp_path / "corpus" / "notes").mkdir(parents=True)
    (tmp_path / "corpus" / "notes" / "setup.md").write_text(
        "# Setup\n\nThe nightly export job writes\nevery settled invoice to the archive"
        " bucket on the storage host for ten years.\n\nMaybe we look at this again.\n",
        encoding="utf-8",
    )
    key = {"files": [{"path": "notes/setup.md"}], "claim_lines": {"notes/setup.md": [[3, 4]]}}
    (tmp_path / "key.json").write_text(json.dumps(key), encoding="utf-8")

    got = examples("mini", tmp_path / "corpus", tmp_path / "key.json")

    labels = dict(zip(got.texts, got.y, strict=True))
    assert labels["Maybe we look at this again."] == 0.0
    (wrapped,) = [t for t in labels if t.startswith("The nightly export job")]
    assert labels[wrapped] == 1.0


def test_the_regularisation_is_the_one_whose_held_out_log_loss_is_lowest():
    # One feature says the label on every corpus but one, where it says the opposite: the
    # held-out log-loss punishes a confident fit, so the strongest penalty of the grid wins.
    rng = np.random.default_rng(0)

    def corpus(name: str, agree: bool) -> Data:
        x = rng.integers(0, 2, size=(60, 1)).astype(float)
        y = x[:, 0] if agree else 1.0 - x[:, 0]
        return Data(name, x, y, [""] * len(y))

    sets = [corpus("a", True), corpus("b", True), corpus("c", False)]
    l2, held = _regularisation(sets)
    assert l2 == max(worth_train.L2_GRID)
    assert [len(p) for p, _ in held] == [60, 60, 60]

    clean = [corpus("a", True), corpus("b", True), corpus("c", True)]
    assert _regularisation(clean)[0] == min(worth_train.L2_GRID)


@pytest.mark.skipif(not worth_train.SHARED.is_dir(), reason="needs ../shared/eval")
def test_the_training_command_writes_the_shipped_weights_byte_for_byte():
    first = worth_train.render(worth_train.train()[0])
    second = worth_train.render(worth_train.train()[0])

    assert first == second
    assert first == WEIGHTS_PATH.read_text(encoding="utf-8"), (
        "worth_weights.json is not what `python -m dreaming.engine.worth_train` writes"
    )
