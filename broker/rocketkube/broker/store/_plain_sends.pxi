# Part of ``_records.pyx`` (included there): a plain send's store message, laid out from
# the request's header values, properties and body (``records.prepare_plain``/``prepare_run``).

cdef object _MESSAGE_TYPE = named_tuple(_InnerMessage)
cdef object _HINTS_TYPE = named_tuple(_DispatchHints)
cdef object _PREPARED_SEND = named_tuple(_PreparedSend)

# The header's fields: V2 names them a..m, V1 by these names, in the same order.
DEF FIELDS = 13
_V1_KEYS = (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
    "batch",
)

DEF MAX_ENTRIES = 64


cdef inline bint _fits_int(long long value) noexcept:
    """``value`` fits a Java int (a send header's integers but ``bornTimestamp``)."""
    return -2147483648 <= value <= 2147483647


cdef bint _plain_int(object text, long long *out):
    """``text`` is a str of ``-?[0-9]{1,18}``: its value in ``out``."""
    cdef Py_ssize_t n, i = 0
    cdef const char *s
    cdef long long v = 0
    cdef bint negative = False
    cdef Py_UCS4 digit
    if type(text) is not str:
        return False
    if PyUnicode_GET_LENGTH(text) == 1:  # one digit: most of a send's integers
        digit = PyUnicode_READ_CHAR(text, 0)
        if not c'0' <= digit <= c'9':
            return False
        out[0] = <long long>digit - 48
        return True
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


cdef inline object _field(PyObject **found, Py_ssize_t i):
    """Field ``i`` of a request's header, None when it has none."""
    return None if found[i] == NULL else <object>found[i]


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


cdef object _same_or_decoded(const char *text, Py_ssize_t n, list memo):
    """The str of the UTF-8 ``text``: the one ``memo`` holds when its bytes are the same
    (a run's sends carry the same tags: one str, its hash computed once for the
    dispatcher's lookup), else a new one, then held."""
    cdef Py_ssize_t size
    cdef const char *utf8
    last = memo[0]
    if last is not None:
        utf8 = PyUnicode_AsUTF8AndSize(last, &size)
        if size == n and memcmp(utf8, text, n) == 0:
            return last
    made = PyUnicode_DecodeUTF8(text, n, NULL)
    memo[0] = made
    return made


def prepare_plain(
    request,
    bint v2,
    dict topics,
    dict configs,
    rules,
    bytes born_host,
):
    """The :class:`PreparedSend` of a plain send, or None (see the module docstring). The caller has
    checked that the broker is a writable master."""
    started = perf_counter()
    try:
        return _plain(request, v2, topics, configs, _rules(rules), born_host, started, [None])
    except UnicodeEncodeError:
        return None  # lone surrogates: the Python path decides


cdef tuple _rules(object rules):
    """A ``PlainRules`` as the tuple it is."""
    if not isinstance(rules, tuple) or len(<tuple>rules) != 4:
        raise TypeError(f"{rules!r} is not a PlainRules")
    return <tuple>rules


cdef bint _named(const char *name, Py_ssize_t length, tuple names):
    """The property name is one of ``names`` (bytes)."""
    for word in names:
        if _is(name, length, <bytes>word, len(<bytes>word)):
            return True
    return False


cdef object _plain(
    object request,
    bint v2,
    dict topics,
    dict configs,
    tuple rules,
    bytes born_host,
    object started,
    list memo,
):
    cdef long long queue_id, sys_flag, born_timestamp, flag, scratch
    cdef long long reconsume = 0
    cdef Py_ssize_t plen = 0, i, j, at, end, sep, kept_len = 0, cut
    cdef const char *p = NULL
    cdef const char *mark
    cdef Py_ssize_t starts[MAX_ENTRIES]
    cdef Py_ssize_t seps[MAX_ENTRIES]
    cdef Py_ssize_t ends[MAX_ENTRIES]
    cdef bint keep[MAX_ENTRIES]
    cdef int count = 0
    cdef bint wait_flush = True
    cdef char *out
    cdef PyObject *found[FIELDS]
    cdef PyObject *name
    cdef PyObject *value
    cdef Py_ssize_t pos = 0
    cdef long letter
    memset(found, 0, sizeof(found))
    values = request.header_values if v2 else None
    if values is not None:
        # extFields not made yet: the values read where the scan left them, by letter
        # (the request holds them while this runs)
        names = request.header_names
        if (type(names) is not str or type(values) is not list
                or len(<str>names) != len(<list>values)):
            return None
        for i in range(len(<list>values)):
            letter = <long>PyUnicode_READ_CHAR(names, i) - 97  # a
            if 0 <= letter < FIELDS:
                found[letter] = <PyObject *>(<list>values)[i]
    else:
        ext = request.ext_fields
        if type(ext) is not dict:
            return None
        if v2:  # one pass over the fields (each lookup by name costs as much as the pass)
            while PyDict_Next(ext, &pos, &name, &value):
                if not PyUnicode_CheckExact(<object>name):
                    return None
                if PyUnicode_GET_LENGTH(<object>name) == 1:
                    letter = <long>PyUnicode_READ_CHAR(<object>name, 0) - 97  # a
                    if 0 <= letter < FIELDS:
                        found[letter] = value
        else:
            for i in range(FIELDS):
                found[i] = PyDict_GetItem(ext, _V1_KEYS[i])
    topic = _field(found, 1)
    if type(topic) is not str or _field(found, 0) is None or _field(found, 2) is None:
        return None
    if not (_plain_int(_field(found, 3), &scratch)
            and _plain_int(_field(found, 4), &queue_id)
            and _plain_int(_field(found, 5), &sys_flag)
            and _plain_int(_field(found, 6), &born_timestamp)
            and _plain_int(_field(found, 7), &flag)):
        return None
    if not (_fits_int(scratch) and _fits_int(queue_id) and _fits_int(sys_flag) and _fits_int(flag)):
        return None  # out of a Java int: the Python path refuses it, naming the field
    text = _field(found, 9)
    if text and not (_plain_int(text, &reconsume) and _fits_int(reconsume)):
        return None
    text = _field(found, 11)
    if text and not (_plain_int(text, &scratch) and _fits_int(scratch)):
        return None
    text = _field(found, 12)
    if text:
        if type(text) is not str:
            return None
        p = PyUnicode_AsUTF8AndSize(text, &plen)
        if _is(p, plen, "1", 1) or _true(p, plen):
            return None  # a batch
    entry = topics.get(topic)
    if not isinstance(entry, tuple) or len(<tuple>entry) != 3:  # a PlainTopic
        return None
    if (<tuple>entry)[0] is not configs.get(topic):
        return None  # the topic's config changed: the Python code decides again
    if queue_id < 0 or queue_id >= (<tuple>entry)[1]:
        return None
    cdef tuple forced = rules[0]
    cdef bytes dropped = rules[1]
    cdef bytes cluster_entry = rules[2]
    props = _field(found, 8)
    tags = keys_value = uniq = None
    if props:
        if type(props) is not str:
            return None
        p = PyUnicode_AsUTF8AndSize(props, &plen)
        at = 0
        while at <= plen:
            mark = <const char *>memchr(p + at, 2, plen - at)
            end = plen if mark == NULL else mark - p
            mark = <const char *>memchr(p + at, 1, end - at)
            sep = end if mark == NULL else mark - p
            if sep > at and sep < end - 1:  # a name, the separator and a value
                if count == MAX_ENTRIES:
                    return None
                for j in range(count):
                    if seps[j] - starts[j] == sep - at and memcmp(p + starts[j], p + at, sep - at) == 0:
                        return None  # a repeated name: the Python dict's order and value
                if _named(p + at, sep - at, forced):
                    return None
                keep[count] = True
                if _is(p + at, sep - at, dropped, len(dropped)):
                    keep[count] = False
                    wait_flush = _true(p + sep + 1, end - sep - 1)
                elif _is(p + at, sep - at, "TAGS", 4):
                    tags = _same_or_decoded(p + sep + 1, end - sep - 1, memo)
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
    # The stored properties: the entries as they came but the dropped one, then CLUSTER.
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
    sys_flag |= <long long>(<tuple>entry)[2]
    body = request.body
    hints = new_named(_HINTS_TYPE, (tags, keys_value, uniq))
    message = new_named(_MESSAGE_TYPE, (topic, queue_id, body, stored, flag, sys_flag,
                                   born_timestamp, born_host, reconsume, 0, hints))
    return new_named(_PREPARED_SEND, ((message,), topic, queue_id, len(body), wait_flush, started))


def prepare_run(
    requests,
    check,
    dict topics,
    dict configs,
    rules,
    bytes born_host,
    list replies,
    list ready,
    list messages,
):
    """``SendProcessor.send_many``'s preparation of a run, compiled: each request is
    prepared as by :func:`prepare_plain` or, when not plain, by ``check(request, v2)``; a
    ready send's place and itself go to ``ready``, its messages to ``messages`` and None to
    ``replies``, a refusal to ``replies``. The plain sends of a run share one start time
    (their latencies are counted from the run's start)."""
    started = perf_counter()  # the run came in at once: one start for its plain sends
    cdef list tags_memo = [None]
    cdef tuple plain_rules = _rules(rules)
    v1_code = plain_rules[3]
    for request in requests:
        v2 = request.code != v1_code
        try:
            prepared = _plain(request, v2, topics, configs, plain_rules, born_host, started,
                              tags_memo)
        except UnicodeEncodeError:
            prepared = None
        if prepared is None:
            prepared = check(request, v2)
        if isinstance(prepared, _PreparedSend):
            ready.append((len(replies), prepared))
            made = (<tuple>prepared)[0]
            if type(made) is tuple and len(<tuple>made) == 1:
                messages.append((<tuple>made)[0])  # a plain send's one message
            else:
                messages.extend(made)
            replies.append(None)
        else:
            replies.append(prepared)
