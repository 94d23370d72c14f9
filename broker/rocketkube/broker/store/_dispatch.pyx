# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The dispatcher's loop over a just-appended run, compiled: :func:`dispatch_run` does
what ``Dispatcher.dispatch_run`` does (consume queue entries, index keys collected,
queues that grew), with the same results; and :func:`unready` what
``Dispatcher.unready`` does (the queues not ready for a run about to be appended).

A message with dispatch hints on an ordinary topic, its tags code and its topic's index
seed already cached, is handled here, and so is a consume queue entry that goes right
after the last one in its file's allocated room; for any other the Python methods are called
(``tags_code``, ``_index_keys``, ``ConsumeQueue.put``), so their rules stay in one place.
``tests/broker/store/test_dispatch_kernel.py`` holds the two to the same files.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongAndOverflow
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_GET_LENGTH
from libc.string cimport memchr


cdef extern from "zlib.h" nogil:
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len)


cdef int _PREPARED = 0x4
cdef int _ROLLBACK = 0xC
cdef int _TX_MASK = 0xC
cdef long long _INT_MAX = 0x7FFFFFFF
_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
cdef Py_ssize_t _SCHEDULE_LENGTH = len(_SCHEDULE_TOPIC)


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


cdef inline bint _is_schedule(object topic) except -1:
    """``topic == SCHEDULE_TOPIC``, the length of a str compared first."""
    if type(topic) is str and PyUnicode_GET_LENGTH(topic) != _SCHEDULE_LENGTH:
        return False
    return topic == _SCHEDULE_TOPIC


cdef inline object _key_hash(const char *key, unsigned long seed, Py_ssize_t start,
                             Py_ssize_t end):
    return <long long>(crc32(seed, <const unsigned char *>key + start,
                             <unsigned int>(end - start)) & _INT_MAX)


cdef bint _put_entry(object queue, long long queue_offset, long long phys, long long size,
                     long long code) except -1:
    """``ConsumeQueue.put``'s common case, an entry right after the last one in the last
    file's allocated room: written here. False for any other, which ``put`` itself
    decides."""
    cdef Py_buffer buf
    cdef unsigned char *p
    cdef long long wrote, start, room
    if type(queue) is not _QUEUE.cls:
        return False
    files = _QUEUE.get(queue, 0)
    if type(files) is not _FILES.cls:
        return False
    files = _FILES.get(files, 0)
    if type(files) is not list or not files:
        return False
    last = (<list>files)[len(<list>files) - 1]
    if type(last) is not _FILE.cls:
        return False
    wrote = _FILE.get(last, 0)
    start = _FILE.get(last, 1)
    room = _FILE.get(last, 2)  # allocated: no write past it (a full disk would SIGBUS)
    if queue_offset * 20 != start + wrote or wrote >= room:
        return False
    if not -2147483648 <= size <= 2147483647:
        return False  # put raises as struct does
    PyObject_GetBuffer(_FILE.get(last, 3), &buf, PyBUF_WRITABLE)
    try:
        if wrote + 20 > buf.len:
            return False
        p = <unsigned char *>buf.buf + wrote
        _put64(p, phys)
        _put32(p + 8, size)
        _put64(p + 12, code)
    finally:
        PyBuffer_Release(&buf)
    _FILE.set(last, 0, wrote + 20)
    return True


from rocketkube.broker.store.consume_queue import ConsumeQueue as _ConsumeQueue
from rocketkube.broker.store.mapped_file import MappedFile as _MappedFile
from rocketkube.broker.store.mapped_file import MappedFileQueue as _MappedFileQueue
from rocketkube.broker.store.model import DispatchHints as _DispatchHints
from rocketkube.broker.store.model import InnerMessage as _InnerMessage

include "_bigendian.pxi"
include "_slotted.pxi"

cdef Slotted _MESSAGE = Slotted(
    _InnerMessage, ("topic", "queue_id", "sys_flag", "properties", "hints")
)
cdef Slotted _QUEUE = Slotted(_ConsumeQueue, ("files",))
cdef Slotted _FILES = Slotted(_MappedFileQueue, ("files",))
cdef Slotted _FILE = Slotted(_MappedFile, ("wrote", "start", "allocated", "mm"))

DEF CACHED_QUEUES = 64


cdef bint _ready(object queue, long long queue_offset, long long count) except -1:
    """``ConsumeQueue.ready``: the entries go right after the last one into the last
    file's allocated room."""
    cdef long long wrote, start, allocated
    if type(queue) is not _QUEUE.cls:
        return queue.ready(queue_offset, count)
    files = _QUEUE.get(queue, 0)
    if type(files) is not _FILES.cls:
        return queue.ready(queue_offset, count)
    files = _FILES.get(files, 0)
    if type(files) is not list:
        return queue.ready(queue_offset, count)
    if not files:
        return False
    last = (<list>files)[len(<list>files) - 1]
    if type(last) is not _FILE.cls:
        return queue.ready(queue_offset, count)
    wrote = _FILE.get(last, 0)
    start = _FILE.get(last, 1)
    allocated = _FILE.get(last, 2)
    return queue_offset * 20 == start + wrote and wrote + count * 20 <= allocated


def unready(messages, dict queues, dict queue_offsets):
    """``Dispatcher.unready``, compiled: the queues the messages get an entry in that are
    not ready for ``len(messages)`` entries, once each, in order of first appearance.
    Queue ids below 64 are told apart by a bit mask per topic, so a run going round a
    topic's queues looks each queue up once, with no tuple made per message."""
    cdef list keys = []
    cdef dict masks = {}
    cdef set others = set()
    cdef object cached_topic = None
    cdef unsigned long long mask = 0, bit
    cdef long tx, qid
    cdef int overflow
    for message in messages:
        if type(message) is _MESSAGE.cls:
            topic = _MESSAGE.get(message, 0)
            queue_id = _MESSAGE.get(message, 1)
            sys_flag = _MESSAGE.get(message, 2)
        else:
            topic, queue_id, sys_flag = message.topic, message.queue_id, message.sys_flag
        overflow = 1
        if type(sys_flag) is int:  # the common case in C, the rest as Python does it
            tx = PyLong_AsLongAndOverflow(sys_flag, &overflow) & _TX_MASK
        if overflow:
            tx = sys_flag & _TX_MASK
        if tx == _PREPARED or tx == _ROLLBACK:
            continue
        qid = -1
        if type(topic) is str and type(queue_id) is int:
            qid = PyLong_AsLongAndOverflow(queue_id, &overflow)
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
    cdef long long count = len(messages)
    cdef list out = []
    for key in keys:
        queue = queues.get(key)
        if queue is None or not _ready(queue, queue_offsets.get(key, 0), count):
            out.append(key)
    return out


def dispatch_run(object dispatcher, messages, results, object keyed, dict arrived):
    """Dispatch ``messages`` (appended as ``results``) for ``dispatcher``: consume queue
    entries now, index entries appended to ``keyed`` (None: no index), each queue that
    grew in ``arrived`` with its tags codes."""
    queues = dispatcher._queues
    cdef dict tag_codes = dispatcher._tags
    cdef dict seeds = dispatcher._seeds
    tags_code = dispatcher.tags_code
    index_keys = dispatcher._index_keys
    cdef object last_key = None
    cdef object queue = None
    cdef list codes = None
    # The arrived entries of the current topic's queues by queue id: sends of a run go
    # round the queues of one topic, each changing the key.
    cdef object cached_topic = None
    cdef list by_queue = None
    cdef long qid
    cdef int tx
    cdef object raw = None
    cdef const char *text
    cdef const char *space
    cdef Py_ssize_t n, at, stop
    cdef unsigned long seed
    if len(messages) != len(results):
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    for i in range(len(messages)):
        message = messages[i]
        result = results[i]
        if type(message) is _MESSAGE.cls:
            topic = _MESSAGE.get(message, 0)
            queue_id = _MESSAGE.get(message, 1)
            tx = _MESSAGE.get(message, 2) & _TX_MASK
            properties = _MESSAGE.get(message, 3)
            hints = _MESSAGE.get(message, 4)
        else:
            topic, queue_id, tx = message.topic, message.queue_id, message.sys_flag & _TX_MASK
            properties, hints = message.properties, message.hints
        if isinstance(result, tuple):  # AppendResult, a named tuple
            phys, size, queue_offset, _, store_ts = <tuple>result
        else:
            phys, size, queue_offset = result.physical_offset, result.size, result.queue_offset
            store_ts = result.store_timestamp
        if type(hints) is not _DispatchHints:
            tags = keys = uniq = None
            if hints is not None:
                tags, keys, uniq = hints.tags, hints.keys, hints.uniq_key
        else:
            tags = (<tuple>hints)[0]
            keys = (<tuple>hints)[1]
            uniq = (<tuple>hints)[2]
        if tx != _PREPARED and tx != _ROLLBACK:
            found = None
            qid = -1
            if type(topic) is str and type(queue_id) is int and 0 <= queue_id < CACHED_QUEUES:
                qid = queue_id
                if cached_topic is not None and (topic is cached_topic or topic == cached_topic):
                    found = by_queue[qid]
                else:
                    cached_topic = topic
                    by_queue = [None] * CACHED_QUEUES
                    last_key = None
            if found is not None:
                queue, codes = <tuple>found
                last_key = None  # queue and codes are no longer last_key's
            else:
                key = (topic, queue_id)
                if key != last_key:
                    found = arrived.get(key)
                    if found is None:
                        queue = queues.find_or_create(topic, queue_id)
                        codes = []
                        found = (queue, codes)
                        arrived[key] = found
                    else:
                        queue, codes = found
                    last_key = key
                    if qid >= 0:
                        by_queue[qid] = found
            code = None
            if hints is not None and not _is_schedule(topic):
                code = 0 if tags is None else tag_codes.get(tags)
            if code is None:
                code = tags_code(topic, properties, store_ts, hints)
            if not _put_entry(queue, queue_offset, phys, size, code):
                queue.put(queue_offset, phys, size, code)
            codes.append(code)
        if keyed is not None and tx != _ROLLBACK:
            cached = seeds.get(topic) if hints is not None else None
            if cached is None:
                index_keys(topic, properties, phys, store_ts, keyed, hints)
                continue
            seed = <unsigned long>cached
            if uniq is not None:
                raw = _utf8(uniq, &text, &n)
                (<list>keyed).append((_key_hash(text, seed, 0, n), phys, store_ts))
            if keys is not None:
                raw = _utf8(keys, &text, &n)
                at = 0
                while at <= n:
                    space = <const char *>memchr(text + at, 32, n - at)
                    stop = n if space == NULL else space - text
                    if stop > at:
                        (<list>keyed).append((_key_hash(text, seed, at, stop), phys, store_ts))
                    at = stop + 1
