# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The commit log's append loop, compiled: :func:`encode_run` writes a run of messages as
records, byte for byte what :meth:`CommitLog.append`'s Python loop writes through
``record.encode_into`` (the layout is drawn in ``rocketkube.common.message.record``).

It exists for speed alone: the Python loop costs a keyword call, a struct pack, two slice
copies and a named tuple per message. ``tests/broker/store/test_append_kernel.py`` holds
the two to the same bytes and results. Built by the project's build hook when Cython and a
C compiler are there; without it the store runs the Python loop.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_FromStringAndSize
from libc.string cimport memcpy, memset

from struct import error as _struct_error


cdef extern from "zlib.h" nogil:
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len)


cdef int _MAGIC = -626843481  # 0xDAA320A7 as a Java int
cdef int _PREPARED = 0x4
cdef int _ROLLBACK = 0xC
cdef int _TX_MASK = 0xC
cdef int _BORN_V6 = 0x10
cdef int _STORE_V6 = 0x20


cdef inline void _hex16(char *out, long long value) noexcept nogil:
    """``value`` as 16 upper-case hex digits (``%016llX``)."""
    cdef const char *digits = "0123456789ABCDEF"
    cdef unsigned long long v = <unsigned long long>value
    cdef int i
    for i in range(16):
        out[15 - i] = digits[v & 0xF]
        v >>= 4


cdef inline long long _int32(object value) except? -1:
    """A Java int, refused (struct.error, as ``pack_into``) when out of range."""
    cdef long long v = value
    if v < -2147483648 or v > 2147483647:
        raise _struct_error(f"int32 field out of range: {v}")
    return v


from rocketkube.broker.store.model import InnerMessage as _InnerMessage

include "_bigendian.pxi"
include "_slotted.pxi"

cdef Slotted _MESSAGE = Slotted(_InnerMessage, (
    "topic", "queue_id", "body", "properties", "flag", "sys_flag", "born_timestamp",
    "born_host", "reconsume_times", "prepared_transaction_offset",
))


cdef tuple _fields(object message):
    """The fields a record takes, in ``_MESSAGE``'s order, of a message that is not an
    ``InnerMessage`` (whose slots are read directly)."""
    return (message.topic, message.queue_id, message.body, message.properties, message.flag,
            message.sys_flag, message.born_timestamp, message.born_host,
            message.reconsume_times, message.prepared_transaction_offset)


DEF CACHED_QUEUES = 64


cdef void _write_back(dict queue_offsets, object topic, long long *offsets, bint *known) except *:
    """Store the next queue offsets kept for ``topic``'s queues in ``queue_offsets``."""
    cdef Py_ssize_t q
    if topic is None:
        return
    for q in range(CACHED_QUEUES):
        if known[q]:
            queue_offsets[(topic, q)] = offsets[q]
            known[q] = False


def encode_run(
    object mm,
    Py_ssize_t pos,
    long long base,
    object messages,
    dict topics,
    dict queue_offsets,
    bytes store_host,
    str host_hex,
    long long now,
    object result_type,
):
    """Write ``messages`` as records into ``mm`` from ``pos`` (the segment's byte
    ``base + pos``); return ``(end position, [result_type(...) per message])``.

    As the Python loop: ``topics`` maps each topic to its UTF-8 (the caller validated
    sizes and room), ``queue_offsets`` gives and advances each ``(topic, queueId)``'s next
    queue offset (PREPARED and ROLLBACK parts get 0 and do not advance it)."""
    cdef Py_buffer out, body
    cdef unsigned char *p
    cdef unsigned char *start
    cdef const unsigned char *host = store_host
    cdef Py_ssize_t store_len = len(store_host)
    cdef Py_ssize_t born_len, body_len, topic_len, props_len, size
    cdef long long queue_offset, phys
    cdef int sys_flag, tx
    cdef bytes topic
    cdef char msg_id[96]
    cdef Py_ssize_t hex_len = len(host_hex)
    cdef bytes hex_ascii = host_hex.encode("ascii")
    cdef list appended = []
    # The next queue offsets of one topic's queues, kept here during the run (a run's
    # sends go round one topic's queues) and written back to ``queue_offsets``.
    cdef object cached_topic = None
    cdef long long offsets[CACHED_QUEUES]
    cdef bint known[CACHED_QUEUES]
    cdef Py_ssize_t q
    cdef list undo = []  # (key, its next offset before the run or None), first touches
    memset(known, 0, sizeof(known))
    if hex_len > 40:
        raise ValueError("store host too long")
    memcpy(msg_id, <const char *>hex_ascii, hex_len)
    PyObject_GetBuffer(mm, &out, PyBUF_SIMPLE | 0x0001)  # PyBUF_WRITABLE
    try:
        for message in messages:
            if type(message) is _MESSAGE.cls:  # its slots read directly, no tuple between
                topic_name = _MESSAGE.get(message, 0)
                queue_id = _MESSAGE.get(message, 1)
                body_object = _MESSAGE.get(message, 2)
                props = _MESSAGE.get(message, 3)
                flag = _MESSAGE.get(message, 4)
                sys_flag_object = _MESSAGE.get(message, 5)
                born_timestamp = _MESSAGE.get(message, 6)
                born = _MESSAGE.get(message, 7)
                reconsume_times = _MESSAGE.get(message, 8)
                prepared_offset = _MESSAGE.get(message, 9)
            else:
                (topic_name, queue_id, body_object, props, flag, sys_flag_object,
                 born_timestamp, born, reconsume_times, prepared_offset) = _fields(message)
            sys_flag = _int32(sys_flag_object)
            tx = sys_flag & _TX_MASK
            if tx == _PREPARED or tx == _ROLLBACK:
                queue_offset = 0
            elif type(topic_name) is str and type(queue_id) is int and 0 <= queue_id < CACHED_QUEUES:
                if cached_topic is None or (topic_name is not cached_topic
                                            and topic_name != cached_topic):
                    _write_back(queue_offsets, cached_topic, offsets, known)
                    cached_topic = topic_name
                    memset(known, 0, sizeof(known))
                q = queue_id
                if not known[q]:
                    key = (topic_name, queue_id)
                    before = queue_offsets.get(key)
                    undo.append((key, before))
                    offsets[q] = 0 if before is None else before
                    known[q] = True
                    queue_offsets[key] = offsets[q]  # a new key goes in where it would
                queue_offset = offsets[q]
                offsets[q] += 1
            else:
                _write_back(queue_offsets, cached_topic, offsets, known)
                cached_topic = None
                key = (topic_name, queue_id)
                before = queue_offsets.get(key)
                undo.append((key, before))
                queue_offset = 0 if before is None else before
                queue_offsets[key] = queue_offset + 1
            topic = topics[topic_name]
            born_len = len(born)
            topic_len = len(topic)
            props_len = len(props)
            sys_flag &= ~(_BORN_V6 | _STORE_V6)
            if born_len != 8:
                sys_flag |= _BORN_V6
            if store_len != 8:
                sys_flag |= _STORE_V6
            PyObject_GetBuffer(body_object, &body, PyBUF_SIMPLE)
            try:
                body_len = body.len
                size = 75 + born_len + store_len + body_len + topic_len + props_len
                if pos + size > out.len:
                    raise ValueError(f"record of {size} bytes does not fit at {pos}")
                phys = base + pos
                start = <unsigned char *>out.buf + pos
                memset(start, 0, 8)  # TOTALSIZE and MAGICCODE come last
                _put32(start + 8, crc32(0, <const unsigned char *>body.buf, <unsigned int>body_len) & 0x7FFFFFFF)
                _put32(start + 12, _int32(queue_id))
                _put32(start + 16, _int32(flag))
                _put64(start + 20, queue_offset)
                _put64(start + 28, phys)
                _put32(start + 36, sys_flag)
                _put64(start + 40, born_timestamp)
                p = start + 48
                memcpy(p, <const unsigned char *>born, born_len)
                p += born_len
                _put64(p, now)
                p += 8
                memcpy(p, host, store_len)
                p += store_len
                _put32(p, _int32(reconsume_times))
                _put64(p + 4, prepared_offset)
                _put32(p + 12, body_len)
                p += 16
                memcpy(p, body.buf, body_len)
                p += body_len
                p[0] = <unsigned char>topic_len
                memcpy(p + 1, <const unsigned char *>topic, topic_len)
                p += 1 + topic_len
                p[0] = (props_len >> 8) & 0xFF
                p[1] = props_len & 0xFF
                memcpy(p + 2, <const unsigned char *>props, props_len)
                # Last: a process killed above leaves zeros at ``pos``, never a record
                # whose unchecked parts are half written.
                _put32(start, size)
                _put32(start + 4, _MAGIC)
            finally:
                PyBuffer_Release(&body)
            _hex16(msg_id + hex_len, phys)
            result = new_tuple(result_type, 5)
            set_item(result, 0, phys)
            set_item(result, 1, size)
            set_item(result, 2, queue_offset)
            set_item(result, 3, PyUnicode_FromStringAndSize(msg_id, hex_len + 16))
            set_item(result, 4, now)
            appended.append(result)
            pos += size
        _write_back(queue_offsets, cached_topic, offsets, known)
    except BaseException:
        # A message that cannot be encoded: the run takes no queue offset (see the Python
        # loop); the records written before it are the caller's to discard.
        for key, before in reversed(undo):
            if before is None:
                queue_offsets.pop(key, None)
            else:
                queue_offsets[key] = before
        raise
    finally:
        PyBuffer_Release(&out)
    return pos, appended



cdef inline bint _fits(object value, long long low, long long high):
    """``value`` is an int within ``[low, high]``."""
    cdef int overflow = 0
    cdef long long v
    if type(value) is not int:
        return False
    v = PyLong_AsLongLongAndOverflow(value, &overflow)
    return overflow == 0 and low <= v <= high


DEF INT_MIN = -2147483648
DEF INT_MAX = 2147483647
DEF LONG_MIN = -9223372036854775807 - 1
DEF LONG_MAX = 9223372036854775807


def records_size(messages, dict topics, Py_ssize_t fixed, Py_ssize_t max_body):
    """The total size of ``messages``' records when each is storable as ``_validate``
    checks (its topic's UTF-8 already in ``topics``, the body and the properties within
    their limits, its integers within their record fields); -1 for anything else, which
    ``CommitLog._validate`` then decides."""
    cdef Py_ssize_t total = 0, body_len, props_len
    for message in messages:
        if type(message) is not _MESSAGE.cls:
            return -1
        if not (_fits(_MESSAGE.get(message, 1), INT_MIN, INT_MAX)
                and _fits(_MESSAGE.get(message, 4), INT_MIN, INT_MAX)
                and _fits(_MESSAGE.get(message, 5), INT_MIN, INT_MAX)
                and _fits(_MESSAGE.get(message, 8), INT_MIN, INT_MAX)
                and _fits(_MESSAGE.get(message, 6), LONG_MIN, LONG_MAX)
                and _fits(_MESSAGE.get(message, 9), LONG_MIN, LONG_MAX)):
            return -1
        topic = topics.get(_MESSAGE.get(message, 0))
        if topic is None:
            return -1
        body_len = len(_MESSAGE.get(message, 2))
        props_len = len(_MESSAGE.get(message, 3))
        if body_len > max_body or props_len > 32767:
            return -1
        total += fixed + len(_MESSAGE.get(message, 7)) + body_len + len(<bytes>topic) + props_len
    return total
