"""Message and pull sysFlag bits, and the public surface of the message package."""

from __future__ import annotations

import pytest

from rocketkube.common import message
from rocketkube.common.message import sysflag


def test_message_bits_have_java_values() -> None:
    assert sysflag.COMPRESSED_FLAG == 0x1
    assert sysflag.MULTI_TAGS_FLAG == 0x2
    assert sysflag.BORNHOST_V6_FLAG == 0x10
    assert sysflag.STOREHOST_V6_FLAG == 0x20
    assert sysflag.NEED_UNWRAP_FLAG == 0x40
    assert sysflag.INNER_BATCH_FLAG == 0x80
    assert (sysflag.COMPRESSION_LZ4, sysflag.COMPRESSION_ZSTD, sysflag.COMPRESSION_ZLIB) == (
        0x100,
        0x200,
        0x300,
    )


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        (0x0, sysflag.TransactionType.NOT_TYPE),
        (0x4, sysflag.TransactionType.PREPARED),
        (0x8, sysflag.TransactionType.COMMIT),
        (0xC, sysflag.TransactionType.ROLLBACK),
        (0x4 | 0x1 | 0x10 | 0x300, sysflag.TransactionType.PREPARED),
        (0xFFFF_FFF3, sysflag.TransactionType.NOT_TYPE),
    ],
)
def test_transaction_type(flag: int, expected: sysflag.TransactionType) -> None:
    assert sysflag.transaction_type(flag) is expected


def test_transaction_type_values_match_end_transaction_codes() -> None:
    assert int(sysflag.TransactionType.COMMIT) == 8
    assert int(sysflag.TransactionType.ROLLBACK) == 12


def test_with_transaction_type_keeps_other_bits() -> None:
    flag = sysflag.COMPRESSED_FLAG | sysflag.TRANSACTION_PREPARED_TYPE | sysflag.BORNHOST_V6_FLAG
    assert sysflag.with_transaction_type(flag, sysflag.TRANSACTION_COMMIT_TYPE) == 0x1 | 0x8 | 0x10
    assert sysflag.with_transaction_type(flag, sysflag.TRANSACTION_NOT_TYPE) == 0x1 | 0x10


def test_message_flag_helpers() -> None:
    assert sysflag.is_compressed(0x301)
    assert not sysflag.is_compressed(0x300)
    assert sysflag.compression_type(0x1) == sysflag.COMPRESSION_ZLIB  # 0 means zlib
    assert sysflag.compression_type(0x201) == sysflag.COMPRESSION_ZSTD
    assert sysflag.is_born_host_v6(0x10)
    assert not sysflag.is_born_host_v6(0x20)
    assert sysflag.is_store_host_v6(0x20)
    assert not sysflag.is_store_host_v6(0x10)


def test_pull_bits_have_java_values() -> None:
    assert (
        sysflag.FLAG_COMMIT_OFFSET,
        sysflag.FLAG_SUSPEND,
        sysflag.FLAG_SUBSCRIPTION,
        sysflag.FLAG_CLASS_FILTER,
        sysflag.FLAG_LITE_PULL_MESSAGE,
    ) == (1, 2, 4, 8, 16)


def test_build_and_read_pull_flags() -> None:
    assert sysflag.build_pull_sys_flag() == 0
    flag = sysflag.build_pull_sys_flag(commit_offset=True, suspend=True, subscription=True)
    assert flag == 7
    assert sysflag.build_pull_sys_flag(class_filter=True, lite_pull=True) == 24
    assert sysflag.has_commit_offset(flag)
    assert sysflag.has_suspend(flag)
    assert sysflag.has_subscription(flag)
    assert not sysflag.has_class_filter(flag)
    assert sysflag.has_class_filter(8)
    assert sysflag.clear_commit_offset_flag(flag) == 6
    assert sysflag.clear_commit_offset_flag(6) == 6


def test_message_package_exports_exactly_its_all() -> None:
    exported = {name for name in dir(message) if not name.startswith("_")}
    modules = {"batch", "hashing", "ids", "model", "properties", "sysflag", "record", "annotations"}
    assert set(message.__all__) <= exported
    assert exported - set(message.__all__) - modules == set()
    assert message.__all__ == sorted(message.__all__)
