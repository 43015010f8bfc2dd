"""The throwaway PostgreSQL cluster the postgres tests run against."""

from __future__ import annotations

import adbc_driver_postgresql.dbapi as adbc
import pg_cluster
import pytest


def test_each_test_gets_a_fresh_database_on_the_loopback(postgres_url: str) -> None:
    assert postgres_url.startswith("postgresql://postgres@127.0.0.1:")
    with adbc.connect(postgres_url) as con, con.cursor() as cur:
        cur.execute(
            "SELECT inet_server_addr()::text, current_setting('server_version_num')::int, "
            "(SELECT count(*) FROM pg_tables WHERE schemaname = 'public')"
        )
        address, version, tables = cur.fetchone()
    assert address.startswith("127.0.0.1")
    assert version >= 150000
    assert tables == 0


def test_the_postgres_marker_is_given_to_tests_that_use_the_cluster(request, postgres_url: str) -> None:
    assert request.node.get_closest_marker("postgres") is not None


@pytest.mark.slow
def test_a_cluster_stops_and_leaves_no_directory() -> None:
    cluster = pg_cluster.start()
    if isinstance(cluster, str):
        pytest.skip(cluster)
    root = cluster.data.parent
    with adbc.connect(cluster.url) as con, con.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    cluster.stop()
    assert not root.exists()
    with pytest.raises(adbc.Error), adbc.connect(cluster.url) as con, con.cursor() as cur:
        cur.execute("SELECT 1")
