"""The data source's options, parsed without Spark: defaults, every accepted form, and a
clear error naming the option for each bad one."""

from __future__ import annotations

import pickle

import pytest

from rocketkube.client.admin.settings import AdminSettings
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.common.acl import Credentials
from rocketkube.common.remoting.tls import TlsConfig
from rocketkube.spark import options as opts


def test_defaults_read_everything_stored_now() -> None:
    parsed = opts.parse_read_options({"topic": "Orders"})
    assert parsed == opts.ReadOptions(
        namesrv_addr="127.0.0.1:9876",
        topics=("Orders",),
        starting=opts.Earliest(),
        ending=opts.Latest(),
        tag_expression="*",
        pull_batch_size=32,
        max_messages_per_partition=100_000,
        read_from_slave=False,
    )


def test_names_are_matched_without_case_as_spark_lowercases_them() -> None:
    parsed = opts.parse_read_options(
        {
            "namesrvaddr": "10.0.0.1:9876; 10.0.0.2:9876",
            "TOPIC": "A, B,,C",
            "tagexpression": "TagA || TagB",
            "pullbatchsize": "64",
            "maxMessagesPerPartition": "5",
            "readfromslave": "TRUE",
        }
    )
    assert parsed.namesrv_addr == "10.0.0.1:9876;10.0.0.2:9876"
    assert parsed.topics == ("A", "B", "C")
    assert parsed.tag_expression == "TagA || TagB"
    assert parsed.pull_batch_size == 64
    assert parsed.max_messages_per_partition == 5
    assert parsed.read_from_slave is True


def test_offsets_json_per_topic_broker_and_queue() -> None:
    parsed = opts.parse_read_options(
        {
            "topic": "T,U",
            "startingOffsets": '{"T": {"broker-a": {"0": 42, "1": -2}}, "U": {"b": {"3": 7}}}',
            "endingOffsets": '{"T": {"broker-a": {"0": -1}}}',
        }
    )
    assert parsed.starting == opts.PerQueue(
        {
            opts.QueueKey("T", "broker-a", 0): 42,
            opts.QueueKey("T", "broker-a", 1): opts.EARLIEST,
            opts.QueueKey("U", "b", 3): 7,
        },
        opts.Earliest(),
    )
    assert parsed.ending == opts.PerQueue(
        {opts.QueueKey("T", "broker-a", 0): opts.LATEST}, opts.Latest()
    )


def test_timestamps_win_over_offsets() -> None:
    parsed = opts.parse_read_options(
        {
            "topic": "T",
            "startingOffsets": "earliest",
            "startingTimestamp": "1700000000000",
            "endingTimestamp": "1700000060000",
        }
    )
    assert parsed.starting == opts.AtTimestamp(1_700_000_000_000)
    assert parsed.ending == opts.AtTimestamp(1_700_000_060_000)


def test_streaming_starts_at_the_latest_and_takes_its_own_options() -> None:
    parsed = opts.parse_read_options({"topic": "T"}, streaming=True)
    assert parsed.starting == opts.Latest()
    assert parsed.max_messages_per_trigger is None
    assert parsed.fail_on_data_loss is True
    parsed = opts.parse_read_options(
        {
            "topicPattern": "Orders_.*",
            "startingOffsets": "committed",
            "consumerGroup": " etl ",
            "maxMessagesPerTrigger": "500",
            "failOnDataLoss": "false",
        },
        streaming=True,
    )
    assert parsed.topics == ()
    assert parsed.topic_pattern == "Orders_.*"
    assert parsed.starting == opts.Committed()
    assert parsed.consumer_group == "etl"
    assert parsed.max_messages_per_trigger == 500
    assert parsed.fail_on_data_loss is False
    json_start = opts.parse_read_options(
        {"topic": "T", "startingOffsets": '{"T": {"b": {"0": 3}}}'}, streaming=True
    )
    assert json_start.starting == opts.PerQueue({opts.QueueKey("T", "b", 0): 3}, opts.Latest())


def test_a_pattern_matches_whole_names_and_never_system_topics() -> None:
    parsed = opts.parse_read_options({"topicPattern": "Orders.*|%RETRY%.*|TBW102"})
    assert parsed.reads("Orders")
    assert parsed.reads("Orders_eu")
    assert not parsed.reads("MyOrders")
    assert not parsed.reads("%RETRY%group")
    assert not parsed.reads("TBW102")
    named = opts.parse_read_options({"topic": "A,B"})
    assert named.reads("B")
    assert not named.reads("C")


@pytest.mark.parametrize(
    ("options", "option", "accepted"),
    [
        ({"topic": "T", "endingOffsets": "latest"}, "endingOffsets", "batch reads only"),
        ({"topic": "T", "endingTimestamp": "5"}, "endingTimestamp", "batch reads only"),
        (
            {"topic": "T", "startingOffsets": "now"},
            "startingOffsets",
            "latest, earliest, committed",
        ),
        ({"topic": "T", "maxMessagesPerTrigger": "0"}, "maxMessagesPerTrigger", "from 1"),
    ],
)
def test_a_bad_streaming_option_is_named(
    options: dict[str, str], option: str, accepted: str
) -> None:
    with pytest.raises(opts.OptionError, match=f"rocketmq option {option}: ") as caught:
        opts.parse_read_options(options, streaming=True)
    assert accepted in str(caught.value)


def test_write_options() -> None:
    assert opts.parse_write_options({}) == opts.WriteOptions("127.0.0.1:9876")
    parsed = opts.parse_write_options(
        {"topic": " Out ", "producergroup": "etl", "writeBatchSize": "8"}
    )
    assert parsed == opts.WriteOptions("127.0.0.1:9876", "Out", "etl", 8)


@pytest.mark.parametrize(
    ("options", "option", "accepted"),
    [
        ({}, "topic", "a topic name or a comma-separated list"),
        ({"topic": " , "}, "topic", "a topic name or a comma-separated list"),
        ({"topic": "T", "startingOffsets": "latest"}, "startingOffsets", "earliest, committed or"),
        ({"topic": "T", "startingOffsets": "committed"}, "startingOffsets", "with consumerGroup"),
        ({"topic": "T", "topicPattern": "T.*"}, "topicPattern", "no topic option beside it"),
        ({"topicPattern": "(unclosed"}, "topicPattern", "a Python regular expression"),
        (
            {"topicPattern": "A.*", "endingOffsets": '{"B": {"b": {"0": 1}}}'},
            "endingOffsets",
            "(A.*)",
        ),
        ({"topic": "T", "consumerGroup": " "}, "consumerGroup", "a consumer group name"),
        ({"topic": "T", "failOnDataLoss": "no"}, "failOnDataLoss", "true or false"),
        ({"topic": "T", "maxMessagesPerTrigger": "9"}, "maxMessagesPerTrigger", "streaming reads"),
        ({"topic": "T", "endingOffsets": "earliest"}, "endingOffsets", "latest or JSON"),
        ({"topic": "T", "startingOffsets": "{not json"}, "startingOffsets", "JSON per topic"),
        ({"topic": "T", "startingOffsets": '{"T": {"b": {"x": 1}}}'}, "startingOffsets", "JSON"),
        ({"topic": "T", "startingOffsets": '{"T": {"b": {"0": -3}}}'}, "startingOffsets", "JSON"),
        ({"topic": "T", "startingOffsets": '{"T": {"b": {"0": 1.5}}}'}, "startingOffsets", "JSON"),
        ({"topic": "T", "startingOffsets": '{"T": {"b": [1]}}'}, "startingOffsets", "JSON"),
        ({"topic": "T", "endingOffsets": '{"X": {"b": {"0": 1}}}'}, "endingOffsets", "(T) only"),
        ({"topic": "T", "startingTimestamp": "yesterday"}, "startingTimestamp", "epoch millis"),
        ({"topic": "T", "endingTimestamp": "-5"}, "endingTimestamp", "epoch milliseconds"),
        ({"topic": "T", "pullBatchSize": "0"}, "pullBatchSize", "from 1 up to 1024"),
        ({"topic": "T", "pullBatchSize": "2000"}, "pullBatchSize", "from 1 up to 1024"),
        ({"topic": "T", "maxMessagesPerPartition": "many"}, "maxMessagesPerPartition", "from 1"),
        ({"topic": "T", "readFromSlave": "yes"}, "readFromSlave", "true or false"),
        ({"topic": "T", "namesrvAddr": "localhost"}, "namesrvAddr", "host:port"),
        ({"topic": "T", "namesrvAddr": "h:99999"}, "namesrvAddr", "host:port"),
        ({"topic": "T", "startingOffset": "earliest"}, "startingOffset", "known: namesrvAddr"),
    ],
)
def test_a_bad_read_option_is_named_with_what_it_accepts(
    options: dict[str, str], option: str, accepted: str
) -> None:
    with pytest.raises(opts.OptionError, match=f"rocketmq option {option}: ") as caught:
        opts.parse_read_options(options)
    assert accepted in str(caught.value)
    assert caught.value.option == option


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"topic": "A,B"}, "topic"),
        ({"topic": "  "}, "topic"),
        ({"producerGroup": ""}, "producerGroup"),
        ({"writeBatchSize": "0"}, "writeBatchSize"),
        ({"startingOffsets": "earliest"}, "startingOffsets"),
    ],
)
def test_a_bad_write_option_is_named(options: dict[str, str], option: str) -> None:
    with pytest.raises(opts.OptionError, match=f"rocketmq option {option}: "):
        opts.parse_write_options(options)


def test_an_account_and_tls_reach_every_client_and_the_secret_is_never_shown() -> None:
    given = {"topic": "T", "accessKey": "app", "secretKey": "s3cr3t", "tlsCaFile": "/ca.pem"}
    parsed = opts.parse_read_options(given)
    settings = parsed.admin_settings()
    assert (settings.credentials, settings.tls) == (
        Credentials("app", "s3cr3t"),
        TlsConfig(ca_file="/ca.pem"),
    )
    assert "s3cr3t" not in repr(parsed)
    assert "s3cr3t" not in repr(pickle.loads(pickle.dumps(parsed)))
    written = opts.parse_write_options({**given, "tls": "true", "tlsCheckHostname": "false"})
    assert written.security.tls == TlsConfig(ca_file="/ca.pem", check_hostname=False)
    assert "s3cr3t" not in repr(written)
    assert opts.parse_read_options({"topic": "T", "tls": "true"}).security.tls == TlsConfig()
    plain = opts.parse_read_options({"topic": "T", "tls": "false"}).admin_settings()
    assert (plain.credentials, plain.tls) == (None, None)


def test_the_options_build_the_sdk_settings_of_every_client() -> None:
    given = {
        "namesrvAddr": "10.0.0.1:9876; 10.0.0.2:9876",
        "topic": "T",
        "accessKey": "app",
        "secretKey": "s3cr3t",
        "tlsCaFile": "/ca.pem",
        "tlsCheckHostname": "false",
    }
    tls = TlsConfig(ca_file="/ca.pem", check_hostname=False)
    credentials = Credentials("app", "s3cr3t")
    read = opts.parse_read_options({**given, "consumerGroup": "lag-dashboard"})
    assert read.admin_settings() == AdminSettings(
        namesrv_addr="10.0.0.1:9876;10.0.0.2:9876", tls=tls, credentials=credentials
    )
    assert read.admin_settings().timeout == AdminSettings.timeout == 5.0
    written = opts.parse_write_options({**given, "producerGroup": "etl"})
    assert written.producer_settings() == ProducerSettings(
        group="etl", namesrv_addr="10.0.0.1:9876;10.0.0.2:9876", tls=tls, credentials=credentials
    )
    assert written.producer_settings().send_timeout == ProducerSettings.send_timeout == 3.0
    assert "s3cr3t" not in repr(written.producer_settings().credentials)

    plain = opts.parse_write_options({})
    assert plain.producer_settings() == ProducerSettings(
        group=opts.DEFAULT_PRODUCER_GROUP, namesrv_addr=opts.DEFAULT_NAMESRV
    )
    assert opts.parse_read_options({"topic": "T"}).admin_settings() == AdminSettings(
        namesrv_addr=opts.DEFAULT_NAMESRV
    )


@pytest.mark.parametrize(
    ("options", "option", "accepted"),
    [
        ({"accessKey": "app"}, "secretKey", "beside accessKey"),
        ({"secretKey": "s3cr3t"}, "accessKey", "beside secretKey"),
        ({"tls": "false", "tlsCaFile": "/ca.pem"}, "tls", "true"),
        ({"tls": "yes"}, "tls", "true or false"),
        ({"tlsKeyFile": "/key.pem"}, "tlsKeyFile", "beside tlsCertFile"),
    ],
)
def test_a_bad_account_or_tls_option_is_named_without_the_secret(
    options: dict[str, str], option: str, accepted: str
) -> None:
    with pytest.raises(opts.OptionError, match=accepted) as raised:
        opts.parse_read_options({"topic": "T", **options})
    assert raised.value.option == option
    assert "s3cr3t" not in str(raised.value)
