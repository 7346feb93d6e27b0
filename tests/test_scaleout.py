"""The scale-out path, against real servers (make test starts them for the second pass)."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import connection


@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="needs DATABASE_URL (PostgreSQL)")
def test_it_runs_on_postgresql_when_database_url_is_set(project):
    assert connection.vendor == "postgresql"
    assert project.pages.count() == 6


@pytest.mark.redis
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (Redis)")
def test_the_task_broker_round_trips_through_redis():
    from django_q.brokers import get_broker
    from django_q.brokers.redis_broker import Redis

    broker = get_broker()
    assert isinstance(broker, Redis)
    assert settings.Q_CLUSTER["redis"] == os.environ["REDIS_URL"]
    broker.purge_queue()
    broker.enqueue("payload-1")
    assert broker.queue_size() == 1
    (task_id, payload), *_ = broker.dequeue()
    assert payload == b"payload-1"
    broker.acknowledge(task_id)
    assert broker.queue_size() == 0
