"""Loading backends by name with options, as the CLI and configs do."""

from __future__ import annotations

import pytest

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.models.loading import load_backend


def test_loads_classic_backend_with_options():
    det = load_backend("classic/sift", {"threshold": 0.4}, role="detector")
    assert det.info().name == "classic/sift"
    assert det.info().settings["threshold"] == 0.4


def test_misspelt_option_names_the_options():
    with pytest.raises(UserInputError, match=r"(?s)unknown option\(s\) \[.treshold.\].*threshold"):
        load_backend("classic/sift", {"treshold": 0.4})


def test_wrong_role_lists_backends_of_that_role():
    with pytest.raises(UserInputError, match="(?s)not .detector.*classic/sift"):
        load_backend("classic/hsv-lbp", role="detector")


def test_unknown_name_did_you_mean():
    with pytest.raises(UnknownNameError, match="did you mean 'classic/sift'"):
        load_backend("classic/sfit")
