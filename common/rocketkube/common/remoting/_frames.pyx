# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The frame decoder's scan and the writing of templated answers, compiled.

:func:`scan` splits received bytes into commands as ``FrameDecoder.scan`` does (the
layout is drawn in ``frame``), with the same commands, the same end position and the same
errors; :func:`templated_frames` writes a run's templated answers as
``frame.templated_frames`` does, joining each template's parts and values instead of a
string format per answer.

A JSON header whose fields need nothing done (a dict of string extFields, integer code,
opaque, flag and version, a string language) becomes its command here; any other frame
(binary headers, values fastjson would coerce, anything malformed) goes to
``frame.decode_frame``, which decides it exactly as without this module.
``tests/common/test_frames_kernel.py`` holds the two to the same results.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdio cimport snprintf
from libc.string cimport memcpy

from orjson import JSONDecodeError, loads


cdef inline long _int32(const unsigned char *p) noexcept nogil:
    return <int>((<unsigned int>p[0] << 24) | (<unsigned int>p[1] << 16)
                 | (<unsigned int>p[2] << 8) | <unsigned int>p[3])


cdef object _plain_json(object header_view, object command_type, object json_type):
    """The command of a JSON header needing nothing done, or None."""
    try:
        header = loads(header_view)
    except JSONDecodeError:
        return None
    if type(header) is not dict:
        return None
    cdef dict h = <dict>header
    ext = h.get("extFields")
    if ext is None:
        ext = {}
    elif type(ext) is not dict:
        return None
    else:
        for value in (<dict>ext).values():
            if type(value) is not str:
                return None
    code = h.get("code")
    opaque = h.get("opaque", 0)
    flag = h.get("flag", 0)
    version = h.get("version", 0)
    if not (type(code) is int and type(opaque) is int and type(flag) is int
            and type(version) is int):
        return None
    language = h.get("language", "JAVA")
    if type(language) is not str:
        return None
    remark = h.get("remark")
    if type(remark) is not str:
        remark = None
    return command_type(code, opaque, flag, language, version, remark, ext, b"", json_type)


def scan(
    object view,
    Py_ssize_t max_frame_length,
    object command_type,
    object json_type,
    object decode_frame,
    object protocol_error,
    object too_large_error,
):
    """``(commands, end)``: the commands of every complete frame in ``view`` (a
    memoryview) and where the first incomplete one starts."""
    cdef Py_buffer buf
    cdef const unsigned char *data
    cdef Py_ssize_t size, pos = 0, end, header_len
    cdef long length, word
    cdef list out = []
    PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)
    try:
        data = <const unsigned char *>buf.buf
        size = buf.len
        while size - pos >= 4:
            length = _int32(data + pos)
            if length < 4 or length > max_frame_length:
                if length > max_frame_length:
                    raise too_large_error(
                        f"frame length {length} exceeds {max_frame_length}"
                    )
                raise protocol_error(f"frame length {length} is below the minimum of 4")
            end = pos + 4 + length
            if end > size:
                break
            word = _int32(data + pos + 4)
            header_len = word & 0xFFFFFF
            command = None
            if (word >> 24) & 0xFF == 0 and 4 + header_len <= length:
                command = _plain_json(view[pos + 8 : pos + 8 + header_len], command_type,
                                      json_type)
            if command is None:
                command = decode_frame(view[pos + 4 : end])
            else:
                command.body = view[pos + 8 + header_len : end]
            out.append(command)
            pos = end
    finally:
        PyBuffer_Release(&buf)
    return out, pos


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
    return snprintf(out, 24, "%lld", number)


cdef object _render(object reply, long long opaque):
    """The frame of a templated response answering ``opaque``, as ``json_frame`` makes
    it; None when a value is neither a str nor an int (``json_frame`` renders it)."""
    cdef tuple parts = reply._template.parts
    cdef tuple values = reply._values
    cdef Py_ssize_t count = len(values), i, at = 8, size = 8 + 24, n
    cdef char *out
    if len(parts) != count + 2:
        return None
    for part in parts:
        size += PyBytes_GET_SIZE(part)
    for value in values:
        n = _value_size(value)
        if n < 0:
            return None
        size += n
    cdef bytearray scratch = bytearray(size)
    out = PyByteArray_AS_STRING(scratch)
    for i in range(count + 2):
        part = parts[i]
        memcpy(out + at, PyBytes_AS_STRING(part), PyBytes_GET_SIZE(part))
        at += PyBytes_GET_SIZE(part)
        if i < count:
            at += _put_value(values[i], out + at)
        elif i == count:
            at += snprintf(out + at, 24, "%lld", opaque)
    _put32(<unsigned char *>out, at - 4)
    _put32(<unsigned char *>out + 4, at - 8)
    return PyBytes_FromStringAndSize(out, at)


cdef inline void _put32(unsigned char *p, long v) noexcept nogil:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


def templated_frames(requests, replies, list outbox):
    """``frame.templated_frames``: the frames of the templated answers to JSON requests
    appended to ``outbox``; the indexes of the other replies."""
    cdef list rest = []
    cdef Py_ssize_t i, count = len(requests)
    cdef long long opaque
    if len(replies) != count:
        raise ValueError("zip() arguments have different lengths")  # as strict=True
    for i in range(count):
        request = requests[i]
        reply = replies[i]
        if type(reply) is _TEMPLATED and request.serialize_type is _JSON_TYPE:
            if not request.flag & _ONEWAY:
                data = None
                try:
                    opaque = request.opaque
                    data = _render(reply, opaque)
                except OverflowError:
                    pass
                if data is None:
                    data = reply.json_frame(request.opaque)
                outbox.append(data)
        else:
            rest.append(i)
    return rest


from rocketkube.common.remoting.codes import SerializeType as _SerializeType
from rocketkube.common.remoting.command import FLAG_ONEWAY as _FLAG_ONEWAY
from rocketkube.common.remoting.frame import TemplatedResponse as _TEMPLATED

_JSON_TYPE = _SerializeType.JSON
cdef long _ONEWAY = _FLAG_ONEWAY
