# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A plain send's checks and store message, compiled: :func:`prepare_plain` returns the
``Ready`` that ``SendProcessor._prepare`` would build for the same request, or None when
the request is not plain, and then ``_prepare`` itself serves it.

Plain: every integer field a plain decimal (``-?[0-9]{1,18}``), its topic's checks cached
(``TopicState`` of the current config), the queue given and below the topic's limit, the
topic writable and not a ``%RETRY%`` topic, not a batch, and properties without
``DELAY``, ``TRAN_MSG``, ``CLUSTER`` or a repeated name. That is what producers send
nearly always; everything else (errors included) is decided by the Python code, so this
never answers differently. ``tests/broker/test_prepare_kernel.py`` holds the two to the
same result. Built by the project's build hook; without it, ``_prepare`` serves all.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.string cimport memcmp, memcpy

from time import perf_counter

from rocketkube.broker.store import InnerMessage as _InnerMessage

include "_slotted.pxi"

cdef Slotted _MESSAGE = Slotted(_InnerMessage, (
    "topic", "queue_id", "body", "properties", "flag", "sys_flag", "born_timestamp",
    "born_host", "reconsume_times", "prepared_transaction_offset", "hints",
))

# Wire names in field order a..m (V2 short keys, V1 long names).
_V2_KEYS = tuple("abcdefghijklm")
_V1_KEYS = (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
    "batch",
)

DEF MAX_ENTRIES = 64
cdef int _MULTI_TAGS = 0x2


cdef bint _plain_int(object text, long long *out):
    """``text`` is a str of ``-?[0-9]{1,18}``: its value in ``out``."""
    cdef Py_ssize_t n, i = 0
    cdef const char *s
    cdef long long v = 0
    cdef bint negative = False
    if type(text) is not str:
        return False
    s = PyUnicode_AsUTF8AndSize(text, &n)
    if n > 0 and s[0] == c'-':
        negative = True
        i = 1
    if n - i < 1 or n - i > 18:
        return False
    while i < n:
        if s[i] < c'0' or s[i] > c'9':
            return False
        v = v * 10 + (s[i] - c'0')
        i += 1
    out[0] = -v if negative else v
    return True


cdef inline bint _is(const char *name, Py_ssize_t length, const char *word, Py_ssize_t size) noexcept:
    return length == size and memcmp(name, word, size) == 0


cdef bint _true(const char *value, Py_ssize_t length) noexcept:
    """``value.lower() == "true"`` (no non-ASCII letter lowers to these)."""
    cdef Py_ssize_t i
    cdef const char *word = "true"
    if length != 4:
        return False
    for i in range(4):
        if (value[i] | 0x20) != word[i]:
            return False
    return True


def prepare_plain(
    request,
    bint v2,
    dict states,
    dict configs,
    bytes cluster_entry,
    bytes born_host,
    ready_type,
    message_type,
    hints_type,
):
    """The ``Ready`` of a plain send, or None (see the module docstring).

    ``cluster_entry`` is ``b"CLUSTER\\x01" + cluster`` in UTF-8; the caller has checked
    that the broker is a writable master."""
    started = perf_counter()
    try:
        return _plain(request, v2, states, configs, cluster_entry, born_host, ready_type,
                      message_type, hints_type, started)
    except UnicodeEncodeError:
        return None  # lone surrogates: the Python path decides


cdef object _plain(
    object request,
    bint v2,
    dict states,
    dict configs,
    bytes cluster_entry,
    bytes born_host,
    object ready_type,
    object message_type,
    object hints_type,
    object started,
):
    cdef long long queue_id, sys_flag, born_timestamp, flag, scratch
    cdef long long reconsume = 0
    cdef Py_ssize_t plen = 0, i, j, at, end, sep, kept_len = 0, cut
    cdef const char *p = NULL
    cdef Py_ssize_t starts[MAX_ENTRIES]
    cdef Py_ssize_t seps[MAX_ENTRIES]
    cdef Py_ssize_t ends[MAX_ENTRIES]
    cdef bint keep[MAX_ENTRIES]
    cdef int count = 0
    cdef bint wait_flush = True
    cdef char *out
    ext = request.ext_fields
    if type(ext) is not dict:
        return None
    keys = _V2_KEYS if v2 else _V1_KEYS
    topic = (<dict>ext).get(keys[1])
    if type(topic) is not str or (<dict>ext).get(keys[0]) is None or (<dict>ext).get(keys[2]) is None:
        return None
    if not (_plain_int((<dict>ext).get(keys[3]), &scratch)
            and _plain_int((<dict>ext).get(keys[4]), &queue_id)
            and _plain_int((<dict>ext).get(keys[5]), &sys_flag)
            and _plain_int((<dict>ext).get(keys[6]), &born_timestamp)
            and _plain_int((<dict>ext).get(keys[7]), &flag)):
        return None
    text = (<dict>ext).get(keys[9])
    if text and not _plain_int(text, &reconsume):
        return None
    text = (<dict>ext).get(keys[11])
    if text and not _plain_int(text, &scratch):
        return None
    text = (<dict>ext).get(keys[12])
    if text:
        if type(text) is not str:
            return None
        p = PyUnicode_AsUTF8AndSize(text, &plen)
        if _is(p, plen, "1", 1) or _true(p, plen):
            return None  # a batch
    state = states.get(topic)
    if state is None or state.config is not configs.get(topic):
        return None
    if queue_id < 0 or queue_id >= state.queue_limit or not state.writable:
        return None
    if state.retry_group is not None:
        return None
    props = (<dict>ext).get(keys[8])
    tags = keys_value = uniq = None
    if props:
        if type(props) is not str:
            return None
        p = PyUnicode_AsUTF8AndSize(props, &plen)
        at = 0
        while at <= plen:
            end = at
            while end < plen and p[end] != c'\x02':
                end += 1
            sep = at
            while sep < end and p[sep] != c'\x01':
                sep += 1
            if sep > at and sep < end - 1:  # a name, the separator and a value
                if count == MAX_ENTRIES:
                    return None
                for j in range(count):
                    if seps[j] - starts[j] == sep - at and memcmp(p + starts[j], p + at, sep - at) == 0:
                        return None  # a repeated name: the Python dict's order and value
                if (_is(p + at, sep - at, "DELAY", 5) or _is(p + at, sep - at, "TRAN_MSG", 8)
                        or _is(p + at, sep - at, "CLUSTER", 7)):
                    return None
                keep[count] = True
                if _is(p + at, sep - at, "WAIT", 4):
                    keep[count] = False
                    wait_flush = _true(p + sep + 1, end - sep - 1)
                elif _is(p + at, sep - at, "TAGS", 4):
                    tags = PyUnicode_DecodeUTF8(p + sep + 1, end - sep - 1, NULL)
                elif _is(p + at, sep - at, "KEYS", 4):
                    keys_value = PyUnicode_DecodeUTF8(p + sep + 1, end - sep - 1, NULL)
                elif _is(p + at, sep - at, "UNIQ_KEY", 8):
                    uniq = PyUnicode_DecodeUTF8(p + sep + 1, end - sep - 1, NULL)
                starts[count] = at
                seps[count] = sep
                ends[count] = end
                if keep[count]:
                    kept_len += end - at + 1
                count += 1
            at = end + 1
    # The stored properties: the entries as they came but WAIT, then CLUSTER.
    cut = len(cluster_entry)
    stored = PyBytes_FromStringAndSize(NULL, kept_len + cut)
    out = PyBytes_AS_STRING(stored)
    at = 0
    for i in range(count):
        if keep[i]:
            memcpy(out + at, p + starts[i], ends[i] - starts[i])
            at += ends[i] - starts[i]
            out[at] = c'\x02'
            at += 1
    memcpy(out + at, PyBytes_AS_STRING(cluster_entry), cut)
    if state.multi_tag:
        sys_flag |= _MULTI_TAGS
    body = request.body
    values = (topic, queue_id, body, stored, flag, sys_flag, born_timestamp, born_host,
              reconsume, 0, tuple.__new__(hints_type, (tags, keys_value, uniq)))
    if message_type is _MESSAGE.cls:
        message = _MESSAGE.make(values)
    else:
        message = message_type(*values)
    return tuple.__new__(
        ready_type, ((message,), topic, queue_id, len(body), wait_flush, started)
    )



def prepare_run(
    requests,
    check,
    dict states,
    dict configs,
    bytes cluster_entry,
    bytes born_host,
    ready_type,
    message_type,
    hints_type,
    list replies,
    list ready,
    list messages,
):
    """``SendProcessor.send_many``'s preparation of a run, compiled: each request is
    prepared by :func:`prepare_plain` or, when not plain, by ``check(request, v2)``; a
    ready send's place and itself go to ``ready``, its messages to ``messages`` and None to
    ``replies``, a refusal to ``replies``."""
    for request in requests:
        v2 = request.code != 10  # SEND_MESSAGE: V1 header names
        try:
            prepared = _plain(request, v2, states, configs, cluster_entry, born_host,
                              ready_type, message_type, hints_type, perf_counter())
        except UnicodeEncodeError:
            prepared = None
        if prepared is None:
            prepared = check(request, v2)
        if isinstance(prepared, ready_type):
            ready.append((len(replies), prepared))
            messages.extend((<tuple>prepared)[0])
            replies.append(None)
        else:
            replies.append(prepared)
