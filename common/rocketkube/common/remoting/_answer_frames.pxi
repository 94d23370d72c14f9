# Part of ``_frames.pyx`` (included there): the writing of templated answers, a run's or a
# resolved deferred group's, into one buffer.

cdef Py_ssize_t _decimal(char *out, long long number) noexcept:
    """``number`` in decimal at ``out`` (``%lld`` without printf's machinery); its length."""
    cdef char digits[20]
    cdef unsigned long long rest = <unsigned long long>number
    cdef Py_ssize_t n = 0, i, sign = 0
    if number < 0:
        out[0] = 45  # -
        sign = 1
        rest = 0 - rest
    while True:
        digits[n] = <char>(48 + rest % 10)
        n += 1
        rest //= 10
        if rest == 0:
            break
    for i in range(n):
        out[sign + i] = digits[n - 1 - i]
    return sign + n


cdef Py_ssize_t _value_size(object value):
    """Bytes ``str(value)`` takes at most, for a str or an int; -1 for anything else."""
    cdef Py_ssize_t n
    if type(value) is str:
        PyUnicode_AsUTF8AndSize(value, &n)
        return n
    if type(value) is int:
        return 24
    return -1


cdef Py_ssize_t _put_value(object value, char *out) except -1:
    """Write ``str(value)`` (a str or an int within 64 bits) at ``out``; its length."""
    cdef Py_ssize_t n
    cdef const char *text
    cdef long long number
    if type(value) is str:
        text = PyUnicode_AsUTF8AndSize(value, &n)
        memcpy(out, text, n)
        return n
    number = value  # OverflowError past 64 bits: the caller renders it in Python
    return _decimal(out, number)


cdef struct _Joined:
    # The frames of a run's answers, one after the other: one buffer, one write.
    char *data
    Py_ssize_t used
    Py_ssize_t room


cdef char *_room(_Joined *joined, Py_ssize_t n) except NULL:
    """Room for ``n`` more bytes at the end of ``joined`` (grown by doubling)."""
    cdef Py_ssize_t room
    cdef char *grown
    if joined.used + n > joined.room:
        room = max(2 * joined.room, joined.used + n, 4096)
        grown = <char *>PyMem_Realloc(joined.data, room)
        if grown == NULL:
            raise MemoryError()
        joined.data = grown
        joined.room = room
    return joined.data + joined.used


cdef bint _render(object reply, long long opaque, _Joined *joined) except -1:
    """Add the frame of a templated response answering ``opaque`` to ``joined``, as
    ``json_frame`` makes it; False (nothing added) when a value is neither a str nor an
    int, which ``json_frame`` then renders."""
    cdef tuple parts = reply.template.parts
    cdef tuple values = reply.values
    cdef Py_ssize_t count = len(values), i, at = 8, size = 8 + 24, n
    cdef char *out
    if len(parts) != count + 2:
        return False
    for part in parts:
        size += PyBytes_GET_SIZE(part)
    for value in values:
        n = _value_size(value)
        if n < 0:
            return False
        size += n
    out = _room(joined, size)
    for i in range(count + 2):
        part = parts[i]
        memcpy(out + at, PyBytes_AS_STRING(part), PyBytes_GET_SIZE(part))
        at += PyBytes_GET_SIZE(part)
        if i < count:
            at += _put_value(values[i], out + at)  # OverflowError: nothing added
        elif i == count:
            at += _decimal(out + at, opaque)
    _put32(<unsigned char *>out, at - 4)
    _put32(<unsigned char *>out + 4, at - 8)
    joined.used += at
    return True


cdef void _add(_Joined *joined, object data) except *:
    """Add ``data`` (a frame ``json_frame`` made) to ``joined``."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        memcpy(_room(joined, view.len), view.buf, view.len)
        joined.used += view.len
    finally:
        PyBuffer_Release(&view)


cdef void _write(_Joined *joined, object reply, object opaque_object) except *:
    """Add the frame answering ``opaque_object`` with the templated ``reply``: rendered
    here, or by ``json_frame`` (an opaque or a value past 64 bits, an odd value)."""
    cdef long long opaque
    try:
        opaque = opaque_object
        if _render(reply, opaque, joined):
            return
    except OverflowError:
        pass
    _add(joined, reply.json_frame(opaque_object))


cdef void _flush(_Joined *joined, list outbox) except *:
    """Append the frames added to ``outbox`` as one bytes, and free the buffer."""
    try:
        if joined.used:
            outbox.append(PyBytes_FromStringAndSize(joined.data, joined.used))
    finally:
        PyMem_Free(joined.data)
        joined.data = NULL
        joined.used = joined.room = 0


def templated_frames(requests, replies, list outbox):
    """``frame.templated_frames``: the frames of the templated answers to JSON requests
    appended to ``outbox`` as one buffer; the indexes of the other replies."""
    cdef list rest = []
    cdef Py_ssize_t i, count = len(requests)
    cdef _Joined joined
    memset(&joined, 0, sizeof(joined))
    if len(replies) != count:
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    try:
        for i in range(count):
            request = requests[i]
            reply = replies[i]
            if type(reply) is TemplatedResponse and request.serialize_type is _JSON_TYPE:
                if not request.flag & _ONEWAY:
                    _write(&joined, reply, request.opaque)
            else:
                rest.append(i)
    finally:
        _flush(&joined, outbox)
    return rest


def held_frames(replies, opaques, serializations, list outbox):
    """``frame.held_frames``, compiled."""
    cdef list rest = []
    cdef Py_ssize_t i, count = len(replies)
    cdef _Joined joined
    memset(&joined, 0, sizeof(joined))
    if len(opaques) != count or len(serializations) != count:
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    try:
        for i in range(count):
            result = replies[i].result()  # raises: not given yet
            if type(result) is TemplatedResponse and serializations[i] is _JSON_TYPE:
                _write(&joined, result, opaques[i])
            else:
                rest.append(i)
    finally:
        _flush(&joined, outbox)
    return rest
