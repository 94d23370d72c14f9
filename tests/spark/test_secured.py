"""Reads and writes against a cluster that checks an ACL and takes TLS (child processes of
their own, started once for this module): the account's options open it, their absence
fails with the broker's reason, and ``tls`` with the cluster's CA reads over TLS while a CA
the server's certificate does not chain to fails the handshake."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from certs import CertFiles
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from spark_cluster import Cluster, TlsFiles, secured_cluster

from rocketkube.client import Message, sync
from rocketkube.common.acl import Credentials
from rocketkube.spark import RocketMQDataSource

pytestmark = pytest.mark.xdist_group("spark")

TOPIC = "SparkSecured"
ACCOUNTS = f"""\
accounts:
  - accessKey: spark-user
    secretKey: spark-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [{TOPIC}=PUB|SUB]
  - accessKey: spark-admin
    secretKey: spark-admin-secret
    admin: true
"""
ACCOUNT = {"accessKey": "spark-user", "secretKey": "spark-secret"}
ADMIN = Credentials("spark-admin", "spark-admin-secret")
STORED = [b"stored %d" % i for i in range(6)]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, tls_certs: CertFiles) -> Iterator[Cluster]:
    """The cluster, with :data:`TOPIC` created and :data:`STORED` sent to it."""
    root = tmp_path_factory.mktemp("spark-secured")
    acl_file = root / "plain_acl.yml"
    acl_file.write_text(ACCOUNTS)
    server = TlsFiles(tls_certs.server_cert, tls_certs.server_key)
    with secured_cluster(root, server, acl_file, ADMIN) as cluster:
        with sync.AdminClient(cluster.namesrv, credentials=ADMIN) as admin:
            admin.run(lambda a: a.create_topic(TOPIC, cluster="DefaultCluster"))
        account = Credentials(ACCOUNT["accessKey"], ACCOUNT["secretKey"])
        with sync.Producer("SparkSecuredFiller", cluster.namesrv, credentials=account) as p:
            p.send_batch([Message(TOPIC, body) for body in STORED])
        yield cluster


def _bodies(spark: SparkSession, cluster: Cluster, **options: str) -> list[bytes]:
    spark.dataSource.register(RocketMQDataSource)
    frame = (
        spark.read.format("rocketmq")
        .options(namesrvAddr=cluster.namesrv, topic=TOPIC, **options)
        .load()
    )
    return sorted(bytes(row.body) for row in frame.select("body").collect())


def test_the_account_reads_and_writes_and_nothing_goes_unsigned(
    spark: SparkSession, secured: Cluster
) -> None:
    rows = spark.createDataFrame([(b"written by spark",)], "body binary")
    target = {"namesrvAddr": secured.namesrv, "topic": TOPIC}
    rows.write.format("rocketmq").options(**target, **ACCOUNT).mode("append").save()
    assert _bodies(spark, secured, **ACCOUNT) == sorted([*STORED, b"written by spark"])
    with pytest.raises(PySparkException, match="No accessKey is configured"):
        _bodies(spark, secured)
    with pytest.raises(PySparkException, match="No accessKey is configured"):
        rows.write.format("rocketmq").options(**target).mode("append").save()


def test_a_read_over_tls_checks_the_servers_certificate(
    spark: SparkSession, secured: Cluster, tls_certs: CertFiles
) -> None:
    assert set(STORED) <= set(_bodies(spark, secured, **ACCOUNT, tlsCaFile=str(tls_certs.ca)))
    with pytest.raises(PySparkException, match="CERTIFICATE_VERIFY_FAILED"):
        _bodies(spark, secured, **ACCOUNT, tlsCaFile=str(tls_certs.rogue_ca))
