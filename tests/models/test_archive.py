"""Model archives: their members, and the folders unpacked from them, have the mode of a new
file, whatever the modes in the folder packed."""

import io
import os
import tarfile
import warnings

import pytest

from iglearn import BatchIGL
from iglearn.envs import digits_environment
from iglearn.learners.training import Optimisation
from iglearn.models.archive import extract_archive, pack_model
from iglearn.models.io import METADATA, WEIGHTS


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A model folder whose weights are readable by their owner only."""
    folder = tmp_path_factory.mktemp("model") / "m"
    fast = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(optimisation=fast, max_restarts=0, seed=0)
        learner.fit(digits_environment().log(500, seed=1))
    learner.save(folder)
    os.chmod(folder / WEIGHTS, 0o600)
    return folder


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_archive_members_and_extracted_files_get_the_mode_of_a_new_file(tmp_path, model,
                                                                        mask):
    old = os.umask(mask)
    try:
        data = pack_model(model)
        archive = tmp_path / "m.tar.gz"
        archive.write_bytes(data)
        extract_archive(archive, tmp_path / "out")
    finally:
        os.umask(old)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = {m.name: m.mode for m in tar.getmembers()}
    assert members == {METADATA: 0o666 & ~mask, WEIGHTS: 0o666 & ~mask}
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "out").iterdir()}
    assert modes == {METADATA: 0o666 & ~mask, WEIGHTS: 0o666 & ~mask}
