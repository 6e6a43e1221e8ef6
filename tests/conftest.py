"""Fixtures shared by the unit tests (the browser test has its own conftest in tests/e2e)."""

import pytest


@pytest.fixture
def plt():
    """matplotlib.pyplot on the Agg backend, with rcParams restored and figures closed afterwards."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    with matplotlib.rc_context():
        yield pyplot
        pyplot.close("all")
