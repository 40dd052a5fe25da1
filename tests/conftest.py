"""Shared fixtures: every database test runs on SQLite and on PostgreSQL.

PostgreSQL comes from ``LI_TEST_DATABASE_URL`` when set, else from a throwaway cluster
this session starts. If that fails the run fails, unless ``LI_TEST_POSTGRES=0`` opts out.
"""

from __future__ import annotations

import gc
import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from engine.store import db as dbmod
from tests.pgcluster import ClusterError, PostgresCluster
from tests.wheelkit import InstalledWheel, install_wheel_once

POSTGRES_ENABLED = os.environ.get("LI_TEST_POSTGRES", "1") != "0"
BACKENDS = ["sqlite", "postgresql"] if POSTGRES_ENABLED else ["sqlite"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of a module that says ``RUN_FIRST = True`` (a long wall-clock run) go first:
    under two workers (D77) one worker starts on it while the other takes the rest,
    instead of it running alone at the end. A stable sort: every other order stays."""
    items.sort(key=lambda item: not getattr(getattr(item, "module", None), "RUN_FIRST", False))


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """A URL with the right to CREATE DATABASE; fails the run if none can be had."""
    explicit = os.environ.get("LI_TEST_DATABASE_URL")
    if explicit:
        yield explicit
        return
    cluster = PostgresCluster()
    try:
        cluster.start()
    except ClusterError as exc:
        cluster.stop()
        pytest.fail(
            f"cannot start a throwaway PostgreSQL cluster: {exc}. "
            "Set LI_TEST_DATABASE_URL, or LI_TEST_POSTGRES=0 to opt out explicitly.",
            pytrace=False,
        )
    try:
        yield cluster.url()
    finally:
        cluster.stop()


def _fresh_postgres_database(admin_url: str) -> tuple[str, str]:
    name = f"li_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(dbmod.make_engine(admin_url).url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(admin_url).set(database=name)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url.render_as_string(hide_password=False), name


def _drop_postgres_database(admin_url: str, name: str) -> None:
    admin = create_engine(dbmod.make_engine(admin_url).url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A blank database URL, once per backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'li.db'}"
        return
    admin_url = request.getfixturevalue("postgres_admin_url")
    url, name = _fresh_postgres_database(admin_url)
    try:
        yield url
    finally:
        _collect_orphaned_connections()
        _drop_postgres_database(admin_url, name)


def _collect_orphaned_connections() -> None:
    """Collect now the connections to this test's database that the test left to the
    garbage collector (a thread of an engine under test that held one when it was
    stopped, say): the database is dropped next, and their ResourceWarning, raised
    whenever the collector happens to run, was reported as an error of a later,
    unrelated test (filterwarnings = error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture
def db(db_url: str) -> Iterator[Engine]:
    """A database migrated to head, once per backend."""
    engine = dbmod.make_engine(db_url)
    dbmod.upgrade(engine)
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> InstalledWheel:
    """The wheel built and installed into a fresh venv once a run (tests/wheelkit.py)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, which its workers share
    return install_wheel_once(root)
