import pathlib

import pytest

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_data():
    """Path to the shared data folder (``../shared/data``); skips when absent."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip("shared data folder ../shared/data is absent")
    return path
