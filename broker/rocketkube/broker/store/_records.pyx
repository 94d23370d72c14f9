# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Store records, compiled: the API of ``records`` (its docstring says what each function
does), with the same bytes, results and errors.

It reads messages through their attributes and results as the tuples they are, writes
only into the buffers it is given, and takes every rule as data from its caller (topic
bytes, caches, the timed topic) or asks the caller's callbacks; its constants are
imported from the modules that own them. It exists for speed alone: its Python sibling
costs a keyword call, struct packs and slice copies per message. Built by the project's
build hook when Cython and a C compiler are there; ``records.implementation()`` picks it.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongAndOverflow, PyLong_AsLongLongAndOverflow
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.object cimport PyObject
from cpython.unicode cimport (
    PyUnicode_AsUTF8AndSize,
    PyUnicode_CheckExact,
    PyUnicode_DecodeUTF8,
    PyUnicode_FromStringAndSize,
    PyUnicode_GET_LENGTH,
    PyUnicode_READ_CHAR,
)
from libc.string cimport memchr, memcmp, memcpy, memset

from time import perf_counter

from struct import error as _struct_error

from rocketkube.broker.store import consume_queue as _consume_queue
from rocketkube.broker.store import records as _records
from rocketkube.broker.store.model import AppendResult as _AppendResult
from rocketkube.broker.store.model import DispatchHints as _DispatchHints
from rocketkube.broker.store.model import InnerMessage as _InnerMessage
from rocketkube.broker.store.records import PreparedSend as _PreparedSend
from rocketkube.common.message import record as _record
from rocketkube.common.message import sysflag as _sysflag

include "_bigendian.pxi"
include "_tuples.pxi"


cdef extern from "zlib.h" nogil:
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len)


cdef extern from *:
    void __builtin_prefetch(const void *address, int write, int locality) nogil


cdef int _MAGIC = _record.MAGIC
cdef Py_ssize_t _FIXED = _record.record_size(0, 0, 0, 0, 0)  # a record without its parts
cdef Py_ssize_t _MAX_PROPERTIES = _record.MAX_PROPERTIES_SIZE
cdef int _PREPARED = _sysflag.TRANSACTION_PREPARED_TYPE
cdef int _ROLLBACK = _sysflag.TRANSACTION_ROLLBACK_TYPE
cdef int _TX_MASK = _sysflag.TRANSACTION_MASK
cdef int _BORN_V6 = _sysflag.BORNHOST_V6_FLAG
cdef int _STORE_V6 = _sysflag.STOREHOST_V6_FLAG
cdef Py_ssize_t _QUEUE_ENTRY = _consume_queue.ENTRY.size
cdef Py_ssize_t _INDEX_ENTRY = _records.INDEX_ENTRY.size
cdef int _PAGE_SHIFT = _records.INDEX_PAGE_SHIFT
cdef object _APPENDED = named_tuple(_AppendResult)
# An InnerMessage's fields by position (a named tuple: read as the tuple it is)
cdef Py_ssize_t _TOPIC = _InnerMessage._fields.index("topic")
cdef Py_ssize_t _QUEUE_ID = _InnerMessage._fields.index("queue_id")
cdef Py_ssize_t _BODY = _InnerMessage._fields.index("body")
cdef Py_ssize_t _PROPERTIES = _InnerMessage._fields.index("properties")
cdef Py_ssize_t _FLAG = _InnerMessage._fields.index("flag")
cdef Py_ssize_t _SYS_FLAG = _InnerMessage._fields.index("sys_flag")
cdef Py_ssize_t _BORN_TIMESTAMP = _InnerMessage._fields.index("born_timestamp")
cdef Py_ssize_t _BORN_HOST = _InnerMessage._fields.index("born_host")
cdef Py_ssize_t _RECONSUME_TIMES = _InnerMessage._fields.index("reconsume_times")
cdef Py_ssize_t _PREPARED_OFFSET = _InnerMessage._fields.index("prepared_transaction_offset")
cdef Py_ssize_t _HINTS = _InnerMessage._fields.index("hints")

DEF CACHED_QUEUES = 64  # queue ids below this are told apart without a tuple key
DEF INT_MIN = -2147483648
DEF INT_MAX = 2147483647
DEF LONG_MIN = -9223372036854775807 - 1
DEF LONG_MAX = 9223372036854775807


cdef inline long long _int32(long long v) except? -1:
    """A Java int, refused (struct.error, as ``pack_into``) when out of range."""
    if v < INT_MIN or v > INT_MAX:
        raise _struct_error(f"int32 field out of range: {v}")
    return v


cdef inline bint _fits(object value, long long low, long long high):
    """``value`` is an int within ``[low, high]``."""
    cdef int overflow = 0
    cdef long long v
    if type(value) is not int:
        return False
    v = PyLong_AsLongLongAndOverflow(value, &overflow)
    return overflow == 0 and low <= v <= high


cdef inline tuple _fields(object message):
    """An ``InnerMessage``'s fields; of any other message, its attributes in that order."""
    if type(message) is _InnerMessage:
        return <tuple>message
    return tuple([getattr(message, name) for name in _InnerMessage._fields])


cdef inline int _tx(object sys_flag) except? -1:
    """The transaction bits of a sys flag."""
    cdef int overflow = 1
    cdef long flag
    if type(sys_flag) is int:
        flag = PyLong_AsLongAndOverflow(sys_flag, &overflow)
        if not overflow:
            return flag & _TX_MASK
    return sys_flag & _TX_MASK


# -- commit log records -------------------------------------------------------------------


def records_size(messages, dict topics, Py_ssize_t fixed, Py_ssize_t max_body):
    """``records.records_size``."""
    cdef Py_ssize_t total = 0, body_len, props_len
    cdef tuple m
    for message in messages:
        if type(message) is not _InnerMessage:
            return -1
        m = <tuple>message
        if not (_fits(m[_QUEUE_ID], INT_MIN, INT_MAX)
                and _fits(m[_FLAG], INT_MIN, INT_MAX)
                and _fits(m[_SYS_FLAG], INT_MIN, INT_MAX)
                and _fits(m[_RECONSUME_TIMES], INT_MIN, INT_MAX)
                and _fits(m[_BORN_TIMESTAMP], LONG_MIN, LONG_MAX)
                and _fits(m[_PREPARED_OFFSET], LONG_MIN, LONG_MAX)):
            return -1
        topic = topics.get(m[_TOPIC])
        if topic is None:
            return -1
        body_len = len(m[_BODY])
        props_len = len(m[_PROPERTIES])
        if body_len > max_body or props_len > _MAX_PROPERTIES:
            return -1
        total += fixed + len(m[_BORN_HOST]) + body_len + len(<bytes>topic) + props_len
    return total


cdef inline void _hex16(char *out, long long value) noexcept nogil:
    """``value`` as 16 upper-case hex digits (``%016X``)."""
    cdef const char *digits = "0123456789ABCDEF"
    cdef unsigned long long v = <unsigned long long>value
    cdef int i
    for i in range(16):
        out[15 - i] = digits[v & 0xF]
        v >>= 4


cdef void _write_back(dict queue_offsets, object topic, long long *offsets, bint *known) except *:
    """Store the next queue offsets kept for ``topic``'s queues in ``queue_offsets``."""
    cdef Py_ssize_t q
    if topic is None:
        return
    for q in range(CACHED_QUEUES):
        if known[q]:
            queue_offsets[(topic, q)] = offsets[q]
            known[q] = False


cdef Py_ssize_t _encode_one(
    unsigned char *start, Py_ssize_t room, tuple message, bytes topic, long long queue_offset,
    long long phys, const unsigned char *host, Py_ssize_t store_len, long long now,
) except -1:
    """Write one record at ``start`` (``room`` bytes there); its size."""
    cdef Py_buffer body
    cdef unsigned char *p
    cdef Py_ssize_t born_len, topic_len = len(topic), props_len, size
    cdef int sys_flag = _int32(message[_SYS_FLAG])
    born = message[_BORN_HOST]
    props = message[_PROPERTIES]
    born_len = len(born)
    props_len = len(props)
    sys_flag &= ~(_BORN_V6 | _STORE_V6)
    if born_len != 8:
        sys_flag |= _BORN_V6
    if store_len != 8:
        sys_flag |= _STORE_V6
    cdef long long queue_id = _int32(message[_QUEUE_ID])
    cdef long long flag = _int32(message[_FLAG])
    cdef long long reconsume = _int32(message[_RECONSUME_TIMES])
    cdef long long born_ts = message[_BORN_TIMESTAMP]
    cdef long long prepared = message[_PREPARED_OFFSET]
    PyObject_GetBuffer(message[_BODY], &body, PyBUF_SIMPLE)
    try:
        size = _FIXED + born_len + store_len + body.len + topic_len + props_len
        if size > room:
            raise ValueError(f"record of {size} bytes does not fit")
        memset(start, 0, 8)  # TOTALSIZE and MAGICCODE come last
        _put32(start + 8, crc32(0, <const unsigned char *>body.buf, <unsigned int>body.len) & 0x7FFFFFFF)
        _put32(start + 12, queue_id)
        _put32(start + 16, flag)
        _put64(start + 20, queue_offset)
        _put64(start + 28, phys)
        _put32(start + 36, sys_flag)
        _put64(start + 40, born_ts)
        p = start + 48
        memcpy(p, <const unsigned char *>born, born_len)
        p += born_len
        _put64(p, now)
        p += 8
        memcpy(p, host, store_len)
        p += store_len
        _put32(p, reconsume)
        _put64(p + 4, prepared)
        _put32(p + 12, body.len)
        p += 16
        memcpy(p, body.buf, body.len)
        p += body.len
        p[0] = <unsigned char>topic_len
        memcpy(p + 1, PyBytes_AS_STRING(topic), topic_len)
        p += 1 + topic_len
        p[0] = (props_len >> 8) & 0xFF
        p[1] = props_len & 0xFF
        memcpy(p + 2, <const unsigned char *>props, props_len)
        # Last: a process killed above leaves zeros, never a record half written.
        _put32(start, size)
        _put32(start + 4, _MAGIC)
    finally:
        PyBuffer_Release(&body)
    return size


def encode_records(
    messages,
    object buffer,
    Py_ssize_t pos,
    long long base,
    *,
    dict topics,
    dict queue_offsets,
    bytes store_host,
    long long now,
):
    """``records.encode_records``. A run's sends go round one topic's queues: their next
    queue offsets are kept here during the run and written back to ``queue_offsets``."""
    cdef Py_buffer out
    cdef long long queue_offset, phys
    cdef Py_ssize_t size, q
    cdef char msg_id[96]
    cdef bytes host_hex = store_host.hex().upper().encode("ascii")
    cdef Py_ssize_t hex_len = len(host_hex)
    cdef list appended = []
    cdef object cached_topic = None
    cdef long long offsets[CACHED_QUEUES]
    cdef bint known[CACHED_QUEUES]
    cdef list undo = []  # (key, its next offset before the run or None), first touches
    cdef int tx
    cdef tuple m
    memset(known, 0, sizeof(known))
    if hex_len > 40:
        raise ValueError("store host too long")
    memcpy(msg_id, PyBytes_AS_STRING(host_hex), hex_len)
    PyObject_GetBuffer(buffer, &out, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        for message in messages:
            m = _fields(message)
            topic_name = m[_TOPIC]
            queue_id = m[_QUEUE_ID]
            tx = _tx(m[_SYS_FLAG])
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
            phys = base + pos
            size = _encode_one(<unsigned char *>out.buf + pos, out.len - pos, m,
                               topics[topic_name], queue_offset, phys,
                               <const unsigned char *>PyBytes_AS_STRING(store_host),
                               PyBytes_GET_SIZE(store_host), now)
            _hex16(msg_id + hex_len, phys)
            msg = PyUnicode_FromStringAndSize(msg_id, hex_len + 16)
            appended.append(new_named(_APPENDED, (phys, size, queue_offset, msg, now)))
            pos += size
        _write_back(queue_offsets, cached_topic, offsets, known)
    except BaseException:
        # A message that cannot be encoded: the run takes no queue offset.
        for key, before in reversed(undo):
            if before is None:
                queue_offsets.pop(key, None)
            else:
                queue_offsets[key] = before
        raise
    finally:
        PyBuffer_Release(&out)
    return pos, appended


# -- consume queue and index entries ------------------------------------------------------


def queue_keys(messages):
    """``records.queue_keys``. Queue ids below 64 are told apart by a bit mask per topic,
    so a run going round a topic's queues makes no tuple per message."""
    cdef list keys = []
    cdef dict masks = {}
    cdef set others = set()
    cdef object cached_topic = None
    cdef unsigned long long mask = 0, bit
    cdef long qid
    cdef int overflow = 0, tx
    cdef tuple m
    for message in messages:
        m = _fields(message)
        tx = _tx(m[_SYS_FLAG])
        if tx == _PREPARED or tx == _ROLLBACK:
            continue
        topic = m[_TOPIC]
        queue_id = m[_QUEUE_ID]
        qid = -1
        if type(topic) is str and type(queue_id) is int:
            qid = PyLong_AsLongAndOverflow(queue_id, &overflow)
            if overflow:
                qid = -1
        if 0 <= qid < CACHED_QUEUES:
            if topic is not cached_topic and topic != cached_topic:
                if cached_topic is not None:
                    masks[cached_topic] = mask
                cached_topic = topic
                mask = masks.get(topic, 0)
            bit = 1ULL << qid
            if mask & bit:
                continue
            mask |= bit
            keys.append((topic, queue_id))
            continue
        key = (topic, queue_id)
        if key not in others:
            others.add(key)
            keys.append(key)
    return keys


cdef object _utf8(object text, const char **utf8, Py_ssize_t *n):
    """Point ``utf8`` at the UTF-8 of the str ``text`` (as ``text.encode()``), ``n`` bytes
    long: a str's own cached UTF-8 (None returned), else the bytes of ``encode()``, which
    the caller keeps while it reads them."""
    if type(text) is str:
        utf8[0] = PyUnicode_AsUTF8AndSize(text, n)
        return None
    cdef bytes raw = text.encode()
    utf8[0] = PyBytes_AS_STRING(raw)
    n[0] = PyBytes_GET_SIZE(raw)
    return raw


cdef inline object _key_hash(const char *key, unsigned long seed, Py_ssize_t start,
                             Py_ssize_t end):
    return <long long>(crc32(seed, <const unsigned char *>key + start,
                             <unsigned int>(end - start)) & INT_MAX)


cdef void _add_keys(list keyed, object uniq, object keys, unsigned long seed, object phys,
                    object store_ts) except *:
    """The index entries of a message with hints: its UNIQ_KEY, then each KEYS token."""
    cdef const char *text
    cdef const char *space
    cdef Py_ssize_t n, at, stop
    if uniq is not None:
        raw = _utf8(uniq, &text, &n)
        keyed.append((_key_hash(text, seed, 0, n), phys, store_ts))
    if keys is not None:
        raw = _utf8(keys, &text, &n)
        at = 0
        while at <= n:
            space = <const char *>memchr(text + at, 32, n - at)
            stop = n if space == NULL else space - text
            if stop > at:
                keyed.append((_key_hash(text, seed, at, stop), phys, store_ts))
            at = stop + 1


cdef void _add_entry(bytearray entries, long long phys, object size, long long code) except *:
    """Append one consume queue entry (``consume_queue.ENTRY``)."""
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(entries)
    cdef long long length = _int32(size)
    PyByteArray_Resize(entries, n + _QUEUE_ENTRY)
    cdef unsigned char *p = <unsigned char *>PyByteArray_AS_STRING(entries) + n
    _put64(p, phys)
    _put32(p + 8, length)
    _put64(p + 12, code)


def queue_entries(
    messages,
    appended,
    keyed,
    *,
    dict tag_codes,
    dict seeds,
    str timed_topic,
    tags_code,
    index_keys,
):
    """``records.queue_entries``."""
    cdef dict runs = {}
    cdef object cached_topic = None  # the queues of a run's topic by queue id
    cdef list by_queue = None
    cdef long long qid, first
    cdef int tx
    cdef tuple m
    if len(messages) != len(appended):
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    for i in range(len(messages)):
        m = _fields(messages[i])
        result = appended[i]
        if isinstance(result, tuple) and len(<tuple>result) == 5:  # an AppendResult
            phys = (<tuple>result)[0]
            size = (<tuple>result)[1]
            queue_offset = (<tuple>result)[2]
            store_ts = (<tuple>result)[4]
        else:
            phys, size, queue_offset, _msg_id, store_ts = result
        topic = m[_TOPIC]
        queue_id = m[_QUEUE_ID]
        tx = _tx(m[_SYS_FLAG])
        properties = m[_PROPERTIES]
        hints = m[_HINTS]
        tags = keys = uniq = None
        if type(hints) is _DispatchHints:
            tags = (<tuple>hints)[0]
            keys = (<tuple>hints)[1]
            uniq = (<tuple>hints)[2]
        elif hints is not None:
            tags, keys, uniq = hints.tags, hints.keys, hints.uniq_key
        if tx != _PREPARED and tx != _ROLLBACK:
            run = None
            qid = -1
            if type(topic) is str and type(queue_id) is int and 0 <= queue_id < CACHED_QUEUES:
                qid = queue_id
                if cached_topic is not None and (topic is cached_topic or topic == cached_topic):
                    run = by_queue[qid]
                else:
                    cached_topic = topic
                    by_queue = [None] * CACHED_QUEUES
            if run is None:
                key = (topic, queue_id)
                run = runs.get(key)
                if run is None:
                    run = (queue_offset, bytearray(), [])
                    runs[key] = run
                if qid >= 0:
                    by_queue[qid] = run
            first = (<tuple>run)[0]
            codes = (<tuple>run)[2]
            if first + len(<list>codes) != queue_offset:
                raise ValueError(f"{(topic, queue_id)}: queue offset {queue_offset} does not "
                                 "follow the run")
            code = None
            if hints is not None and topic != timed_topic:
                code = 0 if tags is None else tag_codes.get(tags)
            if code is None:
                code = tags_code(topic, properties, store_ts, hints)
            _add_entry((<tuple>run)[1], phys, size, code)
            (<list>codes).append(code)
        if keyed is not None and tx != _ROLLBACK:
            seed = seeds.get(topic) if hints is not None else None
            if seed is None:
                index_keys(topic, properties, phys, store_ts, keyed, hints)
            else:
                _add_keys(keyed, uniq, keys, <unsigned long>seed, phys, store_ts)
    return runs


cdef inline long long _slot_pos(long long key_hash, long long slot_num) noexcept nogil:
    """The byte position of a key's slot in the table (Python's ``%``: never negative)."""
    return ((key_hash % slot_num + slot_num) % slot_num) * 4


def put_index_entries(
    list entries,
    Py_ssize_t start,
    *,
    object slots,
    Py_ssize_t slot_base,
    Py_ssize_t slot_num,
    object file,
    Py_ssize_t entries_at,
    long long count,
    long long limit,
    long long begin_ts,
    object dirty,
):
    """``records.put_index_entries``."""
    cdef Py_buffer table, mapped
    cdef Py_ssize_t at = start, stop = len(entries), i
    cdef long long key_hash, phys, store_ts, head, diff, slot_pos, entry_pos, used = 0
    cdef unsigned char *p
    if at >= stop or count >= limit:
        return at, count, used
    if slot_num <= 0:
        raise ZeroDivisionError("integer modulo by zero")
    PyObject_GetBuffer(slots, &table, PyBUF_WRITABLE)
    try:
        PyObject_GetBuffer(file, &mapped, PyBUF_WRITABLE)
        try:
            # The slot table is tens of MB and keys hash all over it: each slot read is a
            # cache and TLB miss. Asked for together first, the misses overlap instead of
            # each stalling the loop below in turn.
            for i in range(start, stop):
                slot_pos = _slot_pos((<tuple>entries[i])[0], slot_num)
                if slot_base + slot_pos + 4 <= table.len:
                    __builtin_prefetch(<unsigned char *>table.buf + slot_base + slot_pos, 1, 3)
            while at < stop and count < limit:
                key_hash, phys, store_ts = <tuple>entries[at]
                slot_pos = _slot_pos(key_hash, slot_num)
                if slot_base + slot_pos + 4 > table.len:
                    raise _struct_error("slot out of the table")
                head = _get32(<unsigned char *>table.buf + slot_base + slot_pos)
                if head <= 0 or head >= count:
                    head = 0
                    used += 1
                diff = (store_ts - begin_ts) // 1000 if begin_ts > 0 else 0
                diff = 0 if diff < 0 else INT_MAX if diff > INT_MAX else diff
                entry_pos = entries_at + count * _INDEX_ENTRY
                if entry_pos + _INDEX_ENTRY > mapped.len:
                    raise _struct_error("entry out of the file")
                p = <unsigned char *>mapped.buf + entry_pos
                _put32(p, _int32(key_hash))
                _put64(p + 4, phys)
                _put32(p + 12, diff)
                _put32(p + 16, head)
                _put32(<unsigned char *>table.buf + slot_base + slot_pos, _int32(count))
                if dirty is not None:
                    dirty.add(slot_pos >> _PAGE_SHIFT)
                count += 1
                at += 1
        finally:
            PyBuffer_Release(&mapped)
    finally:
        PyBuffer_Release(&table)
    return at, count, used

include "_plain_sends.pxi"
